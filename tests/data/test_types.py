"""Column types: inference, standardisation, typed comparisons and the typed blocking (issue #46)."""

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from skrisk.data import SimilarityFeatures, block
from skrisk.data._types import check_column_type, infer_column_type, standardise  # internal on purpose: the types' own functions
from skrisk.data._typed_blocking import person_rules, table_types  # internal on purpose: the types' own functions
from skrisk.datasets import make_person_table
from skrisk.exceptions import DataError


def _arr(*values):
    return np.array(values, dtype=object)


# ---------------------------------------------------------------------------- inference
def test_person_table_types_are_inferred():
    table, _ = make_person_table(3000, messy=True, random_state=0)
    types = table_types(table, None)
    assert {c: t["type"] for c, t in types.items()} == {
        "given_name": "given_name", "surname": "family_name", "date_of_birth": "date", "address": "address",
        "city": "categorical", "postcode": "postcode", "phone": "phone"}
    assert types["date_of_birth"]["order"] == "dmy"  # 31/01/1990 settles it
    assert types["postcode"]["length"] == 5


def test_renamed_columns_are_inferred_from_their_names_and_values():
    table, _ = make_person_table(500, messy=True, random_state=0)
    table = table.rename(columns={"given_name": "First Name", "surname": "last_name", "date_of_birth": "dob",
                                  "postcode": "zip", "phone": "c7"})
    kinds = {c: t["type"] for c, t in table_types(table, None).items()}
    assert kinds["First Name"] == "given_name" and kinds["last_name"] == "family_name"
    assert kinds["dob"] == "date" and kinds["zip"] == "postcode" and kinds["c7"] == "phone"


def test_month_first_dates_are_settled_by_evidence_and_unsettled_kept_as_such():
    assert infer_column_type("dob", _arr("12/31/1990", "01/02/1991"))["order"] == "mdy"
    assert infer_column_type("dob", _arr("01/02/1991", "03/04/1992"))["order"] == "unknown"


def test_half_dates_half_text_is_text():
    values = _arr(*[f"{d:02d}/01/1990" for d in range(1, 11)], *[f"see note {i}" for i in range(10)])
    assert infer_column_type("dob", values)["type"] == "text"


def test_phone_column_of_free_text_is_text():
    values = _arr("call after six", "ask for the office", "none given", "mobile: see card")
    assert infer_column_type("phone", values)["type"] == "text"


def test_product_columns_stay_text_or_number():
    assert infer_column_type("name", _arr("sony dsc-w120 camera", "arnie morton's of chicago"))["type"] == "text"
    assert infer_column_type("price", _arr("19.99", "$5", "1,299.00"))["type"] == "number"
    assert infer_column_type("title", _arr("deep learning", "entity resolution"))["type"] == "text"


# ---------------------------------------------------------------------------- standardisation
def test_impossible_and_null_dates():
    t = check_column_type({"type": "date", "order": "dmy"}, "dob", "test")
    out = standardise(_arr("31/02/2001", "0000-00-00", "1987-03-12", "12.03.1987", "not a date"), t)
    # a day the calendar lacks keeps its fields (a typo of a real date); the null token is missing;
    # what does not read as a date keeps its text
    assert out.tolist() == ["2001-02-31", "", "1987-03-12", "1987-03-12", "not a date"]


def test_missing_tokens_only_in_typed_columns():
    city = check_column_type("categorical", "city", "test")
    assert standardise(_arr("na", "paris"), city).tolist() == ["", "paris"]
    text = check_column_type("text", "title", "test")
    assert standardise(_arr("na", "paris"), text).tolist() == ["na", "paris"]


def test_phone_and_postcode_standardisation():
    phone = check_column_type("phone", "phone", "test")
    assert standardise(_arr("+1 (212) 555-0143", "212.555.0143", "0044 20 7946 0958"), phone).tolist() == [
        "2125550143", "2125550143", "2079460958"]
    post = check_column_type({"type": "postcode", "length": 5}, "zip", "test")
    assert standardise(_arr("1234", "01234", "sw1a 1aa"), post).tolist() == ["01234", "01234", "sw1a1aa"]


def test_names_lose_accents_case_and_punctuation():
    name = check_column_type("family_name", "surname", "test")
    assert standardise(_arr("müller", "o'brien", "anne-marie"), name).tolist() == ["muller", "obrien", "anne marie"]


@pytest.mark.parametrize("entry, fix", [
    ({"type": "dates"}, "unknown type 'dates'"),
    ({"type": "date", "order": "ydm"}, "date order"),
    ({"type": "date", "colour": 1}, "unknown option"),
    ({"type": "postcode", "length": 99}, "postcode length"),
    ({"type": "city", "missing": "na"}, "unknown type"),
    ({"type": "text", "missing": "na"}, "missing-value tokens"),
    ("", "unknown type"),
    (3, "not a type name"),
])
def test_bad_type_entries_are_refused(entry, fix):
    with pytest.raises(DataError, match=fix):
        check_column_type(entry, "dob", "model.skrisk")


def test_types_override_names_unknown_column():
    X = pd.DataFrame({"left_dob": ["1990-01-02"], "right_dob": ["02/01/1990"]})
    with pytest.raises(DataError, match="'birthday', which is not an attribute"):
        SimilarityFeatures(types={"birthday": "date"}).fit(X)
    with pytest.raises(DataError, match="unknown type 'calendar'"):
        SimilarityFeatures(types={"dob": "calendar"}).fit(X)


# ---------------------------------------------------------------------------- typed comparisons
def _frame(pairs):
    return pd.DataFrame({f"{side}_{a}": [p[i][a] for p in pairs] for i, side in enumerate(("left", "right"))
                         for a in pairs[0][0]})


def test_typed_comparisons():
    a = {"given_name": "Anna", "surname": "Smith", "dob": "03/04/1990", "phone": "(212) 555-0143"}
    pairs = [
        (a, {"given_name": "anna", "surname": "smith", "dob": "1990-04-03", "phone": "212.555.0143"}),
        (a, {"given_name": "smith", "surname": "anna", "dob": "04/03/1990", "phone": "212.555.9999"}),
        (a, {"given_name": "bob", "surname": "jones", "dob": "1975-04-03", "phone": None}),
    ]
    sf = SimilarityFeatures(types={"dob": {"type": "date", "order": "dmy"}}).fit(_frame(pairs))
    assert sf.column_types_["given_name"]["type"] == "given_name"
    F = pd.DataFrame(sf.transform(_frame(pairs)), columns=sf.get_feature_names_out())
    assert F["dob_exact"].tolist() == [1, 0, 0]
    assert F["dob_day_month_swap"].tolist() == [0, 1, 0]
    assert F["dob_date_fields"].tolist() == pytest.approx([1, 1 / 3, 2 / 3])
    assert F["dob_years_apart"].tolist() == pytest.approx([0, 0, 1.0])
    assert F["phone_exact"].tolist() == [1, 0, -1]
    assert F["phone_last_digits"].tolist() == [1, 0, -1]
    assert F["surname_name_swap"].round(3).tolist()[1] == 1.0
    assert F["surname_name_swap"].tolist()[0] < 0.6
    assert F["given_name_phonetic"].tolist() == [1, 0, 0]


def test_rare_agreement_weighs_more():
    table = pd.DataFrame({"surname": ["smith"] * 8 + ["zabrowski", "zabrowski"]}, index=[f"r{i}" for i in range(10)])
    X = pd.DataFrame({"left_surname": ["smith"], "right_surname": ["smith"]})
    sf = SimilarityFeatures(types={"surname": "family_name"}).fit(X)
    enc = sf.encode(table)
    F = pd.DataFrame(sf.transform_encoded(enc, enc, [0, 8], [1, 9]), columns=sf.get_feature_names_out())
    common, rare = F["surname_exact_tf"]
    assert rare > common > 0


def test_encoded_path_equals_frame_path_but_frequencies():
    table, links = make_person_table(2000, messy=True, random_state=3)
    pos = pd.Series(np.arange(len(table)), index=table.index)
    lp, rp = pos[links.left_id].to_numpy(), pos[links.right_id].to_numpy()
    X = pd.concat([table.iloc[lp].reset_index(drop=True).add_prefix("left_"),
                   table.iloc[rp].reset_index(drop=True).add_prefix("right_")], axis=1)
    sf = SimilarityFeatures(types="auto").fit(X)
    names = sf.get_feature_names_out()
    a = sf.transform(X)
    enc = sf.encode(table)
    b = sf.transform_encoded(enc, enc, lp, rp, n_jobs=2)
    same = [i for i, n in enumerate(names) if not n.endswith("_exact_tf")]
    np.testing.assert_allclose(a[:, same], b[:, same], atol=1e-6)


def test_types_none_is_the_generic_features():
    X = pd.DataFrame({"left_surname": ["smith", "jones"], "right_surname": ["smyth", "jones"]})
    assert SimilarityFeatures().fit(X).get_feature_names_out().tolist() == [
        f"surname_{m}" for m in ("jaccard", "jaccard_3gram", "levenshtein", "jaro_winkler", "tfidf_cosine",
                                 "monge_elkan", "num_diff", "missing_diff")]


def test_fitted_before_types_still_transforms():
    X = pd.DataFrame({"left_name": ["ann lee", "bob"], "right_name": ["anne lee", "rob"]})
    sf = SimilarityFeatures().fit(X)
    expected = sf.transform(X)
    for attr in ("column_types_", "attribute_metrics_", "_swap"):  # a transformer saved by skrisk 0.2.0.dev0
        delattr(sf, attr)
    np.testing.assert_array_equal(sf.transform(X), expected)


# ---------------------------------------------------------------------------- typed blocking
def _brute(table, rules):
    """Every pair a pass of ``rules`` joins, by brute force over all pairs."""
    from skrisk.data import _typed_blocking as tb  # internal on purpose: the types' own functions

    types = rules[0][2]["types"]
    cache = {}
    keys = {p: [tb._key(table, k, types, cache) for k in p] for p in tb.typed_passes(types, list(table.columns))}
    out = set()
    for p, ks in keys.items():
        codes = tb._pass_codes([tb._shared_codes(k, k[:0]) for k in ks])
        sizes = pd.Series(codes[codes >= 0]).value_counts()
        for i, j in itertools.combinations(range(len(table)), 2):
            if codes[i] >= 0 and codes[i] == codes[j] and sizes[codes[i]] <= 20:
                out.add(tuple(sorted((table.index[i], table.index[j]))))
    return out


def test_typed_blocking_equals_brute_force():
    table, _ = make_person_table(300, messy=True, random_state=5)
    rules = person_rules(table_types(table, None))
    got = block(table, None, rules).pairs
    assert set(zip(got.left_id, got.right_id)) == _brute(table, rules)


def test_typed_blocking_keeps_the_true_pairs():
    table, links = make_person_table(20_000, messy=True, random_state=0)
    res = block(table, None, person_rules(table_types(table, None)), true_links=links)
    assert res.pair_completeness >= 0.995
    assert len(res.pairs) < 3 * len(links)


def test_typed_blocking_links_two_tables():
    table, links = make_person_table(4000, messy=True, random_state=2)
    left = table.iloc[::2]
    right = table.iloc[1::2]
    truth = links[links.left_id.isin(left.index) & links.right_id.isin(right.index)]
    truth = pd.concat([truth, links[links.right_id.isin(left.index) & links.left_id.isin(right.index)]
                       .rename(columns={"left_id": "right_id", "right_id": "left_id"})])
    res = block(left, right, person_rules(table_types(left, right)), true_links=truth[["left_id", "right_id"]])
    assert res.pair_completeness >= 0.99


def test_an_identifier_number_is_a_pass_of_its_own_and_a_house_number_is_not():
    # FEBRL's shape: records of one person that agree on nothing but their social security number
    n = 40
    table = pd.DataFrame({
        "given_name": [f"{'bcdfghjklm'[i % 10]}{'aeiou'[i // 10]}na" for i in range(n)],
        "surname": [f"{'prstvwxyzq'[i % 10]}{'aeiou'[i // 10]}lden" for i in range(n)],
        "date_of_birth": [f"19{50 + i % 40:02d}-0{1 + i % 9}-1{i % 10}" for i in range(n)],
        "soc_sec_id": [str(5_000_000 + i // 2) for i in range(n)],  # two records per id: half distinct
        "street_number": [str(1 + i % 3) for i in range(n)],  # three house numbers for 40 records
    }, index=[f"r{i:03d}" for i in range(n)])
    types = table_types(table, None)
    assert types["soc_sec_id"]["type"] == types["street_number"]["type"] == "number"
    assert types["given_name"]["type"] == "given_name" and person_rules(types) is not None
    got = set(zip(*block(table, None, person_rules(types)).pairs[["left_id", "right_id"]].to_numpy().T))
    assert got == {(f"r{i:03d}", f"r{i + 1:03d}") for i in range(0, n, 2)}
    assert got == _brute(table, person_rules(types))


def test_typed_rule_round_trips_as_json_and_refuses_tampering():
    from skrisk.data._rules_json import blocking_rules_from_json, blocking_rules_to_json  # internal on purpose: the types' own functions

    table, _ = make_person_table(200, messy=True, random_state=0)
    data = blocking_rules_to_json(person_rules(table_types(table, None)))
    assert blocking_rules_from_json(json.loads(json.dumps(data)))[0][0] == "typed"
    data[0]["params"]["types"]["phone"] = {"type": "telephone"}
    with pytest.raises(ValueError, match="unknown type 'telephone'"):
        blocking_rules_from_json(data)


def test_product_tables_keep_the_tokens_default():
    table = pd.DataFrame({"title": ["sony camera", "canon camera"], "price": ["10", "12"]}, index=["a", "b"])
    assert person_rules(table_types(table, None)) is None


# ---------------------------------------------------------------------------- the model file
def test_model_with_types_round_trips_and_refuses_a_tampered_entry(tmp_path):
    from skrisk.matchers import FeatureMatcher
    from skrisk.matching import MatchModel, load_model

    table, links = make_person_table(600, messy=True, random_state=4)
    pos = pd.Series(np.arange(len(table)), index=table.index)
    rng = np.random.RandomState(0)
    lp = np.r_[pos[links.left_id].to_numpy(), rng.randint(0, 600, 300)]
    rp = np.r_[pos[links.right_id].to_numpy(), rng.randint(0, 600, 300)]
    y = np.r_[np.ones(len(links)), np.zeros(300)]
    X = pd.concat([table.iloc[lp].reset_index(drop=True).add_prefix("left_"),
                   table.iloc[rp].reset_index(drop=True).add_prefix("right_")], axis=1)
    sf = SimilarityFeatures(types="auto").fit(X)
    m = FeatureMatcher(random_state=0).fit(sf.transform(X), y)
    model = MatchModel(list(table.columns), sf, m, task="dedup")
    path = model.save(tmp_path / "model.skrisk")
    back = load_model(path)
    assert back.features.column_types_ == sf.column_types_
    np.testing.assert_array_equal(back.features.transform(X), sf.transform(X))
    back.features.column_types_["date_of_birth"] = {"type": "date", "order": "sideways", "missing": []}
    with pytest.raises(DataError, match="date order"):
        back.check("model.skrisk")
    back.features.column_types_["date_of_birth"] = {"type": "phone", "missing": []}
    with pytest.raises(DataError, match="typed 'phone', but its features"):
        back.check("model.skrisk")


def test_reasons_say_typed_comparisons_in_words():
    from skrisk.risk._explain import describe_feature  # internal on purpose: the types' own functions

    assert describe_feature("date_of_birth_day_month_swap", 1.0, "03/04/1990", "1990-04-03").startswith(
        "date of birth: day and month swapped")
    assert describe_feature("surname_name_swap", 0.97) == "given and family names look swapped (97% alike crossed)"
    assert "rare value" in describe_feature("surname_exact_tf", 2.0)


def test_shared_standardisation_computes_each_value_once_with_the_same_results(monkeypatch):
    """Inside shared_standardisation (match() around blocking and encoding), a value already
    standardised for the same column type is not standardised again, and every result equals the
    one computed alone, repeated and new values mixed."""
    from skrisk.data import _types

    date = {"type": "date", "order": "dmy", "missing": ["na"]}
    phone = {"type": "phone", "missing": []}
    first = np.array(["12/03/1987", "na", "1987-03-12", "31/02/2001", "0000-00-00", "12/03/1987"], dtype=object)
    second = np.array(["1987-03-12", "01/01/2000", "na", "hello", "01/01/2000"], dtype=object)
    alone = [_types.standardise(v, date).tolist() for v in (first, second)]
    computed = []
    real = _types._standardise
    monkeypatch.setattr(_types, "_standardise", lambda v, t: computed.extend(v) or real(v, t))
    with _types.shared_standardisation():
        shared = [_types.standardise(v, date).tolist() for v in (first, second)]
        assert _types.standardise(second, phone).tolist() == real(second, phone).tolist()  # another type
    assert shared == alone
    assert sorted(computed[:len(first)]) == sorted(first.tolist())
    assert computed[len(first):] == ["01/01/2000", "hello", "01/01/2000"] + second.tolist()
    computed.clear()
    _types.standardise(first, date)  # outside the block: nothing kept
    assert computed == first.tolist()
