"""Checks of a language-model folder's files before transformers, tokenizers or safetensors read them.

Every entry of a model folder (``config.json``, ``tokenizer.json``, ``tokenizer_config.json``,
``special_tokens_map.json``, ``model.safetensors``) and of a saved
:class:`~skrisk.matchers.LMMatcher` (``lm_matcher.json``, ``head.safetensors``) is read here
with bounded work and refused with a :class:`~skrisk.exceptions.DataError` that names the file,
the entry and the fix:

* JSON files: size, duplicate keys, NaN and infinite numbers, nesting;
* a safetensors file: its header (8-byte little-endian length + JSON) is read and checked
  before the library is called: known dtypes, shapes whose bytes equal their data offsets,
  offsets inside the file, no holes or overlaps;
* ``config.json``: an encoder type LMMatcher supports, sizes within :data:`CONFIG_LIMITS`,
  dropout probabilities in [0, 1), no quantisation or attention kernels;
* ``tokenizer.json``: only components of a known-safe set (:data:`NORMALIZERS`,
  :data:`PRE_TOKENIZERS`, :data:`POST_PROCESSORS`, :data:`TOKENIZER_MODELS`), with bounded
  growth of the text and token ids inside the embedding table;
* the tensors of the weights against the network the configuration describes (names, shapes,
  dtypes: :func:`check_tensors`).

Only :func:`check_tokenizer_config` imports transformers (to resolve a tokenizer class name);
the module that builds the network on the meta device is :mod:`._lm_weights`.
"""

from __future__ import annotations

import base64
import json
import math
import os
from pathlib import Path
from typing import Any

from .._fileio import open_regular_file
from ..exceptions import DataError

__all__ = [
    "CONFIG_LIMITS",
    "ENCODER_TYPES",
    "NORMALIZERS",
    "POST_PROCESSORS",
    "PRE_TOKENIZERS",
    "TOKENIZER_MODELS",
    "check_encoder_config",
    "check_head",
    "check_tensors",
    "check_tokenizer_config",
    "check_tokenizer_json",
    "is_int",
    "parse_json",
    "read_json",
    "read_safetensors_header",
    "refuse",
]

#: The fix named when a file of a model folder is refused.
FIX = ("restore the folder from a trusted copy, or save the model again (LMMatcher.save for a fitted "
       "matcher, save_pretrained for a pretrained model)")
#: Bytes of a JSON file of a model folder (a large multilingual tokenizer.json holds ~20 MB).
MAX_JSON_FILE = 512 * 2**20
#: Bytes of a safetensors header (the library's own limit).
MAX_HEADER_BYTES = 100 * 2**20
#: Dimensions of a tensor.
MAX_NDIM = 8
#: ``model_type`` values LMMatcher builds: encoder-only architectures whose ``AutoModel`` returns a
#: ``last_hidden_state`` from ``input_ids`` and ``attention_mask``.
ENCODER_TYPES = frozenset({
    "albert", "bert", "camembert", "deberta", "deberta-v2", "distilbert", "electra", "ernie", "modernbert",
    "mpnet", "roberta", "xlm-roberta", "xlm-roberta-xl",
})
#: Largest value of a size entry of ``config.json`` (a model needing more is not an encoder for
#: record pairs; the bound keeps the network built from the config, even on the meta device, small).
CONFIG_LIMITS = {
    "num_hidden_layers": 96, "n_layers": 96, "num_layers": 96, "num_hidden_groups": 96,
    "hidden_size": 16384, "dim": 16384, "embedding_size": 16384,
    "intermediate_size": 65536, "hidden_dim": 65536,
    "num_attention_heads": 256, "n_heads": 256, "inner_group_num": 16,
    "vocab_size": 2**20, "max_position_embeddings": 2**16, "type_vocab_size": 64,
}
#: Top-level entries of ``config.json`` that make transformers load code or kernels, or change
#: the weights' numbers: refused.
_REFUSED_CONFIG = ("quantization_config", "adapter", "peft_config")
_ATTENTION = {None, "eager", "sdpa"}
_POSITIONS = {None, "absolute", "relative_key", "relative_key_query"}
_DTYPES = {None, "auto", "float32", "float16", "bfloat16", "float64"}

#: Normalizer steps of tokenizer.json and how many times longer each can make a text at most.
NORMALIZERS = {"BertNormalizer": 12, "Lowercase": 3, "NFC": 3, "NFD": 4, "NFKC": 18, "NFKD": 18, "Nmt": 1,
               "StripAccents": 1, "Strip": 1, "Replace": 1, "Prepend": 1, "Precompiled": 64, "ByteLevel": 4}
#: The text may grow this many times through all normalizer steps together.
MAX_GROWTH = 1024
#: Longest replacement of a ``Precompiled`` normalizer's character map, in bytes.
MAX_REPLACEMENT = 64
#: Regular expressions a ``Replace`` normaliser or a ``Split`` pre-tokenizer may use (those of
#: widespread tokenizers; any other regex is refused, since a crafted one can run for hours).
KNOWN_REGEXES = frozenset({" {2,}", r"\s+", r"\s", r"\w+|[^\w\s]+", r"[^\s]+"})
PRE_TOKENIZERS = frozenset({"BertPreTokenizer", "Whitespace", "WhitespaceSplit", "Punctuation", "Digits",
                            "ByteLevel", "Metaspace", "UnicodeScripts", "CharDelimiterSplit", "Split",
                            "Sequence"})
POST_PROCESSORS = frozenset({"TemplateProcessing", "BertProcessing", "RobertaProcessing", "ByteLevel", "Sequence"})
TOKENIZER_MODELS = frozenset({"WordPiece", "BPE", "Unigram", "WordLevel"})
DECODERS = frozenset({"WordPiece", "ByteLevel", "Metaspace", "BPEDecoder", "CTC", "Sequence", "Replace", "Fuse",
                      "Strip", "ByteFallback"})
#: Steps of a ``Sequence`` component, and the longest text a ``Prepend`` or ``Metaspace`` adds.
MAX_STEPS = 16
MAX_ADDED_TEXT = 16
#: Tokens of a vocabulary (with the added tokens) and merges of a BPE model.
MAX_VOCAB = CONFIG_LIMITS["vocab_size"]
MAX_MERGES = 2**21

_DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2,
                "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}
FLOAT_DTYPES = frozenset({"F16", "BF16", "F32", "F64"})
INT_DTYPES = frozenset({"U8", "I8", "I16", "U16", "I32", "U32", "I64", "U64"})


def refuse(shown: Path | str, what: str, fix: str = FIX, *, loaded: bool = False) -> DataError:
    """The DataError of a refused model file: ``shown`` (the file as the user knows it), what is
    wrong (naming the entry), and the fix; ``loaded``: found in the loaded model, before any use."""
    done = "It was refused before any use" if loaded else "Nothing was built from it"
    return DataError(f"{shown}: {what.rstrip('.')}. {done}; {fix}.")


def is_int(v: object) -> bool:
    """Whether ``v`` is an int and not a bool."""
    return isinstance(v, int) and not isinstance(v, bool)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"the key {k!r} twice")
        out[k] = v
    return out


def _non_finite(obj: Any, where: str = "") -> str | None:
    """The path of the first infinite float inside ``obj`` (JSON reads ``1e999`` as inf), or None."""
    stack = [(obj, where)]
    while stack:
        v, at = stack.pop()
        if isinstance(v, float) and not math.isfinite(v):
            return at or "the top level"
        if isinstance(v, dict):
            stack.extend((x, f"{at}[{k!r}]") for k, x in v.items())
        elif isinstance(v, list):
            stack.extend((x, f"{at}[{i}]") for i, x in enumerate(v))
    return None


def parse_json(data: bytes, shown: Path | str, *, limit: int = MAX_JSON_FILE) -> dict:
    """The JSON object of ``data`` (the bytes of the file ``shown``), checked: size, UTF-8,
    well-formed, an object, no key twice, no NaN or infinite number."""
    if len(data) > limit:
        raise refuse(shown, f"it holds {len(data)} bytes, more than the {limit} this file may hold")

    def constant(name: str) -> Any:
        raise ValueError(f"the number {name} (NaN and infinities are not numbers here)")

    try:
        obj = json.loads(data.decode("utf-8"), object_pairs_hook=_no_duplicates, parse_constant=constant)
    except UnicodeDecodeError as exc:
        raise refuse(shown, f"it is not UTF-8 text ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise refuse(shown, f"it is not valid JSON ({exc.msg}: line {exc.lineno}, column {exc.colno}): "
                            "the file is truncated or damaged") from exc
    except RecursionError as exc:
        raise refuse(shown, "its JSON is nested too deeply") from exc
    except ValueError as exc:
        raise refuse(shown, f"its JSON holds {exc}") from exc
    if not isinstance(obj, dict):
        raise refuse(shown, f"the top level is a JSON {type(obj).__name__}, not an object")
    bad = _non_finite(obj)
    if bad is not None:
        raise refuse(shown, f"the entry {bad} is an infinite number")
    return obj


def read_json(path: str | os.PathLike, shown: Path | str, *, limit: int = MAX_JSON_FILE) -> dict:
    """:func:`parse_json` of the regular file ``path`` (a FIFO or a device is refused unread;
    the size is checked before reading)."""
    with open_regular_file(path, hint=FIX) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > limit:
            raise refuse(shown, f"it holds {size} bytes, more than the {limit} this file may hold")
        data = fh.read(limit + 1)
    return parse_json(data, shown, limit=limit)


def read_safetensors_header(path: str | os.PathLike, shown: Path | str) -> dict[str, tuple[str, tuple[int, ...]]]:
    """``{tensor name: (dtype, shape)}`` of a safetensors file, from its header alone.

    The header is checked as the library would, and more, before the library reads the file:
    its length (at most :data:`MAX_HEADER_BYTES` and inside the file), its JSON, every tensor's
    dtype, shape (at most :data:`MAX_NDIM` non-negative dimensions) and data offsets (the
    bytes the shape needs, inside the file, covering the data without hole or overlap).

    Raises
    ------
    DataError
        Names the file, the tensor and what is wrong.
    """
    with open_regular_file(path, hint=FIX) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size < 8:
            raise refuse(shown, f"it holds {size} bytes, fewer than the 8-byte header length of a safetensors "
                                "file: it is truncated")
        n = int.from_bytes(fh.read(8), "little")
        if n > min(MAX_HEADER_BYTES, size - 8):
            raise refuse(shown, f"its header length is {n} bytes, but the file holds {size - 8} bytes after it "
                                f"(and a header may hold {MAX_HEADER_BYTES}): it is truncated or not a safetensors "
                                "file")
        raw = fh.read(n)
    header = parse_json(raw, shown, limit=MAX_HEADER_BYTES)
    data_len = size - 8 - n
    spans = []
    out: dict[str, tuple[str, tuple[int, ...]]] = {}
    for name, spec in header.items():
        if name == "__metadata__":
            if spec is not None and not (isinstance(spec, dict) and all(isinstance(v, str) for v in spec.values())):
                raise refuse(shown, "its header's __metadata__ is not an object of strings")
            continue
        if not isinstance(spec, dict) or set(spec) != {"dtype", "shape", "data_offsets"}:
            raise refuse(shown, f"tensor {name!r} of its header is not {{dtype, shape, data_offsets}}")
        dtype, shape, offsets = spec["dtype"], spec["shape"], spec["data_offsets"]
        if dtype not in _DTYPE_BYTES:
            raise refuse(shown, f"tensor {name!r} has the dtype {dtype!r}, not one of {sorted(_DTYPE_BYTES)}")
        if (not isinstance(shape, list) or len(shape) > MAX_NDIM
                or not all(is_int(d) and d >= 0 for d in shape)):
            raise refuse(shown, f"tensor {name!r} has the shape {str(shape)[:100]}, not a list of at most "
                                f"{MAX_NDIM} non-negative integers")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(is_int(o) for o in offsets)
                and 0 <= offsets[0] <= offsets[1]):
            raise refuse(shown, f"tensor {name!r} has the data_offsets {str(offsets)[:100]}, not [begin, end] "
                                "with 0 <= begin <= end")
        need = math.prod(shape) * _DTYPE_BYTES[dtype]
        if offsets[1] - offsets[0] != need:
            raise refuse(shown, f"tensor {name!r} declares the shape {shape} of {dtype} ({need} bytes), but its "
                                f"data_offsets span {offsets[1] - offsets[0]} bytes: the header was altered")
        if offsets[1] > data_len:
            raise refuse(shown, f"tensor {name!r} ends at byte {offsets[1]} of the data, past its {data_len} "
                                "bytes: the file is truncated or its header was altered")
        spans.append((offsets[0], offsets[1], name))
        out[name] = (dtype, tuple(shape))
    end = 0
    for begin, stop, name in sorted(spans):
        if begin != end:
            raise refuse(shown, f"tensor {name!r} starts at byte {begin} of the data, but the tensor before it "
                                f"ends at {end} (a hole or an overlap): the header was altered")
        end = stop
    if end != data_len:
        raise refuse(shown, f"its tensors cover {end} of its {data_len} bytes of data: the header was altered")
    return out


def check_encoder_config(config: dict, shown: Path | str) -> None:
    """Refuse a ``config.json`` LMMatcher must not build: another architecture than
    :data:`ENCODER_TYPES`, a size beyond :data:`CONFIG_LIMITS`, a dropout probability outside
    [0, 1), a non-positive epsilon, quantisation, attention kernels or an unknown dtype."""
    kind = config.get("model_type")
    if kind not in ENCODER_TYPES:
        raise refuse(shown, f"model_type is {str(kind)[:60]!r}; LMMatcher builds the encoder architectures "
                            f"{sorted(ENCODER_TYPES)}", "use a model of one of them (e.g. a BERT or RoBERTa folder)")
    for key, limit in CONFIG_LIMITS.items():
        if key in config:
            v = config[key]
            if not is_int(v) or not 1 <= v <= limit:
                raise refuse(shown, f"{key} is {str(v)[:40]}, not an integer in [1, {limit}] (the largest "
                                    "LMMatcher builds)")
    for key, v in config.items():
        if "dropout" in key and v is not None:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 1:
                raise refuse(shown, f"{key} is {str(v)[:40]}, not a probability in [0, 1)")
        elif key.endswith("eps") and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1):
            raise refuse(shown, f"{key} is {str(v)[:40]}, not a number in (0, 1)")
    for key in _REFUSED_CONFIG:
        if config.get(key) is not None:
            raise refuse(shown, f"it holds {key}, which makes transformers load other code or weights; "
                                "LMMatcher loads plain safetensors encoders only", "remove the entry")
    for key in ("attn_implementation", "_attn_implementation"):
        if config.get(key) not in _ATTENTION:
            raise refuse(shown, f"{key} is {str(config.get(key))[:60]!r}; LMMatcher uses transformers' own "
                                "attention ('eager' or 'sdpa')", f"remove {key}")
    if config.get("position_embedding_type") not in _POSITIONS:
        raise refuse(shown, f"position_embedding_type is {str(config.get('position_embedding_type'))[:40]!r}, not one "
                            f"of {sorted(p for p in _POSITIONS if p)} (another value drops the positions silently)")
    for key in ("dtype", "torch_dtype"):
        if config.get(key) not in _DTYPES:
            raise refuse(shown, f"{key} is {str(config.get(key))[:40]!r}, not one of "
                                f"{sorted(d for d in _DTYPES if d)}")


def check_tensors(header: dict[str, tuple[str, tuple[int, ...]]], expected: dict[str, tuple[bool, tuple[int, ...]]],
                  optional: dict[str, tuple[bool, tuple[int, ...]]], shown: Path | str, shown_config: Path | str, *,
                  strict: bool, prefix: str = "") -> None:
    """The tensors of a weights file (its safetensors ``header``) against those of the network
    ``shown_config`` describes: every name of ``expected`` present (those of ``optional`` may be
    missing), each with its shape and a dtype of its kind (floats F32 when ``strict``, any float
    otherwise; integers for integer buffers); with ``strict``, no other tensor. A name may carry
    the architecture's ``prefix`` (``bert.``), as checkpoints of a model with a head do."""
    names = {}
    for name in header:
        plain = name[len(prefix) + 1:] if prefix and name.startswith(prefix + ".") else name
        names[plain if plain in expected or plain in optional else name] = name
    missing = [k for k in expected if k not in names]
    if missing:
        raise refuse(shown, f"it lacks {len(missing)} of the {len(expected)} tensors of the encoder {shown_config} "
                            f"describes (e.g. {missing[:4]}): transformers would fill them with random numbers, so "
                            "the matcher would predict at random")
    for plain, name in names.items():
        want = expected.get(plain, optional.get(plain))
        if want is None:
            if strict:
                raise refuse(shown, f"it holds the tensor {name!r}, which the encoder {shown_config} describes "
                                    "has not: the two files come from different models")
            continue
        is_float, shape = want
        dtype, got = header[name]
        if got != shape:
            raise refuse(shown, f"tensor {name!r} has the shape {list(got)}, but the encoder {shown_config} "
                                f"describes {list(shape)}: the two files come from different models")
        kinds = ({"F32"} if strict else FLOAT_DTYPES) if is_float else INT_DTYPES
        if dtype not in kinds:
            raise refuse(shown, f"tensor {name!r} is {dtype}, not {' or '.join(sorted(kinds))}")


def check_head(header: dict[str, tuple[str, tuple[int, ...]]], hidden: int, shown: Path | str,
               shown_config: Path | str) -> None:
    """The classification head of a saved LMMatcher: exactly ``weight`` F32 ``(2, hidden)`` and
    ``bias`` F32 ``(2,)``, ``hidden`` being the encoder's width (``hidden_size`` of ``shown_config``)."""
    expected = {"weight": (2, hidden), "bias": (2,)}
    if set(header) != set(expected):
        raise refuse(shown, f"it holds the tensors {sorted(header)[:4]}, not the head's ['bias', 'weight']")
    for name, shape in expected.items():
        dtype, got = header[name]
        if got != shape or dtype != "F32":
            raise refuse(shown, f"tensor {name!r} is {dtype} of shape {list(got)}, but {shown_config} gives "
                                f"hidden_size {hidden}, so the head's {name!r} is F32 of shape {list(shape)}: the "
                                "two files come from different models")


def _regex_of(pattern: Any) -> str | None:
    """The regular expression of a tokenizers pattern (``{"Regex": ...}``), None for a string."""
    if isinstance(pattern, dict) and set(pattern) == {"Regex"} and isinstance(pattern["Regex"], str):
        return pattern["Regex"]
    if isinstance(pattern, dict) and set(pattern) == {"String"} and isinstance(pattern["String"], str):
        return None
    raise ValueError(f"its pattern {str(pattern)[:80]} is neither {{'String': ...}} nor {{'Regex': ...}}")


def _steps(component: dict, key: str, where: str) -> list[tuple[dict, str]]:
    steps = component.get(key)
    if not isinstance(steps, list) or len(steps) > MAX_STEPS or not all(isinstance(s, dict) for s in steps):
        raise ValueError(f"{where} is a Sequence whose {key!r} is not a list of at most {MAX_STEPS} components")
    return [(s, f"{where}[{key!r}][{i}]") for i, s in enumerate(steps)]


def _precompiled_growth(step: dict, where: str) -> int:
    """The longest replacement (bytes) of a ``Precompiled`` normalizer's character map: its blob
    is a u32 trie size, the trie, then NUL-terminated replacement strings."""
    try:
        blob = base64.b64decode(step.get("precompiled_charsmap") or b"", validate=True)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{where}: its precompiled_charsmap is not base64 ({exc})") from exc
    if not blob:
        return 1
    trie = int.from_bytes(blob[:4], "little")
    if len(blob) < 4 or 4 + trie > len(blob):
        raise ValueError(f"{where}: its precompiled_charsmap is truncated")
    longest = max((len(s) for s in blob[4 + trie:].split(b"\0")), default=1)
    if longest > MAX_REPLACEMENT:
        raise ValueError(f"{where}: its precompiled_charsmap replaces a character by {longest} bytes (at most "
                         f"{MAX_REPLACEMENT}), which could blow up a text")
    return max(longest, 1)


def _normalizer_growth(step: dict, where: str) -> int:
    kind = step.get("type")
    if kind == "Sequence":
        growth = 1
        for s, at in _steps(step, "normalizers", where):
            growth *= _normalizer_growth(s, at)
        return growth
    if kind not in NORMALIZERS:
        raise ValueError(f"{where} is a {str(kind)[:40]!r} normalizer, not one of {sorted(NORMALIZERS)}")
    if kind == "Replace":
        regex, content = _regex_of(step.get("pattern")), step.get("content")
        if not isinstance(content, str):
            raise ValueError(f"{where}: its content is not a string")
        if regex is not None and regex not in KNOWN_REGEXES:
            raise ValueError(f"{where}: its regex {regex[:80]!r} is not one of the known-safe {sorted(KNOWN_REGEXES)}")
        if regex is None and len(content) > len(step["pattern"]["String"]):
            raise ValueError(f"{where} replaces {step['pattern']['String'][:20]!r} by the longer {content[:20]!r}: "
                             "chained, such steps blow up a text; a replacement may not be longer than its pattern")
        if regex is not None and len(content) > 1:
            raise ValueError(f"{where} replaces a regex by {content[:20]!r}; at most one character")
    if kind == "Prepend" and (not isinstance(step.get("prepend"), str) or len(step["prepend"]) > MAX_ADDED_TEXT):
        raise ValueError(f"{where}: prepend is not a string of at most {MAX_ADDED_TEXT} characters")
    if kind == "Precompiled":
        return _precompiled_growth(step, where)
    return NORMALIZERS[kind]


def _check_pre_tokenizer(step: dict, where: str) -> None:
    kind = step.get("type")
    if kind not in PRE_TOKENIZERS:
        raise ValueError(f"{where} is a {str(kind)[:40]!r} pre-tokenizer, not one of {sorted(PRE_TOKENIZERS)}")
    if kind == "Sequence":
        for s, at in _steps(step, "pretokenizers", where):
            _check_pre_tokenizer(s, at)
    elif kind == "Split":
        regex = _regex_of(step.get("pattern"))
        if regex is not None and regex not in KNOWN_REGEXES:
            raise ValueError(f"{where} splits on the regex {regex[:80]!r}, not one of the known-safe "
                             f"{sorted(KNOWN_REGEXES)} (a crafted regex can run for hours)")
    elif kind == "Metaspace" and (not isinstance(step.get("replacement", "▁"), str)
                                  or len(step.get("replacement", "▁")) != 1):
        raise ValueError(f"{where}: its replacement is not one character")


def _token_ids(model: dict, where: str) -> list[int]:
    kind = model.get("type")
    if kind not in TOKENIZER_MODELS:
        raise ValueError(f"{where} is a {str(kind)[:40]!r} model, not one of {sorted(TOKENIZER_MODELS)}")
    vocab = model.get("vocab")
    if kind == "Unigram":
        if not isinstance(vocab, list) or not all(
                isinstance(e, list) and len(e) == 2 and isinstance(e[0], str)
                and isinstance(e[1], (int, float)) and not isinstance(e[1], bool) for e in vocab):
            raise ValueError(f"{where}['vocab'] is not a list of [piece, score]")
        ids = list(range(len(vocab)))
    else:
        if not isinstance(vocab, dict) or not all(is_int(i) and i >= 0 for i in vocab.values()):
            raise ValueError(f"{where}['vocab'] is not an object of tokens to non-negative integer ids")
        ids = list(vocab.values())
    if len(ids) > MAX_VOCAB:
        raise ValueError(f"{where}['vocab'] holds {len(ids)} tokens, more than {MAX_VOCAB}")
    if kind == "BPE":
        merges = model.get("merges", [])
        if not isinstance(merges, list) or len(merges) > MAX_MERGES:
            raise ValueError(f"{where}['merges'] is not a list of at most {MAX_MERGES} merges")
        p = model.get("dropout")
        if p is not None and (isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1):
            raise ValueError(f"{where}['dropout'] is {p!r}, not null or a probability")
    return ids


def _processor_ids(step: Any, where: str) -> tuple[list[int], list[int]]:
    """(token ids, type ids) a post-processor adds."""
    if step is None:
        return [], []
    if not isinstance(step, dict) or step.get("type") not in POST_PROCESSORS:
        kind = step.get("type") if isinstance(step, dict) else step
        raise ValueError(f"{where} is a {str(kind)[:40]!r} post-processor, not one of {sorted(POST_PROCESSORS)}")
    kind = step["type"]
    ids: list[int] = []
    types: list[int] = []
    if kind == "Sequence":
        for s, at in _steps(step, "processors", where):
            a, b = _processor_ids(s, at)
            ids += a
            types += b
    elif kind in ("BertProcessing", "RobertaProcessing"):
        for key in ("sep", "cls"):
            tok = step.get(key)
            if not (isinstance(tok, list) and len(tok) == 2 and isinstance(tok[0], str) and is_int(tok[1])):
                raise ValueError(f"{where}[{key!r}] is not [token, id]")
            ids.append(tok[1])
        types.append(1 if kind == "BertProcessing" else 0)
    elif kind == "TemplateProcessing":
        for part in ("single", "pair"):
            for piece in step.get(part) or []:
                inner = next(iter(piece.values()), None) if isinstance(piece, dict) and len(piece) == 1 else None
                if not isinstance(inner, dict) or not is_int(inner.get("type_id")) or inner["type_id"] < 0:
                    raise ValueError(f"{where}[{part!r}] holds {str(piece)[:80]}, not a piece with a type_id")
                types.append(inner["type_id"])
        specials = step.get("special_tokens") or {}
        if not isinstance(specials, dict):
            raise ValueError(f"{where}['special_tokens'] is not an object")
        for name, tok in specials.items():
            tok_ids = tok.get("ids") if isinstance(tok, dict) else None
            if not isinstance(tok_ids, list) or len(tok_ids) > MAX_STEPS or not all(is_int(i) for i in tok_ids):
                raise ValueError(f"{where}['special_tokens'][{name!r}]['ids'] is not a short list of integers")
            ids += tok_ids
    return ids, types


def check_tokenizer_json(data: dict, shown: Path | str, vocab_size: int | None,
                         type_vocab_size: int | None = None) -> None:
    """Refuse a ``tokenizer.json`` whose components are outside the known-safe set, that can
    blow up a text (normalizers growing it more than :data:`MAX_GROWTH` times), that splits on
    an unknown regex, or whose token ids (vocabulary, added tokens, post-processor) fall outside
    the embedding table of ``vocab_size`` rows (type ids outside ``type_vocab_size``)."""
    try:
        model = data.get("model")
        if not isinstance(model, dict):
            raise ValueError("the entry 'model' is not an object")
        ids = _token_ids(model, "the entry 'model'")
        normalizer = data.get("normalizer")
        if normalizer is not None:
            if not isinstance(normalizer, dict):
                raise ValueError("the entry 'normalizer' is not an object")
            growth = _normalizer_growth(normalizer, "the entry 'normalizer'")
            if growth > MAX_GROWTH:
                raise ValueError(f"the normalizer steps can make a text {growth} times longer (at most {MAX_GROWTH})")
        pre = data.get("pre_tokenizer")
        if pre is not None:
            if not isinstance(pre, dict):
                raise ValueError("the entry 'pre_tokenizer' is not an object")
            _check_pre_tokenizer(pre, "the entry 'pre_tokenizer'")
        decoder = data.get("decoder")
        if decoder is not None and (not isinstance(decoder, dict) or decoder.get("type") not in DECODERS):
            raise ValueError(f"the entry 'decoder' is not one of {sorted(DECODERS)}")
        special, types = _processor_ids(data.get("post_processor"), "the entry 'post_processor'")
        added = data.get("added_tokens") or []
        if not isinstance(added, list) or len(added) > MAX_VOCAB or not all(
                isinstance(t, dict) and is_int(t.get("id")) and t["id"] >= 0 and isinstance(t.get("content"), str)
                for t in added):
            raise ValueError("the entry 'added_tokens' is not a list of {id, content}")
        for key in ("truncation", "padding"):
            entry = data.get(key)
            if entry is None:
                continue
            numbers = [entry.get("max_length"), entry.get("stride"), entry.get("pad_to_multiple_of")]
            strategy = entry.get("strategy")
            if isinstance(strategy, dict):
                numbers.append(strategy.get("Fixed"))
            if any(n is not None and (not is_int(n) or not 0 <= n <= CONFIG_LIMITS["max_position_embeddings"])
                   for n in numbers):
                raise ValueError(f"the entry {key!r} asks for lengths beyond "
                                 f"{CONFIG_LIMITS['max_position_embeddings']} tokens")
    except ValueError as exc:
        raise refuse(shown, str(exc)) from None
    all_ids = ids + special + [t["id"] for t in added]
    top = max(all_ids, default=-1)
    if vocab_size is not None and top >= vocab_size:
        raise refuse(shown, f"it gives the token id {top}, but the embedding table of config.json has "
                            f"vocab_size {vocab_size} rows (ids 0 to {vocab_size - 1}): the tokenizer and the "
                            "weights come from different models")
    if type_vocab_size is not None and types and max(types) >= type_vocab_size:
        raise refuse(shown, f"its post_processor gives the type id {max(types)}, but config.json has "
                            f"type_vocab_size {type_vocab_size}")


def check_tokenizer_config(data: dict, shown: Path | str) -> None:
    """Refuse a ``tokenizer_config.json`` naming a tokenizer class transformers does not have
    (transformers would fail with its own message) or giving special tokens that are not text."""
    cls = data.get("tokenizer_class")
    if cls is not None:
        import transformers

        found = getattr(transformers, cls, None) if isinstance(cls, str) and cls.isidentifier() else None
        if not (isinstance(found, type) and issubclass(found, transformers.PreTrainedTokenizerBase)):
            raise refuse(shown, f"tokenizer_class is {str(cls)[:60]!r}, not a tokenizer class of transformers",
                         "remove tokenizer_class (the tokenizer.json then decides), or restore the file")
    for key in ("pad_token", "unk_token", "cls_token", "sep_token", "mask_token"):
        v = data.get(key)
        if v is not None and not isinstance(v, (str, dict)):
            raise refuse(shown, f"{key} is a JSON {type(v).__name__}, not a token")
