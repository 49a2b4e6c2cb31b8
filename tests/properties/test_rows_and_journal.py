"""Property tests (hypothesis) of the row helpers and of journal replay (issue #16)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from skorch.helper import SliceDict

# internal on purpose: the shared row helpers, property-tested
from skrisk._rows import num_rows, pool_kind, stack_rows, take_rows
from skrisk.labelling._journal import Journal, read_events, replay

FAST = settings(max_examples=30, deadline=None)


def _pools(n: int, rng: np.random.RandomState):
    X = rng.normal(size=(n, 3))
    return {
        "array": X,
        "frame": pd.DataFrame(X, columns=["a", "b", "c"], index=rng.permutation(n) + 100),
        "slicedict": SliceDict(features=X, tokens=rng.randint(0, 9, size=(n, 2, 4))),
    }


def _as_array(P):
    if isinstance(P, pd.DataFrame):
        return P.to_numpy()
    if isinstance(P, SliceDict):
        return P["features"]
    return np.asarray(P)


@FAST
@given(n=st.integers(1, 30), data=st.data())
def test_take_rows_is_positional_and_stack_inverts_a_split(n, data):
    rng = np.random.RandomState(n)
    positions = np.asarray(data.draw(st.lists(st.integers(0, n - 1), max_size=40)), dtype=np.int64)
    cut = data.draw(st.integers(0, n))
    for kind, P in _pools(n, rng).items():
        got = take_rows(P, positions)
        assert num_rows(got) == len(positions), kind
        assert pool_kind(got) == pool_kind(P) == {"slicedict": "mapping"}.get(kind, kind)  # by type only
        assert type(got) is type(P), kind
        np.testing.assert_array_equal(_as_array(got), _as_array(P)[positions])  # by position, not label
        back = stack_rows([take_rows(P, np.arange(cut)), take_rows(P, np.arange(cut, n))])
        np.testing.assert_array_equal(_as_array(back), _as_array(P))


answers = st.sampled_from(["yes", "no", "unsure"])
ops = st.lists(st.one_of(st.tuples(st.just("answer"), st.integers(0, 5), answers), st.just(("undo",))),
               max_size=25)


def _model(ops_list):
    """The answers in force, as the session defines them: re-answering a pair moves it to the top
    with its new answer; undo takes the top pair back (it is asked again, with no answer)."""
    stack = []
    for op in ops_list:
        if op[0] == "answer":
            stack = [e for e in stack if e[0] != op[1]] + [(op[1], op[2])]
        elif stack:
            stack.pop()
    return dict(stack)


@FAST
@given(ops_list=ops)
def test_journal_replay_equals_the_stack_model_and_survives_rereading(tmp_path_factory, ops_list):
    path = tmp_path_factory.mktemp("j") / "journal.jsonl"
    with Journal(path) as journal:
        stack = []  # (pair, seq of its answer in force)
        for op in ops_list:
            if op[0] == "answer":
                ev = journal.append("answer", left_id=f"l{op[1]}", right_id=f"r{op[1]}", answer=op[2])
                stack = [e for e in stack if e[0] != op[1]] + [(op[1], ev["seq"])]
            elif stack:
                journal.append("undo", target=stack.pop()[1])
    expected = {(f"l{k}", f"r{k}"): v for k, v in _model(ops_list).items()}
    events = read_events(path)
    assert replay(events).answers == expected
    # replaying twice (a repeated line) changes nothing, and a torn tail is dropped
    assert replay(events + events).answers == expected
    with path.open("ab") as fh:
        fh.write(b'{"seq": 99, "event": "ans')
    assert replay(read_events(path)).answers == expected
