"""Safe file writes and folder locks, shared by every part of skrisk that writes user files.

* :func:`atomic_write_bytes` / :func:`atomic_write_text` replace a file through a *unique*
  temporary file in the same folder (``tempfile.mkstemp``), ``fsync``, ``os.replace`` and an
  ``fsync`` of the folder: a reader sees the old or the new file, never a torn one, and two
  processes writing the same target never share a temporary name.
* :class:`FolderLock` is an OS file lock (``filelock``) on a folder, held for the life of a
  labelling session or a run, with the holder's pid recorded beside it so that a second process
  is told who holds it.
* :func:`read_jsonl` reads an append-only JSON-lines file (the labelling journal, a run's
  ``results.jsonl``): a torn last line is dropped (and cut off with ``repair=True``), a damaged
  line elsewhere is a :class:`~skrisk.exceptions.DataError` naming the file and the line.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # pragma: no cover
    import io

from .exceptions import SkriskError

__all__ = [
    "FolderInUseError",
    "FolderLock",
    "append_durably",
    "atomic_write_bytes",
    "atomic_write_text",
    "fsync_dir",
    "open_regular_file",
    "read_jsonl",
]


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


def open_regular_file(path: str | os.PathLike, *, hint: str = "") -> "io.BufferedReader":
    """Open ``path`` for reading in binary mode only when it is a regular file.

    The file is opened without blocking (``O_NONBLOCK``: a FIFO nobody writes to does not hang
    the open) and its type is checked on the open descriptor (``fstat``: the file checked is the
    file read), so a device (``/dev/zero``, which never ends), a FIFO, a socket or a folder is
    refused before a byte is read. A symlink to a regular file is read.

    Parameters
    ----------
    path : str or path-like
    hint : str, default=""
        What to do instead, appended to the message.

    Returns
    -------
    io.BufferedReader

    Raises
    ------
    DataError
        ``path`` is not a regular file; the message names it and what it is.
    """
    from .exceptions import DataError

    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = ("a folder" if stat.S_ISDIR(mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(mode)
                    else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                    else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
            raise DataError(f"{path} is {kind}, not a regular file: refused, nothing was read.{' ' + hint if hint else ''}")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


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


def append_durably(fd: int, data: bytes) -> None:
    """Append ``data`` to the file open (``O_APPEND``) on ``fd`` and ``fsync`` it, or leave no trace.

    The one append of skrisk's append-only files (the labelling journal, the run records). When
    the write or the ``fsync`` fails (disk full, I/O error), the file is cut back to its size
    before the call and the ``OSError`` is raised again; if even the cut fails, the error carries
    it as ``cut_failed`` (the caller must then refuse further appends).
    """
    size = os.fstat(fd).st_size
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    except OSError as exc:
        try:
            os.ftruncate(fd, size)
            os.fsync(fd)
        except OSError as cut:
            exc.cut_failed = cut  # type: ignore[attr-defined]
        raise


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


def read_jsonl(
    path: str | os.PathLike,
    *,
    repair: bool = False,
    what: str = "JSON-lines file",
    fix: str = "restore it from a backup, or delete that line",
    on_error: Callable[[Path, OSError], Exception] | None = None,
    check: Callable[[dict], None] | None = None,
) -> list[tuple[int, dict]]:
    """The objects of an append-only JSON-lines file, each with its line number (1-based).

    The one reader of skrisk's append-only files (the labelling journal, the run records). A
    last line that is incomplete or not a valid object is the trace of a process killed while
    appending: it is dropped and, with ``repair=True``, cut off the file so that the next append
    starts on a clean line. A valid last object that only lacks its newline (a file saved by an
    editor, or an append cut just before its newline) is kept, and ``repair=True`` adds the
    newline. A bad line anywhere else means the file was edited or damaged:
    :class:`~skrisk.exceptions.DataError` names the file, the line and ``fix``.

    Parameters
    ----------
    path : path-like
        The file; a missing file reads as empty.
    repair : bool, default=False
        Truncate a torn last line (or add a missing final newline).
    what : str, default="JSON-lines file"
        What the file is, for the error message ("journal", "results file").
    fix : str
        The fix the error message suggests for a damaged line.
    on_error : callable, optional
        ``on_error(path, exc)`` builds the exception raised when the repair cannot write.
    check : callable, optional
        ``check(obj)`` raises ``ValueError`` when an object is not a valid record of this file.

    Returns
    -------
    list of (int, dict)
        Line number and object of every complete line, in order (blank lines are skipped).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.jsonl"
    >>> _ = p.write_text('{"a": 1}\\n{"a": 2}\\n{"a": ')
    >>> read_jsonl(p, repair=True)
    [(1, {'a': 1}), (2, {'a': 2})]
    >>> p.read_text()
    '{"a": 1}\\n{"a": 2}\\n'
    """
    from .exceptions import DataError

    path = Path(path)
    if not path.exists():
        return []
    if not path.is_file():
        raise DataError(f"{path} is not a file: the {what} must be a file. Move that entry away, and "
                        "restore the file from a backup.")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"Cannot read {path}: {exc.strerror or exc}. Fix its permissions.") from exc

    def parse(line: bytes) -> dict:
        obj = json.loads(line.decode("utf-8"))
        if not isinstance(obj, dict):
            raise ValueError(f"a JSON {type(obj).__name__}, not an object")
        return obj

    lines = raw.split(b"\n")
    complete, tail = lines[:-1], lines[-1]  # the piece after the last newline: b"" or a torn line
    unterminated = False
    if tail.strip():
        try:
            obj = parse(tail.strip())
            if check is not None:
                check(obj)
            complete, tail, unterminated = lines, b"", True
        except (ValueError, UnicodeDecodeError):
            pass
    out: list[tuple[int, dict]] = []
    good_bytes = 0
    torn = bool(tail.strip())
    for i, line in enumerate(complete):
        if line.strip():
            try:
                obj = parse(line.strip())
            except (ValueError, UnicodeDecodeError) as exc:
                if i == len(complete) - 1 and not tail.strip():
                    torn = True  # the last line is damaged: a torn append
                    break
                raise DataError(
                    f"{path}, line {i + 1}, is not a valid {what} line ({exc}). The file was edited "
                    f"or damaged: {fix} (the other lines are kept)."
                ) from exc
            if check is not None:
                try:
                    check(obj)
                except ValueError as exc:
                    raise DataError(
                        f"{path}, line {i + 1}, is not a valid {what} line: {exc}. The file was "
                        f"edited or damaged: {fix} (the other lines are kept)."
                    ) from exc
            out.append((i + 1, obj))
        good_bytes += len(line) + 1
    try:
        if unterminated and repair:  # add the missing final newline before the next append
            with path.open("ab") as fh:
                fh.write(b"\n")
                fh.flush()
                os.fsync(fh.fileno())
        if torn and repair:
            with path.open("r+b") as fh:
                fh.truncate(good_bytes)
                fh.flush()
                os.fsync(fh.fileno())
    except OSError as exc:
        if on_error is None:
            raise
        raise on_error(path, exc) from exc
    return out
