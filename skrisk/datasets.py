"""Dataset loaders (re-exported from :mod:`skrisk.data`) and a small synthetic pair generator."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.utils import check_random_state

from .data import (
    PairDataset,
    febrl_entity,
    fetch_deepmatcher,
    get_data_home,
    load_csv_tables,
    load_deepmatcher,
    load_febrl,
    stack_tables,
)

__all__ = ["febrl_entity", "fetch_deepmatcher", "get_data_home", "load_csv_tables", "load_deepmatcher",
           "load_febrl", "make_pairs", "stack_tables"]

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
    if not isinstance(n_pairs, (int, np.integer)) or isinstance(n_pairs, bool) or n_pairs < 20:
        raise ValueError(f"n_pairs must be an integer of at least 20, got {n_pairs!r}.")
    if not 0.0 < float(match_rate) < 1.0:
        raise ValueError(f"match_rate must be in (0, 1), got {match_rate!r}.")
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
