"""``entities.csv`` of an incremental run, from the previous run's file.

``entities.csv`` is sorted by entity id, then record id, one line per record. An incremental run
changes only the entities its new records joined, merged or left (updates), and adds new ones
after every old id. The lines of every other entity are the previous file's, byte for byte: they
are copied from it (its SHA-256 checked again against the index), and only the lines of the
entities that changed are written, by the one CSV writer (:func:`skrisk._safetext.csv_text`).
Where the previous file is not as the index says, or a cell holds a line break (its line count
then differs from its rows), the whole file is written instead.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np

__all__ = ["EntitiesReuse", "reuse_plan", "entities_parts"]

_CRLF = b"\r\n"


@dataclass
class EntitiesReuse:
    """Which lines of the new ``entities.csv`` are the previous file's: ``old_row[f]`` is the data
    row of the previous file that the new file's row ``f`` repeats (-1: written anew)."""

    path: Path
    digest: str
    n_old: int
    old_row: np.ndarray


def reuse_plan(path: Path, digest: str, old_entity: np.ndarray, kept: np.ndarray | None, from_known: np.ndarray,
               entity: np.ndarray, by_entity: np.ndarray, old_suspicious: dict[int, str],
               suspicious: dict[int, str]) -> EntitiesReuse:
    """The plan of the new file.

    ``old_entity``: the previous entity of each old record (id order); ``kept``: the positions of
    the old records kept (None: all); ``from_known[r]``: for row ``r`` of the new records in id
    order, its position among the kept ones (-1: a new record); ``entity``: the new entity of
    each record (id order); ``by_entity``: the rows in file order. A record's line is unchanged
    when its entity id, the entity's size and its doubts are; an entity's lines are copied only
    when all of them are.
    """
    n_old = len(old_entity)
    doubts = np.array([e for e in set(old_suspicious) | set(suspicious)
                       if old_suspicious.get(e, "") != suspicious.get(e, "")], dtype=np.int64)
    top = int(max(old_entity.max(initial=-1), entity.max(initial=-1))) + 1
    if top > 2 * (n_old + len(entity)) + 16:  # sparse entity ids: numbered 0, 1, ... first
        uniq, dense = np.unique(np.concatenate([old_entity, entity]), return_inverse=True)
        old_entity, entity, top = dense[:n_old], dense[n_old:], len(uniq)
        at = np.minimum(np.searchsorted(uniq, doubts), max(len(uniq) - 1, 0))
        doubts = at[uniq[at] == doubts] if len(uniq) else doubts[:0]
    old_size, new_size = np.bincount(old_entity, minlength=top), np.bincount(entity, minlength=top)
    pos = np.where(from_known >= 0, from_known, 0)
    old_pos = pos if kept is None else kept[pos]  # the record's position among all the old ones
    before = np.where(from_known >= 0, old_entity[old_pos] if n_old else -1, -1)
    same = (from_known >= 0) & (before == entity) & (old_size[entity] == new_size[entity])
    changed = np.zeros(top, dtype=bool)
    changed[doubts[(doubts >= 0) & (doubts < top)]] = True
    changed[entity[~same]] = True  # an entity is copied whole or written whole
    same &= ~changed[entity]
    old_file = np.empty(n_old, dtype=np.int64)
    old_file[np.argsort(old_entity, kind="stable")] = np.arange(n_old)  # old id order -> old file row
    rows = by_entity
    old_row = np.where(same[rows], old_file[old_pos[rows]] if n_old else -1, -1)
    return EntitiesReuse(path=path, digest=digest, n_old=n_old, old_row=old_row.astype(np.int64))


def _line_ends(data: bytes) -> np.ndarray:
    """The offsets just past each CRLF of ``data``."""
    b = np.frombuffer(data, dtype=np.uint8)
    return np.flatnonzero((b[:-1] == 13) & (b[1:] == 10)) + 2


def entities_parts(plan: EntitiesReuse, entities: Any) -> Iterator[bytes] | None:
    """The bytes of the new ``entities.csv`` (of ``entities``, an :class:`Entities` whose
    clusters are in file order) in parts: the previous file's lines where the plan says so, the
    others written; None when the previous file cannot be reused (its checksum or its line count
    is not what the index says)."""
    from .._safetext import csv_text

    try:
        old = plan.path.read_bytes()
    except OSError:
        return None
    if hashlib.sha256(old).hexdigest() != plan.digest:
        return None
    ends = _line_ends(old)
    if len(ends) != plan.n_old + 1 or (len(ends) and ends[-1] != len(old)):
        return None  # a cell holds a line break: lines are not rows
    header = csv_text(dataclasses.replace(entities, clusters=entities.clusters.iloc[:0]).to_frame()).encode("utf-8")
    if old[:ends[0]] != header:
        return None
    starts = np.concatenate([[0], ends])  # line k (0: the header) is old[starts[k]:starts[k + 1]]
    fresh = np.flatnonzero(plan.old_row < 0)
    # whole entities: the sizes of the written rows are those of the whole table
    part = dataclasses.replace(entities, clusters=entities.clusters.iloc[fresh]).to_frame()
    text = csv_text(part, header=False).encode("utf-8") if len(fresh) else b""
    new_ends = _line_ends(text)
    if len(new_ends) != len(fresh):
        return None
    new_starts = np.concatenate([[0], new_ends])
    # runs of rows: copied rows whose old rows follow each other, or written rows
    old_row = plan.old_row
    copied = old_row >= 0
    cut = np.flatnonzero((copied[1:] != copied[:-1]) | (copied[1:] & (np.diff(old_row) != 1))) + 1
    bounds = np.concatenate([[0], cut, [len(old_row)]]).tolist()
    fresh_at = np.cumsum(~copied) - (~copied)  # each row's place among the written ones

    def parts() -> Iterator[bytes]:
        yield header
        for a, b in zip(bounds[:-1], bounds[1:]):
            if copied[a]:
                yield old[starts[old_row[a] + 1]:starts[old_row[b - 1] + 2]]
            else:
                yield text[new_starts[fresh_at[a]]:new_starts[fresh_at[b - 1] + 1]]

    return parts()
