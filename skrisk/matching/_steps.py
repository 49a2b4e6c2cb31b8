"""The steps of :func:`~skrisk.matching.match` on one machine and on a Dask cluster: the tables
checked, blocked, the kept pairs of each scored chunk, the sorted matches and their entities."""

from __future__ import annotations

import contextlib
import re
import time
from typing import Any

import numpy as np
import pandas as pd

from ..exceptions import DataError
from ..risk._uncertainty import matcher_uncertainty
from ._model import MatchModel

__all__ = ["MATCH_COLUMNS"]

#: The columns of ``matches`` (then ``reasons`` when asked for).
MATCH_COLUMNS = ["left_id", "right_id", "probability", "risk"]


def _prepare_tables(
    model: MatchModel, left: pd.DataFrame, right: pd.DataFrame | None, names: tuple[str, str]
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """Check the tables against the model; the attribute columns only, in the model's order."""
    tables = [(left, names[0])] + ([] if right is None else [(right, names[1])])
    for table, source in tables:
        if not isinstance(table, pd.DataFrame):
            raise TypeError(f"{source} must be a pandas DataFrame indexed by record id, got {type(table).__name__} "
                            "(a Dask DataFrame or a Parquet folder needs client=, a dask.distributed Client).")
        if len(table) == 0:
            raise DataError(f"{source} holds no record: give a table with at least one row.")
        if not table.index.is_unique:
            dup = table.index[table.index.duplicated()][0]
            raise repeated_id_error(source, dup, int(np.flatnonzero(table.index == dup)[1]))
        model.check_table(table, source)
        _refuse_nul(table[list(model.attributes)], source)
    attrs = list(model.attributes)
    left = left[attrs].copy()
    left.index = left.index.astype(str)
    if right is not None:
        right = right[attrs].copy()
        right.index = right.index.astype(str)
    if model.task == "dedup" and right is not None:
        both = left.index.intersection(right.index)
        if len(both):
            raise DataError(
                f"The id {both[0]!r} is in both {names[0]} and {names[1]} ({len(both)} shared id(s) in "
                "all): the model deduplicates one table, so the two tables are matched as one and every "
                "id must name one record. Give the records of one table other ids (e.g. a prefix), or "
                "put them in one file."
            )
        left = pd.concat([left, right])
        right = None
    if model.task == "link" and right is None:
        raise one_table_for_linkage_error(names[0])
    return left, right


def repeated_id_error(source: str, dup: object, row: int) -> DataError:
    """The error of an id repeated at (0-based) ``row`` of ``source``."""
    return DataError(f"{source}: the id {dup!r} is repeated (row {row + 1} repeats an earlier row's id): ids "
                     "must be unique; deduplicate the ids (or give each record its own id).")


def one_table_for_linkage_error(source: str) -> DataError:
    """The error of a linkage model given only the table ``source``."""
    return DataError(f"The model links two tables, but only {source} was given: give the other table too "
                     "(--right), or use a model trained to deduplicate one table.")


def _refuse_nul(table: pd.DataFrame, source: str) -> None:
    """A DataError naming the record and column of a text that holds a NUL character: pandas'
    hashing merges texts that differ only after one ("a" and "a\\x00b"), so neither blocking nor
    the features could tell them apart (no CSV file read by skrisk holds one)."""
    for j, col in enumerate(table.columns):
        v = table.iloc[:, j].to_numpy(dtype=object)
        texts = v[~pd.isna(v)]
        try:
            joined = "".join(texts)
        except TypeError:  # not only texts: look at the texts among them
            joined = "".join(x for x in texts if type(x) is str)
        if "\x00" in joined:
            row = next(i for i, x in enumerate(v) if type(x) is str and "\x00" in x)
            raise DataError(f"{source}: the {col!r} value of the record {table.index[row]!r} holds a NUL character "
                            "(\\x00), which skrisk cannot tell apart from the text before it: remove the NUL "
                            f"characters first (e.g. table[{col!r}].str.replace('\\x00', ''))."
                            )


def _model_rules(model: MatchModel) -> Any:
    """The model's blocking rules; for a model without them whose column types make a person
    table, the ``typed`` passes of those types; else None (the ``tokens`` default)."""
    if model.blocking is not None:
        return model.blocking
    ctypes = getattr(model.features, "column_types_", None)
    if not ctypes:
        return None
    from ..data._typed_blocking import person_rules

    return person_rules(ctypes)


def _candidates(
    left: pd.DataFrame, right: pd.DataFrame | None, rules: Any, names: tuple[str, str], n_jobs: int | None
) -> Any:
    """Blocking of the tables (within ``left`` when ``right`` is None); identical records are
    always candidates (:func:`skrisk.data.block`'s ``identical``)."""
    from ..data import block

    result = block(left, right, rules, n_jobs=n_jobs, identical=True)
    if len(result.pairs) == 0:
        what = names[0] if right is None else f"{names[0]} against {names[1]}"
        raise DataError(f"Blocking {what} produced no candidate pair: {_no_candidate_fix(left, right, rules)}")
    return result


def _no_candidate_fix(left: pd.DataFrame, right: pd.DataFrame | None, rules: Any) -> str:
    """Why no rule paired two records, and the change that would (identical records are paired
    whatever the rules, so the records all differ)."""
    from ..data._text import normalise_text

    if rules is None:
        rules = [("tokens", None, {})]
    if isinstance(rules, tuple) and rules and isinstance(rules[0], str):
        rules = [rules]
    tables = [left] if right is None else [left, right]
    fixes = []
    for rule in rules:
        method, cols = rule[0], rule[1]
        cols = list(left.columns) if cols is None else ([cols] if isinstance(cols, str) else list(cols))
        params = dict(rule[2]) if len(rule) == 3 else {}
        has = [t[cols].map(normalise_text).ne("") for t in tables]
        filled = [int((h.any(axis=1) if method == "tokens" else h.all(axis=1)).sum()) for h in has]
        on = ",".join(cols)
        if min(filled) == 0:
            fixes.append(f"{method} on {on}: {'no record' if right is None else 'a table has no record'} with "
                         f"{'a value in' if method == 'tokens' else 'values in all of'} {cols}; block on "
                         "columns that are filled in (--block-on)")
        elif method == "tokens":
            thr = float(params.get("min_similarity", 0.0))
            fixes.append(f"tokens on {on}: no two records share a word" + (
                f" with a cosine above {thr:g}; lower --block-threshold" if thr > 0 else
                "; block on other columns (--block-on), or use --blocking sorted_neighbourhood"))
        elif method == "standard":
            fixes.append(f"standard on {on}: no two records have the same values; block on fewer or other "
                         "columns whose values repeat (--block-on), or use --blocking tokens")
        else:
            fixes.append(f"sorted_neighbourhood on {on}: too few records with a value; block on another column")
    return "; ".join(fixes) + "."


@contextlib.contextmanager
def _stage(name: str, progress: bool, timings: dict[str, float], key: str) -> Any:
    """Time a stage into ``timings[key]``, with a one-step tqdm bar (its name and elapsed time)."""
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=1, desc=name, bar_format="{desc}: {elapsed}{postfix}")
    tick = time.perf_counter()
    try:
        yield
    finally:
        timings[key] += time.perf_counter() - tick
        if bar is not None:
            bar.update(1)
            bar.close()


def _feature_names(model: MatchModel) -> list[str]:
    try:
        return [str(n) for n in model.features.get_feature_names_out()]
    except (AttributeError, TypeError, ValueError):
        return []


def _reasons(model: MatchModel, scorer: Any, part: pd.DataFrame, names: list[str], k: int = 3) -> list[str]:
    """The top ``k`` reasons of each matched pair's risk, one line each (LearnRisk's fired rules)."""
    # a LearnRisk fitted where the matcher made no mistake holds no risk model (risk_model_ None)
    if model.risk_model is None or getattr(model.risk_model, "risk_model_", True) is None:
        return ["no risk model (the matcher made no mistake to learn from): risk = min(p, 1 - p)"] * len(part)
    F = scorer.feature_matrix(part)  # the features the pairs were scored by
    proba = model.risk_model.predict_proba(F)[:, 1] if len(part) else None  # once, not per pair
    out = []
    for j in range(len(part)):
        exp = model.risk_model.explain(F, j, proba=proba)
        if hasattr(exp, "short_text"):
            text = exp.short_text(k=k)
        else:
            bits = []
            for r in exp.rules[:k]:
                agrees = "agrees" if r["label"] == exp.predicted_label else "contradicts"
                bits.append(f"{r['rule']} ({agrees}, weight {r['weight']:.2g})")
            text = "; ".join(bits) or "no rule fires: the matcher's output alone"
        if names:
            text = re.sub(r"\bx(\d+)\b",
                          lambda m: names[int(m.group(1))] if int(m.group(1)) < len(names) else m.group(0), text)
        out.append(" ".join(text.split()))
    return out


def _kept(scored: Any, threshold: float) -> pd.DataFrame | None:
    """The pairs of a scored chunk above ``threshold``, with their probability and risk (None: none)."""
    p = scored.proba
    pos = np.flatnonzero(p > threshold)
    if not len(pos):
        return None
    part = scored.pairs.iloc[pos].reset_index(drop=True)
    part["probability"] = p[pos]
    part["risk"] = matcher_uncertainty(p[pos]) if scored.risk is None else scored.risk[pos]
    return part


def _matches_and_entities(model: MatchModel, left: pd.DataFrame, right: pd.DataFrame | None,
                          kept: list[pd.DataFrame], scorer: Any, *, reasons: bool, one_to_one: bool,
                          progress: bool, timings: dict[str, float], records: Any = None) -> tuple[pd.DataFrame, Any]:
    """The kept pairs as the sorted ``matches``, and their entities (timed as ``"entities"``);
    ``records``: every record id (else the tables' ids)."""
    columns = MATCH_COLUMNS + (["reasons"] if reasons else [])
    matches = pd.concat(kept, ignore_index=True) if kept else pd.DataFrame(
        {c: pd.Series(dtype=object if c in ("left_id", "right_id", "reasons") else np.float64) for c in columns})
    matches = matches.sort_values(["probability", "left_id", "right_id"], ascending=[False, True, True],
                                  kind="stable", ignore_index=True)
    with _stage("Entities", progress, timings, "entities"):
        from ._entities import cluster_entities

        if records is None:
            records = left.index.tolist() if right is None else (left.index.tolist(), right.index.tolist())
        entities = cluster_entities(
            matches[["left_id", "right_id", "probability"]], task=model.task, one_to_one=one_to_one,
            threshold=float(model.threshold), records=records, score_fn=lambda pp: scorer.score(pp).proba,
        )
        if one_to_one:  # matches.csv and entities.csv mean the same: only the kept one-to-one pairs
            cl = entities.clusters
            ent_l = cl[cl["side"] == "left"].set_index("record_id")["entity_id"]
            ent_r = cl[cl["side"] == "right"].set_index("record_id")["entity_id"]
            same = matches["left_id"].map(ent_l).to_numpy() == matches["right_id"].map(ent_r).to_numpy()
            matches = matches[same].reset_index(drop=True)
    return matches, entities
