"""The one seam between the benchmarks and skrisk's internals.

A benchmark measures skrisk through its public names wherever they give what it measures. What
they do not give (the simulated-oracle loop's records, the key codes of a blocking pass, the
entity scores against a truth ...) is imported through this module, and only through it:
``tests/test_private_names.py`` refuses a private skrisk import in any other benchmark file, and
an entry here that no benchmark uses. Each entry says why a benchmark needs it. The internals are
imported when first used (``from _lab import name``), so that a benchmark imports only what it
measures: a timed child process of ``skrisk match`` does not start with torch loaded.
"""

from __future__ import annotations

import importlib
from typing import Any

#: name -> (module, attribute or None for the module itself, why a benchmark needs it)
INTERNALS: dict[str, tuple[str, str | None, str]] = {
    # skrisk's shared internals: the records are written as skrisk writes its files
    "atomic_write_text": ("skrisk._fileio", "atomic_write_text", "result pages written atomically, as skrisk writes"),
    "stratified_choice": ("skrisk._sampling", "stratified_choice", "the pools' stratified draw, timed alone"),
    # experiments: the simulated-oracle runs the benchmarks record and replay
    "machine_line": ("skrisk.experiments._env", "machine_line", "the machine line beside every figure"),
    "RECORD_ONLY_KEYS": ("skrisk.experiments._loop", "RECORD_ONLY_KEYS", "the keys a record keeps that no table reads"),
    "ALTask": ("skrisk.experiments._loop", "ALTask", "one dataset's active-learning task, to replay strategies on"),
    "format_record": ("skrisk.experiments._loop", "format_record", "a record's JSON form, to compact old records"),
    "read_results": ("skrisk.experiments._loop", "read_results", "the recorded runs of a results folder"),
    "recorded_rounds": ("skrisk.experiments._loop", "recorded_rounds", "the per-round figures of a recorded run"),
    "plot_learning_curves": ("skrisk.experiments._plot", "plot_learning_curves", "the pages' learning curves"),
    "StrategyFactory": ("skrisk.experiments._registry", "StrategyFactory", "strategy variants by recorded name"),
    "make_strategy": ("skrisk.experiments._registry", "make_strategy", "the strategies by their recorded names"),
    "curve_area": ("skrisk.experiments._report", "curve_area", "the tables' area under the learning curve"),
    "per_budget": ("skrisk.experiments._report", "per_budget", "the tables' figures per label budget"),
    "load_dataset": ("skrisk.experiments._tasks", "load_dataset", "a dataset as the experiments load it"),
    "make_matcher_factory": ("skrisk.experiments._tasks", "make_matcher_factory", "the matchers by recorded name"),
    "matcher_fit_kwargs": ("skrisk.experiments._tasks", "matcher_fit_kwargs", "each recorded matcher's fit arguments"),
    # data: fixtures and ground truth of the datasets
    "typed_blocking": ("skrisk.data._typed_blocking", None, "the key codes of each typed pass, to time the joins"),
    "WordVectors": ("skrisk.data._embeddings", "WordVectors", "the RNN matcher's embeddings, built offline"),
    "train_fasttext": ("skrisk.data._embeddings", "train_fasttext", "the RNN matcher's embeddings, trained offline"),
    "Vocabulary": ("skrisk.data._tokenize", "Vocabulary", "the RNN matcher's vocabulary"),
    "febrl_entity": ("skrisk.data._febrl", "febrl_entity", "FEBRL's true entity of each record id"),
    "DEEPMATCHER_LEAKS": ("skrisk.data._loaders", "DEEPMATCHER_LEAKS", "the known leaks of the DeepMatcher splits"),
    "get_data_home": ("skrisk.data._loaders", "get_data_home", "the data folder the loaders read"),
    "stack_tables": ("skrisk.data._pairs", "stack_tables", "a dataset's two tables as one, for a dedup session"),
    # matchers, matching, quality: what a benchmark scores against the truth
    "match_labels": ("skrisk.matchers._base", "match_labels", "the 0/1 labels at the one match threshold"),
    "cluster_scores": ("skrisk.matching._entities", "cluster_scores", "entity F1 against the true entities"),
    "pairwise_scores": ("skrisk.matching._entities", "pairwise_scores", "pair F1 of the entities against the truth"),
    "MODEL_FILE": ("skrisk.matching._model", "MODEL_FILE", "the model file's name in a session folder"),
    "audit_aim": ("skrisk.quality._estimate", "audit_aim", "the audit's aim, to replay the session's sizing"),
    "audit_design": ("skrisk.quality._estimate", "audit_design", "the audit's strata, to replay its draws"),
    "more_answers": ("skrisk.quality._estimate", "more_answers", "the answers an interval needs, said by the session"),
    "RiskPlateau": ("skrisk.quality._stopping", "RiskPlateau", "a stopping rule, replayed on saved paths"),
    "StabilisingPredictions": ("skrisk.quality._stopping", "StabilisingPredictions", "a stopping rule, replayed"),
    "cohen_kappa": ("skrisk.quality._stopping", "cohen_kappa", "the agreement of two rounds' predictions"),
}

__all__ = list(INTERNALS)


def __getattr__(name: str) -> Any:
    if name not in INTERNALS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute, _why = INTERNALS[name]
    mod = importlib.import_module(module)
    value = mod if attribute is None else getattr(mod, attribute)
    globals()[name] = value
    return value
