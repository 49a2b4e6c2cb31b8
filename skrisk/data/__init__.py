"""ER pair data: tables (two for linkage, one for dedup), candidate pairs, loaders, blocking, tokens, vectors, features."""

from ._blocking import BLOCKING_METHODS, BlockingResult, block, blocking_rules_from_json, blocking_rules_to_json
from ._csv import load_csv_tables
from ._embeddings import WordVectors, corpus_sentences, load_fasttext, load_glove, train_fasttext
from ._febrl import FEBRL_BLOCKING, FEBRL_DATASETS, febrl_entity, load_febrl
from ._fetch import DEEPMATCHER_ARCHIVES, ChecksumError, extract_archive, fetch_deepmatcher
from ._loaders import DEEPMATCHER_DATASETS, DEEPMATCHER_LEAKS, get_data_home, load_deepmatcher, read_pairs, read_table
from ._pairs import TASKS, UNLABELLED, PairDataset, stack_tables
from ._text import normalize_text
from ._similarity import SIMILARITY_METRICS, EncodedRecords, SimilarityFeatures
from ._tokenize import PAD_ID, UNK_ID, PairEncoder, Vocabulary, tokenize

__all__ = [
    "BLOCKING_METHODS",
    "BlockingResult",
    "ChecksumError",
    "DEEPMATCHER_ARCHIVES",
    "DEEPMATCHER_DATASETS",
    "DEEPMATCHER_LEAKS",
    "EncodedRecords",
    "FEBRL_BLOCKING",
    "FEBRL_DATASETS",
    "PAD_ID",
    "PairDataset",
    "PairEncoder",
    "SIMILARITY_METRICS",
    "SimilarityFeatures",
    "TASKS",
    "UNK_ID",
    "UNLABELLED",
    "Vocabulary",
    "WordVectors",
    "block",
    "blocking_rules_from_json",
    "blocking_rules_to_json",
    "corpus_sentences",
    "extract_archive",
    "febrl_entity",
    "fetch_deepmatcher",
    "get_data_home",
    "load_csv_tables",
    "load_deepmatcher",
    "load_fasttext",
    "load_febrl",
    "load_glove",
    "normalize_text",
    "read_pairs",
    "read_table",
    "stack_tables",
    "tokenize",
    "train_fasttext",
]
