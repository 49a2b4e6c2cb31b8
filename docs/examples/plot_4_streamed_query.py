"""
A streamed query over a large pool
==================================

When blocking leaves more candidate pairs than fit in memory with their features, a
:class:`~skrisk.pools.ChunkScorer` scores them chunk by chunk and
:func:`~skrisk.pools.stream_query` keeps only the riskiest pairs of each chunk before choosing
the batch by risk sampling's rule. Memory grows with the chunk size and the batch, not with the
pool, and the batch does not depend on the chunk size.
"""

# %%
# Two synthetic tables and 3,000 candidate pairs; the first 200 pairs are labelled. The models
# (similarity features, matcher, LearnRisk) are fitted on those, as a labelling session would.
import time

import matplotlib.pyplot as plt

from skrisk import LearnRisk
from skrisk.data import SimilarityFeatures
from skrisk.datasets import make_pairs
from skrisk.matchers import FeatureMatcher
from skrisk.pools import ChunkScorer, PairSource, stream_query

ds = make_pairs(3_000, random_state=0)
labelled = ds.pairs.iloc[:200]
sf = SimilarityFeatures().fit(ds.to_frame())
F, y = sf.transform(ds.to_frame().iloc[:200]), labelled["label"].to_numpy()
matcher = FeatureMatcher(random_state=0).fit(F, y)
risk = LearnRisk(matcher, cv=3, random_state=0).fit(F, y)
scorer = ChunkScorer(ds.left, ds.right, features=sf, matcher=matcher, risk_model=risk)

# %%
# A :class:`~skrisk.pools.PairSource` reads candidate pairs from a DataFrame, a Parquet file or
# folder, or a generator of DataFrame chunks; here the DataFrame of all pairs (the labelled ones
# are left out of the query).
for chunk_size in (500, 1_500):
    start = time.perf_counter()
    query = stream_query(scorer, PairSource(ds.pairs), labelled=labelled, n_instances=20,
                         chunk_size=chunk_size, random_state=0, progress=False)
    print(f"chunks of {chunk_size}: {len(query.pairs)} pairs chosen in {time.perf_counter() - start:.1f} s")
print(query.pairs.head(10))

# %%
# The same 20 pairs whatever the chunk size: the riskiest pairs of each chunk are merged before
# the selection, and ties go to the earlier pair.
a = stream_query(scorer, PairSource(ds.pairs), labelled=labelled, n_instances=20, chunk_size=500,
                 random_state=0, progress=False).pairs
keys = ["left_id", "right_id"]
print("same batch for chunks of 500 and 1500:", a[keys].equals(query.pairs[keys]))

# %%
# The chosen pairs: risk sampling takes risky pairs, and spreads the batch over them (the
# weighted k-medoids of the riskiest pairs), so not only those nearest the threshold.
fig, ax = plt.subplots(figsize=(6, 3))
ax.scatter(query.proba, query.risk)
ax.axvline(0.5, ls="--", color="grey")
ax.set_xlabel("match probability")
ax.set_ylabel("risk (LearnRisk)")
ax.set_title(f"the {len(query.pairs)} pairs chosen among {query.n_pairs}")
fig.tight_layout()
