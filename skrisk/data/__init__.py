"""ER pair data: tables, candidate pairs, loaders, blocking, tokens, vectors and similarity features."""

from ._blocking import BLOCKING_METHODS, BlockingResult, block
from ._csv import load_csv_tables
from ._embeddings import WordVectors, corpus_sentences, load_fasttext, load_glove, train_fasttext
from ._febrl import FEBRL_BLOCKING, load_febrl
from ._fetch import DEEPMATCHER_ARCHIVES, ChecksumError, fetch_deepmatcher
from ._loaders import DEEPMATCHER_DATASETS, get_data_home, load_deepmatcher, read_pairs, read_table
from ._pairs import UNLABELLED, PairDataset
from ._similarity import SIMILARITY_METRICS, SimilarityFeatures
from ._tokenize import PAD_ID, UNK_ID, PairEncoder, Vocabulary, tokenize

__all__ = [
    "BLOCKING_METHODS",
    "BlockingResult",
    "ChecksumError",
    "DEEPMATCHER_ARCHIVES",
    "DEEPMATCHER_DATASETS",
    "FEBRL_BLOCKING",
    "PAD_ID",
    "PairDataset",
    "PairEncoder",
    "SIMILARITY_METRICS",
    "SimilarityFeatures",
    "UNK_ID",
    "UNLABELLED",
    "Vocabulary",
    "WordVectors",
    "block",
    "corpus_sentences",
    "fetch_deepmatcher",
    "get_data_home",
    "load_csv_tables",
    "load_deepmatcher",
    "load_fasttext",
    "load_febrl",
    "load_glove",
    "read_pairs",
    "read_table",
    "tokenize",
    "train_fasttext",
]
