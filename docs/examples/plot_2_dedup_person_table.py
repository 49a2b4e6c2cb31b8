"""
Deduplicating a person table end to end
=======================================

The three steps of an entity-resolution project on one table with duplicates inside it:
label pairs in a session (here a simulated oracle answers from the known truth), match the
records with the saved model, and hand over the entities. The session is the one ``skrisk
label --table people.csv --session people_session`` runs in a terminal; its step API
(``next_question`` / ``answer``) is what the console and the Jupyter labeller call.
"""

# %%
# A generated FEBRL-style table: 400 records, one to four of each person, with typos, swapped names,
# dates in three formats and missing values. ``truth`` lists the pairs of records of one person.
import io
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt

from skrisk.datasets import make_person_table
from skrisk.labelling import LabellingSession, SessionConfig
from skrisk.matching import load_model, match

table, truth = make_person_table(400, random_state=0)
same = {tuple(sorted(p)) for p in truth.itertuples(index=False)}
work = Path(tempfile.mkdtemp())
table.to_csv(work / "people.csv")
print(table.head().to_string())
print(f"{len(table)} records, {len(same)} true duplicate pairs")

# %%
# Label: the session blocks the table into candidate pairs, asks starting pairs, then batches
# chosen by risk sampling, and after each round a few audit pairs for the estimate. Every answer
# is journaled in the folder before the next question; after every round the folder holds the
# complete model, ``model.skrisk``.
log = io.StringIO()  # the session's messages (estimates, stopping advice)
session = LabellingSession.open(work / "people_session", table=work / "people.csv",
                                config=SessionConfig(n_instances=10, audit=5, seed=0), out=log)
asked = 0
try:
    while asked < 80 and (question := session.next_question()) is not None:
        key = (question.left_id, question.right_id)
        session.answer(key, "yes" if tuple(sorted(key)) in same else "no")
        asked += 1
finally:
    session.close()
print(f"{asked} answers; the session's last messages:")
print("\n".join(log.getvalue().strip().splitlines()[-4:]))

# %%
# Match: the saved model blocks the records, scores every candidate pair in chunks and groups
# the matches into entities (the connected components of the match graph).
result = match(load_model(work / "people_session"), table, progress=False)
found = {tuple(sorted(p)) for p in result.matches[["left_id", "right_id"]].itertuples(index=False)}
tp = len(found & same)
print(f"{len(found)} matches: precision {tp / max(len(found), 1):.2f}, recall {tp / len(same):.2f}")
print(result.matches.head().to_string())

# %%
# Hand over the entities: one row per record, with its entity and a flag on the clusters worth
# a look (too large, a confident non-match inside, chains).
entities = result.entities.to_frame()
print(f"{result.entities.n_entities} entities for {len(table)} records")
print(entities.sort_values(["entity_size", "entity_id"], ascending=[False, True]).head(8).to_string())

# %%
# Entity sizes found against the truth (the true entities are the connected components of the
# true duplicate pairs; a record with no duplicate is an entity of one).
import numpy as np  # noqa: E402
from scipy.sparse import coo_matrix  # noqa: E402
from scipy.sparse.csgraph import connected_components  # noqa: E402

where = {record: i for i, record in enumerate(table.index)}
rows, cols = zip(*((where[a], where[b]) for a, b in same))
graph = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(table), len(table)))
true_sizes = np.bincount(connected_components(graph, directed=False)[1])
found_sizes = entities.groupby("entity_id").size()
fig, ax = plt.subplots(figsize=(6, 3))
bins = range(1, max(max(true_sizes), found_sizes.max()) + 2)
ax.hist([true_sizes, found_sizes], bins=bins, align="left", label=["true entities", "entities found"])
ax.set_xlabel("records per entity")
ax.set_ylabel("entities")
ax.legend()
fig.tight_layout()
