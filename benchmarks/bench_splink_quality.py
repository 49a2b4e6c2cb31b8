"""Splink (unsupervised) beside skrisk with 200 and 500 labels on the DeepMatcher datasets: quality.

Issue #26, item 4 (quality). For each dataset (``--datasets``; loaded by
:func:`skrisk.experiments.load_dataset` from ``$SKRISK_DATA``), both methods are scored on the same
ground truth, the dataset's ``test`` split pairs (label 1/0): precision, recall and F1 of each
method's match decision on exactly those pairs.

Splink 5 (DuckDB), unsupervised
    ``link_only`` of the dataset's two tables, as Splink documents it: light cleaning (lower case,
    punctuation to spaces, numbers parsed), comparisons of the attributes (names and titles with
    Jaro-Winkler levels and token-overlap levels, numbers such as price, year or ABV in
    difference levels), blocking rules chosen per dataset (below), then
    ``estimate_probability_two_random_records_match`` (a deterministic rule and a guessed recall),
    ``estimate_u_using_random_sampling`` and ``estimate_parameters_using_expectation_maximisation``
    on one or two blocking rules, and ``predict``. A test pair is a match when Splink scored it with
    ``match_probability > 0.5``; a test pair its blocking never produced counts as a non-match (the
    share of the test matches that blocking produced is reported as ``blocking_recall``). No label
    is used. Splink is also run with the rule's recall guessed at 0.3 and 0.9 (``SENSITIVITY``),
    and its best F1 over all thresholds, chosen on the test labels (``oracle_f1``), is recorded,
    to show how much of its F1 rests on those two choices.
skrisk, 200 and 500 labels
    The forest matcher (:class:`~skrisk.matchers.FeatureMatcher` on
    :class:`~skrisk.data.SimilarityFeatures`) and skrisk's default risk sampling (strategy ``risk``
    of :data:`skrisk.experiments.STRATEGIES`), simulated by
    :func:`skrisk.experiments.run_active_learning` on the ``train`` split as pool: a random seed set
    of 100 labels, then batches of 100; the matcher trained on 200 and on 500 labels is scored on the
    test split (its ``predict``, threshold 0.5). ``--seeds`` seeds (mean and standard deviation).
    Beer's pool holds 267 pairs, so it has no 500-label row.

Usage (from the repository root, one process)::

    OMP_NUM_THREADS=1 python benchmarks/bench_splink_quality.py
    python benchmarks/bench_splink_quality.py --report-only   # rewrite the page from the records

Appends one JSON line per (dataset, method, seed) to
``benchmarks/results/splink_quality/records.jsonl`` (the command, machine, load and date beside
each), the skrisk runs' per-round records to ``benchmarks/results/splink_quality/raw/`` (a rerun
resumes them), and writes ``benchmarks/results/splink_quality.md`` from the records. Needs the
``bench`` extra (``pip install -e ".[bench]"``: splink).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "results" / "splink_quality"
PAGE = HERE / "results" / "splink_quality.md"
sys.path.insert(0, str(HERE))
from _speed_record import append_record  # noqa: E402

DATASETS = ["abt_buy", "dblp_scholar", "beer", "fodors_zagats"]
LABELS = (200, 500)
SEED_SIZE, BATCH = 100, 100
#: Other guesses of the deterministic rule's recall (Splink's prior), to show how much F1 rests on it.
SENSITIVITY = (0.3, 0.9)


# --------------------------------------------------------------------------------------------
# Splink
# --------------------------------------------------------------------------------------------

def _clean(s: pd.Series) -> pd.Series:
    """Lower case, punctuation to spaces, whitespace collapsed; empty -> missing."""
    out = (s.astype("string").str.lower().str.replace(r"[^\w\s./-]", " ", regex=True)
           .str.replace(r"\s+", " ", regex=True).str.strip())
    return out.mask(out == "")


def _tokens(s: pd.Series) -> pd.Series:
    return s.fillna("").map(lambda t: sorted(set(t.split())) or None)


def _number(s: pd.Series) -> pd.Series:
    return pd.to_numeric(s.astype("string").str.extract(r"(\d+(?:\.\d+)?)")[0], errors="coerce")


def _codes(s: pd.Series) -> pd.Series:
    """Model-number-like tokens (letters and digits mixed, at least 4 characters)."""
    pat = re.compile(r"\b(?=\w*\d)(?=\w*[a-z])[\w-]{4,}\b")
    return s.fillna("").map(lambda t: sorted({c.replace("-", "") for c in pat.findall(t)}) or None)


def _prepare(name: str, table: pd.DataFrame) -> pd.DataFrame:
    """The cleaned columns Splink compares and blocks on, per dataset."""
    t = table.reset_index()
    df = pd.DataFrame({"unique_id": t["id"].astype(str)})
    if name == "abt_buy":
        df["name"] = _clean(t["name"])
        df["name_tokens"] = _tokens(df["name"])
        df["codes"] = _codes(df["name"])
        df["brand"] = df["name"].str.split(" ").str[0]
        df["price"] = _number(t["price"])
    elif name == "dblp_scholar":
        df["title"] = _clean(t["title"])
        df["title_tokens"] = _tokens(df["title"])
        df["title_start"] = df["title"].str.slice(0, 12)
        df["title_end"] = df["title"].str.slice(-12)
        df["authors"] = _clean(t["authors"])
        df["first_author"] = df["authors"].str.split(" ").str[1]  # "m rusinkiewicz ..." -> surname
        df["venue"] = _clean(t["venue"])
        df["year"] = _number(t["year"])
    elif name == "beer":
        df["beer_name"] = _clean(t["Beer_Name"])
        df["beer_tokens"] = _tokens(df["beer_name"])
        df["brewery"] = _clean(t["Brew_Factory_Name"])
        df["brewery_start"] = df["brewery"].str.split(" ").str[0]
        df["style"] = _clean(t["Style"])
        df["abv"] = _number(t["ABV"])
    elif name == "fodors_zagats":
        df["name"] = _clean(t["name"])
        df["name_tokens"] = _tokens(df["name"])
        df["name_start"] = df["name"].str.slice(0, 4)
        df["addr"] = _clean(t["addr"])
        df["addr_number"] = df["addr"].str.split(" ").str[0]
        df["city"] = _clean(t["city"])
        df["phone"] = t["phone"].astype("string").str.replace(r"\D", "", regex=True)
        df["type"] = _clean(t["type"])
    else:
        raise SystemExit(f"no Splink settings for {name!r}: add them to _prepare and _settings")
    return df


def _settings(name: str):
    """(comparisons, prediction blocking rules, EM blocking rules, deterministic rules, recall)."""
    import splink.comparison_library as cl
    from splink import block_on

    def num(col, thresholds):
        return cl.CustomComparison(
            output_column_name=col,
            comparison_levels=[
                {"sql_condition": f'"{col}_l" IS NULL OR "{col}_r" IS NULL', "label_for_charts": "null",
                 "is_null_level": True},
                {"sql_condition": f'"{col}_l" = "{col}_r"', "label_for_charts": "exact"},
                *({"sql_condition": f'abs("{col}_l" - "{col}_r") <= {t} * greatest("{col}_l", "{col}_r")',
                   "label_for_charts": f"within {t:.0%}"} for t in thresholds),
                {"sql_condition": "ELSE", "label_for_charts": "else"},
            ])

    if name == "abt_buy":
        return ([cl.JaroWinklerAtThresholds("name", [0.92, 0.8]),
                 cl.ArrayIntersectAtSizes("name_tokens", [4, 2, 1]),
                 cl.ArrayIntersectAtSizes("codes", [1]),
                 num("price", [0.1, 0.3])],
                [block_on("codes", arrays_to_explode=["codes"]), block_on("brand")],
                [block_on("brand")],  # EM cannot train on exploding rules; brand is not compared
                [block_on("codes", arrays_to_explode=["codes"])], 0.6)
    if name == "dblp_scholar":
        return ([cl.JaroWinklerAtThresholds("title", [0.95, 0.88, 0.7]),
                 cl.ArrayIntersectAtSizes("title_tokens", [5, 3, 1]),
                 cl.JaroWinklerAtThresholds("authors", [0.9, 0.7]),
                 cl.JaroWinklerAtThresholds("venue", [0.9, 0.7]),
                 cl.ExactMatch("year")],
                [block_on("title_start"), block_on("title_end"), block_on("first_author", "year")],
                [block_on("title_start"), block_on("first_author", "year")],
                [block_on("title")], 0.6)
    if name == "beer":
        return ([cl.JaroWinklerAtThresholds("beer_name", [0.92, 0.8]),
                 cl.ArrayIntersectAtSizes("beer_tokens", [3, 2, 1]),
                 cl.JaroWinklerAtThresholds("brewery", [0.92, 0.8]),
                 cl.JaroWinklerAtThresholds("style", [0.92, 0.8]),
                 num("abv", [0.05])],
                [block_on("brewery_start"), block_on("beer_name")],
                [block_on("brewery_start"), block_on("beer_name")],
                [block_on("beer_name", "brewery")], 0.6)
    return ([cl.JaroWinklerAtThresholds("name", [0.92, 0.8]),
             cl.ArrayIntersectAtSizes("name_tokens", [2, 1]),
             cl.JaroWinklerAtThresholds("addr", [0.92, 0.8]),
             cl.ExactMatch("city"),
             cl.LevenshteinAtThresholds("phone", [1, 2]),
             cl.JaroWinklerAtThresholds("type", [0.9])],
            [block_on("phone"), block_on("name_start"), block_on("addr_number", "city")],
            [block_on("name_start"), block_on("phone")],
            [block_on("phone")], 0.8)


def _scores(truth: np.ndarray, pred: np.ndarray) -> dict:
    tp = int(np.sum(truth & pred))
    p = tp / max(int(pred.sum()), 1)
    r = tp / max(int(truth.sum()), 1)
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(2 * p * r / (p + r) if p + r else 0.0, 4),
            "n_test": int(len(truth)), "n_test_matches": int(truth.sum())}


def run_splink(name: str, ds, test: pd.DataFrame, recall_guess: float | None = None) -> dict:
    """Splink's unsupervised linkage of ``ds``'s two tables, scored on the test pairs.

    ``recall_guess``: the recall of the deterministic rule that Splink's prior match probability
    is estimated with (``None``: this dataset's choice in :func:`_settings`)."""
    from splink import DuckDBAPI, Linker, SettingsCreator

    t0 = time.perf_counter()
    left, right = _prepare(name, ds.left), _prepare(name, ds.right)
    comparisons, rules, em_rules, det_rules, recall = _settings(name)
    recall = recall if recall_guess is None else recall_guess
    db = DuckDBAPI()
    sdfs = [db.register(left, table_name="left_table"), db.register(right, table_name="right_table")]
    settings = SettingsCreator(link_type="link_only", comparisons=comparisons,
                               blocking_rules_to_generate_predictions=rules, retain_intermediate_calculation_columns=False)
    linker = Linker(sdfs, settings, log_level=40)
    linker.training.estimate_probability_two_random_records_match(det_rules, recall=recall)
    linker.training.estimate_u_using_random_sampling(max_pairs=1e6, seed=0)
    for rule in em_rules:
        linker.training.estimate_parameters_using_expectation_maximisation(rule)
    pred = linker.inference.predict().as_pandas_dataframe()
    seconds = time.perf_counter() - t0
    # orient every scored pair as (left id, right id)
    is_left = pred["source_dataset_l"].astype(str) == "left_table"
    lid = np.where(is_left, pred["unique_id_l"], pred["unique_id_r"]).astype(str)
    rid = np.where(is_left, pred["unique_id_r"], pred["unique_id_l"]).astype(str)
    prob = pd.Series(pred["match_probability"].to_numpy(), index=pd.MultiIndex.from_arrays([lid, rid]))
    prob = prob.groupby(level=[0, 1]).max()
    key = pd.MultiIndex.from_arrays([test["left_id"].astype(str), test["right_id"].astype(str)])
    p_test = prob.reindex(key).to_numpy()
    truth = test["label"].to_numpy() == 1
    blocked = ~np.isnan(p_test)
    decided = np.nan_to_num(p_test, nan=0.0) > 0.5
    # for scale only (uses the test labels, which an unsupervised user does not have): the best F1
    # of any threshold on Splink's match probability
    scored = np.nan_to_num(p_test, nan=-1.0)
    best = max(((_scores(truth, scored > t)["f1"], t) for t in np.unique(scored[blocked]) if t < 1.0),
               default=(0.0, None))
    return {**_scores(truth, decided), "recall_guess": recall, "n_scored_pairs": int(len(prob)),
            "oracle_f1": best[0], "oracle_threshold": None if best[1] is None else float(best[1]),
            "blocking_recall": round(float(blocked[truth].mean()), 4),
            "test_pairs_blocked": round(float(blocked.mean()), 4),
            "lambda": float(linker.misc.save_model_to_json()["probability_two_random_records_match"]),
            "seconds": round(seconds, 1)}


# --------------------------------------------------------------------------------------------
# skrisk
# --------------------------------------------------------------------------------------------

def run_skrisk(task, seed: int, raw: Path) -> list[dict]:
    """skrisk's default risk sampling with the forest matcher: the rounds at 200 and 500 labels."""
    from _lab import make_matcher_factory, matcher_fit_kwargs
    from _lab import make_strategy
    from skrisk.experiments import run_active_learning

    wanted = [n for n in LABELS if n <= len(task.pool)]
    n_rounds = (max(wanted) - SEED_SIZE) // BATCH + 1
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        recs = run_active_learning(
            task, make_strategy("risk", task, random_state=seed), make_matcher_factory("feature"),
            n_seed=SEED_SIZE, n_instances=BATCH, n_rounds=n_rounds, seed=seed, strategy_name="risk",
            fit_kwargs=matcher_fit_kwargs("feature"), results_file=raw / f"{task.name}_feature_risk_seed{seed}.jsonl")
    seconds = time.perf_counter() - t0
    out = []
    for r in recs:
        if r["n_labelled"] in wanted:
            out.append({"labels": int(r["n_labelled"]), "precision": round(r["precision"], 4),
                        "recall": round(r["recall"], 4), "f1": round(r["f1"], 4), "seconds_all_rounds": round(seconds, 1)})
    return out


# --------------------------------------------------------------------------------------------
# records -> page
# --------------------------------------------------------------------------------------------

def _read(records: Path) -> list[dict]:
    if not records.is_file():
        return []
    return [json.loads(line) for line in records.read_text().splitlines() if line.strip()]


def _ms(values: list[float]) -> str:
    a = np.asarray(values, dtype=float)
    return f"{a.mean():.3f} ± {a.std(ddof=1) if len(a) > 1 else 0.0:.3f}"


def write_page(records: Path, page: Path) -> str:
    """The markdown page from the records (the last record of each (dataset, method, seed, labels))."""
    last: dict = {}
    for r in _read(records):
        last[(r["dataset"], r["method"], r.get("seed"), r.get("labels"), r.get("recall_guess"))] = r
    rows = list(last.values())
    lines = ["# Splink (unsupervised) beside skrisk with 200 and 500 labels: quality", "",
             "Issue #26, item 4. Both methods are scored on the same ground truth: each dataset's `test` "
             "split pairs (label 1/0). Splink 5 (DuckDB), `link_only`, unsupervised (no label): "
             "`estimate_probability_two_random_records_match`, `estimate_u_using_random_sampling`, "
             "`estimate_parameters_using_expectation_maximisation` on one or two blocking rules, `predict`; a test pair "
             "is a match when `match_probability > 0.5`, and a test pair its blocking did not produce is a "
             "non-match (*blocking recall*: the share of the test matches its blocking produced). skrisk: the "
             "forest matcher with skrisk's default risk sampling (`risk`), 100 random seed labels then batches "
             "of 100 from the train split, scored at 200 and 500 labels; mean ± standard deviation over seeds. "
             "Comparisons, blocking rules and cleaning per dataset: `benchmarks/bench_splink_quality.py`.", "",
             "Splink's *oracle F1* is its best F1 over every threshold on `match_probability`, chosen on the "
             "test labels themselves (which an unsupervised user does not have): an upper bound on what a "
             "better threshold alone could give it.", "",
             "| dataset | method | labels | precision | recall | F1 | runs |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for name in DATASETS:
        sp = [r for r in rows if r["dataset"] == name and r["method"] == "splink"]
        sens = [r for r in rows if r["dataset"] == name and r["method"] == "splink_sensitivity"]
        for r in sp:
            span = [x["f1"] for x in sens + [r]]
            guesses = sorted(x["recall_guess"] for x in sens + [r])
            lines.append(f"| {name} | Splink (unsupervised; prior from a rule's guessed recall {r['recall_guess']:g}; "
                         f"F1 {min(span):.3f}-{max(span):.3f} at guesses {guesses[0]:g}-{guesses[-1]:g}; "
                         f"blocking recall {r['blocking_recall']:.3f}; oracle F1 {r['oracle_f1']:.3f}) | 0 | "
                         f"{r['precision']:.3f} | {r['recall']:.3f} | {r['f1']:.3f} | 1 |")
        for n in LABELS:
            sk = sorted((r for r in rows if r["dataset"] == name and r["method"] == "skrisk" and r["labels"] == n),
                        key=lambda r: r["seed"])
            if sk:
                lines.append(f"| {name} | skrisk (forest + risk sampling) | {n} | {_ms([r['precision'] for r in sk])} | "
                             f"{_ms([r['recall'] for r in sk])} | {_ms([r['f1'] for r in sk])} | {len(sk)} |")
    lines += ["", "Read with care: the test pairs are DeepMatcher's, already blocked for the benchmark (hard "
              "non-matches beside the matches), not the tables' cross product, so these are the scores of a "
              "decision on those pairs, not of a whole linkage. Splink's result rests on its guessed recall "
              "of the deterministic rule (which sets its prior match probability) and on the comparisons "
              "and blocking rules chosen here for each dataset; another choice gives another F1 (the oracle "
              "F1 bounds what a threshold alone changes, and the Splink rows show the F1 at other guesses of "
              "that recall). Beer's train split holds 267 pairs, so no run "
              "reaches 500 labels.", "", "## How these were made", ""]
    for cmd in sorted({r["command"] for r in rows}):
        lines.append(f"- command: `OMP_NUM_THREADS=1 {cmd}`")
    if rows:
        dates = sorted(r["date"] for r in rows)
        loads = [r["load_before"] for r in rows] + [r["load_after"] for r in rows]
        lines += [f"- machine: {rows[0].get('machine_line', rows[0]['machine'])}; {rows[0]['cpus']} cores, no GPU, "
                  "shared with other jobs",
                  f"- dates: {dates[0]} to {dates[-1]}; 1-minute load {min(loads):.2f} to {max(loads):.2f} "
                  "(before and after each record)",
                  "- records: `benchmarks/results/splink_quality/records.jsonl` (skrisk's per-round records in "
                  "`splink_quality/raw/`)"]
    text = "\n".join(lines) + "\n"
    page.write_text(text)
    return text


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--methods", default="splink,skrisk")
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--page", default=str(PAGE))
    p.add_argument("--report-only", action="store_true", help="only rewrite the page from the records")
    args = p.parse_args(argv)
    out = Path(args.out)
    records = out / "records.jsonl"
    if not args.report_only:
        import torch

        from skrisk.experiments import build_task
        from _lab import load_dataset
        from _lab import machine_line

        torch.set_num_threads(1)
        raw = out / "raw"
        raw.mkdir(parents=True, exist_ok=True)
        methods = args.methods.split(",")
        cache = Path(tempfile.gettempdir()) / "skrisk_bench_splink_quality_cache"
        for name in args.datasets.split(","):
            ds = load_dataset(name)
            test = ds.pairs[ds.pairs["split"] == "test"]
            base = {"dataset": name, "machine_line": machine_line(threads=1)}
            if "splink" in methods:
                load0 = os.getloadavg()[0]
                append_record(records, {**base, "method": "splink", "labels": 0, **run_splink(name, ds, test)}, load0)
                for guess in SENSITIVITY:
                    load0 = os.getloadavg()[0]
                    append_record(records, {**base, "method": "splink_sensitivity", "labels": 0,
                                            **run_splink(name, ds, test, guess)}, load0)
            if "skrisk" in methods:
                task = build_task(name, matcher="feature", cache_dir=cache)
                for seed in range(args.seeds):
                    load0 = os.getloadavg()[0]
                    for r in run_skrisk(task, seed, raw):
                        append_record(records, {**base, "method": "skrisk", "seed": seed, **r}, load0)
                        load0 = os.getloadavg()[0]
            write_page(records, Path(args.page))
    print(write_page(records, Path(args.page)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
