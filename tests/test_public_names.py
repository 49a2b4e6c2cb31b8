"""The public surface of skrisk, listed once: every public module, its ``__all__``, and nothing else.

A name is public when a public module (no part of its dotted path starts with ``_``) lists it in
``__all__``; everything else lives in private modules. The list is the plan of
``docs/api-0.2.md``; changing it is an API change (CHANGELOG.md). Top-level names re-export the
objects of their packages and are counted once.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re

import skrisk

PUBLIC = {
    "skrisk": ["ActiveLearner", "LearnRisk", "RiskSampler", "__version__"],
    "skrisk.active": ["ActiveLearner"],
    "skrisk.cli": ["main"],
    "skrisk.data": ["BlockingResult", "PairDataset", "PairEncoder", "SimilarityFeatures", "block", "read_table"],
    "skrisk.datasets": ["fetch_deepmatcher", "load_csv_tables", "load_deepmatcher", "load_febrl", "make_pairs",
                        "make_person_table"],
    "skrisk.exceptions": ["DataError", "EmptyPoolError", "InvalidParameterError", "MissingCapabilityError",
                          "NotFittedError", "SkriskError"],
    "skrisk.experiments": ["STRATEGIES", "aulc", "build_task", "run_active_learning"],
    "skrisk.kmedoids": ["KMedoidsResult", "WeightedKMedoids", "weighted_fastpam"],
    "skrisk.labelling": ["JupyterLabeller", "LabellingSession", "SessionConfig", "export_session",
                         "repair_journal"],
    "skrisk.matchers": ["FeatureMatcher", "LMMatcher", "MATCH_THRESHOLD", "RNNMatcher", "load_matcher",
                        "save_matcher"],
    "skrisk.matching": ["Entities", "MatchModel", "MatchResult", "cluster_entities", "load_model", "match"],
    "skrisk.pools": ["ChunkScorer", "PairSource", "PoolQuery", "dask_block", "dask_query", "stream_query"],
    "skrisk.quality": ["QualityEstimate", "audit_sample", "choose_threshold", "compare_f1", "confirm_stop",
                       "estimate_quality"],
    "skrisk.risk": ["LearnRisk", "Reason", "RiskExplanation", "Rule", "oof_proba", "risk_features",
                    "risk_roc_auc"],
    "skrisk.risk.research": ["LearnRiskEstimator", "mispredicted"],
    "skrisk.strategies": ["BadgeSelector", "BatchSelection", "KMedoidsSelector", "RiskQuery", "RiskSampler",
                          "TopKSelector", "badge_sampling", "bald_sampling", "coreset_sampling", "egl_sampling",
                          "entropy_sampling", "random_sampling", "risk_sampling"],
    "skrisk.utils": ["read_csv_export"],
}

#: At most this many public names (issue #45).
LIMIT = 80


def _public_modules() -> list[str]:
    found = ["skrisk"]
    for info in pkgutil.walk_packages(skrisk.__path__, "skrisk."):
        if not any(part.startswith("_") for part in info.name.split(".")[1:]):
            found.append(info.name)
    return sorted(found)


def test_the_public_modules_are_the_listed_ones():
    assert _public_modules() == sorted(PUBLIC)


def test_each_public_module_exports_exactly_its_listed_names():
    for name, expected in PUBLIC.items():
        module = importlib.import_module(name)
        assert sorted(module.__all__) == sorted(expected), name
        for attr in expected:
            assert getattr(module, attr) is not None, f"{name}.{attr}"


def _defined_at_top(module) -> set[str]:
    """Names a module file binds at its top level (functions, classes, assignments)."""
    tree = ast.parse(inspect.getsource(module))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def test_nothing_else_looks_public():
    """A package's namespace holds its ``__all__`` (and its submodules); a module file defines no
    public function, class or variable outside its ``__all__``."""
    for name, expected in PUBLIC.items():
        module = importlib.import_module(name)
        for attr in expected:  # load the lazy ones too
            getattr(module, attr)
        if hasattr(module, "__path__"):
            found = {a for a, v in vars(module).items() if not inspect.ismodule(v) and a != "annotations"}
        else:
            found = _defined_at_top(module)
        extra = sorted(a for a in found if not a.startswith("_") and a not in expected)
        assert not extra, f"{name} has public names outside __all__: {extra}"


def test_at_most_80_public_names():
    objects = {}
    for name, expected in PUBLIC.items():
        module = importlib.import_module(name)
        for attr in expected:
            value = getattr(module, attr)
            key = id(value) if inspect.isclass(value) or inspect.isfunction(value) else (name, attr)
            objects[key] = f"{name}.{attr}"
    assert len(objects) <= LIMIT, f"{len(objects)} public names: {sorted(objects.values())}"


#: Words of the libraries skrisk builds on, kept as they spell them (torch's ``optimizer``).
THIRD_PARTY_WORDS = {"optimizer"}
_AMERICAN = re.compile(r"(?<!s)iz(e|ed|es|ing|ation|er)s?$|yz(e|ed|es|ing)$|^label(ed|ing)$|^behaviors?$|^colors?$")


def _words(identifier: str) -> list[str]:
    """``StabilizingPredictions`` -> ``["stabilizing", "predictions"]``; ``n_labelled`` -> ``["n", "labelled"]``."""
    return re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", identifier).lower().replace("_", " ").split()


def test_one_spelling_in_public_names_and_parameters():
    """British spelling (labelling, normalise) in every public name and parameter name."""
    found = []
    for name, expected in PUBLIC.items():
        module = importlib.import_module(name)
        for attr in expected:
            value = getattr(module, attr)
            words = [attr]
            target = value.__init__ if inspect.isclass(value) else value
            if callable(target):
                try:
                    words += list(inspect.signature(target).parameters)
                except (TypeError, ValueError):
                    pass
            found += [f"{name}.{attr}: {w}" for w in words
                      if any(x not in THIRD_PARTY_WORDS and _AMERICAN.search(x) for x in _words(w))]
    assert not found, found
