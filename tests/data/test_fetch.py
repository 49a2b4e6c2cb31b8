"""Tests of fetch_deepmatcher against a local HTTP server on 127.0.0.1 (no network)."""

from __future__ import annotations

import hashlib
import http.server
import threading
import zipfile
from functools import partial
from pathlib import Path

import pytest

# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.data._fetch import DEEPMATCHER_ARCHIVES, ChecksumError
from skrisk.datasets import fetch_deepmatcher
from skrisk.exceptions import DataError

FILES = {
    "tableA.csv": "id,name\n0,acme\n1,globex\n",
    "tableB.csv": "id,name\n0,acme corp\n1,umbrella\n",
    "train.csv": "ltable_id,rtable_id,label\n0,0,1\n1,1,0\n",
    "valid.csv": "ltable_id,rtable_id,label\n0,1,0\n",
    "test.csv": "ltable_id,rtable_id,label\n1,0,0\n",
}


class _Handler(http.server.SimpleHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):  # noqa: N802
        type(self).hits.append(self.path)
        super().do_GET()

    def log_message(self, *args):  # keep test output quiet
        pass


@pytest.fixture()
def server(tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    with zipfile.ZipFile(root / "beer_exp_data.zip", "w") as zf:
        for name, text in FILES.items():
            zf.writestr(f"exp_data/{name}", text)
        zf.writestr("__MACOSX/exp_data/._tableA.csv", "junk")
    with zipfile.ZipFile(root / "broken.zip", "w") as zf:
        zf.writestr("exp_data/tableA.csv", FILES["tableA.csv"])
    (root / "notazip.zip").write_text("hello")
    _Handler.hits = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_Handler, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", root
    httpd.shutdown()
    httpd.server_close()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_download_verify_extract_and_cache(server, tmp_path):
    base, root = server
    home = tmp_path / "home"
    url = f"{base}/beer_exp_data.zip"
    ds = fetch_deepmatcher("beer", home, url=url, sha256=_sha(root / "beer_exp_data.zip"))
    assert ds.split_sizes == {"train": 2, "valid": 1, "test": 1}
    assert sorted(p.name for p in (home / "beer").iterdir()) == sorted(FILES)
    assert sorted(p.name for p in home.iterdir()) == ["beer"]  # no temporary leftovers
    assert len(_Handler.hits) == 1
    again = fetch_deepmatcher("Structured/Beer", home, url=url)  # cached: no second request
    assert len(_Handler.hits) == 1 and again.pairs.equals(ds.pairs)


def test_bad_checksum_leaves_nothing(server, tmp_path):
    base, _ = server
    home = tmp_path / "home"
    with pytest.raises(ChecksumError, match="expected 0000"):
        fetch_deepmatcher("beer", home, url=f"{base}/beer_exp_data.zip", sha256="0" * 64)
    assert list(home.iterdir()) == []
    assert issubclass(ChecksumError, ValueError)


def test_unknown_checksum_warns_with_digest(server, tmp_path):
    base, root = server
    assert DEEPMATCHER_ARCHIVES["beer"][1] is None  # see the table's comment: none known offline
    with pytest.warns(UserWarning, match=_sha(root / "beer_exp_data.zip")):
        fetch_deepmatcher("beer", tmp_path / "home", url=f"{base}/beer_exp_data.zip")


def test_bad_archives_leave_nothing(server, tmp_path):
    base, _ = server
    home = tmp_path / "home"
    with pytest.warns(UserWarning), pytest.raises(DataError, match="not a DeepMatcher"):
        fetch_deepmatcher("mine", home, url=f"{base}/broken.zip")
    with pytest.warns(UserWarning), pytest.raises(DataError, match="neither a zip nor a tar"):
        fetch_deepmatcher("mine", home, url=f"{base}/notazip.zip")
    with pytest.raises(OSError, match="Could not download"):
        fetch_deepmatcher("mine", home, url=f"{base}/missing.zip")
    assert list(home.iterdir()) == []


def test_bad_arguments_and_partial_folder(tmp_path):
    with pytest.raises(ValueError, match="Unknown DeepMatcher dataset"):
        fetch_deepmatcher("no_such_data", tmp_path)
    with pytest.raises(ValueError, match="64 hexadecimal"):
        fetch_deepmatcher("beer", tmp_path, url="http://127.0.0.1:9/x.zip", sha256="abc")
    (tmp_path / "beer").mkdir()
    (tmp_path / "beer" / "tableA.csv").write_text("id\n")
    with pytest.raises(DataError, match="lacks some of"):
        fetch_deepmatcher("beer", tmp_path, url="http://127.0.0.1:9/x.zip")


def test_zip_slip_refused(tmp_path):
    # internal on purpose: the zip-slip guard itself
    from skrisk.data._fetch import _safe_extract

    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("../outside.txt", "x")
    with pytest.raises(DataError, match="outside"):
        _safe_extract(evil, tmp_path / "out")
    assert not (tmp_path / "outside.txt").exists()
