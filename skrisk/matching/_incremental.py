"""Incremental matching: new records against the entities of an earlier run, their ids kept.

An incremental run loads and checks the blocking index of an earlier run
(:mod:`skrisk.matching._known_index`), blocks the new records against the new and the known
records only (the known ones from what the index keeps of them: identical keys, word counts and
typed pass keys,
:func:`skrisk.data._known_blocking.block_new_against_known`), scores only pairs that hold a new
record (with the values of the known records they hold, read from the index), and assigns:

- a new record whose matches reach one known entity joins it (its id is kept);
- new records whose matches reach no known entity form new entities, numbered from the next
  free id (an old id is never reused, except by an updated record that was alone in its entity);
- new records whose matches reach two or more known entities are a *merge*: reported in
  ``changes``; with ``merge="apply"`` the known entities become one (the smallest id), with
  ``merge="report"`` they stay apart and the new records join the one of the strongest link;
- a known record id given again with the same values changes nothing; with other values it is
  an *update*: taken out of its entity (its old links reported in ``changes``) and re-matched.

The new index is the old one's arrays with the new records slotted in (their values appended),
so that no known record's values are turned into Python objects or factorised again.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .._threads import n_threads
from ..data._known_blocking import block_new_against_known, identical_keys, typed_keys
from ..data._token_counts import TokenCounts, concat_counts, token_counts
from ..exceptions import DataError
from ..risk._uncertainty import matcher_uncertainty
from ._entities_file import EntitiesReuse, entities_parts, reuse_plan
from ._index_file import INDEX_RECORDS, count_arrays, entity_arrays, record_arrays, texts_to_arrays, token_arrays
from ._known_index import (ENTITIES_FILE, INDEX_MANIFEST, SIDES, KnownRecords, group_counts, index_writers,
                           load_index, model_fingerprint, on_left, side_keys, split_keys)
from ._steps import _model_rules

CHANGES_FILE = "changes.csv"
_MERGE_RULES = ("report", "apply")
_CHANGE_COLUMNS = ["change", "record_id", "entities", "into", "probability", "risk", "reasons", "applied",
                   "detail"]


def _canon(table: pd.DataFrame) -> pd.DataFrame:
    """The table's values as the index writes them: str, a missing value (None, NaN) as ``""``;
    ids as str."""
    out = table.astype(object).where(table.notna(), "").astype(str).astype(object)
    out.index = table.index.astype(str)
    return out


# ---------------------------------------------------------------------------- the result
@dataclass
class IncrementalResult:
    """What an incremental :func:`~skrisk.matching.match` found (a :class:`MatchResult` plus the
    changes, the summary and the updated index)."""

    matches: pd.DataFrame
    entities: Any
    n_candidates: int
    timings: dict[str, float] = field(default_factory=dict)
    blocking: Any = None
    changes: pd.DataFrame | None = None
    summary: dict[str, int] = field(default_factory=dict)
    index_arrays: dict[str, np.ndarray] | None = None
    next_id: int = 0
    fingerprint: str = ""
    entities_reuse: EntitiesReuse | None = None

    def writers(self, model: Any) -> dict:
        """Writers of ``changes.csv`` and the updated index, for ``write_files_together`` (after
        the writer of ``entities.csv``)."""
        from .._fileio import write_csv_export

        changes = self.changes.copy()
        for col in ("probability", "risk"):
            changes[col] = changes[col].round(6)
        return {CHANGES_FILE: lambda p: write_csv_export(p, changes),
                **index_writers(model, self.index_arrays, self.next_id, self.fingerprint)}


def _prepare_new(model: Any, new: pd.DataFrame, right: pd.DataFrame | None, names: tuple[str, str],
                 _prepare_tables: Any) -> pd.DataFrame:
    """The new records, checked, indexed by id (dedup) or by side-prefixed id (``left:<id>``,
    ``right:<id>``: linkage, where either table may be empty or missing)."""
    parts = [t for t in (new, right) if t is not None]
    empty = pd.DataFrame({a: pd.Series(dtype=object) for a in model.attributes})
    if model.task != "link":
        if all(isinstance(t, pd.DataFrame) and len(t) == 0 for t in parts):
            for t, source in zip(parts, names):
                model.check_table(t, source)
            return empty
        parts = [t for t in parts if len(t)]
        left, _ = _prepare_tables(model, parts[0], parts[1] if len(parts) > 1 else None, names)
        return left
    out = []
    for t, side, source in zip((new, right), SIDES, names):
        if t is None:
            continue
        if isinstance(t, pd.DataFrame) and len(t) == 0:
            model.check_table(t, source)
            continue
        prepared, _ = _prepare_tables(model, t, t, (source, source))  # one table's checks
        out.append(prepared.set_axis(side_keys(prepared.index, side)))
    return pd.concat(out) if out else empty


def _score(model: Any, table: pd.DataFrame, pairs: pd.DataFrame, chunk_size: int,
           reasons: bool, n_jobs: Any, tools: dict, scorer: Any = None,
           value_counts: dict | None = None) -> tuple[pd.DataFrame, Any]:
    """The pairs above the model's threshold, with probability, risk (and reasons); and the
    scorer of ``table`` (None when there is no pair). ``value_counts``: per group (``t``; ``l``
    and ``r``), those of all the records, known and new (``exact_tf`` weighs by them)."""
    _feature_names, _reasons = tools["feature_names"], tools["reasons"]

    cols = ["left_id", "right_id", "probability", "risk"] + (["reasons"] if reasons else [])
    if not len(pairs):
        empty = pd.DataFrame({c: pd.Series(dtype=np.float64 if c in ("probability", "risk") else object) for c in cols})
        return empty, scorer
    link = model.task == "link"
    counts = value_counts or {}
    if scorer is None and link:  # each table's records, each with its table's value counts
        left = on_left(table.index)
        scorer = model.scorer(table[left], table[~left], n_jobs=n_jobs,
                              value_counts=(counts["l"], counts["r"]) if counts else None)
    elif scorer is None:
        scorer = model.scorer(table, None, n_jobs=n_jobs, value_counts=counts.get("t"))
    names_f = _feature_names(model) if reasons else []
    kept = []
    for start in range(0, len(pairs), chunk_size):
        scored = scorer.score(pairs.iloc[start:start + chunk_size], risk_of="matches")
        pos = np.flatnonzero(scored.proba > model.threshold)
        if len(pos):
            part = scored.pairs.iloc[pos][["left_id", "right_id"]].reset_index(drop=True)
            part["probability"] = scored.proba[pos]
            part["risk"] = matcher_uncertainty(scored.proba[pos]) if scored.risk is None else scored.risk[pos]
            if reasons:
                part["reasons"] = _reasons(model, scorer, part, names_f)
            kept.append(part)
    if not kept:
        return _score(model, table, pairs.iloc[:0], chunk_size, reasons, n_jobs, tools, scorer, value_counts)
    out = pd.concat(kept, ignore_index=True)
    if not link:  # one table: the smaller id first
        lo, hi = np.minimum(out["left_id"], out["right_id"]), np.maximum(out["left_id"], out["right_id"])
        out["left_id"], out["right_id"] = lo, hi
    return out.sort_values(["probability", "left_id", "right_id"], ascending=[False, True, True],
                           kind="stable", ignore_index=True), scorer


def _candidate_pairs(new: pd.DataFrame, new_typed: np.ndarray | None, known: KnownRecords,
                     kept: np.ndarray | None, rules: Any,
                     attributes: list[str], tokens: TokenCounts | None, n_jobs: Any,
                     link: bool = False) -> tuple[pd.DataFrame, np.ndarray]:
    """Pairs of a new record with a new one or a known one (never two known records; linkage:
    a left record with a right one), and the positions (among the kept known records) of the
    known records they hold. ``new_typed``: the new records' keys of the index's typed passes."""
    from ..data import block

    arc = known.archive
    k_ids = arc.ids if kept is None else arc.ids[kept]
    k_keys = arc.ident if kept is None else arc.ident[kept]
    new_keys = new.index.to_numpy(dtype=object)
    parts, involved = [], [np.zeros(0, np.int64)]

    def against(at: slice, known_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(new ids, known ids) of the new records at ``at`` blocked against the known records at
        ``known_rows``."""
        rows = new.iloc[at]
        if not len(rows) or not len(known_rows):
            return np.zeros(0, object), np.zeros(0, object)
        whole = len(known_rows) == len(k_ids)
        typed = None
        if known.typed is not None:
            typed = (*known.typed, arc.typed_keys(len(known.typed[0])),
                     known_rows if kept is None else kept[known_rows])
        li, ri = block_new_against_known(
            rows, k_ids if whole else k_ids[known_rows], k_keys if whole else k_keys[known_rows], rules,
            attributes=attributes, threads=n_threads(n_jobs), known_typed=typed,
            new_typed=None if new_typed is None else new_typed[:, at],
            known_tokens=None if tokens is None else (tokens if whole else tokens.take(known_rows)),
            known_columns=lambda cols, at: arc.frame(known_rows[at] if kept is None else kept[known_rows[at]], cols))
        involved.append(known_rows[ri])
        return rows.index.to_numpy(dtype=object)[li], k_ids[known_rows[ri]]

    if not link:
        if len(new) >= 2:
            parts.append(block(new, None, rules, n_jobs=n_jobs, identical=True).pairs[["left_id", "right_id"]])
        l_id, r_id = against(slice(None), np.arange(len(k_ids)))
        parts.append(pd.DataFrame({"left_id": l_id, "right_id": r_id}))
    else:  # the known records are in id order: the left ones, then the right ones
        cut = int(on_left(k_ids).sum())
        n_left = int(on_left(new_keys).sum())
        left_new, right_new = new.iloc[:n_left], new.iloc[n_left:]
        if len(left_new) and len(right_new):
            both_new = block(left_new, right_new, rules, n_jobs=n_jobs, identical=True)
            parts.append(both_new.pairs[["left_id", "right_id"]])
        l_id, r_id = against(slice(None, n_left), np.arange(cut, len(k_ids)))
        parts.append(pd.DataFrame({"left_id": l_id, "right_id": r_id}))
        r_id, l_id = against(slice(n_left, None), np.arange(cut))
        parts.append(pd.DataFrame({"left_id": l_id, "right_id": r_id}))
    pairs = pd.concat(parts, ignore_index=True).astype(object)
    return pairs.drop_duplicates(ignore_index=True), np.unique(np.concatenate(involved))


def _slot_in(known_ids: np.ndarray, new_ids: np.ndarray) -> np.ndarray:
    """The rows of ``[known, new]`` (both sorted) in id order: the new ones slotted in."""
    at = np.searchsorted(known_ids, new_ids, side="right") + np.arange(len(new_ids))
    pos = np.ones(len(known_ids) + len(new_ids), dtype=bool)
    pos[at] = False
    order = np.empty(len(pos), dtype=np.int64)
    order[np.flatnonzero(pos)] = np.arange(len(known_ids))
    order[at] = len(known_ids) + np.arange(len(new_ids))
    return order


def _new_index_arrays(known: KnownRecords, kept: np.ndarray | None, new: pd.DataFrame,
                      new_typed: np.ndarray | None, attributes: list[str],
                      entity: np.ndarray, order: np.ndarray, ids: np.ndarray, suspicious: dict[int, str],
                      tokens: TokenCounts | None) -> dict[str, np.ndarray]:
    """The members of the new index: the kept known records' arrays and the (sorted) new
    records' in the rows of ``order``; each attribute's new values appended to its texts
    (``new_typed``: the new records' keys of the typed passes)."""
    arc = known.archive
    arrays: dict[str, np.ndarray] = {}
    arrays["ids_text"], arrays["ids_len"] = texts_to_arrays(ids)

    def rows(a: np.ndarray) -> np.ndarray:
        return a if kept is None else a[kept]

    fresh = record_arrays(new, attributes)  # the new records' values, numbered after the old ones
    for k in range(len(attributes)):
        base = len(arc.arrays[f"a{k}_len"])
        codes = np.where(fresh[f"a{k}_codes"] >= 0, fresh[f"a{k}_codes"] + base, -1)
        arrays[f"a{k}_text"] = np.concatenate([arc.arrays[f"a{k}_text"], fresh[f"a{k}_text"]])
        arrays[f"a{k}_len"] = np.concatenate([arc.arrays[f"a{k}_len"], fresh[f"a{k}_len"]])
        arrays[f"a{k}_codes"] = np.concatenate([rows(arc.arrays[f"a{k}_codes"]), codes])[order].astype(np.int32)
    ident = np.concatenate([rows(arc.ident), identical_keys(new, attributes)])[order]
    arrays.update(entity_arrays(entity, ident, suspicious))
    if known.typed is not None:
        old = arc.typed_keys(len(known.typed[0]))
        arrays["k_hash"] = np.concatenate([old if kept is None else old[:, kept], new_typed],
                                          axis=1)[:, order].ravel()
    if tokens is not None:
        arrays.update(token_arrays(concat_counts(tokens, token_counts(new, tokens.columns), order)))
    return arrays


def _whole_counts(model: Any, known: KnownRecords, new: pd.DataFrame,
                  updated: np.ndarray) -> dict[str, dict[str, pd.Series]]:
    """The value counts of all the records after the run, per group: the kept ones, less those
    of the updated records' old values, plus those of the new records."""
    if not known.counted:
        return {}
    add = group_counts(model, new)
    sub = group_counts(model, known.archive.frame(updated)) if len(updated) else {}
    out = {}
    for g, attrs in known.counted.items():
        out[g] = {}
        for a, kept in known.archive.value_counts(g, attrs).items():
            whole = kept.sub(sub.get(g, {}).get(a, pd.Series(dtype=np.int64)), fill_value=0)
            whole = whole.add(add.get(g, {}).get(a, pd.Series(dtype=np.int64)), fill_value=0)
            out[g][a] = whole[whole > 0].astype(np.int64).sort_index()
    return out


def match_incremental(
    model: Any, new: pd.DataFrame, right: pd.DataFrame | None, previous: Any, *, merge: str = "report",
    chunk_size: int = 50_000, reasons: bool = False, blocking: Any = None,
    names: tuple[str, str] = ("the left table", "the right table"), n_jobs: int | None = -1,
    tools: dict | None = None,
) -> IncrementalResult:
    """Match new records against the entities of an earlier run (see the module's description).

    ``tools`` holds :func:`~skrisk.matching.match`'s helpers ``prepare_tables``,
    ``feature_names`` and ``reasons`` (given by it, so that this module does not import it)."""
    from ._entities import Entities

    if merge not in _MERGE_RULES:
        raise ValueError(f"merge must be one of {_MERGE_RULES}, got {merge!r}.")
    t0 = time.perf_counter()
    timings = dict.fromkeys(("index", "blocking", "scoring", "entities"), 0.0)
    model.check()
    fp = model_fingerprint(model)
    attrs = list(model.attributes)
    new = _prepare_new(model, new, right, names, tools["prepare_tables"])[attrs]
    new = new.set_axis(new.index.astype(str))
    known = load_index(previous, model, fp)
    arc = known.archive
    ids, entity = arc.ids, arc.entity
    timings["index"] = time.perf_counter() - t0
    # ids seen before (the index is in id order: no hash table of a million ids): the same values
    # change nothing, other values are an update
    at = np.searchsorted(ids, new.index.to_numpy(dtype=object)) if len(ids) else np.zeros(len(new), np.intp)
    seen = np.flatnonzero(at < len(ids))
    seen = seen[ids[at[seen]] == new.index.to_numpy(dtype=object)[seen]]
    same = np.zeros(len(seen), dtype=bool)
    if len(seen):
        same = (_canon(new.iloc[seen]) == _canon(arc.frame(at[seen]))).all(axis=1).to_numpy()
    upd_pos = np.sort(at[seen[~same]])
    updated = ids[upd_pos]
    unchanged = int(same.sum())
    new = new.drop(new.index[seen[same]]).sort_index(kind="stable")
    kept = None
    changes: list[dict] = []
    freed: dict[str, int] = {}  # updated record -> its old entity id, when it was alone there
    if len(upd_pos):
        keep = np.ones(len(ids), dtype=bool)
        keep[upd_pos] = False
        kept = np.flatnonzero(keep)
        by_entity = np.argsort(entity, kind="stable")
        sorted_entity = entity[by_entity]
        for p, rid in zip(upd_pos.tolist(), updated):
            old = int(entity[p])
            lo, hi = np.searchsorted(sorted_entity, [old, old + 1])
            mates = sorted(ids[q] for q in by_entity[lo:hi].tolist() if q != p)
            if not mates:
                freed[rid] = old
            changes.append({"change": "update", "record_id": rid, "entities": str(old), "into": "",
                            "probability": np.nan, "risk": np.nan, "reasons": "", "applied": "yes",
                            "detail": "new values, re-matched; old links: " + (";".join(mates) if mates else "none")})
    counts = _whole_counts(model, known, new, upd_pos)
    k_ids = ids if kept is None else ids[kept]
    k_entity = entity if kept is None else entity[kept]
    tokens = known.tokens()
    if tokens is not None and kept is not None:
        tokens = tokens.take(kept)
    rules = _model_rules(model) if blocking is None else blocking
    tick = time.perf_counter()
    link = model.task == "link"
    new_typed = None if known.typed is None else typed_keys(new, *known.typed)
    pairs, involved = _candidate_pairs(new, new_typed, known, kept, rules, attrs, tokens, n_jobs, link)
    timings["blocking"] = time.perf_counter() - tick
    tick = time.perf_counter()
    table = pd.concat([new, arc.frame(involved if kept is None else kept[involved])])
    matches, scorer = _score(model, table, pairs, int(chunk_size), reasons, n_jobs, tools, value_counts=counts)
    del table
    arc.drop_values()  # what is left needs the known records' arrays, not their values
    timings["scoring"] = time.perf_counter() - tick
    tick = time.perf_counter()
    new_ids = new.index.to_numpy(dtype=object)
    n_new = len(new_ids)
    pos_new = pd.Series(np.arange(n_new), index=new_ids)
    lid, rid = matches["left_id"].to_numpy(dtype=object), matches["right_id"].to_numpy(dtype=object)
    l_new = pos_new.reindex(lid).to_numpy()
    r_new = pos_new.reindex(rid).to_numpy()
    to_known = np.isnan(l_new) | np.isnan(r_new)  # one end a known record
    a = np.where(np.isnan(l_new), r_new, l_new).astype(np.int64)  # the new end
    known_end = np.where(np.isnan(l_new), lid, rid)
    ent_hit = np.full(len(matches), -1, dtype=np.int64)
    ent_hit[to_known] = k_entity[involved[pd.Index(k_ids[involved], dtype=object).get_indexer(known_end[to_known])]]
    known_nodes = np.unique(ent_hit[to_known])
    # nodes: the new records, then the known entities their matches reach
    b = np.where(to_known, n_new + np.searchsorted(known_nodes, ent_hit), np.nan_to_num(r_new)).astype(np.int64)
    n_nodes = n_new + len(known_nodes)
    graph = sp.coo_matrix((np.ones(len(a)), (a, b)), shape=(n_nodes, n_nodes))
    comp = connected_components(graph, directed=False)[1] if n_nodes else np.zeros(0, np.int64)
    members_of: dict[int, list[str]] = {}
    for i in range(n_new):
        members_of.setdefault(int(comp[i]), []).append(str(new_ids[i]))
    hits_of: dict[int, list[int]] = {}
    for k, e in enumerate(known_nodes):
        hits_of.setdefault(int(comp[n_new + k]), []).append(int(e))
    prob, risk = matches["probability"].to_numpy(), matches["risk"].to_numpy()
    edge_comp = comp[a] if len(a) else np.zeros(0, np.int64)
    assign: dict[str, int] = {}
    relabel: dict[int, int] = {}
    next_id = known.next_id
    joined = started = merged = n_merges = 0
    # components in the order of their smallest record id: new ids do not depend on the row order
    for c, members in sorted(members_of.items(), key=lambda kv: kv[1][0]):
        hit = sorted(hits_of.get(c, []))
        if not hit:
            old = sorted(freed[r] for r in members if r in freed)
            target = old[0] if old else next_id
            next_id += 0 if old else 1
            started += len(members)
        elif len(hit) == 1:
            target = hit[0]
            joined += len(members)
        else:
            edges = np.flatnonzero((edge_comp == c) & to_known)
            best = {e: int(edges[np.argmax(np.where(ent_hit[edges] == e, prob[edges], -1.0))]) for e in hit}
            weakest = min(best.values(), key=lambda k: (prob[k], k))
            target = hit[0] if merge == "apply" else max(hit, key=lambda e: (prob[best[e]], -e))
            if merge == "apply":
                relabel.update({e: target for e in hit[1:]})
            merged += len(members)
            n_merges += 1
            changes.append({"change": "merge", "record_id": ";".join(members),
                            "entities": ";".join(map(str, hit)), "into": str(target),
                            "probability": float(prob[weakest]), "risk": float(risk[weakest]),
                            "reasons": int(weakest), "applied": "yes" if merge == "apply" else "no",
                            "detail": (f"entities {', '.join(map(str, hit))} linked through the new record(s); "
                                       + (f"merged into {target}" if merge == "apply" else
                                          f"kept apart (merge report), the new record(s) joined {target}"))})
        for r in members:
            assign[r] = target
    for ch in changes:
        if ch["change"] == "update":
            ch["into"] = str(assign.get(ch["record_id"], ""))
    merge_rows = [ch for ch in changes if ch["change"] == "merge"]
    if merge_rows:  # LearnRisk's reasons of each merge's weakest link, the pair a reviewer checks
        weakest_pairs = matches.iloc[[ch["reasons"] for ch in merge_rows]][["left_id", "right_id"]]
        texts = tools["reasons"](model, scorer,
                                 weakest_pairs.reset_index(drop=True), tools["feature_names"](model))
        for ch, text in zip(merge_rows, texts):
            ch["reasons"] = text
    if relabel:
        hit = np.isin(k_entity, list(relabel))
        k_entity = k_entity.copy()
        k_entity[hit] = pd.Series(relabel).reindex(k_entity[hit]).to_numpy(dtype=np.int64)
    order = _slot_in(k_ids, new_ids)
    all_ids = np.concatenate([k_ids, new_ids])[order]
    all_entity = np.concatenate([k_entity, np.array([assign[r] for r in new_ids], dtype=np.int64)])[order]
    present, size = np.unique(all_entity, return_counts=True)
    carried: dict[int, list[str]] = {}
    for e, text in sorted(arc.suspicious.items()):  # the doubts of known entities stay (merged ones joined)
        target = relabel.get(e, e)
        if text and text not in carried.setdefault(target, []):
            carried[target].append(text)
    flagged = np.array(sorted(e for e, t in carried.items() if t), dtype=np.int64)
    flagged = flagged[np.isin(flagged, present)]  # an entity whose records all left (updates) is gone
    keep_sus = {e: "; ".join(carried[e]) for e in flagged.tolist()}
    sus = pd.DataFrame({"entity_id": flagged, "reason": [keep_sus[e] for e in flagged.tolist()],
                        "size": size[np.searchsorted(present, flagged)].astype(np.int64)})
    by_entity = np.argsort(all_entity, kind="stable")  # by entity, then record id
    if link:
        side, record = split_keys(all_ids[by_entity])
        clusters = pd.DataFrame({"entity_id": all_entity[by_entity], "side": side, "record_id": record})
        if len(matches):
            for col in ("left_id", "right_id"):
                matches[col] = split_keys(matches[col])[1]
    else:
        clusters = pd.DataFrame({"entity_id": all_entity[by_entity], "side": "table",
                                 "record_id": all_ids[by_entity]})
    entities = Entities(clusters=clusters, suspicious=sus, task=model.task)
    reuse = reuse_plan(known.folder / ENTITIES_FILE, known.entities_digest, entity, kept,
                       np.where(order < len(k_ids), order, -1), all_entity, by_entity, arc.suspicious, keep_sus)
    change_frame = pd.DataFrame(changes, columns=_CHANGE_COLUMNS).astype({"probability": np.float64,
                                                                           "risk": np.float64})
    change_frame = change_frame.sort_values("risk", ascending=False, kind="stable", na_position="last",
                                            ignore_index=True)
    timings["entities"] = time.perf_counter() - tick
    arrays = _new_index_arrays(known, kept, new, new_typed, attrs, all_entity, order, all_ids, keep_sus, tokens)
    arrays.update(count_arrays(counts, attrs))
    timings["total"] = time.perf_counter() - t0
    summary = {"new_records": int(n_new), "joined": joined, "started": started, "merged": merged,
               "merges": n_merges, "updated": int(len(updated)), "unchanged": unchanged,
               "new_entities": int(next_id - known.next_id)}
    return IncrementalResult(matches=matches, entities=entities, n_candidates=int(len(pairs)), timings=timings,
                             changes=change_frame, summary=summary, index_arrays=arrays, next_id=next_id,
                             fingerprint=fp, entities_reuse=reuse)


# ---------------------------------------------------------------------------- the command line
def read_new(path: Any, *, id_column: str = "id", encoding: str = "utf-8") -> pd.DataFrame:
    """:func:`skrisk.data.read_table`, but a file of a header and no record is an empty table."""
    from ..data import read_table

    try:
        return read_table(path, id_column=id_column, encoding=encoding)
    except DataError as exc:
        error = exc
    import csv

    try:
        with open(path, encoding=encoding or "utf-8", newline="") as f:
            lines = [line for line in f.read().lstrip("\ufeff").splitlines() if line.strip(" ,")]
    except (OSError, UnicodeError, LookupError):
        raise error from None
    header = [h.strip() for h in next(csv.reader(lines))] if len(lines) == 1 else []
    if id_column not in header:
        raise error
    return pd.DataFrame({h: pd.Series(dtype=object) for h in header if h and h != id_column},
                        index=pd.Index([], dtype=object))


def write_incremental(model: Any, result: IncrementalResult, out: Path) -> int:
    """Print the summary of an incremental run and write its files into ``out`` together."""
    from .._fileio import atomic_write_bytes, write_csv_export, write_files_together
    from .._safetext import visible

    s = result.summary
    print(f"{s['new_records']} new record(s) ({s['unchanged']} already known with the same values, "
          f"{s['updated']} update(s)): {s['joined']} joined known entities, {s['started']} started "
          f"{s['new_entities']} new entities, {s['merged']} linked known entities together "
          f"({s['merges']} merge(s), see {CHANGES_FILE}); {result.n_candidates} candidate pairs, "
          f"{len(result.matches)} matches.", flush=True)
    print(f"Timings (s): {json.dumps({k: round(v, 2) for k, v in result.timings.items()})}", flush=True)
    matches = result.matches.copy()
    for col in ("probability", "risk"):
        matches[col] = matches[col].round(6)
    # the previous run's lines of the entities this run left alone, the others written
    parts = None if result.entities_reuse is None else entities_parts(result.entities_reuse, result.entities)
    if parts is None:
        frame = result.entities.to_frame()

        def write_entities(p: Path) -> None:
            write_csv_export(p, frame)
    else:
        def write_entities(p: Path) -> None:
            atomic_write_bytes(p, parts)
    write_files_together(out, {"matches.csv": lambda p: write_csv_export(p, matches),
                               ENTITIES_FILE: write_entities,
                               **result.writers(model)})
    print(visible(f"Wrote {out / 'matches.csv'}, {out / ENTITIES_FILE}, {out / CHANGES_FILE} and the index "
                  f"({out / INDEX_RECORDS}, {out / INDEX_MANIFEST})."), flush=True)
    return 0
