"""Safe file writes and folder locks, shared by every part of skrisk that writes user files.

* :func:`atomic_write_bytes` / :func:`atomic_write_text` replace a file through a *unique*
  temporary file in the same folder (``tempfile.mkstemp``), ``fsync``, ``os.replace`` and an
  ``fsync`` of the folder: a reader sees the old or the new file, never a torn one, and two
  processes writing the same target never share a temporary name.
* :class:`FolderLock` is an OS file lock (``filelock``) on a folder, held for the life of a
  labelling session or a run, with the holder's pid recorded beside it so that a second process
  is told who holds it.
* :func:`read_jsonl` reads an append-only JSON-lines file (the labelling journal, a run's
  ``results.jsonl``): a torn last line -- one *without* its newline -- is dropped (and, with
  ``repair=True``, moved to ``<file>.torn`` and cut off); a damaged complete line anywhere is a
  :class:`~skrisk.exceptions.DataError` naming the file and the line.
* :func:`open_append` opens an append-only file, refusing a symbolic link (``O_NOFOLLOW``) or a
  file with a second hard link; :func:`atomic_write_bytes` refuses to replace a link too
  (:class:`LinkError`), so skrisk never writes, truncates or appends through a link.
* ``write_csv_export`` / :func:`read_csv_export` -- the one CSV writer of skrisk's exports
  (cells neutralised against spreadsheet formulas, a CR or LF inside a cell always quoted) and its
  reader, which gives back the exact values.
* :func:`remove_stale_temporaries` -- the temporary files of writers killed before their rename
  (each name carries the writer's pid), removed when a folder's lock is taken.
* :func:`write_files_together` -- several files of one folder (the outputs of one command)
  replaced together or not at all, through a staging folder and a commit note that
  :func:`finish_files_together` completes after a kill.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

from .exceptions import SkriskError

if TYPE_CHECKING:  # pragma: no cover
    import io

    import pandas as pd

__all__ = [
    "FolderInUseError",
    "FolderLock",
    "LinkError",
    "RepeatedKeyError",
    "append_durably",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_not_link",
    "finish_files_together",
    "fsync_dir",
    "json_loads_unique",
    "open_append",
    "open_regular_file",
    "pid_alive",
    "read_csv_export",
    "read_jsonl",
    "remove_stale_temporaries",
    "write_csv_export",
    "write_files_together",
]

# Rows of a CSV export turned into text at a time: the text of a million-row table is never
# held whole (with its encoded copy, about three times the file)
_CSV_ROWS = 100_000


class FolderInUseError(SkriskError, RuntimeError):
    """Another process holds the folder's lock; the message names its pid and the fix."""


class LinkError(SkriskError, OSError):
    """A file skrisk would write is a symbolic link or has a second hard link; nothing was written."""


class RepeatedKeyError(ValueError):
    """A JSON object holds a key twice (its ``args[0]``): readers disagree on which value wins."""


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise RepeatedKeyError(k)
        out[k] = v
    return out


def json_loads_unique(text: str) -> object:
    """:func:`json.loads`, refusing an object that holds a key twice.

    Raises
    ------
    RepeatedKeyError
        Naming the key (``exc.args[0]``).
    json.JSONDecodeError, RecursionError
        As :func:`json.loads`.
    """
    import json

    return json.loads(text, object_pairs_hook=_unique_keys)


def check_not_link(path: str | os.PathLike, *, hard: bool = False) -> None:
    """Refuse a ``path`` that is a symbolic link, a FIFO, a device or a socket (and, with
    ``hard=True``, a file with 2+ hard links); a missing path, a regular file or a folder passes.

    Called before anything is written, truncated or appended: a link planted in a session or
    output folder would otherwise make skrisk overwrite a file elsewhere.

    Raises
    ------
    LinkError
        The message names the file, where it points and the fix.
    """
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError:
        return  # unreadable: the write itself reports it
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(path)
        except OSError:  # pragma: no cover
            target = "?"
        raise LinkError(
            f"{path} is a symbolic link (to {target}): skrisk never writes through a link, which could "
            "change a file elsewhere. Remove the link (or replace it by a copy of the file), then run "
            "again. Nothing was written."
        )
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        raise LinkError(
            f"{path} is not a file (but a FIFO, a device or a socket): reading it could block forever and "
            "writing it would send data elsewhere. Move it away, then run again. Nothing was written."
        )
    if hard and stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        raise LinkError(
            f"{path} has {st.st_nlink} hard links: another name shares this file, and appending here "
            "would change it too. Replace it by a copy (cp file file.new && mv file.new file), then run "
            "again. Nothing was written."
        )


_TMP_RE = re.compile(r"^\.(?P<name>.+?)\.(?:(?P<pid>\d+)\.)?[A-Za-z0-9_]{8}\.tmp$")


def pid_alive(pid: int) -> bool:
    """Whether the process ``pid`` runs (this one does; another user's, or an unknown answer,
    counts as running, so that its files are kept)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists (another user's) or unknown: keep its file
    return True


def remove_stale_temporaries(folder: str | os.PathLike, *, legacy: bool = True) -> list[Path]:
    """Remove the temporary files :func:`atomic_write_bytes` left in ``folder`` when killed.

    A temporary file is named ``.<target>.<pid>.<random>.tmp``; it is stale when that process no
    longer runs. With ``legacy=True``, files of the older form ``.<target>.<random>.tmp`` (no
    pid) are removed too: only while holding the folder's lock, when no other skrisk writer can be
    at work there. Links and non-files are left alone.

    Returns
    -------
    list of Path
        The files removed.
    """
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        m = _TMP_RE.match(entry.name)
        if m is None or not entry.is_file(follow_symlinks=False):
            continue
        pid = m.group("pid")
        if (pid is None and not legacy) or (pid is not None and pid_alive(int(pid))):
            continue
        try:
            os.unlink(entry.path)
            removed.append(Path(entry.path))
        except OSError:
            pass
    return removed


def open_append(path: str | os.PathLike) -> int:
    """Open an append-only file (created when missing) for :func:`append_durably`; return its fd.

    A symbolic link is refused by the OS (``O_NOFOLLOW``, where it exists) and, like a file with a
    second hard link, by :func:`check_not_link` first.

    Raises
    ------
    LinkError
        ``path`` is a link.
    OSError
        The file cannot be opened.
    """
    check_not_link(path, hard=True)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    try:
        return os.open(path, flags, 0o644)
    except OSError as exc:
        if Path(path).is_symlink():  # a link planted between the check and the open
            check_not_link(path)
        raise exc


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
    data: bytes | Iterable[bytes],
    *,
    on_error: Callable[[Path, OSError], Exception] | None = None,
) -> None:
    """Replace ``path`` by ``data`` atomically, through a unique temporary file beside it.

    Parameters
    ----------
    path : path-like
        The target file; its folder must exist.
    data : bytes or iterable of bytes
        The new content, whole or in parts (written one after the other: a large file never
        needs to be held in memory). An exception while the parts are made leaves ``path`` as
        it was.
    on_error : callable, optional
        ``on_error(path, exc)`` builds the exception raised when writing fails (the default
        re-raises the ``OSError``). ``path`` is left as it was and no temporary file is left
        behind.

    Raises
    ------
    LinkError
        ``path`` is a symbolic link (checked before anything is written; see
        :func:`check_not_link`).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "out.txt"
    >>> atomic_write_bytes(target, b"hello")
    >>> target.read_bytes()
    b'hello'
    """
    path = Path(path)
    check_not_link(path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            for part in ([data] if isinstance(data, (bytes, bytearray, memoryview)) else data):
                fh.write(part)
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


def write_csv_export(
    path: str | os.PathLike,
    frame: "pd.DataFrame",
    *,
    on_error: Callable[[Path, OSError], Exception] | None = None,
) -> Path:
    """Write ``frame`` as a CSV file the way skrisk writes every CSV file (atomically, UTF-8).

    Every text cell and column name is neutralised against spreadsheet formulas
    (:func:`~skrisk._safetext.spreadsheet_safe`: a leading ``'`` when the first visible character
    is ``=``, ``+``, ``-`` or ``@``, when the text starts with a control character, or when it
    starts with ``'``), and rows end with CRLF so that a CR or LF inside a cell is always quoted.
    :func:`read_csv_export` reads the file back to the exact values.

    Raises
    ------
    DataError
        A cell holds a NUL character or a lone surrogate (no CSV reader gives it back).
    LinkError
        ``path`` is a symbolic link.

    Examples
    --------
    >>> import tempfile, pathlib, pandas as pd
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.csv"
    >>> _ = write_csv_export(p, pd.DataFrame({"name": ["=1+1", "shop\\r0"]}))
    >>> pd.read_csv(p)["name"].tolist()          # as a spreadsheet shows it
    ["'=1+1", 'shop\\r0']
    >>> read_csv_export(p)["name"].tolist()      # the values skrisk meant
    ['=1+1', 'shop\\r0']
    """
    from ._safetext import csv_text

    def parts() -> Iterator[bytes]:  # the text of _CSV_ROWS rows at a time, never the whole file
        for start in range(0, max(len(frame), 1), _CSV_ROWS):
            yield csv_text(frame.iloc[start:start + _CSV_ROWS], header=start == 0,
                           first_row=start).encode("utf-8")

    path = Path(path)
    atomic_write_bytes(path, parts(), on_error=on_error)
    return path


def read_csv_export(path: str | os.PathLike) -> "pd.DataFrame":
    """Read a CSV file skrisk wrote back to the exact values it meant.

    Every cell is a ``str`` (an empty cell is ``""``, numbers keep their written form), and one
    leading ``'`` -- the mark ``write_csv_export`` adds against spreadsheet formulas -- is
    removed from every cell and column name that starts with one. To do the same by hand: read the
    file with any CSV reader as text, then remove one leading ``'`` from each cell that has one
    (in a spreadsheet, ``=MID(A2,2,LEN(A2))`` on such a cell).

    Raises
    ------
    DataError
        The file cannot be read as CSV; the message names it.

    Examples
    --------
    See ``write_csv_export``.
    """
    import pandas as pd

    from .exceptions import DataError

    path = Path(path)
    try:
        check_not_link(path)  # a FIFO would block the read forever
    except LinkError as exc:
        raise DataError(str(exc)) from None
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise DataError(
            f"Cannot read {path} as a CSV file skrisk wrote ({exc}). Export it again, or restore it."
        ) from exc

    def unquote(v: object) -> object:
        return v[1:] if isinstance(v, str) and v.startswith("'") else v

    frame.columns = [unquote(c) for c in frame.columns]
    for j in range(frame.shape[1]):  # only a column that holds a quote is visited cell by cell
        values = frame.iloc[:, j].to_numpy(dtype=object)
        try:
            quoted = "'" in "".join(values)
        except TypeError:  # a missing field of a short line (NaN)
            quoted = True
        if quoted:
            frame.iloc[:, j] = [unquote(v) for v in values]
    return frame


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
        for name in (self.LOCK_NAME, self.OWNER_NAME):  # the lock file is opened with O_TRUNC
            check_not_link(self.folder / name)
        try:
            self._lock.acquire()
        except Timeout:
            pid = self.owner().get("pid", "unknown")
            raise FolderInUseError(
                f"The {self.what} {self.folder} is in use by pid {pid}. Finish or stop that "
                f"process first{', or ' + self.hint if self.hint else ''}."
            ) from None
        import sys

        remove_stale_temporaries(self.folder)  # of writers killed before their rename
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

    The one reader of skrisk's append-only files (the labelling journal, the run records). Only a
    last line *without* its newline can be the trace of a process killed while appending: when it
    is not a valid object it is dropped and, with ``repair=True``, moved to ``<file>.torn`` and cut
    off the file, so that the next append starts on a clean line. A valid last object that only
    lacks its newline (a file saved by an editor) is kept, and ``repair=True`` adds the newline.
    A bad *complete* line -- the last one included -- means the file was edited or damaged:
    :class:`~skrisk.exceptions.DataError` (with the line number as its ``line`` attribute) names
    the file, the line and ``fix``, and nothing is cut.

    Parameters
    ----------
    path : path-like
        The file; a missing file reads as empty.
    repair : bool, default=False
        Cut a torn last line (kept in ``<file>.torn``), or add a missing final newline.
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
    >>> p.read_text(), p.with_name("r.jsonl.torn").read_text()
    ('{"a": 1}\\n{"a": 2}\\n', '{"a": \\n')
    """
    from .exceptions import DataError

    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return []
    if not path.is_file() or path.is_symlink():
        raise DataError(f"{path} is not a file (but a folder, a link or a device): the {what} must be a "
                        "file. Move that entry away, and restore the file from a backup.")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"Cannot read {path}: {exc.strerror or exc}. Fix its permissions.") from exc

    def unique_keys(pairs: list[tuple[str, object]]) -> dict:
        obj = dict(pairs)
        if len(obj) != len(pairs):  # parsers disagree on which value wins: refuse
            seen: set[str] = set()
            twice = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
            raise ValueError(f"the key {twice!r} appears twice")
        return obj

    def parse(line: bytes) -> dict:
        obj = json.loads(line.decode("utf-8"), object_pairs_hook=unique_keys)
        if not isinstance(obj, dict):
            raise ValueError(f"a JSON {type(obj).__name__}, not an object")
        return obj

    def damaged(i: int, why: str, exc: Exception) -> DataError:
        err = DataError(
            f"{path}, line {i + 1}, is not a valid {what} line{why}. The file was edited or damaged: "
            f"{fix} (the other lines are kept)."
        )
        err.line = i + 1  # type: ignore[attr-defined]
        return err

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
                raise damaged(i, f" ({exc})", exc) from exc
            if check is not None:
                try:
                    check(obj)
                except ValueError as exc:
                    raise damaged(i, f": {exc}", exc) from exc
            out.append((i + 1, obj))
        good_bytes += len(line) + 1
    if (unterminated or torn) and repair:
        check_not_link(path, hard=True)
    try:
        if unterminated and repair:  # add the missing final newline before the next append
            fd = open_append(path)
            try:
                append_durably(fd, b"\n")
            finally:
                os.close(fd)
        if torn and repair:
            keep = path.with_name(path.name + ".torn")  # the cut bytes are kept, never lost
            fd = open_append(keep)
            try:
                append_durably(fd, tail + b"\n")
            finally:
                os.close(fd)
            fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0))
            try:
                os.ftruncate(fd, good_bytes)
                os.fsync(fd)
            finally:
                os.close(fd)
    except OSError as exc:
        if on_error is None or isinstance(exc, LinkError):
            raise
        raise on_error(path, exc) from exc
    return out


_SET_PREFIX = ".skrisk-set."
_SET_NOTE = ".skrisk-set.json"


def finish_files_together(folder: str | os.PathLike) -> list[Path]:
    """Complete or undo a :func:`write_files_together` that was killed (call while holding the folder's lock).

    With a commit note, the killed writer had written every file: the ones still staged are
    moved into place (the set completes). Without one, its staging folders are removed (the old
    files stay). Links are never followed.

    Returns
    -------
    list of Path
        The files moved into place.
    """
    folder = Path(folder)
    moved = []
    note = folder / _SET_NOTE
    try:
        check_not_link(note)
        data = json.loads(note.read_text(encoding="utf-8")) if note.is_file() else None
    except (OSError, ValueError, LinkError):
        data = None
    if isinstance(data, dict) and isinstance(data.get("staging"), str) and isinstance(data.get("files"), list) \
            and re.fullmatch(r"\.skrisk-set\.\d+\.[A-Za-z0-9_]{8}\.tmp", data["staging"]):
        staged = folder / data["staging"]
        for name in data["files"]:
            if not isinstance(name, str) or "/" in name or name.startswith("."):
                continue
            src = staged / name
            if src.is_file() and not src.is_symlink():
                check_not_link(folder / name)
                os.replace(src, folder / name)
                moved.append(folder / name)
        fsync_dir(folder)
    try:
        note.unlink()
    except OSError:
        pass
    for entry in list(os.scandir(folder)) if folder.is_dir() else []:
        if entry.name.startswith(_SET_PREFIX) and entry.name.endswith(".tmp") \
                and entry.is_dir(follow_symlinks=False):
            for inner in os.scandir(entry.path):
                if inner.is_file(follow_symlinks=False) or inner.is_symlink():
                    os.unlink(inner.path)
            os.rmdir(entry.path)
    return moved


def write_files_together(
    folder: str | os.PathLike, writers: "dict[str, Callable[[Path], object]]"
) -> list[Path]:
    """Replace several files of ``folder`` together or not at all (call while holding its lock).

    Each ``writers[name](path)`` writes its file at ``path``, inside a staging folder in
    ``folder`` (``.skrisk-set.<pid>.<random>.tmp``); nothing in ``folder`` changes until every
    file is written and synced. Then a commit note (``.skrisk-set.json``) naming them is written
    atomically, the files are renamed into place and the note removed. A failure while writing
    (a full disk) removes the staging folder and leaves every old file as it was; a kill during
    the renames leaves the note, and :func:`finish_files_together` (the next writer) completes
    the set.

    Parameters
    ----------
    folder : path-like
        An existing folder.
    writers : dict of str to callable
        File name (no folder part) to a function writing that file at the path it is given.

    Returns
    -------
    list of Path
        The files written, in ``folder``.

    Raises
    ------
    OSError
        Writing a file failed; its ``filename`` is the file in ``folder`` and the message says
        that the old files are unchanged.
    LinkError
        A target is a symbolic link (checked before anything is written).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = write_files_together(folder, {"a.txt": lambda p: p.write_text("a"), "b.txt": lambda p: p.write_text("b")})
    >>> sorted(p.name for p in folder.iterdir())
    ['a.txt', 'b.txt']
    """
    folder = Path(folder)
    for name in writers:
        check_not_link(folder / name)
    finish_files_together(folder)
    staged = Path(tempfile.mkdtemp(prefix=f"{_SET_PREFIX}{os.getpid()}.", suffix=".tmp", dir=folder))
    committed = False
    try:
        for name, write in writers.items():
            try:
                write(staged / name)
            except OSError as exc:
                raise OSError(exc.errno, f"{exc.strerror or exc} while writing {name} (no file of {folder} was "
                              "changed: the earlier outputs are all as they were)", str(folder / name)) from exc
        fsync_dir(staged)
        atomic_write_text(folder / _SET_NOTE, json.dumps({"staging": staged.name, "files": list(writers)}))
        committed = True
        finish_files_together(folder)
    finally:
        if not committed:
            for inner in staged.iterdir():
                inner.unlink()
            staged.rmdir()
    return [folder / name for name in writers]
