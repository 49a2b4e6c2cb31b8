"""Safe file writes and folder locks, shared by every part of skrisk that writes user files.

* :func:`atomic_write_bytes` / :func:`atomic_write_text` replace a file through a *unique*
  temporary file in the same folder (``tempfile.mkstemp``), ``fsync``, ``os.replace`` and an
  ``fsync`` of the folder: a reader sees the old or the new file, never a torn one, and two
  processes writing the same target never share a temporary name.
* :class:`FolderLock` is an OS file lock (``filelock``) on a folder, held for the life of a
  labelling session or a run, with the holder's pid recorded beside it so that a second process
  is told who holds it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Callable

from .exceptions import SkriskError

__all__ = ["FolderInUseError", "FolderLock", "atomic_write_bytes", "atomic_write_text", "fsync_dir"]


class FolderInUseError(SkriskError, RuntimeError):
    """Another process holds the folder's lock; the message names its pid and the fix."""


def fsync_dir(folder: str | os.PathLike) -> None:
    """``fsync`` a folder so that a rename inside it survives a crash (no-op where unsupported)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(
    path: str | os.PathLike,
    data: bytes,
    *,
    on_error: Callable[[Path, OSError], Exception] | None = None,
) -> None:
    """Replace ``path`` by ``data`` atomically, through a unique temporary file beside it.

    Parameters
    ----------
    path : path-like
        The target file; its folder must exist.
    data : bytes
        The new content.
    on_error : callable, optional
        ``on_error(path, exc)`` builds the exception raised when writing fails (the default
        re-raises the ``OSError``). ``path`` is left as it was and no temporary file is left
        behind.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "out.txt"
    >>> atomic_write_bytes(target, b"hello")
    >>> target.read_bytes()
    b'hello'
    """
    path = Path(path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        tmp = None
        fsync_dir(path.parent)
    except OSError as exc:
        if on_error is None:
            raise
        raise on_error(path, exc) from exc
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def atomic_write_text(
    path: str | os.PathLike,
    text: str,
    *,
    encoding: str = "utf-8",
    on_error: Callable[[Path, OSError], Exception] | None = None,
) -> None:
    """Replace ``path`` by ``text`` atomically (see :func:`atomic_write_bytes`); no newline
    translation."""
    atomic_write_bytes(path, text.encode(encoding), on_error=on_error)


class FolderLock:
    """An exclusive OS lock on a folder, for as long as a session or run uses it.

    The lock is ``filelock.FileLock`` on ``<folder>/.skrisk.lock`` (released by the OS when the
    process dies, so a killed session never leaves a stale lock); the holder's pid and command are
    written to ``<folder>/.skrisk.lock.json`` so that a second process can say who holds it.

    Parameters
    ----------
    folder : path-like
        The folder to lock (created if missing).
    what : str, default="folder"
        What the folder is, for the error message ("session", "run output").
    hint : str, default=""
        The fix to suggest when the folder is in use.

    Raises
    ------
    FolderInUseError
        On :meth:`acquire` (or entering the context) when another process holds the lock.

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with FolderLock(folder, what="session"):
    ...     pass
    """

    LOCK_NAME = ".skrisk.lock"
    OWNER_NAME = ".skrisk.lock.json"

    def __init__(self, folder: str | os.PathLike, *, what: str = "folder", hint: str = "") -> None:
        from filelock import FileLock

        self.folder = Path(folder)
        self.what = what
        self.hint = hint
        self._lock = FileLock(str(self.folder / self.LOCK_NAME), timeout=0, thread_local=False)

    @property
    def is_locked(self) -> bool:
        return self._lock.is_locked

    def owner(self) -> dict:
        """The recorded holder (``{"pid": ..., "argv": ...}``), or ``{}`` when unknown."""
        try:
            data = json.loads((self.folder / self.OWNER_NAME).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def acquire(self) -> "FolderLock":
        from filelock import Timeout

        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            self._lock.acquire()
        except Timeout:
            pid = self.owner().get("pid", "unknown")
            raise FolderInUseError(
                f"The {self.what} {self.folder} is in use by pid {pid}. Finish or stop that "
                f"process first{', or ' + self.hint if self.hint else ''}."
            ) from None
        import sys

        try:
            atomic_write_text(
                self.folder / self.OWNER_NAME,
                json.dumps({"pid": os.getpid(), "argv": sys.argv}) + "\n",
            )
        except OSError:
            pass  # the lock itself is held; the owner note is only for the message
        return self

    def release(self) -> None:
        if self._lock.is_locked:
            try:
                (self.folder / self.OWNER_NAME).unlink()
            except OSError:
                pass
            self._lock.release()

    def __enter__(self) -> "FolderLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
