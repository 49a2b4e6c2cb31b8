"""Dataset loaders (re-exported from :mod:`skrisk.data`)."""

from .data import fetch_deepmatcher, get_data_home, load_csv_tables, load_deepmatcher, load_febrl

__all__ = ["fetch_deepmatcher", "get_data_home", "load_csv_tables", "load_deepmatcher", "load_febrl"]
