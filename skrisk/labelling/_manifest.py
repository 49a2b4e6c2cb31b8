"""The files of a session folder: their names, the manifest (``session.json``) read and checked,
and the identity (path, SHA-256, size) of the input tables the manifest records.

The folder holds ``session.json`` (the manifest: inputs, parameters, blocking rules, the last
export's journal position), ``journal.jsonl`` (every answer, see :mod:`skrisk.labelling._journal`),
``candidates.csv`` (the candidate pairs, in the order the session uses), the exports
``labels.csv`` and ``predicted_matches.csv`` and the model of the last round (``model.skrisk``).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from ..data._rules_json import blocking_rules_from_json
from ..exceptions import DataError
from ._config import SessionConfig

__all__ = ["CANDIDATES", "JOURNAL", "LABELS_CSV", "MANIFEST", "PREDICTED_CSV"]

MANIFEST = "session.json"
JOURNAL = "journal.jsonl"
CANDIDATES = "candidates.csv"
LABELS_CSV = "labels.csv"
PREDICTED_CSV = "predicted_matches.csv"
_FORMAT = "skrisk-labelling-session"
#: every file a session writes in its folder (checked for links before anything is touched)
_SESSION_FILES = (MANIFEST, JOURNAL, CANDIDATES, LABELS_CSV, PREDICTED_CSV, "model.skrisk",
                  JOURNAL + ".torn", "journal.rejected.jsonl")


def _check_encoding(encoding: str) -> None:
    """One codec name, or two separated by a comma (the left table's, the right table's)."""
    import codecs

    parts = str(encoding).split(",")
    try:
        if len(parts) > 2:
            raise LookupError
        for part in parts:
            codecs.lookup(part.strip())
    except (LookupError, TypeError):
        raise DataError(
            f"Unknown text encoding {encoding!r}: pass a Python codec name to --encoding, e.g. utf-8, "
            "latin-1, cp1252 or utf-16, or two separated by a comma, one per table (utf-8,latin-1)."
        ) from None


def _read_manifest(path: Path) -> dict:
    """Read and check ``session.json``; :class:`DataError` names what is wrong and the fix."""
    fix = "Restore session.json from a backup, or start a new session in another folder."
    if not path.is_file():
        raise DataError(f"{path} is not a file: the session's manifest must be a file. {fix}")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"{path} is not a skrisk session manifest ({exc}). {fix}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != _FORMAT:
        got = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise DataError(f"{path} is not a skrisk session manifest (format is {got!r}). {fix}")

    def bad(what: str) -> DataError:
        return DataError(f"{path} is damaged: {what}. {fix}")

    inputs = manifest.get("inputs")
    if not isinstance(inputs, dict):
        raise bad('it has no "inputs" (the tables the session started with)')
    task = manifest.get("task", "link")
    if task not in ("link", "dedup"):
        raise bad(f'"task" is {task!r}, not "link" or "dedup"')
    manifest["task"] = task
    tables = ("table",) if task == "dedup" else ("left", "right")
    for side in (*tables, "pairs"):
        info = inputs.get(side)
        if info is None and side == "pairs":
            continue
        if not isinstance(info, dict) or not all(isinstance(info.get(k), str) for k in ("path", "sha256")):
            raise bad(f'"inputs" has no valid "{side}" entry (with "path" and "sha256")')
    params = manifest.get("params")
    if isinstance(params, dict) and "batch" in params and "n_instances" not in params:
        params["n_instances"] = params.pop("batch")  # the name of manifests written before n_instances
    fields = SessionConfig.__dataclass_fields__
    # added later: older sessions lack them and get the defaults
    optional = ("audit", "target", "matcher", "lm_model")
    texts = ("target", "matcher", "lm_model")
    if not isinstance(params, dict) or not all(
        isinstance(params.get(k), str if k in texts else int) for k in fields if k not in optional or k in params
    ):
        raise bad('"params" lacks one of the integers ' + ", ".join(k for k in fields if k not in optional)
                  + ' (or its "target" is not a text)')
    if not isinstance(manifest.get("id_column", "id"), str):
        raise bad('"id_column" is not a text')
    manifest.setdefault("id_column", "id")
    if not isinstance(manifest.get("encoding", "utf-8"), str):
        raise bad('"encoding" is not a text')
    if manifest.get("exported") is not None and not isinstance(manifest["exported"], dict):
        raise bad('"exported" is not an object')
    for key in ("blocking", "match_blocking"):
        if manifest.get(key) is not None:
            try:  # checked here, kept in its JSON form (the form every manifest write must keep)
                blocking_rules_from_json(manifest[key])
            except (TypeError, ValueError, KeyError) as exc:
                raise bad(f'"{key}" is not a list of blocking rules ({exc})') from exc
    if manifest.get("types") is not None:
        from ..data._types import check_column_type

        types = manifest["types"]
        if not isinstance(types, dict):
            raise bad('"types" is not an object of column types')
        try:
            manifest["types"] = {c: check_column_type(t, c, '"types"') for c, t in types.items()}
        except DataError as exc:
            raise bad(str(exc)) from None
    if manifest.get("session_id") is not None and not isinstance(manifest["session_id"], str):
        raise bad('"session_id" is not a text')
    return manifest


def _new_session_id() -> str:
    """A session's identity, carried by each of its journal lines (random: unique across folders)."""
    import uuid

    return uuid.uuid4().hex


def _table_word(side: str) -> str:
    """``"left table"``, ``"right table"`` or ``"table"`` (the one table of a dedup session)."""
    return "table" if side == "table" else f"{side} table"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _file_info(path: str | os.PathLike | None) -> dict | None:
    if path is None:
        return None
    p = Path(path).expanduser().resolve()
    if not p.is_file():
        raise FileNotFoundError(f"{p} does not exist: check the path.")
    return {"path": str(p), "sha256": _sha256(p), "bytes": p.stat().st_size}

