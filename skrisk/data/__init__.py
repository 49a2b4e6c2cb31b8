"""ER pair data: tables (two for linkage, one for dedup), candidate pairs, blocking, tokens, vectors, features.

The loaders and generators of data sets live in :mod:`skrisk.datasets`.
"""

from ._blocking import BLOCKING_METHODS, BlockingResult, block, blocking_rules_from_json, blocking_rules_to_json
from ._embeddings import WordVectors, corpus_sentences, load_fasttext, load_glove, train_fasttext
from ._febrl import FEBRL_BLOCKING, FEBRL_DATASETS
from ._fetch import DEEPMATCHER_ARCHIVES, ChecksumError, extract_archive
from ._loaders import DEEPMATCHER_DATASETS, DEEPMATCHER_LEAKS, read_pairs, read_table
from ._pairs import TASKS, UNLABELLED, PairDataset
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
    "load_fasttext",
    "load_glove",
    "normalize_text",
    "read_pairs",
    "read_table",
    "tokenize",
    "train_fasttext",
]


#: Loaders once exported here too; :mod:`skrisk.datasets` is their one public home.
_MOVED = ("febrl_entity", "fetch_deepmatcher", "get_data_home", "load_csv_tables", "load_deepmatcher",
          "load_febrl", "stack_tables")


def __getattr__(name: str):
    if name in _MOVED:
        import warnings

        from .. import datasets

        warnings.warn(f"skrisk.data.{name} moved to skrisk.datasets.{name}: import it from skrisk.datasets "
                      "(the name here goes in the next release).", FutureWarning, stacklevel=2)
        return getattr(datasets, name)
    raise AttributeError(f"module 'skrisk.data' has no attribute {name!r}")
