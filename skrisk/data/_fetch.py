"""Download, verify and cache the DeepMatcher benchmark archives."""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
import warnings
import zipfile
from pathlib import Path

from ..exceptions import DataError
from ._loaders import _canonical_name, get_data_home, load_deepmatcher
from ._pairs import PairDataset

__all__ = ["fetch_deepmatcher", "DEEPMATCHER_ARCHIVES"]

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


def _download(url: str, dest: Path, timeout: float) -> str:
    """Stream ``url`` into ``dest``; return the SHA-256 hex digest of the bytes."""
    from tqdm.auto import tqdm

    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp, open(dest, "wb") as out:
            total = int(resp.headers.get("Content-Length") or 0) or None
            with tqdm(total=total, unit="B", unit_scale=True, desc=dest.name, leave=False) as bar:
                while chunk := resp.read(_CHUNK):
                    out.write(chunk)
                    digest.update(chunk)
                    bar.update(len(chunk))
    except (urllib.error.URLError, OSError) as exc:
        raise OSError(
            f"Could not download {url}: {exc}. Check the network or the URL; or download the "
            "archive yourself, extract tableA.csv, tableB.csv, train.csv, valid.csv and test.csv "
            "into one folder and use load_deepmatcher(<folder>)."
        ) from exc
    return digest.hexdigest()


def _safe_extract(archive: Path, target: Path) -> None:
    """Extract a zip or tar archive into ``target``, refusing members that leave it."""
    root = target.resolve()
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            for member in zf.namelist():
                if not (root / member).resolve().is_relative_to(root):
                    raise DataError(f"{archive}: member {member!r} would be written outside {target}.")
            zf.extractall(target)
    elif tarfile.is_tarfile(archive):
        with tarfile.open(archive) as tf:
            tf.extractall(target, filter="data")
    else:
        raise DataError(f"{archive} is neither a zip nor a tar archive: check the URL.")


def _find_dataset_folder(root: Path) -> Path:
    hits = sorted({p.parent for p in root.rglob("tableA.csv") if "__MACOSX" not in p.parts})
    hits = [h for h in hits if _complete(h)]
    if len(hits) != 1:
        raise DataError(
            f"The archive holds {len(hits)} folders with all of {list(_FILES)} (expected one): "
            "it is not a DeepMatcher experiment archive."
        )
    return hits[0]


def fetch_deepmatcher(
    name: str,
    data_home: str | os.PathLike | None = None,
    *,
    url: str | None = None,
    sha256: str | None = None,
    timeout: float = 60.0,
) -> PairDataset:
    """Download a DeepMatcher benchmark dataset (once), verify it, and load it.

    The archive is downloaded into ``data_home``, checked against its SHA-256 digest, extracted
    into a temporary folder there and moved to ``data_home/<name>`` only when complete; on any
    failure nothing is left behind. A later call finds the folder and does not download again.

    Parameters
    ----------
    name : str
        A name of :data:`DEEPMATCHER_ARCHIVES` (``"beer"``, ``"dblp_scholar"``, ``"abt_buy"``,
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
        Seconds to wait for the server.

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
    OSError
        The download failed.

    Examples
    --------
    >>> from skrisk.data import fetch_deepmatcher
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
        digest = _download(url, archive, timeout)
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
        _safe_extract(archive, extracted)
        source = _find_dataset_folder(extracted)
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
