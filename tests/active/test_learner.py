"""skrisk.active.ActiveLearner: clone without fitting, modAL's strategies, scikit-learn tooling, and
hostile input to teach/query. Real data: Beer's similarity features."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestRegressor, VotingClassifier
from sklearn.exceptions import NotFittedError as SkNotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils import get_tags
from sklearn.utils.estimator_checks import parametrize_with_checks
from sklearn.utils.validation import check_is_fitted
from skorch.helper import SliceDict

# internal on purpose: the shared row helpers
from skrisk._rows import num_rows
from skrisk.active import ActiveLearner
# internal on purpose: a name private since 0.2 (docs/api-0.2.md), tested or used as the fixture
from skrisk._query import unpack_query
from skrisk.data import SimilarityFeatures
from skrisk.exceptions import DataError, NotFittedError
from skrisk.matchers import FeatureMatcher
from skrisk.strategies import KMedoidsSelector, RiskSampler, entropy_sampling, random_sampling


@pytest.fixture(scope="module")
def task(beer):
    F = SimilarityFeatures().fit_transform(beer.to_frame()).astype(np.float64)
    y = np.asarray(beer.labels)
    train = beer.split_positions("train")
    train = train[np.isfinite(F[train]).all(axis=1)]  # NaN (a missing value) only where a test puts it
    rng = np.random.RandomState(0)
    lab = np.concatenate(
        [rng.choice(train[y[train] == 1], 8, replace=False), rng.choice(train[y[train] == 0], 22, replace=False)]
    )
    return {"F": F, "y": y, "lab": lab, "pool": np.setdiff1d(train, lab)}


class CountingLR(LogisticRegression):
    """A real LogisticRegression that counts its fits (on the class, shared by clones)."""

    fits = 0

    def fit(self, X, y, sample_weight=None):
        type(self).fits += 1
        return super().fit(X, y, sample_weight=sample_weight)


def _modal():
    pytest.importorskip("modAL", reason="modAL is not installed (pip install --no-deps modAL-python==0.4.2.1)")
    import modAL.batch
    import modAL.uncertainty

    return modAL


# ----------------------------------------------------------------------------- clone
def test_clone_after_teach_neither_fits_nor_rewinds(task):
    F, y, lab, pool = task["F"], task["y"], task["lab"], task["pool"]
    learner = ActiveLearner(CountingLR(max_iter=1000), entropy_sampling, X_training=F[lab], y_training=y[lab],
                            sample_weight=None)
    pos, rows = learner.query(F[pool], n_instances=6, random_state=0)
    learner.teach(rows, y[pool[pos]])
    coef, n_fits = learner.estimator.coef_.copy(), CountingLR.fits

    twin = clone(learner)

    assert CountingLR.fits == n_fits, "clone must not fit"
    assert twin.X_training is None and twin.y_training is None
    with pytest.raises(SkNotFittedError):
        check_is_fitted(twin.estimator)
    with pytest.raises(SkNotFittedError):
        check_is_fitted(twin)
    assert twin.estimator is not learner.estimator and twin.estimator.get_params() == learner.estimator.get_params()
    assert twin.query_strategy is learner.query_strategy and twin.fit_kwargs == {"sample_weight": None}
    # the original is untouched: every label taught, the same fitted model
    assert len(learner.y_training) == len(lab) + 6
    np.testing.assert_array_equal(learner.estimator.coef_, coef)
    check_is_fitted(learner)
    # the clone, fitted on the same labels, is the same model
    twin.fit(learner.X_training, learner.y_training)
    np.testing.assert_allclose(twin.estimator.coef_, coef)


def test_clone_gives_a_strategy_object_its_own_copy(task):
    F, y, lab = task["F"], task["y"], task["lab"]
    sampler = RiskSampler(F[lab], y[lab], selector=KMedoidsSelector(preselect=2), random_state=0)
    learner = ActiveLearner(FeatureMatcher(random_state=0), sampler)
    twin = clone(learner)
    assert twin.query_strategy is not sampler and twin.query_strategy.get_params()["selector__preselect"] == 2
    twin.set_params(query_strategy__selector__preselect=3, estimator__random_state=1)
    assert sampler.selector.preselect == 2 and learner.estimator.random_state == 0


def test_params_exclude_the_labelled_data(task):
    F, y, lab = task["F"], task["y"], task["lab"]
    learner = ActiveLearner(LogisticRegression(), entropy_sampling, X_training=F[lab], y_training=y[lab],
                            random_state=3, sample_weight=None)
    params = learner.get_params(deep=False)
    assert set(params) == {"estimator", "query_strategy", "bootstrap_init", "on_transformed", "force_all_finite",
                           "random_state", "sample_weight"}
    assert learner.get_params()["estimator__C"] == 1.0
    learner.set_params(estimator__C=0.5, sample_weight=np.ones(len(lab)), on_transformed=True)
    assert learner.estimator.C == 0.5 and learner.on_transformed
    assert len(learner.fit_kwargs["sample_weight"]) == len(lab)
    with pytest.raises(ValueError, match="X_training"):
        learner.set_params(X_training=F[lab])
    text = repr(learner)
    assert "n_labelled=30" in text and "entropy_sampling" in text and "random_state=3" in text


# ----------------------------------------------------------------------------- scikit-learn tooling
def test_sklearn_tags_follow_the_estimator():
    lr = ActiveLearner(LogisticRegression(), entropy_sampling)
    tags = get_tags(lr)
    assert tags.estimator_type == "classifier" and is_classifier(lr) and tags.requires_fit
    assert not tags.input_tags.allow_nan and tags.input_tags.sparse == get_tags(LogisticRegression()).input_tags.sparse
    hgb = ActiveLearner(HistGradientBoostingClassifier(), entropy_sampling)
    assert get_tags(hgb).input_tags.allow_nan  # NaN reaches an estimator that handles it
    strict = ActiveLearner(HistGradientBoostingClassifier(), entropy_sampling, force_all_finite=True)
    assert not get_tags(strict).input_tags.allow_nan
    assert is_regressor(ActiveLearner(RandomForestRegressor(), random_sampling))
    assert get_tags(ActiveLearner(FeatureMatcher(), entropy_sampling)).estimator_type == "classifier"
    assert get_tags(ActiveLearner(LogisticRegression(), random_sampling, bootstrap_init=True)).non_deterministic
    # an estimator without scikit-learn tags (or none yet) gets the defaults, not an error
    assert get_tags(ActiveLearner(object(), random_sampling)).estimator_type is None
    assert not hasattr(ActiveLearner(None, random_sampling), "predict_proba")


def test_grid_search_and_cross_validation(task):
    F, y, pool = task["F"], task["y"], task["pool"]
    X, yy = F[pool][:200], y[pool][:200]
    search = GridSearchCV(ActiveLearner(LogisticRegression(max_iter=1000), entropy_sampling),
                          {"estimator__C": [0.01, 1.0]}, cv=3, scoring="roc_auc").fit(X, yy)
    best = search.best_estimator_
    assert isinstance(best, ActiveLearner) and len(best.y_training) == len(yy)
    np.testing.assert_array_equal(search.classes_, [0, 1])
    pos, _ = best.query(F[pool][200:], n_instances=4, random_state=0)
    assert len(np.unique(pos)) == 4
    # classifier tags: cross_val_score stratifies like for the bare estimator
    ours = cross_val_score(ActiveLearner(LogisticRegression(max_iter=1000), entropy_sampling), X, yy, cv=3)
    bare = cross_val_score(LogisticRegression(max_iter=1000), X, yy, cv=StratifiedKFold(3))
    np.testing.assert_allclose(ours, bare)


# ----------------------------------------------------------------------------- modAL's strategies
@pytest.mark.parametrize("name", ["uncertainty_sampling", "margin_sampling", "entropy_sampling"])
def test_modal_classic_strategies(task, name):
    modAL = _modal()
    F, y, lab, pool = task["F"], task["y"], task["lab"], task["pool"]
    strategy = getattr(modAL.uncertainty, name)
    score = {"uncertainty_sampling": modAL.uncertainty.classifier_uncertainty,
             "margin_sampling": modAL.uncertainty.classifier_margin,
             "entropy_sampling": modAL.uncertainty.classifier_entropy}[name]
    learner = ActiveLearner(FeatureMatcher(random_state=0), strategy, X_training=F[lab], y_training=y[lab])
    labelled = lab.copy()
    for n in (1, 5):
        X_pool = F[pool]
        pos, rows, metrics = learner.query(X_pool, n_instances=n, return_metrics=True)
        assert pos.shape == (n,) and len(np.unique(pos)) == n
        np.testing.assert_array_equal(rows, X_pool[pos])
        s = score(learner, X_pool)
        sign = -1 if name == "margin_sampling" else 1  # modAL ranks margins by their negative
        np.testing.assert_allclose(np.sort(sign * s[pos]), np.sort(sign * s)[::-1][:n][::-1])
        np.testing.assert_allclose(np.abs(metrics), np.abs(s[pos]))
        learner.teach(rows, y[pool[pos]])
        labelled = np.concatenate([labelled, pool[pos]])
        pool = np.delete(pool, pos)
    np.testing.assert_array_equal(learner.y_training, y[labelled])
    np.testing.assert_array_equal(learner.X_training, F[labelled])


@pytest.mark.parametrize("on_transformed", [False, True])
def test_modal_uncertainty_batch_sampling(task, on_transformed):
    modAL = _modal()
    F, y, lab, pool = task["F"], task["y"], task["lab"], task["pool"]
    cols = [f"f{i}" for i in range(F.shape[1])]
    frame = pd.DataFrame(F, columns=cols)
    estimator = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    # modAL's batch code reshapes the pool itself: raw, it needs arrays; transformed, the pipeline
    # turns a DataFrame into them
    wrap = (lambda rows: frame.iloc[rows].reset_index(drop=True)) if on_transformed else (lambda rows: F[rows])
    learner = ActiveLearner(estimator, modAL.batch.uncertainty_batch_sampling, X_training=wrap(lab),
                            y_training=y[lab], on_transformed=on_transformed)
    scaled = learner.transform_without_estimating(wrap(pool))
    np.testing.assert_allclose(scaled, estimator[0].transform(wrap(pool)))
    pos, rows, scores = learner.query(wrap(pool), n_instances=7, return_metrics=True)
    assert len(np.unique(pos)) == 7
    np.testing.assert_allclose(scores, modAL.uncertainty.classifier_uncertainty(learner, wrap(pool))[pos])
    np.testing.assert_array_equal(np.asarray(rows), F[pool[pos]])  # rows by position, not by label
    learner.teach(rows, y[pool[pos]])
    assert len(learner.y_training) == len(lab) + 7
    if on_transformed:
        assert isinstance(learner.X_training, pd.DataFrame) and list(learner.X_training.columns) == cols
    np.testing.assert_array_equal(np.asarray(learner.X_training)[-7:], F[pool[pos]])


def test_transform_without_estimating_ensembles(task):
    F, y, lab = task["F"], task["y"], task["lab"]
    vote = VotingClassifier([("a", make_pipeline(StandardScaler(), LogisticRegression())),
                             ("b", LogisticRegression())], voting="soft")
    learner = ActiveLearner(vote, random_sampling, X_training=F[lab], y_training=y[lab])
    out = learner.transform_without_estimating(F[:5])
    np.testing.assert_allclose(out, vote.estimators_[0][0].transform(F[:5]))
    assert ActiveLearner(LogisticRegression(), random_sampling).transform_without_estimating(F) is F


# ----------------------------------------------------------------------------- query conventions
def test_query_keeps_modal_conventions(task):
    F = task["F"][:20]
    calls = []

    def one(learner, X_pool):  # no n_instances: none is passed unless asked
        calls.append(1)
        return 4, 0.25

    learner = ActiveLearner(None, one)
    pos, row = learner.query(F)
    assert pos == 4 and row.shape == F[4].shape and len(calls) == 1
    np.testing.assert_array_equal(row, F[4])
    frame = pd.DataFrame(F, index=np.arange(20)[::-1])  # labels differ from positions
    _, row = learner.query(frame)
    np.testing.assert_array_equal(row.to_numpy(), F[4])
    pos, rows, metrics = learner.query(F, return_metrics=True)
    assert metrics == 0.25 and len(calls) == 3

    learner.query_strategy = lambda lr, X, n_instances=1: np.array([2, 9])  # positions only (modAL 0.4.1)
    with pytest.warns(UserWarning, match="without scores"):
        pos, rows, metrics = learner.query(F, n_instances=2, return_metrics=True)
    assert metrics is None and pos.tolist() == [2, 9]
    with pytest.warns(UserWarning, match="returned 2 positions for n_instances=3"):
        learner.query(F, n_instances=3)

    learner.query_strategy = lambda lr, X: (np.array([5, 1]), np.array([0.5, 0.5]))
    for odd in (sp.dok_matrix(F), sp.coo_matrix(F)):  # a dok matrix is also a dict; coo has no rows
        _, rows = learner.query(odd)
        np.testing.assert_array_equal(rows.toarray(), F[[5, 1]])

    learner.query_strategy = lambda lr, X: (np.array([3, 3]), np.array([0.5, 0.5]))
    with pytest.warns(UserWarning, match=r"\[3\] more than once"):
        pos, rows = learner.query(F)
    np.testing.assert_array_equal(rows, F[[3, 3]])
    with pytest.raises(ValueError, match="more than once"):  # skrisk's own loop stays strict
        unpack_query((np.array([3, 3]), np.array([0.5, 0.5])), 20)

    for bad, err, msg in (((np.array([25]), None), ValueError, "outside the pool of 20"),
                          ((np.array([1.0]), None), TypeError, "must be integers"),
                          ((np.array([1, 2]), np.array([0.1])), ValueError, "differ in length"),
                          ((np.zeros((2, 2), dtype=int), None), ValueError, "1-D")):
        learner.query_strategy = lambda lr, X, r=bad: r
        with pytest.raises(err, match=msg):
            learner.query(F)


def test_query_raising_strategy_runs_once_and_unfitted_is_named(task):
    F, y, lab = task["F"], task["y"], task["lab"]
    calls = []

    def boom(learner, X_pool, n_instances=1):
        calls.append(1)
        raise KeyboardInterrupt  # modAL's bare except would swallow it and run the strategy again

    with pytest.raises(KeyboardInterrupt):
        ActiveLearner(LogisticRegression(), boom, X_training=F[lab], y_training=y[lab]).query(F, n_instances=2)
    assert len(calls) == 1
    # an unfitted estimator is refused before the strategy runs (modAL's uncertainty strategies
    # would score every pair alike, silently)
    modAL = _modal()
    for strategy in (boom, modAL.uncertainty.uncertainty_sampling, entropy_sampling):
        with pytest.raises(NotFittedError, match="LogisticRegression is not fitted"):
            ActiveLearner(LogisticRegression(), strategy).query(F, n_instances=2)
    assert len(calls) == 1
    pos, _ = random_sampling(ActiveLearner(LogisticRegression(), random_sampling), F, n_instances=2, random_state=0)
    assert len(np.unique(pos)) == 2  # the cold start: a strategy that needs no model, called directly


def test_default_strategy_is_risk_sampling(task):
    F, y, lab, pool = task["F"], task["y"], task["lab"], task["pool"]
    learner = ActiveLearner(FeatureMatcher(random_state=0), X_training=F[lab], y_training=y[lab])
    assert learner.query_strategy is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LearnRisk may fall back on tiny labelled sets; said elsewhere
        pos, _ = learner.query(F[pool], n_instances=5, random_state=0)
    assert len(np.unique(pos)) == 5 and pos.max() < len(pool)


# ----------------------------------------------------------------------------- hostile teach
def test_teach_refuses_bad_pairs_before_storing_them(task):
    F, y, lab = task["F"], task["y"], task["lab"]
    learner = ActiveLearner(LogisticRegression(), entropy_sampling, X_training=F[lab], y_training=y[lab],
                            force_all_finite=True)
    n = len(lab)
    new = task["pool"][:3]
    bad_nan = F[new].copy()
    bad_nan[1, 2] = np.nan
    cases = [
        ((F[new], y[new][:2]), "X has 3 rows but y has 2 labels"),
        ((F[new], 1), "single value"),
        ((F[new][:, :5], y[new]), r"rows of shape \(5,\)"),
        ((pd.DataFrame(F[new]), y[new]), "array, the new pairs a DataFrame"),
        ((bad_nan, y[new]), "row 1, column 2.*force_all_finite=False"),
        ((F[new], np.array([0.0, np.nan, 1.0])), "label at position 1"),
        ((F[new], [0, 1, None]), "label at position 2"),
        ((F[new], np.zeros((3, 2), dtype=int)), "labels have shape"),
    ]
    for (X_new, y_new), msg in cases:
        with pytest.raises(DataError, match=msg):
            learner.teach(X_new, y_new)
        assert len(learner.y_training) == num_rows(learner.X_training) == n, msg
    with pytest.raises(DataError, match="row 0, column 1"):
        ActiveLearner(LogisticRegression(), entropy_sampling, X_training=np.array([[0, np.inf]]), y_training=[1],
                      force_all_finite=True)
    tolerant = ActiveLearner(HistGradientBoostingClassifier(max_iter=5), entropy_sampling, X_training=F[lab],
                             y_training=y[lab])  # the default: the estimator validates
    tolerant.teach(bad_nan, y[new])
    assert np.isnan(tolerant.X_training[-2, 2])


def test_teach_containers_must_match(task):
    F, y, lab = task["F"], task["y"], task["lab"]
    cols = [f"f{i}" for i in range(F.shape[1])]
    frame = ActiveLearner(LogisticRegression(), entropy_sampling, X_training=pd.DataFrame(F[lab], columns=cols),
                          y_training=y[lab], force_all_finite=True)
    new = task["pool"][:2]
    bad_nan = pd.DataFrame(F[new], columns=cols)
    bad_nan.iloc[1, 3] = np.nan
    with pytest.raises(DataError, match="row 1, column 'f3'"):
        frame.teach(bad_nan, y[new])
    with pytest.raises(DataError, match="columns"):
        frame.teach(pd.DataFrame(F[new]), y[new])
    sd = ActiveLearner(FeatureMatcher(random_state=0), entropy_sampling, X_training=SliceDict(features=F[lab]),
                       y_training=y[lab])
    with pytest.raises(DataError, match="keys"):
        sd.teach(SliceDict(other=F[new]), y[new])
    with pytest.raises(DataError, match="key 'features'"):
        sd.teach(SliceDict(features=F[new, :4]), y[new])
    sd.teach(SliceDict(features=F[new]), y[new])
    assert len(sd.X_training["features"]) == len(lab) + 2


def test_failed_refit_keeps_the_labels():
    X = np.array([[0.1, 0.2], [0.3, 0.1], [0.9, 0.8]])
    learner = ActiveLearner(LogisticRegression(), entropy_sampling)
    with pytest.raises(ValueError) as info:
        learner.teach(X, [0, 0, 0])  # one class: LogisticRegression cannot fit yet
    assert len(learner.y_training) == 3
    if sys.version_info >= (3, 11):
        assert "kept in learner.X_training" in "".join(info.value.__notes__)
    learner.teach(np.array([[0.8, 0.9]]), [1])  # the next answer refits on all four
    assert len(learner.y_training) == 4 and learner.predict(X).shape == (3,)


def test_bootstrap_is_seeded_and_only_new_keeps_labels(task):
    F, y, lab, pool = task["F"], task["y"], task["lab"], task["pool"]

    def run(seed):
        lr = ActiveLearner(LogisticRegression(max_iter=1000), entropy_sampling, X_training=F[lab], y_training=y[lab],
                           bootstrap_init=True, random_state=seed)
        first = lr.estimator.coef_.copy()
        lr.teach(F[pool[:20]], y[pool[:20]], bootstrap=True)
        return first, lr.estimator.coef_.copy()

    a, b = run(0), run(0)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    plain = ActiveLearner(LogisticRegression(max_iter=1000), entropy_sampling, X_training=F[lab], y_training=y[lab])
    assert not np.allclose(a[0], plain.estimator.coef_)  # really a bootstrap sample
    learner = ActiveLearner(LogisticRegression(max_iter=1000), entropy_sampling, X_training=F[lab], y_training=y[lab])
    learner.teach(F[pool[:20]], y[pool[:20]], only_new=True)
    assert len(learner.y_training) == len(lab) + 20
    fresh = LogisticRegression(max_iter=1000).fit(F[pool[:20]], y[pool[:20]])
    np.testing.assert_allclose(learner.estimator.coef_, fresh.coef_)


# ----------------------------------------------------------------------------- scikit-learn's checks
#: checks that modAL's interface fails by design, and why (README's compatibility table)
BY_DESIGN = {
    "check_no_attributes_set_in_init": "**fit_kwargs (modAL's interface) are kept in the fit_kwargs attribute",
    "check_estimators_overwrite_params": "the learner fits `estimator` in place: strategies read "
                                         "learner.estimator as the current model (modAL's contract)",
    "check_dont_overwrite_parameters": "X_training / y_training are modAL's public record of the labelled "
                                       "pairs and grow with fit/teach",
    "check_do_not_raise_errors_in_init_or_set_params": "X_training/y_training given to the constructor are "
                                                       "fitted at once (modAL's contract)",
}


@parametrize_with_checks([ActiveLearner(LogisticRegression(), entropy_sampling)],
                         expected_failed_checks=lambda est: BY_DESIGN)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
