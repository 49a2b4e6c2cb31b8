"""Rename the strategies of the active-learning records to the registry's names (issue #28, item 5).

Records written before the benchmarks took ``skrisk.experiments.STRATEGIES``'s names called the
paper's method ``risk`` and skrisk's default ``risk_pre2w``; the registry calls them ``risk_paper``
and ``risk``. For every ``raw/`` folder under ``--results`` (default ``benchmarks/results``) this

1. rewrites every record line of an old name without the mark ``"names": "registry"`` with the
   new strategy name and the mark, and renames its file (``<task>_<matcher>_<strategy>_seed<k>.jsonl``); a line
   that carries the mark is left as it is, so the tool can run again on records merged later;
2. regenerates every ``bench_al.py`` table of the folder above ``raw/`` whose ``raw/tables.json``
   entry is unmarked (or that has no entry): it renames the strategies of the table's command,
   reruns that command with ``--report-only`` on a copy of ``raw/`` and writes the table (its
   recorded title and footer kept, command renamed), its CSVs and figures, and the table's entry
   (the new table's SHA-256, marked) so that ``bench_al.py --report-only`` and
   ``benchmarks/make_results.py`` rewrite it byte for byte from then on.

With ``--prose TEMPLATE ...`` it also renames the names in the prose of page templates written
with the old names (backticked names and ``--strategies`` lists; once per file: a template that
is marked, and a marked one or one that already names ``risk_paper`` is refused). With ``--check``, writes nothing and lists what would
change. Every renamed table differs from the
one before only in the names: ``--compare OLD_RESULTS`` checks that for every table and CSV beside
a ``raw/`` folder against the results folder of a checkout from before the rename (a CSV's rows
compared as a set: a rename changes the alphabetical order of a ``*_summary.csv``).

Examples
--------
    python benchmarks/tools/rename_records.py            # rename (idempotent)
    python benchmarks/tools/rename_records.py --check    # what would change
    python benchmarks/tools/rename_records.py --prose benchmarks/results/_pages/lm.md   # and a template's prose
    python benchmarks/tools/rename_records.py --compare /tmp/before/benchmarks/results
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import io
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the benchmarks' own modules (_lab)
from _lab import atomic_write_text

ROOT = Path(__file__).resolve().parents[2]
#: old record name -> registry name
RENAMES = {"risk": "risk_paper", "risk_pre2w": "risk"}
#: the mark of a record line and of a ``tables.json`` entry whose names are the registry's
MARK_KEY, MARK = "names", "registry"
_SUFFIXES = (".md", "_rounds.csv.gz", "_summary.csv", ".png", "_mispredicted.png")


class RenameError(RuntimeError):
    """A record or table the tool cannot rename safely; the message names the file and the fix."""


def new_name(name: str) -> str:
    """The registry name of an old record name (``risk_v0.5`` -> ``risk_paper_v0.5``).

    >>> new_name("risk"), new_name("risk_pre2w_v0.25"), new_name("risk_pre2w_nodist")
    ('risk_paper', 'risk_v0.25', 'risk_pre2w_nodist')
    """
    m = re.fullmatch(r"(.+?)(_v[0-9.]+)?", name)
    base, ratio = m.group(1), m.group(2) or ""
    return RENAMES[base] + ratio if base in RENAMES else name


# --------------------------------------------------------------------------------------- records
def rename_file(path: Path) -> tuple[Path, str | None, int]:
    """(new path, new text or None when unchanged, lines renamed) of one record file."""
    text = path.read_text(encoding="utf-8")
    out, renamed, marked, old_names = [], 0, 0, set()
    for i, line in enumerate(text.splitlines(keepends=True), 1):
        if not line.strip():
            out.append(line)
            continue
        try:
            rec = json.loads(line)
        except ValueError as exc:
            if i == len(text.splitlines()) and not line.endswith("\n"):  # a torn last line: kept
                out.append(line)
                continue
            raise RenameError(f"{path}, line {i}: not JSON ({exc}); restore the file from git.") from exc
        if rec.get(MARK_KEY) == MARK:
            marked += new_name(rec.get("strategy", "")) != rec.get("strategy")
            out.append(line)
            continue
        if not isinstance(rec.get("strategy"), str):
            raise RenameError(f"{path}, line {i}: no strategy name; restore the file from git.")
        if new_name(rec["strategy"]) == rec["strategy"]:  # a name both namings share
            out.append(line)
            continue
        old_names.add(rec["strategy"])
        rec["strategy"] = new_name(rec["strategy"])
        rec[MARK_KEY] = MARK
        out.append(json.dumps(rec, separators=(",", ":")) + "\n")
        renamed += 1
    if renamed and marked:
        raise RenameError(
            f"{path}: {marked} lines carry the registry's names and {renamed} do not (a run with the old "
            "names appended to a renamed file?). Move the old-named lines to a file of their own, then rerun."
        )
    new_path = path
    m = re.fullmatch(r"(.+)_(.+?)_seed(\d+)\.jsonl", path.name)
    if renamed and m and len(old_names) == 1:
        old = next(iter(old_names))
        if path.name.endswith(f"_{old}_seed{m.group(3)}.jsonl"):
            stem = path.name[: -len(f"_{old}_seed{m.group(3)}.jsonl")]
            new_path = path.with_name(f"{stem}_{new_name(old)}_seed{m.group(3)}.jsonl")
    return new_path, ("".join(out) if renamed else None), renamed


def rename_raw(raw: Path, *, write: bool) -> list[str]:
    """Rename the records of one ``raw/`` folder; returns what changed."""
    plans = [(p, *rename_file(p)) for p in sorted(raw.glob("*.jsonl"))]
    moving = {p for p, new, text, _ in plans if new != p}
    targets: dict[Path, Path] = {}
    for p, new, text, _ in plans:
        if new == p:
            continue
        if new in targets:
            raise RenameError(f"{targets[new]} and {p} would both become {new}; move one of them away.")
        if new.exists() and new not in moving:
            raise RenameError(f"{p} would become {new}, which holds other records; move one of them away.")
        targets[new] = p
    done = [f"{p.relative_to(ROOT) if p.is_relative_to(ROOT) else p}: {n} lines"
            + (f" -> {new.name}" if new != p else "") for p, new, text, n in plans if text is not None]
    if not write:
        return done
    staged = []
    for p, new, text, _ in plans:  # write every new file beside the old ones first, then swap
        if text is None:
            continue
        tmp = p.with_name(p.name + ".renaming")
        atomic_write_text(tmp, text)
        staged.append((p, new, tmp))
    for p, new, tmp in staged:
        if new != p and p not in targets:
            p.unlink()
    for p, new, tmp in staged:
        os.replace(tmp, new)
    return done


# ---------------------------------------------------------------------------------------- tables
def rename_command(footer: str) -> str:
    """The footer with the strategies of its ``--strategies`` renamed."""
    def strategies(m: re.Match) -> str:
        return m.group(1) + " ".join(new_name(s) for s in m.group(2).split(" "))

    return re.sub(r"(--strategies )([\w.]+(?: (?!--)[\w.]+)*)", strategies, footer)


def command_args(footer: str) -> list[str]:
    """The ``bench_al.py`` arguments of a footer's command (``--lm-params`` JSON kept whole)."""
    m = re.search(r"_command_: `python benchmarks/bench_al\.py ([^`]*)`", footer)
    if not m:
        raise RenameError("no bench_al.py command")
    args: list[str] = []
    for part in re.split(r" (?=--)", m.group(1).strip()):
        opt, _, rest = part.partition(" ")
        args.append(opt)
        if rest:
            args += [rest] if opt == "--lm-params" else rest.split()
    return args


def _split(text: str) -> tuple[str, str, str]:
    """(title, body, footer) of a bench_al table (the footer starts at its ``_command_`` line)."""
    title, _, rest = text.partition("\n")
    cut = rest.find("\n_command_: ")
    return (title, rest, "") if cut < 0 else (title, rest[:cut], rest[cut:])


def _bench_al():
    spec = importlib.util.spec_from_file_location("bench_al", ROOT / "benchmarks" / "bench_al.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def rename_tables(raw: Path, *, write: bool) -> list[str]:
    """Regenerate the unmarked ``bench_al.py`` tables of ``raw.parent``; returns what changed."""
    out_dir = raw.parent
    prov = raw / "tables.json"
    known = json.loads(prov.read_text(encoding="utf-8")) if prov.is_file() else {}
    stems = {md.stem for md in out_dir.glob("*.md")
             if "_command_: `python benchmarks/bench_al.py " in md.read_text(encoding="utf-8")}
    done = []
    for stem in sorted(stems | set(known)):
        entry = known.get(stem)
        if isinstance(entry, dict) and entry.get(MARK_KEY) == MARK:
            continue
        md = out_dir / f"{stem}.md"
        if not md.is_file():  # an entry of a table saved under another name: its command renamed
            known[stem] = {**entry, "footer": rename_command(entry["footer"]), MARK_KEY: MARK}
            done.append(f"{prov}: {stem} (no table; command renamed)")
            continue
        title, body, footer = _split(md.read_text(encoding="utf-8"))
        if re.search(r"\brisk_paper\b", body + footer):  # old code refused that name: renamed already
            known[stem] = {"sha256": hashlib.sha256(body.encode("utf-8")).hexdigest(), "title": title,
                           "footer": footer, MARK_KEY: MARK}
            done.append(f"{prov}: {stem} (already renamed; entry marked)")
            continue
        footer = rename_command(footer)
        args = command_args(footer)
        done.append(f"{md.relative_to(ROOT) if md.is_relative_to(ROOT) else md}: regenerated")
        if not write:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copytree(raw, Path(tmp) / "raw", ignore=shutil.ignore_patterns("cache", "*.renaming"))
            cache = out_dir / "cache"
            if cache.is_dir():
                (Path(tmp) / "cache").symlink_to(cache.resolve(), target_is_directory=True)
            argv = list(args)
            argv[argv.index("--out") + 1] = tmp
            if "--report-only" not in argv:
                argv.append("--report-only")
            with contextlib.redirect_stdout(io.StringIO()):
                rc = _bench_al().main(argv)
            made = list(Path(tmp).glob("*.md"))
            if rc or len(made) != 1:
                raise RenameError(f"bench_al.py {' '.join(argv)} failed for {md} (exit {rc}, {len(made)} tables).")
            new = made[0].name.removesuffix(".md")
            _, body, _ = _split(made[0].read_text(encoding="utf-8"))
            for suffix in _SUFFIXES[1:]:
                src, dst = Path(tmp) / f"{new}{suffix}", out_dir / f"{stem}{suffix}"
                if src.is_file() and dst.is_file():
                    shutil.copyfile(src, dst)
        atomic_write_text(md, f"{title}\n{body}{footer}")
        known[stem] = {"sha256": hashlib.sha256(body.encode("utf-8")).hexdigest(), "title": title,
                       "footer": footer, MARK_KEY: MARK}
    if write and done:
        atomic_write_text(prov, json.dumps(known, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    return done


# ----------------------------------------------------------------------------------------- prose
#: appended to a template whose prose ``--prose`` renamed (so that a second run refuses it)
PROSE_MARK = "<!-- strategy names: the registry's (benchmarks/tools/rename_records.py) -->"


def rename_prose(text: str) -> str:
    """Markdown written with the old names, renamed: the strategy lists of ``--strategies`` and a
    name alone in backticks (`` `risk` `` -> `` `risk_paper` ``, `` `risk_pre2w` `` -> `` `risk` ``).

    >>> rename_prose("`risk_pre2w` beats `risk` (--strategies risk_pre2w risk entropy)")
    '`risk` beats `risk_paper` (--strategies risk risk_paper entropy)'
    """
    name = r"[a-z][a-z0-9_.]*"
    text = re.sub(r"(--strategies\s+)(" + name + r"(?:\s+(?!--)" + name + r")*)",
                  lambda m: m.group(1) + re.sub(name, lambda t: new_name(t.group(0)), m.group(2)), text)
    return re.sub(r"`(risk(?:_pre2w)?(?:_v[0-9.]+)?)`", lambda m: f"`{new_name(m.group(1))}`", text)


def rename_pages(paths: list[str]) -> list[str]:
    """Rename the prose of page templates written with the old names (once: a file that already
    names ``risk_paper`` is refused)."""
    done = []
    for p in map(Path, paths):
        text = p.read_text(encoding="utf-8")
        if PROSE_MARK in text or re.search(r"\brisk_paper\b", text):
            raise RenameError(f"{p} names its strategies as the registry does already (renaming again would "
                              "turn skrisk's default into the paper's method); edit it by hand.")
        atomic_write_text(p, rename_prose(text).rstrip("\n") + f"\n\n{PROSE_MARK}\n")
        done.append(f"{p}: prose renamed")
    return done


# --------------------------------------------------------------------------------------- compare
def _names_only(old: str, new: str, csv: bool) -> bool:
    """Whether ``new`` is ``old`` with the strategies renamed (rows as a set for a CSV)."""
    def ren(text: str) -> str:
        return re.sub(r"(?<![\w])(risk(?:_pre2w)?(?:_v[0-9.]+)?)(?![\w])",
                      lambda m: new_name(m.group(1)), text)

    old_r = ren(old)
    if old_r == new:
        return True
    return csv and sorted(old_r.splitlines()) == sorted(new.splitlines())


def compare(results: Path, before: Path) -> int:
    """Compare every table and CSV of the renamed folders with ``before``; returns the number that differ."""
    bad = 0
    for raw in sorted(results.rglob("raw")):
        for new in sorted(raw.parent.glob("*_*.md")) + sorted(raw.parent.glob("*.csv")):
            old = before / new.relative_to(results)
            if not old.is_file():
                continue
            if new.suffix == ".md" and "_command_: `python benchmarks/bench_al.py " not in new.read_text(encoding="utf-8"):
                continue  # not a bench_al table (e.g. bench_risk_quality's)
            a, b = old.read_text(encoding="utf-8"), new.read_text(encoding="utf-8")
            if new.suffix == ".md":  # the command lines name the strategies as given
                a, b = _split(a)[1], _split(b)[1]
            if not _names_only(a, b, new.suffix == ".csv"):
                bad += 1
                print(f"DIFFERS beyond the names: {new.relative_to(results)}")
    return bad


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", default=str(ROOT / "benchmarks" / "results"))
    p.add_argument("--check", action="store_true", help="write nothing; list what would change (exit 1 if any)")
    p.add_argument("--prose", nargs="+", metavar="TEMPLATE", help="also rename the strategy names in the "
                   "prose of these page templates (benchmarks/results/_pages/*.md) written with the old "
                   "names; refuses a file that already names risk_paper")
    p.add_argument("--compare", metavar="OLD_RESULTS", help="the results folder of a checkout from before "
                   "the rename: check that the tables differ from its tables only in the names")
    args = p.parse_args(argv)
    results = Path(args.results).resolve()
    if args.compare:
        bad = compare(results, Path(args.compare).resolve())
        print(f"{bad} file(s) differ beyond the names" if bad else "every table differs only in the names")
        return 1 if bad else 0
    changes = []
    try:
        for raw in sorted(d for d in results.rglob("raw") if d.is_dir()):
            changes += rename_raw(raw, write=not args.check)
            changes += rename_tables(raw, write=not args.check)
        if args.prose and not args.check:
            changes += rename_pages(args.prose)
    except RenameError as exc:
        print(f"rename_records: {exc}", file=sys.stderr)
        return 2
    print("\n".join(changes) if changes else "nothing to rename: every record and table has the registry's names")
    return 1 if args.check and changes else 0


if __name__ == "__main__":
    raise SystemExit(main())
