"""Download, verify and cache the DeepMatcher benchmark archives."""

from __future__ import annotations

import hashlib
import http.client
import lzma
import os
import shutil
import stat
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import warnings
import zipfile
import zlib
from pathlib import Path
from typing import Any

from ..exceptions import DataError
from ._loaders import _canonical_name, get_data_home, load_deepmatcher
from ._pairs import PairDataset

__all__ = ["fetch_deepmatcher", "DEEPMATCHER_ARCHIVES", "extract_archive"]

_BASE = "https://pages.cs.wisc.edu/~anhai/data1/deepmatcher_data"

#: Official archive per dataset: folder name -> (URL, SHA-256 or None).
#:
#: The URLs are the "Download" links of the DeepMatcher project's ``Datasets.md``. The DeepMatcher
#: authors publish no checksums, and this package was written without network access, so no
#: digest could be taken from the real archives: every entry is ``None`` until someone records
#: one from a trusted download (``sha256sum <archive>``). While an entry is ``None``,
#: :func:`fetch_deepmatcher` accepts the archive, warns, and prints its digest so it can be
#: pinned; with an entry (or an explicit ``sha256=``) a mismatch is an error.
DEEPMATCHER_ARCHIVES: dict[str, tuple[str, str | None]] = {
    "beer": (f"{_BASE}/Structured/Beer/beer_exp_data.zip", None),
    "itunes_amazon": (f"{_BASE}/Structured/iTunes-Amazon/itunes_amazon_exp_data.zip", None),
    "fodors_zagats": (f"{_BASE}/Structured/Fodors-Zagats/fodors_zagat_exp_data.zip", None),
    "dblp_acm": (f"{_BASE}/Structured/DBLP-ACM/dblp_acm_exp_data.zip", None),
    "dblp_scholar": (f"{_BASE}/Structured/DBLP-GoogleScholar/dblp_scholar_exp_data.zip", None),
    "amazon_google": (f"{_BASE}/Structured/Amazon-Google/amazon_google_exp_data.zip", None),
    "walmart_amazon": (f"{_BASE}/Structured/Walmart-Amazon/walmart_amazon_exp_data.zip", None),
    "abt_buy": (f"{_BASE}/Textual/Abt-Buy/abt_buy_exp_data.zip", None),
}

_FILES = ("tableA.csv", "tableB.csv", "train.csv", "valid.csv", "test.csv")
_CHUNK = 1 << 20


class ChecksumError(DataError):
    """A downloaded archive does not have the expected SHA-256 digest."""


def _complete(folder: Path) -> bool:
    return all((folder / f).is_file() for f in _FILES)


#: Default bound on the bytes downloaded and on the total size unpacked from an archive. The
#: largest DeepMatcher archive unpacks to a few tens of MB; raise it with ``max_bytes=``.
MAX_BYTES = 512 * 2**20
#: Default bound on the number of members of an archive (a DeepMatcher archive has about ten).
MAX_MEMBERS = 10_000
_READ = 1 << 16


def _fail(url: str, what: str, fix: str) -> DataError:
    return DataError(f"{url}: {what}. {fix}")


_MANUAL = ("or download the archive yourself, extract tableA.csv, tableB.csv, train.csv, valid.csv "
           "and test.csv into one folder and use load_deepmatcher(<folder>)")


def _set_read_timeout(resp: object, seconds: float) -> None:
    """Bound the next blocking read of an http.client response (best effort)."""
    sock = getattr(getattr(getattr(resp, "fp", None), "raw", None), "_sock", None)
    if sock is not None:
        try:
            sock.settimeout(max(seconds, 0.001))
        except OSError:  # pragma: no cover - socket already closed
            pass


def _download(url: str, dest: Path, timeout: float, max_bytes: int) -> str:
    """Stream ``url`` into ``dest`` within ``timeout`` seconds in all; return its SHA-256.

    The whole download (connection, redirects, every read) must end within ``timeout``; at most
    ``max_bytes`` are accepted; a body shorter than its Content-Length is an error.
    """
    from tqdm.auto import tqdm

    digest = hashlib.sha256()
    deadline = time.monotonic() + timeout
    received = 0
    total = None
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp, open(dest, "wb") as out:
            length = resp.headers.get("Content-Length")
            if length is not None:
                try:
                    total = int(length)
                except ValueError:
                    total = None
            if total is not None and total > max_bytes:
                raise _fail(url, f"the server announces {total} bytes, more than max_bytes={max_bytes}",
                            "If the archive is genuine, pass a larger max_bytes=.")
            with tqdm(total=total, unit="B", unit_scale=True, desc=dest.name, leave=False) as bar:
                while True:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise TimeoutError
                    _set_read_timeout(resp, left)
                    chunk = resp.read1(_READ) if hasattr(resp, "read1") else resp.read(_READ)
                    if not chunk:
                        break
                    received += len(chunk)
                    if received > max_bytes:
                        raise _fail(url, f"the download exceeds max_bytes={max_bytes} bytes",
                                    "If the archive is genuine, pass a larger max_bytes=.")
                    out.write(chunk)
                    digest.update(chunk)
                    bar.update(len(chunk))
    except DataError:
        raise
    except TimeoutError as exc:  # a read or the connection ran into the remaining time
        raise OSError(
            f"Could not download {url}: the download took longer than timeout={timeout:g} s in all "
            f"({received} bytes received). Retry, raise timeout=, {_MANUAL}."
        ) from exc
    except http.client.IncompleteRead as exc:
        raise OSError(
            f"Could not download {url}: the connection closed after {received + len(exc.partial)} "
            f"of {total} bytes (truncated download). Retry later, {_MANUAL}."
        ) from exc
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as exc:
        raise OSError(
            f"Could not download {url}: {exc}. Check the network or the URL (or raise timeout=); "
            f"{_MANUAL}."
        ) from exc
    if total is not None and received != total:
        raise OSError(
            f"Could not download {url}: received {received} of the {total} bytes its Content-Length "
            f"announced (truncated download). Retry later, {_MANUAL}."
        )
    return digest.hexdigest()


def _member_problem(name: str, seen: set[str]) -> str | None:
    """Why an archive member's name is unsafe (None when it is fine)."""
    if not name or "\x00" in name:
        return "has an empty name or a NUL byte"
    norm = name.replace("\\", "/")
    if norm.startswith("/") or (len(norm) > 1 and norm[1] == ":"):
        return "is an absolute path (it would be written outside the target folder)"
    parts = [p for p in norm.split("/") if p not in ("", ".")]
    if ".." in parts:
        return "contains '..' (it would be written outside the target folder)"
    key = "/".join(parts)
    if key in seen:
        return "appears twice (a later copy would silently replace the first)"
    seen.add(key)
    return None


def _copy_limited(src: Any, dest: Path, budget: list[int], url: str, max_bytes: int) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest, "wb") as out:
        while chunk := src.read(_READ):
            budget[0] -= len(chunk)
            if budget[0] < 0:
                raise _fail(url, f"the archive unpacks to more than max_bytes={max_bytes} bytes "
                                 "(a zip bomb, or a much larger archive than expected)",
                            "Nothing was kept. If the archive is genuine, pass a larger max_bytes=.")
            out.write(chunk)


def _safe_extract(archive: Path, target: Path, *, url: str | None = None, max_bytes: int = MAX_BYTES,
                  max_members: int = MAX_MEMBERS) -> None:
    """Extract a zip or tar archive into ``target`` within bounds, refusing unsafe members.

    Only regular files and folders are extracted; links, devices, absolute paths, ``..`` and
    repeated names are refused; at most ``max_members`` members and ``max_bytes`` bytes in all
    (counted while writing, not taken from the headers).
    """
    src = url or str(archive)
    fix = "Check the URL; the archive is not a DeepMatcher archive or was tampered with. Nothing was kept."
    target.mkdir(parents=True, exist_ok=True)
    budget = [max_bytes]
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                infos = zf.infolist()
                if len(infos) > max_members:
                    raise _fail(src, f"the archive has {len(infos)} members, more than max_members="
                                     f"{max_members}", "If it is genuine, pass a larger max_members=.")
                seen: set[str] = set()
                for info in infos:
                    why = _member_problem(info.filename, seen)
                    mode = info.external_attr >> 16
                    if why is None and stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):
                        why = "is a symbolic link or special file"
                    if why:
                        raise _fail(src, f"member {info.filename!r} {why}", fix)
                declared = sum(i.file_size for i in infos)
                if declared > max_bytes:
                    raise _fail(src, f"the archive declares {declared} unpacked bytes, more than "
                                     f"max_bytes={max_bytes}",
                                "Nothing was kept. If the archive is genuine, pass a larger max_bytes=.")
                for info in infos:
                    dest = target / info.filename
                    if info.is_dir():
                        dest.mkdir(parents=True, exist_ok=True)
                        continue
                    with zf.open(info) as fh:
                        _copy_limited(fh, dest, budget, src, max_bytes)
        elif _is_tar(archive):
            with tarfile.open(archive) as tf:
                seen = set()
                n = 0
                for member in tf:  # streams: a bomb of headers is stopped at max_members
                    n += 1
                    if n > max_members:
                        raise _fail(src, f"the archive has more than max_members={max_members} members",
                                    "If it is genuine, pass a larger max_members=.")
                    why = _member_problem(member.name, seen)
                    if why is None and not (member.isfile() or member.isdir()):
                        why = "is a link or special file"
                    if why:
                        raise _fail(src, f"member {member.name!r} {why}", fix)
                    dest = target / member.name
                    if member.isdir():
                        dest.mkdir(parents=True, exist_ok=True)
                        continue
                    fh = tf.extractfile(member)
                    if fh is not None:
                        with fh:
                            _copy_limited(fh, dest, budget, src, max_bytes)
        else:
            head = archive.read_bytes()[:64] if archive.is_file() else b""
            hint = " (it looks like an HTML page: the server sent an error page)" if b"<" in head[:16].lower() or b"html" in head.lower() else ""
            raise _fail(src, f"the download is neither a zip nor a tar archive{hint}; it starts with {head[:32]!r}",
                        "Check the URL.")
    except DataError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, tarfile.TarError, EOFError, zlib.error, lzma.LZMAError,
            OSError, NotImplementedError, RuntimeError, ValueError) as exc:
        raise _fail(src, f"the archive is corrupt or truncated ({type(exc).__name__}: {exc})",
                    "Download it again (nothing was kept); if it keeps failing, the file on the "
                    "server is damaged.") from exc


def extract_archive(archive: str | os.PathLike, target: str | os.PathLike, *, max_bytes: int = MAX_BYTES,
                    max_members: int = MAX_MEMBERS) -> None:
    """Extract a zip or tar archive into ``target`` within bounds (skrisk's one safe extraction).

    Regular files and folders only: links, special files, absolute paths, ``..`` and repeated
    names are refused, as are more than ``max_members`` members or ``max_bytes`` unpacked bytes
    (counted while writing). Raises :class:`~skrisk.exceptions.DataError` naming the archive.
    """
    _safe_extract(Path(archive), Path(target), max_bytes=max_bytes, max_members=max_members)


def _is_tar(archive: Path) -> bool:
    try:
        return tarfile.is_tarfile(archive)
    except (EOFError, OSError, zlib.error, lzma.LZMAError, tarfile.TarError):
        return True  # a damaged compressed tar: tarfile.open reports it in _safe_extract


def _find_dataset_folder(root: Path, url: str = "") -> Path:
    hits = sorted({p.parent for p in root.rglob("tableA.csv") if "__MACOSX" not in p.parts})
    hits = [h for h in hits if _complete(h)]
    if len(hits) != 1:
        raise DataError(
            f"{url + ': ' if url else ''}the archive holds {len(hits)} folders with all of "
            f"{list(_FILES)} (expected one): it is not a DeepMatcher experiment archive. Check the URL."
        )
    return hits[0]


def fetch_deepmatcher(
    name: str,
    data_home: str | os.PathLike | None = None,
    *,
    url: str | None = None,
    sha256: str | None = None,
    timeout: float = 60.0,
    max_bytes: int = MAX_BYTES,
    max_members: int = MAX_MEMBERS,
) -> PairDataset:
    """Download a DeepMatcher benchmark dataset (once), verify it, and load it.

    The archive is downloaded into ``data_home``, checked against its SHA-256 digest, extracted
    into a temporary folder there and moved to ``data_home/<name>`` only when complete; on any
    failure nothing is left behind. A later call finds the folder and does not download again.

    Parameters
    ----------
    name : str
        A name of ``DEEPMATCHER_ARCHIVES`` (``"beer"``, ``"dblp_scholar"``, ``"abt_buy"``,
        ...; DeepMatcher's names such as ``"Structured/Beer"`` work too), or any folder name when
        ``url`` is given.
    data_home : path-like, optional
        Where datasets are kept; defaults to ``$SKRISK_DATA``, then ``~/skrisk_data``.
    url : str, optional
        Download from here instead of the official URL (a mirror, or a local server in tests).
    sha256 : str, optional
        Expected SHA-256 hex digest of the archive; defaults to the table entry. When neither is
        known the archive is accepted with a warning that gives its digest.
    timeout : float, default=60.0
        Seconds the whole download may take (connection, redirects and every read together), not
        per read: a server that trickles bytes is cut off.
    max_bytes : int, default=MAX_BYTES (512 MiB)
        Largest download, and largest total size unpacked from the archive (counted while
        writing): a zip bomb stops here. The DeepMatcher archives unpack to a few tens of MB.
    max_members : int, default=MAX_MEMBERS (10,000)
        Most members an archive may have.

    Returns
    -------
    PairDataset
        As :func:`load_deepmatcher` returns it.

    Raises
    ------
    ValueError
        Unknown ``name`` and no ``url``.
    ChecksumError
        The archive's digest differs from the expected one (nothing is kept).
    DataError
        The archive is corrupt, truncated, not an archive (e.g. an HTML error page), larger than
        ``max_bytes`` (downloaded or unpacked) or ``max_members``, holds links, absolute paths,
        ``..`` or repeated names, or is not a DeepMatcher archive. Nothing is kept; the message
        names the URL and the fix.
    OSError
        The download failed, took longer than ``timeout`` or ended before its Content-Length.

    Examples
    --------
    >>> from skrisk.datasets import fetch_deepmatcher
    >>> ds = fetch_deepmatcher("beer")  # doctest: +SKIP
    >>> ds.split_sizes  # doctest: +SKIP
    {'train': 268, 'valid': 91, 'test': 91}
    """
    canon = _canonical_name(name)
    if url is None:
        if canon is None or canon not in DEEPMATCHER_ARCHIVES:
            raise ValueError(
                f"Unknown DeepMatcher dataset {name!r}: known are {sorted(DEEPMATCHER_ARCHIVES)}; "
                "pass url= to download another archive."
            )
        url, known = DEEPMATCHER_ARCHIVES[canon]
    else:
        known = DEEPMATCHER_ARCHIVES.get(canon or "", (None, None))[1]
    expected = (sha256 or known or "").lower() or None
    if expected is not None and (len(expected) != 64 or any(c not in "0123456789abcdef" for c in expected)):
        raise ValueError(f"sha256 must be 64 hexadecimal characters, got {sha256!r}.")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf"):
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}.")
    for pname, value in (("max_bytes", max_bytes), ("max_members", max_members)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{pname} must be a positive integer, got {value!r}.")
    folder_name = canon or name.strip().replace("/", "_")
    home = get_data_home(data_home)
    target = home / folder_name
    if _complete(target):
        return load_deepmatcher(target)
    if target.exists() and any(target.iterdir()):
        raise DataError(
            f"{target} exists but lacks some of {list(_FILES)}: remove or complete it, then retry."
        )
    home.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{folder_name}-", dir=home))
    try:
        archive = work / (Path(url.split("?")[0]).name or "archive")
        digest = _download(url, archive, timeout, max_bytes)
        if expected is not None and digest != expected:
            raise ChecksumError(
                f"The archive from {url} has SHA-256 {digest}, expected {expected}: it is corrupt "
                "or not the official file. Nothing was kept. Retry, or check the URL / sha256."
            )
        if expected is None:
            warnings.warn(
                f"No checksum is known for {url}; its SHA-256 is {digest}. Pass sha256='{digest}' "
                "(or add it to DEEPMATCHER_ARCHIVES) to pin it.",
                UserWarning,
                stacklevel=2,
            )
        extracted = work / "extracted"
        _safe_extract(archive, extracted, url=url, max_bytes=max_bytes, max_members=max_members)
        source = _find_dataset_folder(extracted, url)
        staged = work / "dataset"
        staged.mkdir()
        for f in _FILES:
            shutil.move(str(source / f), staged / f)
        if target.exists():
            target.rmdir()  # empty, checked above
        os.replace(staged, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return load_deepmatcher(target)
