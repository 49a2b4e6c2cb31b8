"""Incremental matching: new records against the entities of an earlier run, their ids kept.

A run of :func:`~skrisk.matching.match` on one table (dedup) leaves, beside ``entities.csv``,
a *blocking index*: ``index_records.npz`` (every record's id and model attributes, the values
blocking and the scorer read, and the word counts of a ``tokens`` rule, so that the known records
are not tokenised again) and ``index.json`` (the manifest: the model's fingerprint, a
checksum of the records and one of the entity assignment of ``entities.csv``, and the next free
entity id). An incremental run loads and checks them, blocks the new records against the new
and the known records only, scores only pairs that hold a new record, and assigns:

- a new record whose matches reach one known entity joins it (its id is kept);
- new records whose matches reach no known entity form new entities, numbered from the next
  free id (an old id is never reused, except by an updated record that was alone in its entity);
- new records whose matches reach two or more known entities are a *merge*: reported in
  ``changes``; with ``merge="apply"`` the known entities become one (the smallest id), with
  ``merge="report"`` they stay apart and the new records join the one of the strongest link;
- a known record id given again with the same values changes nothing; with other values it is
  an *update*: taken out of its entity (its old links reported in ``changes``) and re-matched.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ..exceptions import DataError
from ..risk._uncertainty import matcher_uncertainty
from ..data._token_counts import TokenCounts, concat_counts, known_token_counts, token_counts
from ._index_file import INDEX_RECORDS, read_records, read_tokens, records_bytes, texts_to_arrays
from ._steps import _model_rules

INDEX_MANIFEST = "index.json"
ENTITIES_FILE = "entities.csv"
CHANGES_FILE = "changes.csv"
_FORMAT = "skrisk-match-index"
_FORMAT_VERSION = 3
_MERGE_RULES = ("report", "apply")
_CHANGE_COLUMNS = ["change", "record_id", "entities", "into", "probability", "risk", "reasons", "applied",
                   "detail"]
_FULL_RUN = "run skrisk match on all the records without --entities (a full run) to rebuild it"


# ---------------------------------------------------------------------------- fingerprints
def _digest(lines: Any) -> str:
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode("utf-8", "surrogatepass"))
        h.update(b"\n")
    return h.hexdigest()


def _digest_columns(columns: Any) -> str:
    """SHA-256 of columns of texts: per column, the length of every text then their concatenation
    (unambiguous whatever the texts hold; one pass in C per column)."""
    h = hashlib.sha256()
    for values in columns:
        texts = values if pd.api.types.infer_dtype(values, skipna=False) in ("string", "empty") \
            else [str(v) for v in values]
        blob, lengths = texts_to_arrays(texts)
        h.update(lengths.astype("<i8").tobytes())
        h.update(blob.tobytes())
    return h.hexdigest()


def _canon(table: pd.DataFrame) -> pd.DataFrame:
    """The table's values as the index writes them: str, a missing value (None, NaN) as ``""``;
    ids as str."""
    out = table.astype(object).where(table.notna(), "").astype(str).astype(object)
    out.index = table.index.astype(str)
    return out


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def assignment_checksum(entities: pd.DataFrame) -> str:
    """SHA-256 of the (record id, entity id) assignment of an entities frame, row by row in its
    order (``entities.csv`` is written sorted by entity, side and record)."""
    rec = entities["record_id"].astype(str).to_numpy(dtype=object)
    ent = entities["entity_id"].astype(str).to_numpy(dtype=object)
    return _digest_columns([rec, ent])


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
    """The index of an earlier run, checked: its records, their entities and the next free id."""

    records: pd.DataFrame
    entities: pd.DataFrame
    next_id: int
    folder: Path
    tokens_columns: list[str] | None = None

    def tokens(self) -> TokenCounts | None:
        """The word counts of the records kept in the index (read, and checked, at each call, the
        first before blocking: not held, so that blocking can let their memory go)."""
        if self.tokens_columns is None:
            return None
        return read_tokens(self.folder / INDEX_RECORDS, self.tokens_columns, self.records.index, _FULL_RUN)


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
        raise DataError(f"{path} is not a readable manifest ({exc}); {_FULL_RUN}.") from None


def load_index(path: Any, model: Any, fingerprint: str | None = None) -> KnownRecords:
    """Read and check the index of an earlier run's folder (or its ``entities.csv``).

    Raises
    ------
    DataError
        A file is missing or unreadable, the manifest is not skrisk's, the model is not the one
        that built the index, the records were changed, or the entity ids of ``entities.csv``
        were edited; the message names the file and the fix.
    """
    from .._fileio import read_csv_export

    folder = _index_folder(path)
    man_path, rec_path, ent_path = folder / INDEX_MANIFEST, folder / INDEX_RECORDS, folder / ENTITIES_FILE
    missing = [p for p in (man_path, ent_path) if not p.is_file()]
    if missing:
        raise DataError(f"{missing[0]} is missing: {folder} holds no blocking index of an earlier run; {_FULL_RUN}.")
    man = _json_or_error(man_path)
    keys = ("model", "records", "entities", "next_entity_id", "n_records")
    if not isinstance(man, dict) or man.get("format") != _FORMAT or not all(k in man for k in keys):
        raise DataError(f"{man_path} is not the manifest of a skrisk match index; {_FULL_RUN}.")
    if man.get("format_version") != _FORMAT_VERSION:
        raise DataError(f"{man_path} has format_version {man.get('format_version')!r}, this skrisk reads "
                        f"{_FORMAT_VERSION}; {_FULL_RUN}.")
    if not rec_path.is_file():
        raise DataError(f"{rec_path} is missing: {folder} holds no blocking index of an earlier run; {_FULL_RUN}.")
    fp = fingerprint or model_fingerprint(model)
    if man["model"] != fp:
        raise DataError(f"{man_path}: the index was built with another model (or another threshold or "
                        "blocking) than the one given: match with the model of that run, or " + _FULL_RUN + ".")
    attrs = list(model.attributes)
    if man.get("attributes") != attrs:
        raise DataError(f"{man_path} lists the attributes {man.get('attributes')!r}, not the model's {attrs}: "
                        f"the file was changed; {_FULL_RUN}.")
    if _file_digest(rec_path) != man["records"]:
        raise DataError(f"{rec_path} does not match its checksum in {man_path}: the index was changed "
                        f"(tampered or truncated); restore the files of that run, or {_FULL_RUN}.")
    rec = read_records(rec_path, attrs, _FULL_RUN)
    if len(rec) != man["n_records"]:
        raise DataError(f"{rec_path} holds {len(rec)} records, its manifest {man_path} says {man['n_records']!r}: "
                        f"restore the files of that run, or {_FULL_RUN}.")
    cols, expected = man.get("tokens_columns"), tokens_columns(model)
    if cols != expected:
        raise DataError(f"{man_path}: its tokens_columns {cols!r} are not the columns of the model's tokens rule "
                        f"({expected!r}): the file was changed; {_FULL_RUN}.")
    ent = read_csv_export(ent_path)
    need = ["entity_id", "side", "record_id"]
    if not set(need) <= set(ent.columns):
        raise DataError(f"{ent_path} lacks the columns {need}: not the entities.csv of skrisk match; {_FULL_RUN}.")
    if assignment_checksum(ent) != man["entities"]:
        raise DataError(f"{ent_path}: its entity ids (or records) differ from the ones the index was written "
                        f"with ({man_path}): entities.csv was edited. Restore it, or {_FULL_RUN}.")
    ent = ent.assign(entity_id=ent["entity_id"].astype(np.int64))
    if "suspicious" not in ent.columns:
        ent["suspicious"] = ""
    ent = ent[["entity_id", "side", "record_id", "suspicious"]].reset_index(drop=True)
    if not isinstance(man["next_entity_id"], int) or (len(ent) and man["next_entity_id"] <= ent["entity_id"].max()):
        raise DataError(f"{man_path}: next_entity_id {man['next_entity_id']!r} is not above every entity id; "
                        f"{_FULL_RUN}.")
    return KnownRecords(records=rec, entities=ent, next_id=int(man["next_entity_id"]), folder=folder,
                        tokens_columns=cols)


def index_writers(model: Any, records: pd.DataFrame, entities: pd.DataFrame, next_id: int,
                  fingerprint: str | None = None, tokens: TokenCounts | None = None) -> dict:
    """Writers of ``index_records.npz`` and ``index.json`` for :func:`skrisk._fileio.write_files_together`.

    ``records`` holds the model's attributes indexed by record id; ``entities`` is the frame
    written as ``entities.csv`` (``entity_id``, ``record_id`` ...); ``tokens`` the word counts of
    ``records`` in id order, when known (else counted here, for a model with a tokens rule).
    """
    from .._fileio import atomic_write_bytes

    attrs = list(model.attributes)
    rec = records[attrs]
    rec = rec.set_axis(rec.index.astype(str))
    if not rec.index.is_monotonic_increasing:  # an incremental run gives them in order
        rec = rec.sort_index(kind="stable")
    cols = tokens_columns(model)
    if tokens is not None and (tokens.columns != cols or not tokens.ids.equals(rec.index)):
        raise ValueError("index_writers: the word counts given are not those of these records")  # a bug
    if cols is not None and tokens is None:
        tokens = token_counts(rec, cols)
    data = records_bytes(rec, attrs, tokens)
    manifest = {
        "format": _FORMAT, "format_version": _FORMAT_VERSION,
        "model": fingerprint or model_fingerprint(model),
        "records": hashlib.sha256(data).hexdigest(), "n_records": int(len(rec)),
        "entities": assignment_checksum(entities), "next_entity_id": int(next_id),
        "attributes": attrs, "tokens_columns": cols,
    }
    return {
        INDEX_RECORDS: lambda p: atomic_write_bytes(p, data),
        INDEX_MANIFEST: lambda p: atomic_write_bytes(p, (json.dumps(manifest, indent=1) + "\n").encode("utf-8")),
    }


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
    records: pd.DataFrame | None = None
    next_id: int = 0
    fingerprint: str = ""
    tokens: TokenCounts | None = None

    def writers(self, model: Any, entities_frame: pd.DataFrame) -> dict:
        """Writers of ``changes.csv`` and the updated index, for ``write_files_together``."""
        from .._fileio import write_csv_export

        changes = self.changes.copy()
        for col in ("probability", "risk"):
            changes[col] = changes[col].round(6)
        return {CHANGES_FILE: lambda p: write_csv_export(p, changes),
                **index_writers(model, self.records, entities_frame, self.next_id, self.fingerprint, self.tokens)}


def _prepare_new(model: Any, new: pd.DataFrame, right: pd.DataFrame | None, names: tuple[str, str],
                 _prepare_tables: Any) -> pd.DataFrame:
    if model.task != "dedup":
        raise DataError("Incremental matching (entities=, --entities) needs a dedup model (one table); "
                        "match two tables with a full run, without --entities.")
    parts = [t for t in (new, right) if t is not None]
    if all(isinstance(t, pd.DataFrame) and len(t) == 0 for t in parts):
        for t, source in zip(parts, names):
            model.check_table(t, source)
        return pd.DataFrame({a: pd.Series(dtype=object) for a in model.attributes})
    parts = [t for t in parts if len(t)]
    left, _ = _prepare_tables(model, parts[0], parts[1] if len(parts) > 1 else None, names)
    return left


def _score(model: Any, table: pd.DataFrame, pairs: pd.DataFrame, chunk_size: int,
           reasons: bool, n_jobs: Any, tools: dict, scorer: Any = None) -> tuple[pd.DataFrame, Any]:
    """The pairs above the model's threshold, with probability, risk (and reasons); and the
    scorer of ``table`` (None when there is no pair)."""
    _feature_names, _reasons = tools["feature_names"], tools["reasons"]

    cols = ["left_id", "right_id", "probability", "risk"] + (["reasons"] if reasons else [])
    if not len(pairs):
        empty = pd.DataFrame({c: pd.Series(dtype=np.float64 if c in ("probability", "risk") else object) for c in cols})
        return empty, scorer
    scorer = model.scorer(table, None, n_jobs=n_jobs) if scorer is None else scorer
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
        return _score(model, table, pairs.iloc[:0], chunk_size, reasons, n_jobs, tools, scorer)
    out = pd.concat(kept, ignore_index=True)
    lo, hi = np.minimum(out["left_id"], out["right_id"]), np.maximum(out["left_id"], out["right_id"])
    out["left_id"], out["right_id"] = lo, hi
    return out.sort_values(["probability", "left_id", "right_id"], ascending=[False, True, True],
                           kind="stable", ignore_index=True), scorer


def _candidate_pairs(new: pd.DataFrame, known: pd.DataFrame, rules: Any, n_jobs: Any) -> pd.DataFrame:
    """Pairs of a new record with a new one or a known one (never two known records)."""
    from ..data import block

    parts = []
    if len(new) >= 2:
        parts.append(block(new, None, rules, n_jobs=n_jobs, identical=True).pairs[["left_id", "right_id"]])
    if len(new) and len(known):
        parts.append(block(new, known, rules, n_jobs=n_jobs, identical=True, one_way=True)
                     .pairs[["left_id", "right_id"]])
    if not parts:
        return pd.DataFrame({"left_id": pd.Series(dtype=object), "right_id": pd.Series(dtype=object)})
    pairs = pd.concat(parts, ignore_index=True)
    return pairs.drop_duplicates(ignore_index=True)


def _in_id_order(known: pd.DataFrame, new: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """The known records (in id order, as the index holds them) and the new ones (sorted) in id
    order, the new ones slotted in (no sort of the known records); and the rows of
    ``[known, sorted new]`` in that order."""
    known = known.set_axis(known.index.astype(str))
    new = new.set_axis(new.index.astype(str)).sort_index(kind="stable")
    both = pd.concat([known, new])
    if not known.index.is_monotonic_increasing:  # pragma: no cover - an index is written sorted
        order = np.argsort(both.index.to_numpy(dtype=object), kind="stable")
        return both.iloc[order], order
    at = np.searchsorted(known.index.to_numpy(dtype=object), new.index.to_numpy(dtype=object),
                         side="right") + np.arange(len(new))
    pos = np.ones(len(both), dtype=bool)
    pos[at] = False
    order = np.empty(len(both), dtype=np.int64)
    order[np.flatnonzero(pos)] = np.arange(len(known))
    order[at] = len(known) + np.arange(len(new))
    return both.iloc[order], order


def _index_tokens(known: TokenCounts | None, kept: pd.DataFrame, new: pd.DataFrame,
                  order: np.ndarray) -> TokenCounts | None:
    """The word counts of the new index's records: the kept known records' (from the old index)
    and the new ones', in the rows of ``order`` (:func:`_in_id_order`)."""
    if known is None:
        return None
    if len(kept) != len(known.ids):  # updated records leave
        known = known.take(known.ids.get_indexer(kept.index.astype(str)))
    new_sorted = new.set_axis(new.index.astype(str)).sort_index(kind="stable")
    both = concat_counts(known, token_counts(new_sorted, known.columns))
    counts = both.counts[order]
    return TokenCounts(list(known.columns), both.ids[order], both.vocab, counts)


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
    new = _prepare_new(model, new, right, names, tools["prepare_tables"])
    known = load_index(previous, model, fp)
    timings["index"] = time.perf_counter() - t0
    rec, ent = known.records, known.entities
    entity_of = pd.Series(ent["entity_id"].to_numpy(), index=ent["record_id"].astype(str).to_numpy())
    # ids seen before: the same values change nothing, other values are an update
    seen = new.index.intersection(rec.index)
    same = (_canon(new.loc[seen]) == _canon(rec.loc[seen, list(model.attributes)])).all(axis=1)
    updated = same.index[~same.to_numpy()]
    unchanged = int(same.sum())
    new = new.drop(same.index[same.to_numpy()])
    kept_known = rec.drop(updated)
    changes: list[dict] = []
    freed: dict[str, int] = {}  # updated record -> its old entity id, when it was alone there
    for rid in sorted(updated):
        old = int(entity_of[rid])
        mates = sorted(r for r in entity_of.index[entity_of.to_numpy() == old] if r != rid)
        if not mates:
            freed[rid] = old
        changes.append({"change": "update", "record_id": rid, "entities": str(old), "into": "",
                        "probability": np.nan, "risk": np.nan, "reasons": "", "applied": "yes",
                        "detail": "new values, re-matched; old links: " + (";".join(mates) if mates else "none")})
    entity_of = entity_of.drop(updated)
    rules = _model_rules(model) if blocking is None else blocking
    tick = time.perf_counter()
    with known_token_counts(known.tokens()):  # the known records are not tokenised again
        pairs = _candidate_pairs(new, kept_known, rules, n_jobs)
    timings["blocking"] = time.perf_counter() - tick
    tick = time.perf_counter()
    involved = pd.Index(pd.unique(pairs[["left_id", "right_id"]].to_numpy().ravel())) if len(pairs) else pd.Index([])
    table = pd.concat([new, kept_known.loc[kept_known.index.intersection(involved)]])
    matches, scorer = _score(model, table, pairs, int(chunk_size), reasons, n_jobs, tools)
    timings["scoring"] = time.perf_counter() - tick
    tick = time.perf_counter()
    new_ids = np.sort(new.index.to_numpy(dtype=object))
    n_new = len(new_ids)
    pos_new = pd.Series(np.arange(n_new), index=new_ids)
    lid, rid = matches["left_id"].to_numpy(dtype=object), matches["right_id"].to_numpy(dtype=object)
    l_new = pos_new.reindex(lid).to_numpy()
    r_new = pos_new.reindex(rid).to_numpy()
    to_known = np.isnan(l_new) | np.isnan(r_new)  # one end a known record
    a = np.where(np.isnan(l_new), r_new, l_new).astype(np.int64)  # the new end
    known_end = np.where(np.isnan(l_new), lid, rid)
    ent_hit = np.full(len(matches), -1, dtype=np.int64)
    ent_hit[to_known] = entity_of.reindex(known_end[to_known]).to_numpy(dtype=np.int64)
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
    old_ent = ent[~ent["record_id"].isin(updated)].copy()
    if relabel:
        old_ent["entity_id"] = old_ent["entity_id"].map(lambda e: relabel.get(e, e)).astype(np.int64)
    flagged = old_ent[old_ent["suspicious"] != ""]
    carried = flagged.groupby("entity_id")["suspicious"].agg(lambda s: "; ".join(pd.unique(s)))
    add = pd.DataFrame({"entity_id": np.array([assign[r] for r in new_ids], dtype=np.int64),
                        "side": "table", "record_id": new_ids})
    clusters = pd.concat([old_ent[["entity_id", "side", "record_id"]], add], ignore_index=True)
    records, order = _in_id_order(kept_known, new[list(model.attributes)])
    # by entity, then record id (one side): an integer key of the id's place among all the records
    place = records.index.get_indexer(clusters["record_id"].astype(str).to_numpy(dtype=object))
    by_entity = np.argsort(clusters["entity_id"].to_numpy(dtype=np.int64) * len(records) + place, kind="stable")
    clusters = clusters.iloc[by_entity].reset_index(drop=True)
    size = clusters.groupby("entity_id")["record_id"].size()
    sus = [(int(e), r, int(size[e])) for e, text in carried.items() if e in size.index
           for r in ([text] if text else [])]
    sus = pd.DataFrame(sus, columns=["entity_id", "reason", "size"]).astype({"entity_id": np.int64, "size": np.int64})
    entities = Entities(clusters=clusters, suspicious=sus, task="dedup")
    change_frame = pd.DataFrame(changes, columns=_CHANGE_COLUMNS).astype({"probability": np.float64,
                                                                           "risk": np.float64})
    change_frame = change_frame.sort_values("risk", ascending=False, kind="stable", na_position="last",
                                            ignore_index=True)
    timings["entities"] = time.perf_counter() - tick
    timings["total"] = time.perf_counter() - t0
    summary = {"new_records": int(len(new_ids)), "joined": joined, "started": started, "merged": merged,
               "merges": n_merges, "updated": int(len(updated)), "unchanged": unchanged,
               "new_entities": int(next_id - known.next_id)}
    return IncrementalResult(matches=matches, entities=entities, n_candidates=int(len(pairs)), timings=timings,
                             changes=change_frame, summary=summary, records=records, next_id=next_id,
                             fingerprint=fp, tokens=_index_tokens(known.tokens(), kept_known, new, order))


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


def full_run_index(model: Any, left: pd.DataFrame, right: pd.DataFrame | None, entities: pd.DataFrame) -> dict:
    """Writers of the blocking index of a full run of a dedup model (none for linkage)."""
    if model.task != "dedup":
        return {}
    tables = [t for t in (left, right) if t is not None]
    records = pd.concat([t[list(model.attributes)] for t in tables])
    records.index = records.index.astype(str)
    next_id = int(entities["entity_id"].max()) + 1 if len(entities) else 0
    return index_writers(model, records, entities, next_id)


def write_incremental(model: Any, result: IncrementalResult, out: Path) -> int:
    """Print the summary of an incremental run and write its files into ``out`` together."""
    from .._fileio import write_csv_export, write_files_together
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
    entities = result.entities.to_frame()
    write_files_together(out, {"matches.csv": lambda p: write_csv_export(p, matches),
                               ENTITIES_FILE: lambda p: write_csv_export(p, entities),
                               **result.writers(model, entities)})
    print(visible(f"Wrote {out / 'matches.csv'}, {out / ENTITIES_FILE}, {out / CHANGES_FILE} and the index "
                  f"({out / INDEX_RECORDS}, {out / INDEX_MANIFEST})."), flush=True)
    return 0
