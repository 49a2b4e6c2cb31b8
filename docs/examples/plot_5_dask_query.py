"""
A Dask query on a local cluster
===============================

The streamed query of the previous example, with the scoring spread over Dask workers:
:func:`~skrisk.pools.dask_block` makes the candidate pairs of two tables partition by
partition, and :func:`~skrisk.pools.dask_query` sends the scorer to every worker once, scores
each partition where it lies and brings back only its riskiest pairs; the client chooses the
batch, the same batch as :func:`~skrisk.pools.stream_query` for the same seed. A
``LocalCluster`` in this process stands in for a real cluster (``pip install "skrisk[dask]"``);
on a cluster, ``Client("tcp://scheduler:8786")`` is the only line that changes.
"""

# %%
# The tables and fitted models (the streamed query's, with LearnRisk fitting the matcher).
import logging

import matplotlib.pyplot as plt

import dask.dataframe as dd
from distributed import Client, LocalCluster

from skrisk import LearnRisk
from skrisk.data import SimilarityFeatures
from skrisk.datasets import make_pairs
from skrisk.matchers import FeatureMatcher
from skrisk.pools import ChunkScorer, PairSource, dask_block, dask_query, stream_query

ds = make_pairs(2_000, random_state=0)
frame = ds.to_frame()
sf = SimilarityFeatures().fit(frame)
labelled = ds.pairs.iloc[:200]
# LearnRisk fits its matcher too: its ``estimator_`` is the matcher fitted on all labels
risk = LearnRisk(FeatureMatcher(random_state=0), cv=3, random_state=0)
risk.fit(sf.transform(frame.iloc[:200]), labelled["label"].to_numpy())
scorer = ChunkScorer(ds.left, ds.right, features=sf, matcher=risk.estimator_, risk_model=risk)

# %%
# A cluster of two single-threaded workers in this process, and the two tables as Dask
# DataFrames of four partitions each (on a cluster: ``dd.read_parquet("left/", index="id")``).
cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
                       silence_logs=logging.ERROR)
client = Client(cluster)
left = dd.from_pandas(ds.left, npartitions=4)
right = dd.from_pandas(ds.right, npartitions=4)
print(ds.left.head())

# %%
# Blocking on Dask: two records are candidates when they share a word of the ``on`` columns
# that at most ``max_block_size`` records hold.
on = ["name", "street"]
pairs = dask_block(left, right, on=on, max_block_size=20)
per_partition = pairs.map_partitions(len).compute()
print(f"{per_partition.sum()} candidate pairs in {pairs.npartitions} partitions, blocked on {on}")
fig, ax = plt.subplots(figsize=(6, 2.5))
ax.bar(range(len(per_partition)), per_partition)
ax.set_xlabel("partition")
ax.set_ylabel("candidate pairs")
fig.tight_layout()

# %%
# The query: each partition is scored on its worker; the batch is chosen on the client.
query = dask_query(scorer, pairs, labelled=labelled, n_instances=20, random_state=0, progress=False)
print(query.pairs.head(10))

# %%
# The same batch as a streamed query over the same candidates.
streamed = stream_query(scorer, PairSource(pairs.compute()), labelled=labelled, n_instances=20,
                        random_state=0, progress=False)
same = set(map(tuple, query.pairs[["left_id", "right_id"]].to_numpy())) == set(
    map(tuple, streamed.pairs[["left_id", "right_id"]].to_numpy()))
print("dask_query and stream_query chose the same pairs:", same)
client.close()
cluster.close()
