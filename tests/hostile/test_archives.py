"""Hostile archives and servers for fetch_deepmatcher, against a local HTTP server on 127.0.0.1."""

from __future__ import annotations

import hashlib
import random
import http.server
import io
import stat
import tarfile
import threading
import time
import warnings
import zipfile

import pytest

from skrisk.datasets import fetch_deepmatcher
from skrisk.exceptions import DataError

FILES = {
    "tableA.csv": "id,name\n0,acme\n1,globex\n",
    "tableB.csv": "id,name\n0,acme corp\n1,umbrella\n",
    "train.csv": "ltable_id,rtable_id,label\n0,0,1\n1,1,0\n",
    "valid.csv": "ltable_id,rtable_id,label\n0,1,0\n",
    "test.csv": "ltable_id,rtable_id,label\n1,0,0\n",
}


def _zip(extra=(), files=FILES, prefix="exp_data/") -> bytes:
    """A DeepMatcher-like zip; ``extra``: (ZipInfo or name, data) members added after the files."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "Duplicate name": wanted here
        for name, text in files.items():
            zf.writestr(prefix + name, text)
        for info, data in extra:
            zf.writestr(info, data)
    return buf.getvalue()


def _tar(extra=(), mode="w:gz") -> bytes:
    """A DeepMatcher-like tar; ``extra``: (TarInfo, data or None) members added after the files."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tf:
        for name, text in FILES.items():
            data = text.encode()
            info = tarfile.TarInfo("exp_data/" + name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        for info, data in extra:
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def _link_zip() -> bytes:
    info = zipfile.ZipInfo("exp_data/link")
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return _zip([(info, "/etc/passwd")])


def _tar_member(name, kind=tarfile.REGTYPE, linkname="", data=b"x"):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, (data if kind == tarfile.REGTYPE else None)


def _corrupt_zip() -> bytes:
    raw = bytearray(_zip([("exp_data/big.bin", b"abcdefgh" * 4000)]))
    i = raw.find(b"exp_data/big.bin") + 40  # inside the compressed data of the last member
    raw[i : i + 8] = b"\xff" * 8
    return bytes(raw)


def _many_members(n: int) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for i in range(n):
            zf.writestr(f"m/{i}", b"")
    return buf.getvalue()


class _Handler(http.server.BaseHTTPRequestHandler):
    routes: dict = {}

    def log_message(self, *args):
        pass

    def do_GET(self):  # noqa: N802
        route = self.routes.get(self.path.split("?")[0])
        if route is None:
            self.send_error(404)
            return
        try:
            route(self) if callable(route) else self._send(route)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _send(self, body: bytes, length: int | None = None, content_type="application/zip"):
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        self.wfile.write(body)


def _truncated(h):
    body = _zip()
    h._send(body[: len(body) // 2], length=len(body))


def _slow(h):
    h.send_response(200)
    h.send_header("Content-Length", "1000")
    h.end_headers()
    for _ in range(200):  # one byte every 0.1 s: each read is fast, the whole is not
        h.wfile.write(b"x")
        h.wfile.flush()
        time.sleep(0.1)


def _endless(h):
    h.send_response(200)
    h.end_headers()  # no Content-Length
    for _ in range(10_000):
        h.wfile.write(b"\0" * 65536)


def _huge_length(h):
    h.send_response(200)
    h.send_header("Content-Length", str(10**12))
    h.end_headers()
    h.wfile.write(b"PK")


def _loop(h):
    h.send_response(302)
    h.send_header("Location", "/loop")
    h.end_headers()


def _html(h):
    h._send(b"<!DOCTYPE html><html><body>404 Not Found</body></html>", content_type="text/html")


ROUTES = {
    "/ok.zip": _zip(),
    "/ok.tar.gz": _tar(),
    "/bomb.zip": _zip([("exp_data/bomb.bin", b"\0" * (4 * 2**20))]),
    "/bomb.tar.gz": _tar([(tarfile.TarInfo("exp_data/bomb.bin"), None)]),  # size set below
    "/truncated.zip": _truncated,
    "/slow.zip": _slow,
    "/endless.zip": _endless,
    "/huge.zip": _huge_length,
    "/loop": _loop,
    "/html.zip": _html,
    "/corrupt.tar.gz": _tar([_tar_member("exp_data/noise.bin", data=random.Random(0).randbytes(50_000))])[:25_000],
    "/corrupt.zip": _corrupt_zip(),
    "/empty.zip": b"",
    "/link.zip": _link_zip(),
    "/link.tar.gz": _tar([_tar_member("exp_data/link", tarfile.SYMTYPE, "/etc/passwd")]),
    "/hardlink.tar.gz": _tar([_tar_member("exp_data/hard", tarfile.LNKTYPE, "/etc/passwd")]),
    "/fifo.tar.gz": _tar([_tar_member("exp_data/fifo", tarfile.FIFOTYPE)]),
    "/dotdot.zip": _zip([("../x", "evil")]),
    "/dotdot.tar.gz": _tar([_tar_member("exp_data/../../x")]),
    "/absolute.zip": _zip([("/tmp/skrisk_absolute_x", "evil")]),
    "/absolute.tar.gz": _tar([_tar_member("/tmp/skrisk_absolute_x")]),
    "/duplicate.zip": _zip([("exp_data/tableA.csv", "id,name\n9,evil\n")]),
    "/many.zip": _many_members(10_001),
}


def _bomb_tar() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, text in FILES.items():
            data = text.encode()
            info = tarfile.TarInfo("exp_data/" + name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        info = tarfile.TarInfo("exp_data/bomb.bin")
        info.size = 4 * 2**20
        tf.addfile(info, io.BytesIO(b"\0" * info.size))
    return buf.getvalue()


ROUTES["/bomb.tar.gz"] = _bomb_tar()


@pytest.fixture(scope="module")
def base():
    _Handler.routes = ROUTES
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _fetch(base, path, home, **kw):
    with pytest.warns(UserWarning, match="No checksum"):
        return fetch_deepmatcher("mine", home, url=base + path, **kw)


@pytest.mark.parametrize("path", ["/ok.zip", "/ok.tar.gz"])
def test_good_archives_still_load(base, tmp_path, path):
    ds = _fetch(base, path, tmp_path / "home")
    assert ds.split_sizes == {"train": 2, "valid": 1, "test": 1}
    assert sorted(p.name for p in (tmp_path / "home").iterdir()) == ["mine"]


def test_sha256_is_verified_when_known(base, tmp_path):
    digest = hashlib.sha256(ROUTES["/ok.zip"]).hexdigest()
    ds = fetch_deepmatcher("mine", tmp_path / "a", url=base + "/ok.zip", sha256=digest.upper())
    assert ds.split_sizes["train"] == 2
    with pytest.raises(DataError, match=f"{base}/ok.zip has SHA-256 {digest}, expected"):
        fetch_deepmatcher("mine", tmp_path / "b", url=base + "/ok.zip", sha256="f" * 64)


@pytest.mark.parametrize(
    "path, kw, match",
    [
        # zip bomb: 4 MiB of zeros in a few KB, limit 1 MiB (before: 1 GiB written from 1.2 MB)
        ("/bomb.zip", {"max_bytes": 2**20}, r"declares \d+ unpacked bytes, more than max_bytes=1048576"),
        ("/bomb.tar.gz", {"max_bytes": 2**20}, "unpacks to more than max_bytes=1048576"),
        ("/huge.zip", {}, "announces 1000000000000 bytes, more than max_bytes"),
        ("/endless.zip", {"max_bytes": 2**20}, "the download exceeds max_bytes=1048576"),
        ("/html.zip", {}, "neither a zip nor a tar archive .it looks like an HTML page"),
        ("/empty.zip", {}, "neither a zip nor a tar archive"),
        ("/corrupt.tar.gz", {}, "corrupt or truncated"),
        ("/corrupt.zip", {}, "corrupt or truncated"),
        ("/link.zip", {}, "'exp_data/link' is a symbolic link or special file"),
        ("/link.tar.gz", {}, "'exp_data/link' is a link or special file"),
        ("/hardlink.tar.gz", {}, "'exp_data/hard' is a link or special file"),
        ("/fifo.tar.gz", {}, "'exp_data/fifo' is a link or special file"),
        ("/dotdot.zip", {}, r"'\.\./x' contains '\.\.'"),
        ("/dotdot.tar.gz", {}, r"contains '\.\.'"),
        ("/absolute.zip", {}, "is an absolute path"),
        ("/absolute.tar.gz", {}, "is an absolute path"),
        ("/duplicate.zip", {}, "'exp_data/tableA.csv' appears twice"),
        ("/many.zip", {}, "10001 members, more than max_members=10000"),
        ("/ok.zip", {"max_members": 3}, "more than max_members=3"),
    ],
)
def test_hostile_archives_are_refused_and_leave_nothing(base, tmp_path, path, kw, match):
    home = tmp_path / "home"
    with pytest.raises(DataError, match=match) as info:
        _fetch(base, path, home, **kw) if path not in ("/huge.zip", "/endless.zip") else \
            fetch_deepmatcher("mine", home, url=base + path, **kw)
    assert base + path in str(info.value)  # every error names the URL
    assert list(home.iterdir()) == []  # nothing kept, no temporary folder
    assert not (tmp_path / "x").exists()


def test_truncated_download_is_detected(base, tmp_path):
    """Before: a body shorter than its Content-Length was accepted (then failed as a bad zip)."""
    home = tmp_path / "home"
    with pytest.raises(OSError, match=rf"Could not download {base}/truncated.zip: .*of the \d+ bytes.*truncated"):
        fetch_deepmatcher("mine", home, url=base + "/truncated.zip")
    assert list(home.iterdir()) == []


def test_timeout_bounds_the_whole_download(base, tmp_path):
    """Before: the timeout was per read, so a server sending a byte every 0.1 s never timed out."""
    start = time.monotonic()
    with pytest.raises(OSError, match=rf"Could not download {base}/slow.zip: .*longer than timeout=1 s in all"):
        fetch_deepmatcher("mine", tmp_path / "home", url=base + "/slow.zip", timeout=1.0)
    assert time.monotonic() - start < 5


def test_redirect_loop_and_bad_parameters(base, tmp_path):
    with pytest.raises(OSError, match=rf"Could not download {base}/loop: .*redirect"):
        fetch_deepmatcher("mine", tmp_path, url=base + "/loop")
    for kw in ({"timeout": 0}, {"timeout": float("inf")}, {"max_bytes": 0}, {"max_members": 1.5}):
        with pytest.raises(ValueError, match="must be a positive"):
            fetch_deepmatcher("mine", tmp_path, url=base + "/ok.zip", **kw)
