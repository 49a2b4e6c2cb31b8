"""Tests of the lead's load_deepmatcher / PairDataset: real data figures and every bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk.data._loaders import DEEPMATCHER_LEAKS, read_pairs
from skrisk.data import PairDataset, read_table
from skrisk.datasets import load_deepmatcher
from skrisk.exceptions import DataError

# ../shared/data/README.md: train / valid / test pairs and positive rate
README = {
    "beer": ((268, 91, 91), 0.151, ["Beer_Name", "Brew_Factory_Name", "Style", "ABV"]),
    # "class" is dropped: an entity id equal in every match and no non-match (a label leak)
    "fodors_zagats": ((567, 190, 189), 0.116, ["name", "addr", "city", "phone", "type"]),
    "abt_buy": ((5743, 1916, 1916), 0.107, ["name", "description", "price"]),
    "dblp_scholar": ((17223, 5742, 5742), 0.186, ["title", "authors", "venue", "year"]),
}


@pytest.mark.parametrize("name", sorted(README))
def test_four_datasets_match_readme(name, data_home):
    sizes, rate, attrs = README[name]
    ds = load_deepmatcher(name, data_home)
    assert tuple(ds.split_sizes.values()) == sizes
    assert list(ds.split_sizes) == ["train", "valid", "test"]
    assert ds.positive_rate == pytest.approx(rate, abs=0.0006)
    assert ds.attributes == attrs and ds.has_labels


@pytest.mark.parametrize("name", sorted(README))
def test_no_attribute_gives_the_label_away(name, data_home):
    """No attribute of a loaded dataset is equal in every match and in no non-match."""
    ds = load_deepmatcher(name, data_home)
    left, right = ds.texts("left"), ds.texts("right")
    for attr in ds.attributes:
        equal = (left[attr].to_numpy() == right[attr].to_numpy()) & (left[attr].to_numpy() != "")
        assert not np.array_equal(equal, ds.labels.astype(bool)), f"{name}.{attr} equals the label"


def test_leaked_attribute_kept_on_request(data_home):
    ds = load_deepmatcher("fodors_zagats", data_home, drop_leaked=False)
    assert ds.attributes[-1] == "class"
    # a folder given by path under the dataset's own name is the same dataset
    assert "class" not in load_deepmatcher(data_home / "fodors_zagats").attributes
    assert DEEPMATCHER_LEAKS == {"fodors_zagats": ("class",)}


def test_aliases_and_paths(data_home):
    a = load_deepmatcher("Structured/Beer", data_home)
    b = load_deepmatcher(data_home / "beer")
    assert a.pairs.equals(b.pairs) and a.name == b.name == "beer"


def test_pair_dataset_views(beer):
    frame = beer.to_frame()
    assert list(frame.columns) == [f"left_{a}" for a in beer.attributes] + [f"right_{a}" for a in beer.attributes]
    assert len(frame) == len(beer)
    sub = beer.subset([5, 2])
    assert sub.pairs["left_id"].tolist() == beer.pairs["left_id"].iloc[[5, 2]].tolist()
    np.testing.assert_array_equal(beer.split("test").y, beer.labels[beer.split_positions("test")])
    assert frame.equals(frame.apply(lambda c: c.str.strip().str.lower()))


def test_texts_normalise_floats():
    left = pd.DataFrame({"year": [1996.0, np.nan, " ABC "]}, index=["1", "2", "3"])
    ds = PairDataset.from_frames(left, left, [("1", "1", 1), ("2", "3", 0)])
    assert ds.texts("left")["year"].tolist() == ["1996", ""]
    assert ds.texts("right")["year"].tolist() == ["1996", "abc"]


# ------------------------------------------------------------------------ a DeepMatcher folder
GOOD = {
    "tableA.csv": "id,name\n0,acme\n1,globex\n",
    "tableB.csv": "id,name\n0,acme corp\n1,umbrella\n",
    "train.csv": "ltable_id,rtable_id,label\n0,0,1\n1,1,0\n",
    "valid.csv": "ltable_id,rtable_id,label\n0,1,0\n",
    "test.csv": "ltable_id,rtable_id,label\n1,0,0\n",
}


def _folder(tmp_path: Path, **changes: str | bytes | None) -> Path:
    folder = tmp_path / "mine"
    folder.mkdir(exist_ok=True)
    for name, text in {**GOOD, **changes}.items():
        if text is None:
            continue
        (folder / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    return folder


def test_good_folder(tmp_path):
    ds = load_deepmatcher(_folder(tmp_path))
    assert ds.split_sizes == {"train": 2, "valid": 1, "test": 1} and ds.name == "mine"


def test_unknown_name(tmp_path):
    with pytest.raises(FileNotFoundError, match="fetch_deepmatcher"):
        load_deepmatcher("nothing_here", tmp_path)


@pytest.mark.parametrize(
    "changes, exc, match",
    [
        ({"valid.csv": None}, FileNotFoundError, "valid.csv does not exist"),
        ({"tableA.csv": "key,name\n0,a\n"}, DataError, "no 'id' column"),
        ({"tableA.csv": "id,name\n0,a\n0,b\n"}, DataError, "'0' appears more than once"),
        ({"tableA.csv": "id,name\n"}, DataError, "no records"),
        ({"tableB.csv": ""}, DataError, "is empty"),
        ({"tableB.csv": "id,title\n0,a\n1,b\n"}, DataError, r"only in A \['name'\]"),
        ({"train.csv": "ltable_id,rtable_id,label\n0,7,1\n"}, DataError, r"'7' at row 0 .*tableB"),
        ({"train.csv": "ltable_id,rtable_id,label\n0,0,2\n"}, DataError, "label '2' at row 0"),
        ({"train.csv": "ltable_id,rtable_id,label\n0,0,\n"}, DataError, "needs a 0/1 'label'"),
        ({"test.csv": "left,right,label\n0,0,1\n"}, DataError, r"lacks the column\(s\)"),
        ({"tableA.csv": "id,name\n0,caf\xe9\n1,b\n".encode("latin-1")}, DataError, "encoding='latin-1'"),
    ],
)
def test_bad_folders(tmp_path, changes, exc, match):
    with pytest.raises(exc, match=match):
        load_deepmatcher(_folder(tmp_path, **changes))


def test_encoding_parameter(tmp_path):
    folder = _folder(tmp_path, **{"tableA.csv": "id,name\n0,caf\xe9\n1,b\n".encode("latin-1")})
    ds = load_deepmatcher(folder, encoding="latin-1")
    assert ds.left.loc["0", "name"] == "café"


def test_read_helpers(tmp_path):
    folder = _folder(tmp_path)
    assert read_table(folder / "tableA.csv").index.tolist() == ["0", "1"]
    assert read_pairs(folder / "train.csv")["label"].tolist() == [1, 0]


def test_pair_dataset_bad_input():
    left = pd.DataFrame({"name": ["a"]}, index=["1"])
    with pytest.raises(DataError, match="empty"):
        PairDataset.from_frames(left.iloc[:0], left, [])
    with pytest.raises(DataError, match="duplicate record ids"):
        PairDataset.from_frames(pd.concat([left, left]), left, [("1", "1")])
    with pytest.raises(DataError, match="aligned attributes"):
        PairDataset.from_frames(left, left.rename(columns={"name": "title"}), [("1", "1")])
    with pytest.raises(DataError, match="not 0 or 1"):
        PairDataset.from_frames(left, left, [("1", "1", 3)])
    with pytest.raises(DataError, match="not an id of the right table"):
        PairDataset.from_frames(left, left, [("1", "9", 1)])
    with pytest.raises(TypeError, match="DataFrame"):
        PairDataset.from_frames(left.to_numpy(), left, [("1", "1")])
    ds = PairDataset.from_frames(left, left, [("1", "1", -1)])
    with pytest.raises(DataError, match="unlabelled"):
        ds.y
    with pytest.raises(KeyError, match="no split"):
        ds.split("train")


def test_docstring_examples():
    """The Examples sections of the data modules run."""
    import doctest

    # internal on purpose: the examples live in the private modules
    import skrisk.data._blocking as b
    import skrisk.data._csv as c
    import skrisk.data._febrl as f
    import skrisk.data._fetch as fe
    import skrisk.data._similarity as s

    for mod in (s, b, f, c, fe):
        result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0 and result.attempted > 0, mod.__name__


def test_make_pairs_is_seeded_split_and_labelled_in_every_split():
    from skrisk.datasets import make_pairs

    a, b, c = make_pairs(150, random_state=3), make_pairs(150, random_state=3), make_pairs(150, random_state=4)
    pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())
    assert not a.to_frame().equals(c.to_frame())
    assert a.split_sizes == {"train": 90, "valid": 30, "test": 30} and a.has_labels
    for split in a.split_names:
        assert set(a.split(split).y) == {0, 1}
    assert a.positive_rate == pytest.approx(0.25, abs=0.01)
    # a match is the same person with noise: on average far more similar than a non-match
    from skrisk.data import SimilarityFeatures

    X = SimilarityFeatures().fit_transform(a.to_frame())
    assert X[a.y == 1].mean() > X[a.y == 0].mean() + 0.2


@pytest.mark.parametrize("kwargs, message", [({"n_pairs": 5}, r"'n_pairs' .* range \[20, inf\)"),
                                             ({"n_pairs": 50.0}, "'n_pairs' parameter of make_pairs must be an int"),
                                             ({"match_rate": 1.0}, "match_rate")])
def test_make_pairs_bad_arguments(kwargs, message):
    from skrisk.datasets import make_pairs

    with pytest.raises(ValueError, match=message):
        make_pairs(**{"n_pairs": 50, **kwargs})


def test_read_table_shares_equal_cells(tmp_path):
    """Equal cells of a column are one str object (a million records repeat a few thousand
    cities); the values, the missing cells and a table of ids alone read as before."""
    path = tmp_path / "t.csv"
    path.write_text("id,city,name\n1,paris,ann\n2,paris,\n3,rome,ann\n", encoding="utf-8")
    t = read_table(path)
    assert t["city"].iloc[0] is t["city"].iloc[1]
    assert t["name"].iloc[0] is t["name"].iloc[2]
    assert t["city"].tolist() == ["paris", "paris", "rome"] and pd.isna(t.loc["2", "name"])
    assert t.dtypes.tolist() == [object, object]
    (tmp_path / "ids.csv").write_text("id\n1\n2\n", encoding="utf-8")
    assert read_table(tmp_path / "ids.csv").index.tolist() == ["1", "2"]
