"""The blocking index an incremental run matches against: ``index.json`` and ``index_records.npz``.

A full run of :func:`~skrisk.matching.match` on one table (dedup) leaves, beside
``entities.csv``, a *blocking index*: ``index_records.npz`` (every record's id and model
attributes, its entity and identical key, the values blocking and the scorer read, and the word
counts of a ``tokens`` rule, so that the known records are not tokenised again; see
:mod:`skrisk.matching._index_file`) and ``index.json`` (the manifest: the model's fingerprint,
the SHA-256 of ``index_records.npz`` and of ``entities.csv``, a probe of the identical-key hash,
and the next free entity id). :func:`load_index` checks them all before anything is read;
:func:`index_writers` writes a new pair after ``entities.csv``, for ``write_files_together``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..data._known_blocking import hash_probe, identical_keys, typed_keys, typed_rule_passes
from ..data._token_counts import TokenCounts, token_counts
from ..exceptions import DataError
from ._index_file import (INDEX_RECORDS, IndexArchive, count_arrays, entity_arrays, read_archive, read_tokens,
                          record_arrays, token_arrays, write_archive)
from ._steps import _model_rules

INDEX_MANIFEST = "index.json"
ENTITIES_FILE = "entities.csv"
_FORMAT = "skrisk-match-index"
_FORMAT_VERSION = 4
FULL_RUN = "run skrisk match on all the records without --entities (a full run) to rebuild it"
#: The tables of a linkage; its index names a record ``<side>:<id>`` (left ones sort first).
SIDES = ("left", "right")


def side_keys(ids: Any, side: str) -> pd.Index:
    """The index names of a linkage table's records."""
    return side + ":" + pd.Index(ids).astype(str)


def split_keys(keys: Any) -> tuple[np.ndarray, np.ndarray]:
    """The side (``left``/``right``) and the record id of each index name of linkage."""
    parts = pd.Series(np.asarray(keys, dtype=object), dtype=object).str.partition(":")
    return parts[0].to_numpy(dtype=object), parts[2].to_numpy(dtype=object)


def on_left(keys: Any) -> np.ndarray:
    """Whether each index name of linkage is a left record's."""
    return pd.Index(keys).astype(str).str.startswith(SIDES[0] + ":")


# ---------------------------------------------------------------------------- fingerprints
def _digest(lines: Any) -> str:
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode("utf-8", "surrogatepass"))
        h.update(b"\n")
    return h.hexdigest()


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def model_fingerprint(model: Any) -> str:
    """SHA-256 of what the model is: attributes, task, threshold, blocking, and its probabilities on
    a fixed set of probe pairs (two models that score differently have different fingerprints)."""
    from ..data._rules_json import blocking_rules_to_json

    words = ["anna smith", "anne smyth", "john", "12 main street", "1987-03-12", "2000", ""]
    attrs = list(model.attributes)
    probe = pd.DataFrame({a: [words[(i + k) % len(words)] or None for i in range(len(words))]
                          for k, a in enumerate(attrs)}, index=[f"r{i}" for i in range(len(words))])
    pairs = pd.DataFrame([(f"r{i}", f"r{j}") for i in range(len(words)) for j in range(i + 1, len(words))],
                         columns=["left_id", "right_id"])
    proba = np.asarray(model.scorer(probe, None, n_jobs=None).score(pairs).proba, dtype=np.float64)
    head = json.dumps({"attributes": attrs, "task": model.task, "threshold": float(model.threshold),
                       "blocking": blocking_rules_to_json(model.blocking)}, sort_keys=True)
    return _digest([head] + [f"{x:.9f}" for x in proba])


# ---------------------------------------------------------------------------- the index
@dataclass
class KnownRecords:
    """The index of an earlier run, checked: its records (ids, entities, identical keys, values
    on request) and the next free entity id."""

    archive: IndexArchive
    next_id: int
    folder: Path
    tokens_columns: list[str] | None = None
    counted: dict[str, list[str]] | None = None
    typed: tuple[list[tuple[str, ...]], dict] | None = None  # the typed passes whose keys it keeps, their types
    entities_digest: str = ""  # the SHA-256 of its entities.csv

    def tokens(self) -> TokenCounts | None:
        """The word counts of the records kept in the index (read, and checked, at each call)."""
        if self.tokens_columns is None:
            return None
        return read_tokens(self.folder / INDEX_RECORDS, self.tokens_columns,
                           pd.Index(self.archive.ids, dtype=object), FULL_RUN)


def tokens_columns(model: Any) -> list[str] | None:
    """The columns of the model's first ``tokens`` blocking rule (the default rule: all the
    attributes), whose word counts the index keeps; None without such a rule."""
    rules = _model_rules(model)
    if rules is None:
        return list(model.attributes)
    if isinstance(rules, tuple) and rules and isinstance(rules[0], str):
        rules = [rules]
    for rule in rules:
        if rule[0] == "tokens":
            cols = rule[1] if len(rule) > 1 else None
            return list(model.attributes) if cols is None else ([cols] if isinstance(cols, str) else list(cols))
    return None


def typed_rule(model: Any) -> tuple[list[tuple[str, ...]], dict] | None:
    """The passes of the model's first ``typed`` blocking rule whose keys the index keeps and the
    rule's types; None without such a rule (or with an ``:id`` key)."""
    return typed_rule_passes(_model_rules(model), list(model.attributes))


def _passes_json(typed: tuple[list, dict] | None) -> list[list[str]] | None:
    """The manifest's ``typed_passes``."""
    return None if typed is None else [list(p) for p in typed[0]]


def counted_attributes(model: Any) -> dict[str, list[str]]:
    """The value counts an index keeps: per group (``t`` the table; linkage ``l`` and ``r``), the
    attributes whose features weigh agreement by a value's frequency (``exact_tf``)."""
    counts = getattr(model.features, "value_counts", None)
    if not callable(counts):
        return {}
    attrs = list(counts(pd.DataFrame({a: pd.Series(dtype=object) for a in model.attributes})))
    if not attrs:
        return {}
    return {"l": attrs, "r": attrs} if model.task == "link" else {"t": attrs}


def group_counts(model: Any, records: pd.DataFrame) -> dict[str, dict[str, pd.Series]]:
    """The value counts of ``records`` (indexed by id, or by side-prefixed id for linkage), per group."""
    groups = counted_attributes(model)
    if not groups:
        return {}
    if model.task != "link":
        return {"t": model.features.value_counts(records)}
    left = on_left(records.index)
    return {"l": model.features.value_counts(records[left]), "r": model.features.value_counts(records[~left])}


def _index_folder(path: Any) -> Path:
    p = Path(path).expanduser()
    if p.is_file() and p.name == ENTITIES_FILE:
        p = p.parent
    if not p.is_dir():
        raise DataError(f"--entities {p}: not the folder of an earlier skrisk match (its --out, with "
                        f"{ENTITIES_FILE}, {INDEX_RECORDS} and {INDEX_MANIFEST}).")
    return p


def _json_or_error(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"{path} is not a readable manifest ({exc}); {FULL_RUN}.") from None


def load_index(path: Any, model: Any, fingerprint: str | None = None) -> KnownRecords:
    """Read and check the index of an earlier run's folder (or its ``entities.csv``).

    Raises
    ------
    DataError
        A file is missing or unreadable, the manifest is not skrisk's, the model is not the one
        that built the index, the records were changed, or ``entities.csv`` was edited; the
        message names the file and the fix.
    """
    folder = _index_folder(path)
    man_path, rec_path, ent_path = folder / INDEX_MANIFEST, folder / INDEX_RECORDS, folder / ENTITIES_FILE
    missing = [p for p in (man_path, ent_path) if not p.is_file()]
    if missing:
        raise DataError(f"{missing[0]} is missing: {folder} holds no blocking index of an earlier run; {FULL_RUN}.")
    man = _json_or_error(man_path)
    keys = ("model", "records", "entities", "next_entity_id", "n_records")
    if not isinstance(man, dict) or man.get("format") != _FORMAT or not all(k in man for k in keys):
        raise DataError(f"{man_path} is not the manifest of a skrisk match index; {FULL_RUN}.")
    if man.get("format_version") != _FORMAT_VERSION:
        raise DataError(f"{man_path} has format_version {man.get('format_version')!r}, this skrisk reads "
                        f"{_FORMAT_VERSION}; {FULL_RUN}.")
    if not rec_path.is_file():
        raise DataError(f"{rec_path} is missing: {folder} holds no blocking index of an earlier run; {FULL_RUN}.")
    fp = fingerprint or model_fingerprint(model)
    if man["model"] != fp:
        raise DataError(f"{man_path}: the index was built with another model (or another threshold or "
                        "blocking) than the one given: match with the model of that run, or " + FULL_RUN + ".")
    attrs = list(model.attributes)
    if man.get("attributes") != attrs:
        raise DataError(f"{man_path} lists the attributes {man.get('attributes')!r}, not the model's {attrs}: "
                        f"the file was changed; {FULL_RUN}.")
    if _file_digest(rec_path) != man["records"]:
        raise DataError(f"{rec_path} does not match its checksum in {man_path}: the index was changed "
                        f"(tampered or truncated); restore the files of that run, or {FULL_RUN}.")
    if _file_digest(ent_path) != man["entities"]:
        raise DataError(f"{ent_path}: its entity ids (or records, or other cells) differ from the file the index "
                        f"was written with ({man_path}): entities.csv was edited. Restore it, or {FULL_RUN}.")
    if man.get("hash_probe") != hash_probe():
        raise DataError(f"{man_path}: its identical-record keys were made by another hash function (another "
                        f"version of pandas); {FULL_RUN}.")
    counted = counted_attributes(model)
    if (man.get("value_counts") or {}) != counted:
        raise DataError(f"{man_path}: its value_counts {man.get('value_counts')!r} are not those the model's "
                        f"features need ({counted!r}): the file was changed; {FULL_RUN}.")
    typed = typed_rule(model)
    if man.get("typed_passes") != _passes_json(typed):
        raise DataError(f"{man_path}: its typed_passes are not those of the model's typed blocking: the file was "
                        f"changed; {FULL_RUN}.")
    arc = read_archive(rec_path, attrs, FULL_RUN, counted, 0 if typed is None else len(typed[0]))
    if len(arc.ids) != man["n_records"]:
        raise DataError(f"{rec_path} holds {len(arc.ids)} records, its manifest {man_path} says "
                        f"{man['n_records']!r}: restore the files of that run, or {FULL_RUN}.")
    cols, expected = man.get("tokens_columns"), tokens_columns(model)
    if cols != expected:
        raise DataError(f"{man_path}: its tokens_columns {cols!r} are not the columns of the model's tokens rule "
                        f"({expected!r}): the file was changed; {FULL_RUN}.")
    top = int(arc.entity.max()) if len(arc.entity) else -1
    if not isinstance(man["next_entity_id"], int) or man["next_entity_id"] <= top:
        raise DataError(f"{man_path}: next_entity_id {man['next_entity_id']!r} is not above every entity id; "
                        f"{FULL_RUN}.")
    return KnownRecords(archive=arc, next_id=int(man["next_entity_id"]), folder=folder, tokens_columns=cols,
                        counted=counted, typed=typed, entities_digest=man["entities"])


def index_writers(model: Any, arrays: dict[str, np.ndarray], next_id: int, fingerprint: str | None = None) -> dict:
    """Writers of ``index_records.npz`` (the archive of ``arrays``) and ``index.json``, for
    :func:`skrisk._fileio.write_files_together`, given after the writer of ``entities.csv``:
    the manifest holds the SHA-256 of both files as they were staged."""
    from .._fileio import atomic_write_bytes

    n_records = int(len(arrays["ids_len"]))
    fp = fingerprint or model_fingerprint(model)
    passes = _passes_json(typed_rule(model))

    def manifest(p: Path) -> None:
        man = {
            "format": _FORMAT, "format_version": _FORMAT_VERSION, "model": fp,
            "records": _file_digest(p.parent / INDEX_RECORDS), "n_records": n_records,
            "entities": _file_digest(p.parent / ENTITIES_FILE), "next_entity_id": int(next_id),
            "attributes": list(model.attributes), "tokens_columns": tokens_columns(model),
            "hash_probe": hash_probe(), "value_counts": counted_attributes(model),
            "typed_passes": passes,
        }
        atomic_write_bytes(p, (json.dumps(man, indent=1) + "\n").encode("utf-8"))

    return {INDEX_RECORDS: lambda p: write_archive(p, arrays), INDEX_MANIFEST: manifest}


def full_run_index(model: Any, left: pd.DataFrame, right: pd.DataFrame | None, entities: pd.DataFrame) -> dict:
    """Writers of the blocking index of a full run; ``entities`` is the frame written as
    ``entities.csv``. A linkage run's index holds the records of both tables, each under its
    side-prefixed id (``left:<id>``, ``right:<id>``)."""
    attrs = list(model.attributes)
    link = model.task == "link"
    tables = [(t, side) for t, side in zip((left, right), SIDES) if t is not None]
    records = pd.concat([t[attrs].set_axis(side_keys(t.index, side) if link else t.index.astype(str))
                         for t, side in tables])
    if not records.index.is_monotonic_increasing:
        records = records.sort_index(kind="stable")
    keys = entities["record_id"].astype(str)
    if link:
        keys = entities["side"].astype(str) + ":" + keys
    entity = pd.Series(entities["entity_id"].to_numpy(dtype=np.int64), index=keys.to_numpy(dtype=object))
    flagged = entities.loc[entities["suspicious"] != "", ["entity_id", "suspicious"]].drop_duplicates("entity_id")
    suspicious = dict(zip(flagged["entity_id"].astype(np.int64).tolist(), flagged["suspicious"].tolist()))
    arrays = {**record_arrays(records, attrs),
              **entity_arrays(entity.reindex(records.index).to_numpy(dtype=np.int64),
                              identical_keys(records, attrs), suspicious)}
    cols = tokens_columns(model)
    if cols is not None:
        arrays.update(token_arrays(token_counts(records, cols)))
    arrays.update(count_arrays(group_counts(model, records), attrs))
    typed = typed_rule(model)
    if typed is not None:
        arrays["k_hash"] = typed_keys(records, *typed).ravel()
    next_id = int(entities["entity_id"].max()) + 1 if len(entities) else 0
    return index_writers(model, arrays, next_id)
