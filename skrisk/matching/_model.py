"""The saved complete model: everything needed to score new record pairs, in one file.

A :class:`MatchModel` holds the attributes, the task (``"link"`` or ``"dedup"``), the blocking
rules, the fitted similarity features, the matcher, the fitted :class:`~skrisk.LearnRisk`
(or None), the match threshold and the versions that wrote it. :meth:`MatchModel.save` writes
it as one zip file (``model.skrisk``) whose entries are

* ``model.json``: format, format version, attributes, task, blocking rules, id column,
  threshold, versions and what kind of matcher the file holds (JSON);
* ``estimators.skops``: the scikit-learn objects (similarity features, the matcher or, for a
  pipeline ending in an RNN matcher, its steps before it, LearnRisk without its copy of the
  matcher), written by
  :func:`skops.io.dumps` and read by :func:`skops.io.loads` with an explicit list of trusted
  types (``TRUSTED_TYPES``; never ``trusted=True``): no pickle, nothing in the file runs;
* ``rnn/config.json`` and ``rnn/weights.pt``: the :class:`~skrisk.matchers.RNNMatcher` that ends
  the matcher pipeline, in the format of :func:`~skrisk.matchers.save_matcher` (JSON, and tensors read with
  ``torch.load(..., weights_only=True)``), because skops does not persist torch modules;
* ``lm/*``: an :class:`~skrisk.matchers.LMMatcher` matcher, as :meth:`LMMatcher.save
  <skrisk.matchers.LMMatcher.save>` writes it (``config.json``, ``model.safetensors``,
  tokenizer JSON, ``head.safetensors``, ``lm_matcher.json``): JSON and safetensors only, loaded
  with no code from the file run (no ``auto_map``, no pickled weights).

:func:`load_model` refuses any other entry, a file that is not a zip archive (a pickle is named
as such), a newer format version, untrusted types, and a file whose parts disagree (the
similarity features were fitted on other attributes than the file says). A file unpacks to at
most :data:`MAX_MODEL_BYTES`, a JSON entry to at most :data:`MAX_META_BYTES` (``model.json``) or
:data:`MAX_JSON_BYTES`, checked from the zip directory before anything is unpacked; only a
regular file is read (a device or a FIFO is refused without blocking); and every tree and rule the
file holds is checked before use (:func:`~skrisk.matching._validate.check_model_parts`).
"""

from __future__ import annotations

import copy
import io
import json
import math
import os
import platform
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .._fileio import RepeatedKeyError, atomic_write_bytes, json_loads_unique, open_regular_file
from ..data._rules_json import blocking_rules_from_json, blocking_rules_to_json
from ..exceptions import DataError
from ..matchers._threshold import MATCH_THRESHOLD
from ._validate import check_matcher_width, check_model_parts, check_rnn_pipeline

__all__ = ["MatchModel", "load_model", "MODEL_FILE", "TRUSTED_TYPES", "FORMAT_VERSION", "ModelManifest",
           "read_manifest", "load_estimators"]

#: File name of the model inside a labelling session folder.
MODEL_FILE = "model.skrisk"
FORMAT = "skrisk.MatchModel"
#: Version of the file layout; a file of a newer version is refused with a clear message.
FORMAT_VERSION = 1

#: Types of skrisk (and the few others) that skops does not trust by default and that a model
#: file may hold. Reviewed: each is a plain data holder or an estimator whose state is numbers,
#: strings and arrays; loading one sets its attributes and runs none of its methods.
TRUSTED_TYPES: tuple[str, ...] = (
    "builtins.frozenset",
    "sklearn.tree._tree.Tree",
    "skrisk.data._embeddings.WordVectors",
    "skrisk.data._similarity.SimilarityFeatures",
    "skrisk.data._tokenize.PairEncoder",
    "skrisk.data._tokenize.Vocabulary",
    "skrisk.matchers._feature.FeatureMatcher",
    "skrisk.risk._estimator.LearnRiskEstimator",
    "skrisk.risk._learnrisk.LearnRisk",
    "skrisk.risk._rules.Condition",
    "skrisk.risk._rules.Rule",
)

_META = "model.json"
_SKOPS = "estimators.skops"
_RNN_CONFIG = "rnn/config.json"
_RNN_WEIGHTS = "rnn/weights.pt"
_LM = "lm/"
#: The files of an LMMatcher in a model file (under ``lm/``); the first five are required.
_LM_FILES = ("config.json", "model.safetensors", "tokenizer.json", "head.safetensors", "lm_matcher.json",
             "tokenizer_config.json", "special_tokens_map.json")
_ENTRIES = frozenset({_META, _SKOPS, _RNN_CONFIG, _RNN_WEIGHTS, *(_LM + f for f in _LM_FILES)})
#: Uncompressed bytes a model file may hold in all (checked before anything is read).
MAX_MODEL_BYTES = 4 * 2**30
#: Unpacked bytes of a JSON entry (``model.json``; ``rnn/config.json``, which holds the RNN's
#: vocabulary, and a skops file's schema may hold :data:`MAX_JSON_BYTES`), checked before it is
#: read: a small file that unpacks to gigabytes of JSON is refused, not parsed.
MAX_META_BYTES = 16 * 2**20
MAX_JSON_BYTES = 512 * 2**20
_ENTRY_LIMITS = {_META: MAX_META_BYTES, _RNN_CONFIG: MAX_JSON_BYTES,
                 **{_LM + f: MAX_JSON_BYTES for f in _LM_FILES if f.endswith(".json")}}
_MATCHER_KINDS = ("sklearn", "rnn_pipeline", "lm")
_META_KEYS = frozenset({"format", "format_version", "attributes", "task", "blocking", "id_column", "threshold",
                        "matcher_kind", "versions"})
#: Limits of a model file's blocking rules beyond those of :func:`skrisk.data.block` (a file may not
#: lift the bounds on the pairs a rule makes): candidate pairs per record the tokens rule examines,
#: its rescoring factor, and the pairs a standard or sorted_neighbourhood rule may make.
_FILE_RULE_LIMITS = {"budget": 10_000, "rescore": 1000, "max_pairs": 10**10}
_TASKS = ("link", "dedup")
_RESAVE = "save the model again with this skrisk (MatchModel.save, or label one more round in the session)"


def _versions() -> dict[str, str]:
    import sklearn

    from .. import __version__

    out = {"skrisk": __version__, "scikit-learn": sklearn.__version__, "numpy": np.__version__,
           "pandas": pd.__version__, "python": platform.python_version()}
    try:
        import skops

        out["skops"] = skops.__version__
    except ImportError:  # pragma: no cover - skops is a requirement
        pass
    return out


#: The array-API backends of scikit-learn's vendored ``array_api_compat`` whose import loads a large
#: library (torch, dask, cupy) and holds no estimator.
_HEAVY_BACKENDS = tuple(f"sklearn.externals.array_api_compat.{b}" for b in ("torch", "dask", "cupy"))


def _skops_io() -> Any:
    """:mod:`skops.io`, imported without loading torch, dask or cupy.

    Importing ``skops.io`` lists scikit-learn's estimators (its default trusted types) with
    :func:`sklearn.utils.all_estimators`, whose package walk imports every subpackage of
    scikit-learn, the array-API backends in ``sklearn.externals.array_api_compat`` included, and
    so torch. Those backends define no estimator: while ``skops.io`` is imported they are marked
    unimportable (``None`` in ``sys.modules``, which the walk skips), then unmarked, so the list
    of trusted types is the same and nothing later is kept from importing them.
    """
    import sys

    if "skops.io" in sys.modules:
        return sys.modules["skops.io"]
    marked = [name for name in _HEAVY_BACKENDS if name not in sys.modules]
    for name in marked:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        import skops.io as sio
    finally:
        for name in marked:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]
    return sio


def _is_rnn(obj: object) -> bool:
    """Whether ``obj`` is an RNNMatcher, without importing torch when it is not loaded."""
    import sys

    mod = sys.modules.get("skrisk.matchers._rnn")
    return mod is not None and isinstance(obj, mod.RNNMatcher)


def _is_lm(obj: object) -> bool:
    """Whether ``obj`` is an LMMatcher, without importing transformers when it is not loaded."""
    import sys

    mod = sys.modules.get("skrisk.matchers._lm")
    return mod is not None and isinstance(obj, mod.LMMatcher)


def _lm_entries(matcher: Any) -> dict[str, bytes]:
    """The ``lm/*`` entries of a fitted LMMatcher."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="skrisk-lm-") as tmp:
        matcher.save(tmp)
        return {_LM + f: (Path(tmp) / f).read_bytes() for f in _LM_FILES if (Path(tmp) / f).is_file()}


def _lm_from_entries(entries: dict[str, bytes], file: Path, device: str | None) -> Any:
    """The LMMatcher of a model file's ``lm/*`` entries (JSON and safetensors; no code is run)."""
    import tempfile

    missing = [f for f in _LM_FILES[:5] if _LM + f not in entries]
    if missing:
        raise _bad(file, f"matcher_kind is 'lm' but {[_LM + f for f in missing]} is missing")
    from ..matchers._lm import lm_from_folder

    with tempfile.TemporaryDirectory(prefix="skrisk-lm-") as tmp:
        for name, data in entries.items():
            if name.startswith(_LM):
                (Path(tmp) / name[len(_LM):]).write_bytes(data)
        try:  # messages name the entries as they are in the model file (file/lm/<name>)
            return lm_from_folder(tmp, device if device is not None else "auto", shown=file / "lm")
        except DataError as exc:
            raise DataError(f"{file}: its language-model matcher (lm/) is refused: {exc}") from exc


def _blocking_of(meta: dict, file: Path) -> list | None:
    """The blocking rules of a model file's ``model.json``, each entry checked: its method, its
    columns (attributes of the model) and its parameters (types and ranges)."""
    try:
        rules = blocking_rules_from_json(meta.get("blocking"))
    except (TypeError, ValueError) as exc:
        raise DataError(
            f"{file}: the blocking rules in {_META} are damaged ({exc}). Fix that entry of {_META}'s "
            f"\"blocking\" list (or set it to null for the default rule), or {_RESAVE}; --blocking and "
            "--block-on do not replace a damaged entry."
        ) from None
    for j, (method, cols, params) in enumerate(rules or []):
        for key, limit in _FILE_RULE_LIMITS.items():
            v = params.get(key)
            if v is not None and v > limit:
                what = "a positive number" if key == "budget" else "None or a positive int" if key == "max_pairs" \
                    else "a positive int"
                raise DataError(
                    f"{file}: blocking rule {j} of {_META} ({method}): {key} must be {what} at most {limit} in a "
                    f"model file, got {v!r} (a larger one lifts the bound on the pairs the rule makes). Fix that "
                    f"entry of {_META}, or {_RESAVE}."
                )
        unknown = [c for c in cols or [] if c not in meta["attributes"]]
        if unknown:
            raise DataError(
                f"{file}: blocking rule {j} of {_META} ({method}) names the columns {unknown}, which are not "
                f"attributes of the model ({meta['attributes']}): the parts come from different tasks, or the "
                f"entry was edited. Fix that entry, or {_RESAVE}."
            )
    return rules


@dataclass
class MatchModel:
    """Everything needed to score new record pairs: features, matcher, risk, threshold, blocking.

    Parameters
    ----------
    attributes : list of str
        The attribute columns the model reads, in the order its features were fitted on (the
        pair frame has ``left_<a>`` then ``right_<a>`` columns, see
        :meth:`~skrisk.data.PairDataset.to_frame`).
    features : SimilarityFeatures
        The fitted similarity features of pair frames (``left_<a>``/``right_<a>`` columns): the
        input of LearnRisk's rules and, unless the matcher takes pair frames, of the matcher.
    matcher : classifier
        The fitted matcher, on the similarity features (a
        :class:`~skrisk.matchers.FeatureMatcher`, any scikit-learn classifier or pipeline) or on
        pair frames (a pipeline such as ``make_rnn_pipeline``'s
        ``PairEncoder`` + :class:`~skrisk.matchers.RNNMatcher`, which is saved as JSON + torch
        weights); see :class:`~skrisk.pools.ChunkScorer`, which scores with the model.
    risk_model : LearnRisk or None, default=None
        Fitted around ``matcher``, its rules on the similarity features. None: no risk
        (:func:`~skrisk.matching.match` then reports the matcher's uncertainty ``min(p, 1 - p)``,
        LearnRisk's own fallback).
    threshold : float, default=MATCH_THRESHOLD
        A pair is a match when its probability is greater than this.
    task : {"link", "dedup"}, default="link"
        Two tables, or one table deduplicated.
    blocking : list of rules or None, default=None
        Rules for :func:`skrisk.data.block` (None: one ``tokens`` rule over all attributes).
    id_column : str, default="id"
        The id column of the tables the model was trained on (the default for new tables).
    versions : dict of str to str, default={}
        Versions of skrisk and its main dependencies that built the model; filled by
        :meth:`save` when empty, read back by :func:`load_model`.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from skrisk.data import PairDataset, SimilarityFeatures
    >>> from skrisk.matchers import FeatureMatcher
    >>> from skrisk.matching import MatchModel
    >>> t = pd.DataFrame({"name": ["ann lee", "anne lee", "bob roy", "rob roy"]},
    ...                  index=["1", "2", "3", "4"])
    >>> ds = PairDataset.from_frames(t, t, [("1", "2", 1), ("3", "4", 1), ("1", "3", 0), ("2", "4", 0)])
    >>> sf = SimilarityFeatures().fit(ds.to_frame())
    >>> m = FeatureMatcher(random_state=0).fit(sf.transform(ds.to_frame()), ds.y)
    >>> model = MatchModel(["name"], sf, m)
    >>> model.scorer(t, t).score(ds.pairs).proba.shape
    (4,)
    """

    attributes: list[str]
    features: Any
    matcher: Any
    risk_model: Any = None
    threshold: float = MATCH_THRESHOLD
    task: str = "link"
    blocking: Any = None
    id_column: str = "id"
    versions: dict = field(default_factory=dict)

    # ------------------------------------------------------------------ checks
    def check(self, where: str = "MatchModel") -> None:
        """Raise :class:`DataError` naming the first inconsistent field (``where`` names the source)."""
        attrs = self.attributes
        if not isinstance(attrs, (list, tuple)) or not attrs or not all(isinstance(a, str) for a in attrs):
            raise DataError(f"{where}: attributes must be a non-empty list of column names, got {attrs!r}.")
        if len(set(attrs)) != len(attrs):
            raise DataError(f"{where}: attributes {list(attrs)} repeat a name.")
        if self.task not in _TASKS:
            raise DataError(f"{where}: task is {self.task!r}, not one of {_TASKS}.")
        t = self.threshold
        if isinstance(t, bool) or not isinstance(t, (int, float, np.floating)) or not (0.0 <= float(t) < 1.0):
            raise DataError(f"{where}: threshold is {t!r}, not a number in [0, 1).")
        if not isinstance(self.id_column, str) or not self.id_column:
            raise DataError(f"{where}: id_column is {self.id_column!r}, not a column name.")
        if not hasattr(self.matcher, "predict_proba"):
            raise DataError(f"{where}: the matcher {type(self.matcher).__name__} has no predict_proba.")
        if _is_lm(self.matcher) and getattr(self.matcher, "input_kind_", None) != "frame":
            raise DataError(f"{where}: the LMMatcher is not fitted.")
        if _is_rnn(self.matcher):
            raise DataError(
                f"{where}: a bare RNNMatcher takes encoded pairs; give it with its encoder as one "
                "Pipeline on pair frames: Pipeline([('encoder', PairEncoder()), ('matcher', RNNMatcher())])."
            )
        if self.features is None or not hasattr(self.features, "transform"):
            raise DataError(
                f"{where}: features must be the fitted SimilarityFeatures of the pairs (LearnRisk's "
                f"rules read them), got {type(self.features).__name__}."
            )
        expected = [f"left_{a}" for a in attrs] + [f"right_{a}" for a in attrs]
        seen = getattr(self.features, "feature_names_in_", None)
        if seen is None or [str(c) for c in seen] != expected:
            raise DataError(
                f"{where}: the similarity features were fitted on the columns "
                f"{None if seen is None else [str(c) for c in seen][:8]}, but the model's attributes "
                f"{list(attrs)} give {expected[:8]}: the parts come from different tasks; {_RESAVE}."
            )
        self._check_types(where)
        from ..risk import LearnRisk

        if self.risk_model is not None and not isinstance(self.risk_model, LearnRisk):
            raise DataError(f"{where}: risk_model must be a fitted skrisk LearnRisk, got {type(self.risk_model).__name__}.")
        inner = getattr(self.risk_model, "risk_model_", None)
        names = getattr(inner, "feature_names_", None)
        if names is not None and getattr(self.risk_model, "features", None) is None:
            try:
                width = len(self.features.get_feature_names_out())
            except (AttributeError, TypeError, ValueError):
                width = None
            if width is not None and len(names) != width:
                raise DataError(
                    f"{where}: the risk model's rules read {len(names)} features, but the similarity features "
                    f"give {width}: the parts come from different models; {_RESAVE}."
                )
        blocking_rules_to_json(self.blocking)

    def _check_types(self, where: str) -> None:
        """Refuse column types (``features.column_types_``) that are malformed, do not cover the
        attributes, or disagree with the features the types give."""
        ctypes = getattr(self.features, "column_types_", None)
        if ctypes is None:  # features fitted before column types: every attribute text
            return
        from ..data._similarity import SIMILARITY_METRICS, TYPED_METRICS
        from ..data._types import check_column_type

        if not isinstance(ctypes, dict) or sorted(map(str, ctypes)) != sorted(self.attributes):
            raise DataError(f"{where}: the column types cover {sorted(map(str, ctypes))[:8] if isinstance(ctypes, dict) else ctypes!r}, "
                            f"not the attributes {list(self.attributes)}; {_RESAVE}.")
        per_attr = getattr(self.features, "attribute_metrics_", None)
        for a in self.attributes:
            entry = check_column_type(ctypes[a], a, f"{where}: column types")
            if entry != ctypes[a]:
                raise DataError(f"{where}: the type entry of column {a!r} is {ctypes[a]!r}, not a checked entry "
                                f"(expected {entry!r}); {_RESAVE}.")
            kind = entry["type"]
            # the features of a type: its typed comparisons and generic metrics (the lists of
            # older versions stay readable), never another type's comparisons
            allowed = set(SIMILARITY_METRICS) | set(TYPED_METRICS.get(kind, ()))
            got = per_attr.get(a) if isinstance(per_attr, dict) else None
            if not isinstance(got, (tuple, list)) or not got or not set(got) <= allowed:
                raise DataError(f"{where}: column {a!r} is typed {kind!r}, but its features are "
                                f"{per_attr.get(a) if isinstance(per_attr, dict) else None}: the parts do not "
                                f"belong together; {_RESAVE}.")

    def check_table(self, table: pd.DataFrame, source: str) -> None:
        """Raise :class:`DataError` when ``table`` (read from ``source``) lacks an attribute the model needs."""
        _check_table(self.attributes, table, source)

    # ------------------------------------------------------------------ scoring
    def scorer(self, left: pd.DataFrame, right: pd.DataFrame | None = None, *, n_jobs: int | None = -1,
               value_counts: Any = None) -> Any:
        """A :class:`~skrisk.pools.ChunkScorer` of pairs of these tables with this model.

        Parameters
        ----------
        left : pandas.DataFrame
            Records indexed by id, with the model's attributes.
        right : pandas.DataFrame or None, default=None
            The other table (linkage); None: pairs within ``left`` (dedup).
        n_jobs : int or None, default=-1
            Threads of the features of each chunk (:class:`~skrisk.pools.ChunkScorer`'s ``n_jobs``).
        value_counts : dict or (dict, dict), optional
            The value counts of the whole table(s) (:class:`~skrisk.pools.ChunkScorer`'s
            ``value_counts``); None: those of ``left`` and ``right``.

        Returns
        -------
        ChunkScorer
            ``scorer.score(pairs)`` gives the probabilities and risks of a chunk of pairs.
        """
        from ..pools import ChunkScorer

        return ChunkScorer(left, right, features=self.features, matcher=self.matcher,
                           risk_model=self.risk_model, threshold=float(self.threshold), n_jobs=n_jobs,
                           value_counts=value_counts)

    # ------------------------------------------------------------------ saving
    def save(self, path: str | os.PathLike) -> Path:
        """Write the model to the file ``path`` atomically (a crash leaves the old file or the new one).

        Parameters
        ----------
        path : str or path-like
            The file (conventionally ``*.skrisk``); its folder must exist.

        Returns
        -------
        pathlib.Path
            The file.
        """
        sio = _skops_io()

        self.check()
        parts, kind, rnn = self._split_rnn()
        lm_files = _lm_entries(self.matcher) if kind == "lm" else {}
        meta = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "attributes": list(self.attributes),
            "task": self.task,
            "blocking": blocking_rules_to_json(self.blocking),
            "id_column": self.id_column,
            "threshold": float(self.threshold),
            "matcher_kind": kind,
            "versions": dict(self.versions) or _versions(),
        }
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(_META, json.dumps(meta, indent=1))
            zf.writestr(_SKOPS, sio.dumps(parts))
            if rnn is not None:
                from ..matchers._rnn import rnn_parts

                config_text, weights = rnn_parts(rnn)
                zf.writestr(_RNN_CONFIG, config_text)
                zf.writestr(_RNN_WEIGHTS, weights)
            for name, data in lm_files.items():  # float weights barely deflate: stored as they are
                stored = zipfile.ZIP_STORED if name.endswith(".safetensors") else None
                zf.writestr(name, data, compress_type=stored)
        target = Path(path)
        atomic_write_bytes(target, buf.getvalue())
        return target

    def _split_rnn(self) -> tuple[dict, str, Any]:
        """The skops-able parts, the matcher kind and the RNNMatcher kept apart (or None)."""
        from sklearn.pipeline import Pipeline

        matcher, kind, rnn = self.matcher, "sklearn", None
        if _is_lm(matcher):  # stored as lm/* (safetensors + JSON), not in the skops part
            matcher, kind = None, "lm"
        elif isinstance(matcher, Pipeline) and _is_rnn(matcher.steps[-1][1]):
            head = copy.copy(matcher)
            head.steps = list(matcher.steps[:-1]) + [(matcher.steps[-1][0], "passthrough")]
            matcher, kind, rnn = head, "rnn_pipeline", matcher.steps[-1][1]
        if kind == "sklearn" and isinstance(matcher, Pipeline) and any(_is_rnn(s) for _, s in matcher.steps):
            raise TypeError("An RNNMatcher inside a Pipeline can be saved only as its last step.")
        risk = None
        if self.risk_model is not None:
            # LearnRisk's estimator_ is the matcher itself: stored once, put back by load_model
            risk = copy.copy(self.risk_model)
            risk.estimator = None
            risk.estimator_ = None
        return {"features": self.features, "matcher": matcher, "risk_model": risk}, kind, rnn


# ---------------------------------------------------------------------------- loading
def _check_table(attributes: Sequence[str], table: pd.DataFrame, source: str) -> None:
    missing = [a for a in attributes if a not in table.columns]
    if missing:
        raise DataError(
            f"{source} has no column {missing[0]!r}"
            f"{' (nor ' + ', '.join(map(repr, missing[1:])) + ')' if len(missing) > 1 else ''}, which "
            f"the model needs: it was trained on a task with the attributes {list(attributes)} "
            f"(the table has {[str(c) for c in table.columns][:12]}). Rename the table's columns to "
            "these names, or use a model trained on this kind of table."
        )


@dataclass(frozen=True)
class ModelManifest:
    """What a model file's ``model.json`` says, read without its estimators (:func:`read_manifest`):
    enough to check and block tables before scikit-learn is imported; :func:`load_estimators`
    makes the model of it."""

    file: Path
    blocking: list | None
    meta: dict = field(repr=False)
    entries: dict[str, bytes] = field(repr=False)

    @property
    def attributes(self) -> list[str]:
        return list(self.meta["attributes"])

    @property
    def task(self) -> str:
        return self.meta["task"]

    @property
    def id_column(self) -> str:
        return self.meta["id_column"]

    def check_table(self, table: pd.DataFrame, source: str) -> None:
        """:meth:`MatchModel.check_table`."""
        _check_table(self.attributes, table, source)

    @property
    def column_types(self) -> dict | None:
        """The column types of the model's ``typed`` blocking rule (None: it has none)."""
        for method, _, params in self.blocking or []:
            if method == "typed" and params.get("types"):
                return params["types"]
        return None


def _bad(path: Path, what: str) -> DataError:
    return DataError(f"{path}: {what}. It is not a model saved by skrisk (MatchModel.save); {_RESAVE}.")


def _check_meta(meta: object, path: Path) -> dict:
    if not isinstance(meta, dict):
        raise _bad(path, f"{_META} holds a JSON {type(meta).__name__}, not an object")
    unknown = sorted(set(meta) - _META_KEYS)
    if unknown and meta.get("format_version") == FORMAT_VERSION:
        raise _bad(path, f"{_META} holds the unknown keys {unknown[:5]} (it holds {sorted(_META_KEYS)})")
    if meta.get("format") != FORMAT:
        raise _bad(path, f"{_META} names the format {meta.get('format')!r}, not {FORMAT!r}")
    version = meta.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _bad(path, f"format_version is {version!r}, not an integer >= 1")
    written = meta.get("versions") if isinstance(meta.get("versions"), dict) else {}
    by = f"skrisk {written.get('skrisk', '(unknown version)')}"
    if version > FORMAT_VERSION:
        from .. import __version__

        raise DataError(
            f"{path} was written by {by} in model format {version}; this skrisk {__version__} reads "
            f"model format {FORMAT_VERSION} only. Upgrade skrisk (pip install -U skrisk) to use this "
            "file, or train and save the model again with this version."
        )
    if version < FORMAT_VERSION:  # pragma: no cover - no older format exists yet
        raise DataError(f"{path} is in the old model format {version} (written by {by}): {_RESAVE}.")
    for key, typ in (("attributes", list), ("task", str), ("id_column", str), ("threshold", (int, float)),
                     ("matcher_kind", str)):
        if key not in meta:
            raise _bad(path, f"{_META} lacks the key {key!r}")
        if not isinstance(meta[key], typ) or isinstance(meta[key], bool):
            raise _bad(path, f"{_META}: {key!r} is a JSON {type(meta[key]).__name__}")
    if meta["matcher_kind"] not in _MATCHER_KINDS:
        raise _bad(path, f"matcher_kind is {meta['matcher_kind']!r}, not one of {_MATCHER_KINDS}")
    if not math.isfinite(meta["threshold"]):
        raise _bad(path, f"threshold is {meta['threshold']!r}")
    versions = meta.get("versions", {})
    if not isinstance(versions, dict) or not all(isinstance(v, str) for v in versions.values()):
        raise _bad(path, f"{_META}: versions is a JSON {type(versions).__name__}"
                         f"{'' if not isinstance(versions, dict) else ' whose values are not all strings'}, not an "
                         "object of version strings")
    return meta


def _check_zip_listing(zf: zipfile.ZipFile, path: Path, where: str, allowed: frozenset | None,
                       limits: dict[str, int], total_limit: int) -> list[zipfile.ZipInfo]:
    """The entries of an open zip archive, after checking their names and unpacked sizes (from
    the archive's directory: nothing is unpacked yet)."""
    infos = zf.infolist()
    names = [i.filename for i in infos]
    unknown = sorted(set(names) - allowed) if allowed is not None else []
    if unknown or len(set(names)) != len(names):
        raise _bad(path, f"{where} holds the unexpected entries {unknown[:5] or 'repeated names'}")
    total = sum(i.file_size for i in infos)
    if total > total_limit:
        raise _bad(path, f"{where} unpacks to {total} bytes, more than the {total_limit} a model may hold")
    for i in infos:
        limit = limits.get(i.filename, limits.get("*.json") if i.filename.endswith(".json") else None)
        if limit is not None and i.file_size > limit:
            raise _bad(path, f"{where} entry {i.filename} unpacks to {i.file_size} bytes, more than the "
                             f"{limit} it may hold")
    return infos


def _read_zip(path: Path) -> dict[str, bytes]:
    """The entries of a model file, after checking names and sizes (nothing is unpickled)."""
    if path.is_dir():
        raise DataError(f"{path} is a folder without a {MODEL_FILE}: pass a model file or a session folder that holds one.")
    with open_regular_file(path, hint="Pass the model file (model.skrisk) itself.") as fh:
        head = fh.read(4)
        fh.seek(0)
        if not zipfile.is_zipfile(fh):
            kind = "a Python pickle, which could run code" if head[:1] == b"\x80" else "not a zip archive"
            raise DataError(
                f"{path} is {kind}: refused, nothing in it was run. A skrisk model file is a zip archive "
                f"written by MatchModel.save; {_RESAVE}, or load the file you meant."
            )
        fh.seek(0)
        try:
            with zipfile.ZipFile(fh) as zf:
                infos = _check_zip_listing(zf, path, "it", _ENTRIES, _ENTRY_LIMITS, MAX_MODEL_BYTES)
                out = {}
                for i in infos:
                    data = zf.read(i)
                    if len(data) != i.file_size:  # pragma: no cover - zipfile checks the CRC too
                        raise _bad(path, f"entry {i.filename} is not the size its header says")
                    out[i.filename] = data
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError) as exc:
            raise DataError(f"{path} is a damaged zip archive ({exc}): it is truncated or corrupt; {_RESAVE}.") from exc
    if _SKOPS in out:  # a skops file is a zip archive too: its own entries are bounded the same way
        try:
            with zipfile.ZipFile(io.BytesIO(out[_SKOPS])) as inner:
                _check_zip_listing(inner, path, _SKOPS, None, {"*.json": MAX_JSON_BYTES}, MAX_MODEL_BYTES)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError) as exc:
            raise _bad(path, f"{_SKOPS} is not a skops archive ({exc})") from exc
    return out


def _trusted_names(trusted: object) -> list[str]:
    """``load_model``'s ``trusted``: a list of ``"module.Class"`` names (never True: skrisk does not
    trust everything; never one bare string, which would be read letter by letter)."""
    if isinstance(trusted, (str, bytes, bool)) or not isinstance(trusted, (list, tuple, set, frozenset)):
        raise TypeError(
            f"trusted must be a list of type names (\"module.Class\"), got {trusted!r}; e.g. "
            "trusted=['mypackage.MyTransformer']. skrisk never trusts every type."
        )
    for t in trusted:
        if not isinstance(t, str) or not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", t):
            raise TypeError(f"trusted: {t!r} is not a type name (\"module.Class\", as skops.io.get_untrusted_types names them).")
    return list(trusted)


def _unused_entries(entries: dict[str, bytes], kind: str, file: Path) -> None:
    """Entries a matcher of ``kind`` does not read are refused: the file's parts disagree."""
    used = {"sklearn": (), "rnn_pipeline": (_RNN_CONFIG, _RNN_WEIGHTS), "lm": tuple(_LM + f for f in _LM_FILES)}[kind]
    extra = sorted(n for n in entries if n not in (_META, _SKOPS) and n not in used)
    if extra:
        raise _bad(file, f"{_META}: matcher_kind is {kind!r} but the file holds {extra[:5]}, which that kind does not read")


def _place_risk(risk: Any, device: str | None) -> None:
    """The risk model scores on ``device`` when given, else where it was saved when that device is
    here, else on the CPU (its numbers are float64 on either). The CPU needs no torch: there the
    risk is computed in numpy."""
    inner = getattr(risk, "risk_model_", None)
    if inner is None:
        return
    name = device if device is not None and device != "auto" else inner.device
    if isinstance(name, str) and re.fullmatch(r"cpu(:[0-9]+)?", name):
        inner.device = name
        return
    import torch

    want = torch.device(device if device is not None and device != "auto" else inner.device)
    if want.type == "cuda" and (not torch.cuda.is_available() or (want.index or 0) >= torch.cuda.device_count()):
        want = torch.device("cpu")
    inner.device = str(want)


def _model_path(path: str | os.PathLike) -> Path:
    p = Path(path).expanduser()
    if p.is_dir():
        inner = p / MODEL_FILE
        if not inner.is_file():
            raise DataError(
                f"{p} is a folder that holds no {MODEL_FILE}: pass a model file, or a labelling session "
                "folder after at least one training round (the session saves the model after every round)."
            )
        return inner
    if not p.exists():
        raise FileNotFoundError(2, f"No model file or session folder {p}: check the path", str(p))
    return p


def load_model(
    path: str | os.PathLike, *, trusted: Sequence[str] = (), device: str | None = None
) -> MatchModel:
    """Load a model written by :meth:`MatchModel.save` (or the one a labelling session saved).

    Nothing in the file can run code: the scikit-learn parts are read by :func:`skops.io.loads`
    with the trusted types ``TRUSTED_TYPES`` plus ``trusted`` (a type outside them is
    refused, named in the message), an RNN matcher's weights by
    ``torch.load(..., weights_only=True)``, and the rest is JSON.

    Parameters
    ----------
    path : str or path-like
        A model file, or a labelling session folder (its ``model.skrisk``).
    trusted : sequence of str, default=()
        More type names to trust (``"module.Class"``), for pipelines of your own classes: review
        them first (:func:`skops.io.get_untrusted_types`).
    device : str or None, default=None
        Device of an RNN or LM matcher and of the risk model (None: for the matchers CUDA when
        available, else CPU; the risk model where it was saved when that device is here, else
        the CPU).

    Returns
    -------
    MatchModel

    Raises
    ------
    FileNotFoundError
        Nothing at ``path``.
    TypeError
        ``trusted`` is not a list of ``"module.Class"`` names (``True`` is refused: skrisk never
        trusts every type).
    DataError
        Not a model file (a pickle, another zip, a damaged archive), a newer format version,
        untrusted types, or parts that disagree; the message names the file and the fix.
    """
    extra_trusted = _trusted_names(trusted)
    return load_estimators(read_manifest(path), extra_trusted, device)


def read_manifest(path: str | os.PathLike) -> ModelManifest:
    """The manifest of a model file (its archive and ``model.json`` checked, the estimators not
    loaded: nothing here imports scikit-learn)."""
    file = _model_path(path)
    entries = _read_zip(file)
    if _META not in entries or _SKOPS not in entries:
        raise _bad(file, f"it lacks {_META if _META not in entries else _SKOPS}")
    try:
        meta = json_loads_unique(entries[_META].decode("utf-8"))
    except RepeatedKeyError as exc:
        raise _bad(file, f"{_META} repeats the key {exc.args[0]!r} (JSON readers disagree on which value wins)") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise _bad(file, f"{_META} is not valid JSON ({exc})") from exc
    meta = _check_meta(meta, file)
    blocking = _blocking_of(meta, file)  # before the estimators are read
    return ModelManifest(file=file, blocking=blocking, meta=meta, entries=entries)


def load_estimators(
    manifest: ModelManifest, extra_trusted: Sequence[str] = (), device: str | None = None
) -> MatchModel:
    """The model of a manifest: its scikit-learn parts read by skops (trusted types only), an RNN
    or LM matcher from its weights; every part checked against the others."""
    sio = _skops_io()
    file, entries, meta, blocking = manifest.file, manifest.entries, manifest.meta, manifest.blocking
    allowed = list(TRUSTED_TYPES) + list(extra_trusted)
    try:
        untrusted = sio.get_untrusted_types(data=entries[_SKOPS])
    except Exception as exc:  # skops raises assorted errors on a malformed schema
        raise _bad(file, f"{_SKOPS} cannot be read ({type(exc).__name__}: {str(exc)[:200]})") from exc
    refused = sorted(set(untrusted) - set(allowed))
    if refused:
        raise DataError(
            f"{file} holds objects of types skrisk does not trust: {refused[:8]}. They were not loaded "
            "and nothing in the file ran. If you made this file and trust these types, review them and "
            f"pass them to load_model(..., trusted={refused[:3]!r}); otherwise do not use this file."
        )
    try:
        parts = sio.loads(entries[_SKOPS], trusted=allowed)
    except Exception as exc:  # skops raises assorted errors on a malformed file
        raise _bad(file, f"{_SKOPS} cannot be loaded ({type(exc).__name__}: {str(exc)[:200]})") from exc
    if not isinstance(parts, dict) or set(parts) != {"features", "matcher", "risk_model"}:
        raise _bad(file, f"{_SKOPS} does not hold the model's parts")
    check_model_parts(parts, file)
    matcher = parts["matcher"]
    kind = meta["matcher_kind"]
    _unused_entries(entries, kind, file)
    check_matcher_width(matcher, parts["features"], file)
    if kind == "lm":
        if matcher is not None:
            raise _bad(file, "matcher_kind is 'lm' but the skops part holds a matcher too")
        matcher = _lm_from_entries(entries, file, device)
    elif kind != "sklearn":
        if _RNN_CONFIG not in entries or _RNN_WEIGHTS not in entries:
            raise _bad(file, f"matcher_kind is {kind!r} but {_RNN_CONFIG} or {_RNN_WEIGHTS} is missing")
        from ..matchers._rnn import rnn_from_parts

        rnn = rnn_from_parts(entries[_RNN_CONFIG], entries[_RNN_WEIGHTS], file / _RNN_CONFIG,
                             file / _RNN_WEIGHTS, device)
        from sklearn.pipeline import Pipeline

        if not isinstance(matcher, Pipeline):
            raise _bad(file, "matcher_kind is 'rnn_pipeline' but the stored matcher is not a Pipeline")
        matcher.steps[-1] = (matcher.steps[-1][0], rnn)
        check_rnn_pipeline(matcher, list(meta["attributes"]), file)
    risk = parts["risk_model"]
    if risk is not None:
        _place_risk(risk, device)
        risk.estimator = matcher
        risk.estimator_ = matcher
    model = MatchModel(
        attributes=list(meta["attributes"]), features=parts["features"], matcher=matcher, risk_model=risk,
        threshold=float(meta["threshold"]), task=meta["task"], blocking=blocking,
        id_column=meta["id_column"], versions=dict(meta.get("versions") or {}),
    )
    model.check(str(file))
    return model
