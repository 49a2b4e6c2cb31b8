"""Public file helpers: atomic replacement, folder locks and tolerant JSON-lines reading.

These are the helpers skrisk itself uses for every file it writes (sessions, runs, exports,
benchmark records); they are public so that scripts around skrisk write files the same way.

* :func:`atomic_write_bytes`, :func:`atomic_write_text` -- replace a file through a unique
  temporary file in the same folder (never a torn file, never a shared temporary name).
* :class:`FolderLock` / :class:`FolderInUseError` -- an OS lock on a folder for a process's life.
* :func:`read_jsonl` -- an append-only JSON-lines file, a torn last line dropped (or cut off).
* :func:`write_csv_export` / :func:`read_csv_export` -- the CSV writer of every file skrisk
  exports (cells neutralised against spreadsheet formulas, a CR or LF inside a cell quoted) and
  the reader that gives back the exact values (one leading ``'`` removed).
* :class:`LinkError` -- raised instead of writing through a symbolic or hard link.
* :func:`stratified_choice` -- a seeded sample of positions drawn per class (the one stratified
  sampler skrisk's experiments, sessions and benchmarks use).
"""

from ._fileio import read_csv_export

__all__ = ["read_csv_export"]
