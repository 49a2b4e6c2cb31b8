"""make_person_table: a FEBRL-style person table with duplicates and its truth (issue #26)."""

from __future__ import annotations

import pandas as pd
import pytest

from skrisk.datasets import make_person_table


def test_person_table_shape_truth_and_seed():
    table, links = make_person_table(3000, random_state=0)
    assert table.shape == (3000, 6) and table.index.is_unique and table.index.name == "id"
    again, links2 = make_person_table(3000, random_state=0)
    pd.testing.assert_frame_equal(table, again)
    pd.testing.assert_frame_equal(links, links2)
    assert not make_person_table(3000, random_state=1)[0].equals(table)
    # every link joins two records of the table, once, smaller id first; about 0.85 pairs per person
    assert links["left_id"].isin(table.index).all() and links["right_id"].isin(table.index).all()
    assert (links["left_id"] < links["right_id"]).all() and not links.duplicated().any()
    assert 0.3 * len(table) < len(links) < 0.8 * len(table)
    # the truth is transitive (records of one person): every link's records share their other links
    pairs = set(map(tuple, links.to_numpy()))
    for a, b in list(pairs)[:200]:
        for c in links.loc[links["left_id"] == b, "right_id"]:
            assert (min(a, c), max(a, c)) in pairs
    # duplicates look alike: most linked records agree on the surname or the postcode
    left, right = table.loc[links["left_id"]].to_numpy(), table.loc[links["right_id"]].to_numpy()
    agree = (left == right)
    assert agree[:, [1, 5]].any(axis=1).mean() > 0.8
    # missing values and the three date formats are there
    assert 0 < table.isna().to_numpy().mean() < 0.1
    dob = table["date_of_birth"].dropna()
    assert dob.str.contains("-").any() and dob.str.contains("/").any() and dob.str.fullmatch(r"\d{8}").any()


@pytest.mark.parametrize("n", [5, 10.5, True])
def test_person_table_refuses_bad_sizes(n):
    with pytest.raises(ValueError, match="n_records"):
        make_person_table(n)
