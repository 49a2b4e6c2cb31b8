"""Entities from matches: clusters of the match graph, one-to-one linkage, suspicious clusters, metrics.

Deduplication: the entities are the connected components of the graph whose nodes are records
and whose edges are the predicted matches (``probability > threshold``), found with
:func:`scipy.sparse.csgraph.connected_components`. Transitive closure can chain distinct
entities together (a ~ b ~ c although a !~ c), so clusters are checked and the doubtful ones are
reported, not split: the decision stays with a person.

Linkage: the same components over a bipartite graph (left and right records); with
``one_to_one=True`` every record keeps at most one match: a maximum-weight bipartite matching of
the predicted matches (weight = probability), solved exactly per connected component by
:func:`scipy.optimize.linear_sum_assignment` and greedily (by descending probability) for
components too large for a dense assignment matrix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np
import pandas as pd

from ..exceptions import DataError
from ..matchers._threshold import MATCH_THRESHOLD

__all__ = ["Entities", "cluster_entities", "pairwise_scores", "cluster_scores"]

#: Largest ``n_left * n_right`` of a component solved exactly by ``linear_sum_assignment``
#: (a dense float64 matrix of this many cells, 32 MB); larger components are matched greedily.
_MAX_ASSIGNMENT_CELLS = 4_000_000
_SIDES = {"dedup": ("table", "table"), "link": ("left", "right")}


@dataclass
class Entities:
    """Records grouped into entities by :func:`cluster_entities`.

    Attributes
    ----------
    clusters : pandas.DataFrame
        One row per record: ``entity_id`` (int, 0, 1, ... in order of each entity's first
        record), ``side`` (``"table"`` for dedup, ``"left"``/``"right"`` for linkage) and
        ``record_id`` (str). Sorted by entity, then side, then record id.
    suspicious : pandas.DataFrame
        One row per doubt about an entity: ``entity_id``, ``reason`` (a sentence starting with
        ``size``, ``non-match inside`` or ``chain``) and ``size`` (records in the entity).
    task : {"dedup", "link"}
        The task the matches came from.
    """

    clusters: pd.DataFrame
    suspicious: pd.DataFrame
    task: str = "dedup"

    @property
    def n_entities(self) -> int:
        """Number of entities (singletons included)."""
        return int(self.clusters["entity_id"].nunique())

    def to_frame(self) -> pd.DataFrame:
        """One row per record, for ``entities.csv``.

        Returns
        -------
        pandas.DataFrame
            ``entity_id``, ``side``, ``record_id``, ``entity_size`` and ``suspicious`` (the
            reasons joined by ``"; "``, empty when the entity raised no doubt).
        """
        out = self.clusters.copy()
        out["entity_size"] = out.groupby("entity_id")["record_id"].transform("size").astype(np.int64)
        reasons = self.suspicious.groupby("entity_id")["reason"].agg("; ".join)
        out["suspicious"] = out["entity_id"].map(reasons).fillna("")
        return out.reset_index(drop=True)

    def pairs(self) -> pd.DataFrame:
        """The matching pairs the entities imply: ``left_id``, ``right_id``.

        Dedup: every unordered pair of records of one entity, smaller id first. Linkage: every
        (left record, right record) pair of one entity.
        """
        rows: list[tuple[str, str]] = []
        for _, grp in self.clusters.groupby("entity_id", sort=True):
            if self.task == "dedup":
                ids = sorted(grp["record_id"])
                rows += [(a, b) for i, a in enumerate(ids) for b in ids[i + 1:]]
            else:
                lids = grp.loc[grp["side"] == "left", "record_id"].tolist()
                rids = grp.loc[grp["side"] == "right", "record_id"].tolist()
                rows += [(a, b) for a in lids for b in rids]
        return pd.DataFrame(rows, columns=["left_id", "right_id"], dtype=object)

    def __repr__(self) -> str:
        sizes = self.clusters.groupby("entity_id").size()
        return (
            f"Entities(task={self.task!r}, records={len(self.clusters)}, entities={self.n_entities}, "
            f"multi-record={int((sizes > 1).sum())}, largest={int(sizes.max()) if len(sizes) else 0}, "
            f"suspicious={self.suspicious['entity_id'].nunique()})"
        )


# ---------------------------------------------------------------------------- input checks
def _check_task(task: object) -> str:
    if task not in _SIDES:
        raise ValueError(f"task must be 'dedup' (one table) or 'link' (two tables), got {task!r}.")
    return str(task)


def _check_matches(matches: object, task: str, threshold: float) -> pd.DataFrame:
    if not isinstance(matches, pd.DataFrame):
        raise TypeError(
            f"matches must be a DataFrame with columns left_id, right_id, probability, got {type(matches).__name__}."
        )
    missing = [c for c in ("left_id", "right_id", "probability") if c not in matches.columns]
    if missing:
        raise DataError(
            f"matches lacks the column(s) {missing}: it needs left_id, right_id and probability (one row "
            f"per scored pair); its columns are {list(matches.columns)}."
        )
    out = pd.DataFrame({"left_id": matches["left_id"], "right_id": matches["right_id"]})
    for col in ("left_id", "right_id"):
        bad = np.flatnonzero(pd.isna(out[col]).to_numpy())
        if len(bad):
            raise DataError(
                f"matches: {col} is missing at row {int(bad[0])} ({len(bad)} in all): every pair needs both ids."
            )
        out[col] = out[col].astype(str)
    p = pd.to_numeric(matches["probability"], errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(p) | (p < 0) | (p > 1))
    if len(bad):
        raise DataError(
            f"matches: probability {matches['probability'].iloc[int(bad[0])]!r} at row {int(bad[0])} is not a number "
            f"in [0, 1] ({len(bad)} such rows)."
        )
    out["probability"] = p
    if not (isinstance(threshold, (int, float, np.floating)) and 0.0 <= float(threshold) < 1.0):
        raise ValueError(f"threshold must be a number in [0, 1), got {threshold!r}.")
    if task == "dedup":
        lid, rid = out["left_id"].to_numpy(dtype=object), out["right_id"].to_numpy(dtype=object)
        same = np.flatnonzero(lid == rid)
        if len(same):
            raise DataError(
                f"matches: row {int(same[0])} pairs record {lid[same[0]]!r} with itself ({len(same)} such rows); "
                "a dedup pair joins two different records. Remove those rows (or pass task='link')."
            )
        swap = lid > rid
        out["left_id"], out["right_id"] = np.where(swap, rid, lid), np.where(swap, lid, rid)
    dup = out.duplicated(["left_id", "right_id"], keep=False).to_numpy()
    if dup.any():
        rows = np.flatnonzero(dup)[:2]
        raise DataError(
            f"matches: rows {int(rows[0])} and {int(rows[1])} score the same pair "
            f"({out['left_id'].iloc[rows[0]]!r}, {out['right_id'].iloc[rows[0]]!r})"
            + (" (in either order: one table)" if task == "dedup" else "")
            + ". Keep one row per pair."
        )
    return out


def _records(records: object, task: str) -> tuple[list[str], list[str]]:
    """Extra record ids (singletons when unmatched): ``(left ids, right ids)``."""
    if records is None:
        return [], []
    if task == "dedup":
        return [str(r) for r in records], []  # type: ignore[union-attr]
    try:
        lids, rids = records  # type: ignore[misc]
    except (TypeError, ValueError):
        raise TypeError("For task='link', records must be a pair (left ids, right ids).") from None
    return [str(r) for r in lids], [str(r) for r in rids]


# ---------------------------------------------------------------------------- one-to-one
def _greedy_one_to_one(li: np.ndarray, ri: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Edges kept by the greedy matching: highest probability first, each node used once."""
    order = np.lexsort((ri, li, -p))
    used_l, used_r, keep = set(), set(), np.zeros(len(p), dtype=bool)
    for e in order:
        a, b = int(li[e]), int(ri[e])
        if a in used_l or b in used_r:
            continue
        used_l.add(a)
        used_r.add(b)
        keep[e] = True
    return keep


def _components(rows: np.ndarray, cols: np.ndarray, n_nodes: int) -> np.ndarray:
    """The connected component of each of ``n_nodes`` nodes of the undirected graph of these edges."""
    import scipy.sparse as sp  # SciPy loads with the model's estimators, after blocking started
    from scipy.sparse.csgraph import connected_components

    graph = sp.coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n_nodes, n_nodes))
    return connected_components(graph, directed=False)[1]


def _one_to_one(li: np.ndarray, ri: np.ndarray, p: np.ndarray, n_left: int, n_right: int) -> np.ndarray:
    """Mask of the edges kept by a maximum-weight one-to-one matching (exact per small component)."""
    keep = np.zeros(len(p), dtype=bool)
    if len(p) == 0:
        return keep
    comp = _components(li, n_left + ri, n_left + n_right)
    edge_comp = comp[li]
    order = np.argsort(edge_comp, kind="stable")
    bounds = np.flatnonzero(np.diff(edge_comp[order])) + 1
    for edges in np.split(order, bounds):
        if len(edges) == 1:
            keep[edges] = True
            continue
        ul, l_local = np.unique(li[edges], return_inverse=True)
        ur, r_local = np.unique(ri[edges], return_inverse=True)
        if len(ul) * len(ur) > _MAX_ASSIGNMENT_CELLS:
            keep[edges] = _greedy_one_to_one(li[edges], ri[edges], p[edges])
            continue
        weight = np.zeros((len(ul), len(ur)))
        weight[l_local, r_local] = p[edges]
        from scipy.optimize import linear_sum_assignment

        rows, cols = linear_sum_assignment(weight, maximize=True)
        chosen = {(int(r), int(c)) for r, c in zip(rows, cols) if weight[r, c] > 0}
        keep[edges] = [(int(a), int(b)) in chosen for a, b in zip(l_local, r_local)]
    return keep


# ---------------------------------------------------------------------------- public
#: the default confident-non-match cut of :func:`cluster_entities` (lowered to a smaller threshold)
DEFAULT_NON_MATCH_BELOW = 0.2


def cluster_entities(
    matches: pd.DataFrame,
    *,
    task: str = "dedup",
    one_to_one: bool = False,
    max_size: int = 50,
    threshold: float = MATCH_THRESHOLD,
    records: Iterable[object] | tuple[Iterable[object], Iterable[object]] | None = None,
    score_fn: Callable[[pd.DataFrame], np.ndarray] | None = None,
    non_match_below: float | None = None,
) -> Entities:
    """Group matched records into entities and report the doubtful ones.

    Parameters
    ----------
    matches : pandas.DataFrame
        Scored pairs: ``left_id``, ``right_id``, ``probability``. A pair with ``probability >
        threshold`` is a match (an edge of the match graph); pairs at or below it may be
        included and are then used to spot suspicious clusters. Dedup pairs may be given in
        either order (one row per pair).
    task : {"dedup", "link"}, default="dedup"
        ``"dedup"``: both ids name records of one table. ``"link"``: ``left_id`` names a record
        of the left table and ``right_id`` one of the right table (the same id on both sides is
        two records).
    one_to_one : bool, default=False
        Linkage only: keep at most one match per record, the assignment of largest total
        probability (:func:`scipy.optimize.linear_sum_assignment` per connected component; a
        greedy matching by descending probability for components whose dense matrix would
        exceed 4 million cells). Use it for two tables that are each free of duplicates.
    max_size : int, default=50
        Entities with more records are reported as suspicious (``size``).
    threshold : float, default=MATCH_THRESHOLD
        A pair is a match when its probability is strictly above it (as
        ``match_labels``).
    records : iterable of ids, or (left ids, right ids) for linkage, optional
        Every record to assign: those in no match become one-record entities. By default only
        the records named in ``matches`` are assigned.
    score_fn : callable, optional
        ``score_fn(pairs) -> probabilities`` for a DataFrame of ``left_id``, ``right_id``: used to
        score the ends of a chain when ``matches`` does not hold that pair.
    non_match_below : float, optional
        A scored pair at or below this probability is a *confident* non-match: one inside an
        entity makes it suspicious (``non-match inside``). At most ``threshold``. By default
        ``min(0.2, threshold)``, so a low threshold chosen for recall lowers it too.

    Returns
    -------
    Entities
        ``clusters`` (one row per record) and ``suspicious``.

    Notes
    -----
    An entity is *suspicious* when

    - ``size``: it has more than ``max_size`` records;
    - ``non-match inside``: ``matches`` holds a pair of two of its records with probability at or
      below ``non_match_below`` (the matcher is confident they differ, the transitive closure
      joined them). A low cut keeps the flags on entities that truly mix people and drops most
      of those where a weak matcher is merely unsure of a true pair;
    - ``chain``: its match graph has diameter 3 or more (two records joined only through two or
      more intermediate records) and the pair at the ends of a longest shortest path is not a
      match: scored at or below ``threshold`` (by ``matches``, else by ``score_fn``), or not
      scored at all (blocking did not even pair them, and no ``score_fn`` was given). Diameters
      are computed for entities of 4 to ``max_size`` records (cost ``O(size^3)`` each).

    With ``one_to_one`` every linkage entity holds one record or one left-right pair, so no
    entity is suspicious.

    Examples
    --------
    >>> import pandas as pd
    >>> from skrisk.matching import cluster_entities
    >>> m = pd.DataFrame({"left_id": ["a", "b", "c", "a"], "right_id": ["b", "c", "d", "d"],
    ...                   "probability": [0.9, 0.8, 0.95, 0.1]})
    >>> ent = cluster_entities(m, records=["a", "b", "c", "d", "e"])
    >>> ent.clusters.groupby("entity_id")["record_id"].apply(list).tolist()
    [['a', 'b', 'c', 'd'], ['e']]
    >>> ent.suspicious["reason"].str.split(":").str[0].tolist()
    ['non-match inside', 'chain']
    """
    task = _check_task(task)
    if not isinstance(one_to_one, (bool, np.bool_)):
        raise TypeError(f"one_to_one must be True or False, got {one_to_one!r}.")
    if one_to_one and task != "link":
        raise ValueError(
            "one_to_one=True needs task='link' (two tables): within one table an entity may hold many "
            "records, so a one-to-one constraint does not apply to deduplication."
        )
    if isinstance(max_size, bool) or not isinstance(max_size, (int, np.integer)) or max_size < 2:
        raise ValueError(f"max_size must be an integer of at least 2, got {max_size!r}.")
    m = _check_matches(matches, task, threshold)
    if non_match_below is None:
        non_match_below = min(DEFAULT_NON_MATCH_BELOW, float(threshold))
    if not (isinstance(non_match_below, (int, float, np.floating)) and 0.0 <= non_match_below <= threshold):
        raise ValueError(f"non_match_below must be a number from 0 to threshold={threshold}, got {non_match_below!r}.")
    extra_l, extra_r = _records(records, task)
    # nodes: (side, id) keys; dedup uses one namespace
    if task == "dedup":
        ids = pd.Index(pd.unique(np.concatenate([m["left_id"], m["right_id"], np.asarray(extra_l, dtype=object)])))
        ids = pd.Index(sorted(ids.astype(str)))
        li = ids.get_indexer(m["left_id"])
        ri = ids.get_indexer(m["right_id"])
        sides = np.full(len(ids), "table", dtype=object)
        n_nodes, offset = len(ids), 0
        node_ids = ids.to_numpy(dtype=object)
    else:
        lids = pd.Index(sorted(set(m["left_id"]) | set(extra_l)))
        rids = pd.Index(sorted(set(m["right_id"]) | set(extra_r)))
        li = lids.get_indexer(m["left_id"])
        ri_local = rids.get_indexer(m["right_id"])
        offset = len(lids)
        ri = ri_local + offset
        n_nodes = len(lids) + len(rids)
        sides = np.array(["left"] * len(lids) + ["right"] * len(rids), dtype=object)
        node_ids = np.concatenate([lids.to_numpy(dtype=object), rids.to_numpy(dtype=object)])
    p = m["probability"].to_numpy()
    edge = p > float(threshold)
    if one_to_one:
        kept = np.zeros(len(p), dtype=bool)
        e = np.flatnonzero(edge)
        kept[e] = _one_to_one(li[e], ri[e] - offset, p[e], offset, n_nodes - offset)
        edge = kept
    comp = _components(li[edge], ri[edge], n_nodes)
    # entity ids in order of each entity's first node (nodes are sorted by side, then id)
    _, first = np.unique(comp, return_index=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    entity = rank[comp]
    # by entity, then side, then record id: the nodes already are in (side, id) order, so a stable
    # sort by entity alone gives it (no sort of a million id strings)
    order = np.argsort(entity, kind="stable")
    clusters = pd.DataFrame({"entity_id": entity[order], "side": sides[order], "record_id": node_ids[order]})
    size = np.bincount(entity)
    suspicious = [] if one_to_one else _suspicious(
        m, li, ri, p, edge, entity, size, node_ids, max_size, float(threshold), score_fn, task, offset,
        float(non_match_below),
    )
    sus = pd.DataFrame(suspicious, columns=["entity_id", "reason", "size"])
    sus = sus.astype({"entity_id": np.int64, "size": np.int64}).sort_values("entity_id", kind="stable")
    return Entities(clusters=clusters, suspicious=sus.reset_index(drop=True), task=task)


def _entity_distances(
    el: np.ndarray, er: np.ndarray, entity: np.ndarray, size: np.ndarray, candidates: np.ndarray,
    node_order: np.ndarray,
) -> dict[int, np.ndarray]:
    """Hops between every two records of each entity in ``candidates`` (a connected component of
    the match edges ``el``-``er``): ``{entity: (size, size) int matrix}``, its rows and columns in
    the order of ``node_order``.

    Entities of one size are done together: a breadth-first search of all their records at
    once, as boolean products of their stacked adjacency matrices (the same distances as
    ``scipy.sparse.csgraph.shortest_path`` of each entity, unweighted and undirected, without a
    graph object per entity).
    """
    local = np.empty(len(entity), dtype=np.intp)  # each record's position within its entity
    sorted_entity = entity[node_order]
    local[node_order] = np.arange(len(node_order)) - np.searchsorted(sorted_entity, sorted_entity)
    in_cand = np.zeros(len(size), dtype=bool)
    in_cand[candidates] = True
    keep = in_cand[entity[el]]
    el, er = el[keep], er[keep]
    out: dict[int, np.ndarray] = {}
    for n in np.unique(size[candidates]):
        group = candidates[size[candidates] == n]
        slot = np.full(len(size), -1, dtype=np.intp)
        slot[group] = np.arange(len(group))
        mine = slot[entity[el]] >= 0
        g, a, b = slot[entity[el[mine]]], local[el[mine]], local[er[mine]]
        adj = np.zeros((len(group), n, n), dtype=bool)
        adj[g, a, b] = True
        adj[g, b, a] = True
        dist = np.where(np.eye(n, dtype=bool), 0, -1) + np.zeros((len(group), 1, 1), dtype=np.int64)
        reached = np.broadcast_to(np.eye(n, dtype=bool), adj.shape).copy()
        for hop in range(1, n):
            nxt = reached | np.matmul(reached, adj)
            new = nxt & ~reached
            if not new.any():
                break
            dist[new] = hop
            reached = nxt
        for k, e in enumerate(group):
            out[int(e)] = dist[k]
    return out


def _suspicious(
    m: pd.DataFrame, li: np.ndarray, ri: np.ndarray, p: np.ndarray, edge: np.ndarray, entity: np.ndarray,
    size: np.ndarray, node_ids: np.ndarray, max_size: int, threshold: float,
    score_fn: Callable[[pd.DataFrame], np.ndarray] | None, task: str, n_left: int, non_match_below: float,
) -> list[tuple[int, str, int]]:
    out: list[tuple[int, str, int]] = []
    for e in np.flatnonzero(size > max_size):
        out.append((int(e), f"size: {int(size[e])} records, more than max_size={max_size}", int(size[e])))
    # scored non-matches whose two records ended up in one entity
    inside = (~edge) & (p <= non_match_below) & (entity[li] == entity[ri])
    if inside.any():
        frame = pd.DataFrame({"e": entity[li[inside]], "p": p[inside], "k": np.flatnonzero(inside)})
        for e, grp in frame.groupby("e", sort=True):
            k = int(grp["k"].iloc[int(np.argmin(grp["p"].to_numpy()))])
            out.append((
                int(e),
                f"non-match inside: ({m['left_id'].iloc[k]}, {m['right_id'].iloc[k]}) has probability "
                f"{p[k]:.3f} <= {non_match_below:g} but is joined through other matches ({len(grp)} such pair(s))",
                int(size[e]),
            ))
    # chains: diameter >= 3, ends not a match
    # the scored pairs by their nodes (one int64 each, not a dict of half a million id tuples)
    n_nodes = len(node_ids)
    codes = np.minimum(li, ri).astype(np.int64) * n_nodes + np.maximum(li, ri)
    by_code = np.argsort(codes, kind="stable")
    sorted_codes = codes[by_code]

    def scored(u: int, v: int) -> float | None:
        c = min(u, v) * n_nodes + max(u, v)
        i = int(np.searchsorted(sorted_codes, c))
        return float(p[by_code[i]]) if i < len(sorted_codes) and sorted_codes[i] == c else None

    if task == "dedup":
        def key(a: str, b: str) -> tuple[str, str]:
            return (a, b) if a < b else (b, a)
    else:
        def key(a: str, b: str) -> tuple[str, str]:
            return (a, b)
    candidates = np.flatnonzero((size >= 4) & (size <= max_size))
    if len(candidates) == 0:
        return out
    node_order = np.argsort(entity, kind="stable")
    node_bounds = np.searchsorted(entity[node_order], candidates)
    distances = _entity_distances(li[edge], ri[edge], entity, size, candidates, node_order)
    unscored: list[tuple[int, list[tuple[str, str]], int]] = []
    for e, start in zip(candidates, node_bounds):
        nodes = node_order[start : start + size[e]]
        dist = distances[int(e)]
        diam = int(dist.max())
        if diam < 3:
            continue
        ends, known = [], []
        for i, j in zip(*np.nonzero(np.triu(dist == diam))):
            u, v = nodes[i], nodes[j]
            if task == "link":  # a linkage pair joins a left and a right record
                if (u < n_left) == (v < n_left):
                    continue
                if u >= n_left:
                    u, v = v, u
            ends.append(key(str(node_ids[u]), str(node_ids[v])))
            q = scored(int(u), int(v))
            if q is not None:
                known.append((ends[-1], q))
        if known:
            pair, q = min(known, key=lambda t: t[1])
            if q <= threshold:
                out.append((int(e), f"chain: {diam} links between {pair[0]} and {pair[1]}, whose probability is "
                                    f"{q:.3f} <= {threshold:g}", int(size[e])))
        elif ends:
            unscored.append((int(e), ends, diam))
    if unscored and score_fn is not None:
        pairs = pd.DataFrame([pr for _, ends, _ in unscored for pr in ends], columns=["left_id", "right_id"])
        q_all = np.asarray(score_fn(pairs), dtype=np.float64).ravel()
        if len(q_all) != len(pairs):
            raise ValueError(f"score_fn returned {len(q_all)} probabilities for {len(pairs)} pairs.")
        k = 0
        for e, ends, diam in unscored:
            q = q_all[k : k + len(ends)]
            k += len(ends)
            j = int(np.argmin(q))
            if q[j] <= threshold:
                out.append((e, f"chain: {diam} links between {ends[j][0]} and {ends[j][1]}, whose probability "
                               f"is {q[j]:.3f} <= {threshold:g} (scored by score_fn)", int(size[e])))
    else:
        for e, ends, diam in unscored:
            out.append((e, f"chain: {diam} links between {ends[0][0]} and {ends[0][1]}, a pair never scored "
                           "(not a candidate): check the entity", int(size[e])))
    return out



# ---------------------------------------------------------------------------- metrics
def _pair_set(pairs: object, task: str, what: str) -> set[tuple[str, str]]:
    if isinstance(pairs, Entities):
        pairs = pairs.pairs()
    if isinstance(pairs, pd.MultiIndex):
        rows = list(zip(pairs.get_level_values(0).astype(str), pairs.get_level_values(1).astype(str)))
    elif isinstance(pairs, pd.DataFrame):
        if not {"left_id", "right_id"} <= set(pairs.columns):
            raise DataError(f"{what} needs columns left_id and right_id, got {list(pairs.columns)}.")
        rows = list(zip(pairs["left_id"].astype(str), pairs["right_id"].astype(str)))
    else:
        rows = [(str(p[0]), str(p[1])) for p in pairs]  # type: ignore[union-attr]
    if task == "dedup":
        rows = [(a, b) if a < b else (b, a) for a, b in rows if a != b]
    return set(rows)


def _prf(tp: float, n_pred: float, n_true: float) -> dict[str, float]:
    precision = tp / n_pred if n_pred else float("nan")
    recall = tp / n_true if n_true else float("nan")
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return {"precision": float(precision), "recall": float(recall), "f1": float(f1)}


def pairwise_scores(pred_pairs: object, true_pairs: object, *, task: str = "dedup") -> dict[str, float]:
    """Pairwise precision, recall and F1 of predicted matching pairs against the true ones.

    Parameters
    ----------
    pred_pairs, true_pairs : DataFrame (``left_id``, ``right_id``), MultiIndex, iterable of
        ``(id, id)`` or :class:`Entities`
        The pairs; an :class:`Entities` stands for every pair inside one of its entities
        (:meth:`Entities.pairs`), which is how the pairwise quality of clusters is measured.
    task : {"dedup", "link"}, default="dedup"
        ``"dedup"``: ``(a, b)`` and ``(b, a)`` are one pair and self-pairs are ignored.
        ``"link"``: the first id is a left record, the second a right one (pass it for linkage:
        with ids shared by the two tables, ``"dedup"`` would merge distinct pairs).

    Returns
    -------
    dict
        ``precision``, ``recall``, ``f1`` (NaN precision without predictions, NaN recall without
        true pairs), and the counts ``n_pred``, ``n_true``, ``n_correct``.

    Examples
    --------
    >>> from skrisk.matching._entities import pairwise_scores
    >>> s = pairwise_scores([("a", "b"), ("c", "b"), ("a", "d")], [("b", "a"), ("b", "c"), ("e", "f")])
    >>> round(s["precision"], 3), round(s["recall"], 3), s["n_correct"]
    (0.667, 0.667, 2)
    """
    task = _check_task(task)
    pred = _pair_set(pred_pairs, task, "pred_pairs")
    true = _pair_set(true_pairs, task, "true_pairs")
    tp = len(pred & true)
    return {**_prf(tp, len(pred), len(true)), "n_pred": len(pred), "n_true": len(true), "n_correct": tp}


def _assignment(clusters: object, what: str) -> pd.Series:
    """``(side, record_id)`` -> entity label, from Entities, a frame or a mapping."""
    if isinstance(clusters, Entities):
        clusters = clusters.clusters
    if isinstance(clusters, pd.DataFrame):
        if not {"record_id", "entity_id"} <= set(clusters.columns):
            raise DataError(f"{what} needs columns record_id and entity_id (and side), got {list(clusters.columns)}.")
        side = clusters["side"].astype(str) if "side" in clusters.columns else pd.Series("table", index=clusters.index)
        keys = pd.MultiIndex.from_arrays([side.to_numpy(), clusters["record_id"].astype(str).to_numpy()])
        ent = pd.Series(clusters["entity_id"].astype(str).to_numpy(), index=keys)
    elif isinstance(clusters, dict):
        keys = pd.MultiIndex.from_tuples([k if isinstance(k, tuple) else ("table", str(k)) for k in clusters])
        ent = pd.Series([str(v) for v in clusters.values()], index=keys)
    else:
        raise TypeError(f"{what} must be Entities, a DataFrame (record_id, entity_id[, side]) or a dict.")
    if not ent.index.is_unique:
        dup = ent.index[ent.index.duplicated()][0]
        raise DataError(f"{what}: record {dup} is in more than one entity; a record belongs to one entity.")
    return ent


def cluster_scores(pred_clusters: object, true_clusters: object) -> dict[str, float]:
    """Cluster-level precision, recall and F1, plus B-cubed precision, recall and F1.

    Parameters
    ----------
    pred_clusters, true_clusters : Entities, DataFrame or dict
        Record-to-entity assignments: an :class:`Entities`, a frame with ``record_id``,
        ``entity_id`` (and ``side`` for linkage), or a dict ``record_id -> entity`` (keys may be
        ``(side, record_id)``). Entity labels need not agree between the two.

    Returns
    -------
    dict
        ``precision``: the share of predicted entities that are exactly a true entity;
        ``recall``: the share of true entities predicted exactly; ``f1``; ``bcubed_precision``,
        ``bcubed_recall``, ``bcubed_f1`` (Bagga and Baldwin, 1998: per record, the share of its
        predicted entity that truly belongs with it, and the share of its true entity that was
        predicted with it, averaged over records); ``n_pred``, ``n_true`` (entities), ``n_exact``
        and ``n_records``.

    Notes
    -----
    Both are computed over the union of the records of the two assignments: a record missing
    from one side is a one-record entity there. One-record entities count as entities (an
    unmatched record that is truly unique is a correct entity); pass the same set of records
    to both (``records=`` of :func:`cluster_entities`) for comparable figures.

    Examples
    --------
    >>> from skrisk.matching._entities import cluster_scores
    >>> s = cluster_scores({"a": 1, "b": 1, "c": 2, "d": 2}, {"a": "x", "b": "x", "c": "y", "d": "z"})
    >>> s["precision"], round(s["recall"], 3), s["bcubed_recall"]
    (0.5, 0.333, 1.0)
    """
    pred = _assignment(pred_clusters, "pred_clusters")
    true = _assignment(true_clusters, "true_clusters")
    keys = pred.index.union(true.index)
    # a record missing from one assignment is alone there
    pl = pred.reindex(keys).to_numpy(dtype=object)
    tl = true.reindex(keys).to_numpy(dtype=object)
    pl = np.where(pd.isna(pl), np.array([f"\0pred-single-{i}" for i in range(len(keys))], dtype=object), pl)
    tl = np.where(pd.isna(tl), np.array([f"\0true-single-{i}" for i in range(len(keys))], dtype=object), tl)
    pcode = pd.factorize(pl)[0]
    tcode = pd.factorize(tl)[0]
    pred_sets = pd.Series(np.arange(len(keys))).groupby(pcode).apply(frozenset)
    true_sets = pd.Series(np.arange(len(keys))).groupby(tcode).apply(frozenset)
    exact = len(set(pred_sets) & set(true_sets))
    out = _prf(exact, len(pred_sets), len(true_sets))
    # B-cubed from the contingency table of (pred, true) entity pairs
    joint = pd.crosstab(pcode, tcode)
    both = joint.to_numpy(dtype=np.float64)
    psize = both.sum(axis=1, keepdims=True)
    tsize = both.sum(axis=0, keepdims=True)
    n = float(len(keys))
    bp = float((both ** 2 / psize).sum() / n)
    br = float((both ** 2 / tsize).sum() / n)
    bf = 2 * bp * br / (bp + br) if bp + br > 0 else 0.0
    out.update({
        "bcubed_precision": bp, "bcubed_recall": br, "bcubed_f1": float(bf),
        "n_pred": int(len(pred_sets)), "n_true": int(len(true_sets)), "n_exact": int(exact), "n_records": int(n),
    })
    return out
