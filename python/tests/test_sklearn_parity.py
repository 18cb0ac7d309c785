"""mixle.GaussianMixture against scikit-learn's: same initialisation draws, same EM, same answers."""

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import GaussianMixture as SklearnGaussianMixture

import mixle

TOL = 1e-6  # fp64 parameters, relative to their scale


def assert_same_fit(ours, theirs, X, first_bound_offset=0.0, first_bound_rtol=1e-9):
    assert ours.n_iter_ == theirs.n_iter_
    assert ours.converged_ == theirs.converged_
    np.testing.assert_allclose(ours.weights_, theirs.weights_, rtol=TOL, atol=TOL)
    np.testing.assert_allclose(ours.means_, theirs.means_, rtol=TOL, atol=TOL)
    np.testing.assert_allclose(ours.covariances_, theirs.covariances_, rtol=TOL, atol=TOL)
    np.testing.assert_allclose(ours.precisions_, theirs.precisions_, rtol=TOL, atol=TOL)
    np.testing.assert_allclose(ours.precisions_cholesky_, theirs.precisions_cholesky_, rtol=TOL, atol=TOL)
    np.testing.assert_allclose(ours.lower_bound_, theirs.lower_bound_, rtol=1e-9)
    first = theirs.lower_bounds_[0] + first_bound_offset
    np.testing.assert_allclose(ours.lower_bounds_[0], first, rtol=first_bound_rtol)
    np.testing.assert_allclose(ours.lower_bounds_[1:], theirs.lower_bounds_[1:], rtol=1e-9)
    np.testing.assert_allclose(ours.score_samples(X), theirs.score_samples(X), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=1e-9)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    np.testing.assert_allclose(ours.bic(X), theirs.bic(X), rtol=1e-9)
    np.testing.assert_allclose(ours.aic(X), theirs.aic(X), rtol=1e-9)


@pytest.mark.parametrize("covariance_type", ["full", "tied", "diag", "spherical"])
@pytest.mark.parametrize("init_params", ["kmeans", "k-means++", "random", "random_from_data"])
def test_same_random_state_same_model(blobs, covariance_type, init_params):
    params = dict(n_components=3, covariance_type=covariance_type, init_params=init_params, random_state=7,
                  tol=1e-6, max_iter=300)
    offset, rtol = 0.0, 1e-9
    if init_params in ("k-means++", "random_from_data"):
        # These give mass to K rows only. scikit-learn does not renormalise such initial weights
        # (they sum to K/n), which shifts its first lower bound by log(K/n); mixle's always sum to
        # one. And the initial variances are reg_covar alone (1e-6), which scikit-learn's diag
        # form (E[x²] − 2·E[x]·μ + μ²) computes with ~1e-14 of cancellation error, ~1e-8 of the
        # variance: its first bound (~ −1e7 nats) moves by ~1e-7 relative. Later bounds and every
        # parameter agree to the usual tolerances.
        offset, rtol = -np.log(3 / len(blobs)), 1e-6
    ours = mixle.GaussianMixture(**params).fit(blobs)
    theirs = SklearnGaussianMixture(**params).fit(blobs)
    assert_same_fit(ours, theirs, blobs, first_bound_offset=offset, first_bound_rtol=rtol)


@pytest.mark.parametrize("covariance_type", ["full", "tied", "diag", "spherical"])
def test_restarts_keep_the_same_best_fit(overlapping, covariance_type):
    # K = 4 on three overlapping clusters: the restarts end in different local optima, and both
    # libraries must keep the same one (the restarts draw from one random state, in turn).
    params = dict(n_components=4, covariance_type=covariance_type, random_state=3, tol=1e-5, max_iter=500, n_init=4)
    ours = mixle.GaussianMixture(**params).fit(overlapping)
    assert_same_fit(ours, SklearnGaussianMixture(**params).fit(overlapping), overlapping)
    if covariance_type != "tied":  # tied: the first start reaches the best optimum on these data
        first = mixle.GaussianMixture(**dict(params, n_init=1)).fit(overlapping)
        assert ours.lower_bound_ - first.lower_bound_ > 1e-5, "the best restart should not be the first one here"


@pytest.mark.parametrize("covariance_type", ["full", "tied", "diag", "spherical"])
def test_same_initial_parameters_same_model(overlapping, covariance_type):
    # Overlapping clusters, so EM takes many steps; every initial parameter given.
    X = overlapping
    rng = np.random.default_rng(3)
    K, D = 3, X.shape[1]
    means = X[rng.choice(len(X), K, replace=False)]
    precisions = np.stack([np.eye(D) * (0.5 + k) for k in range(K)])
    if covariance_type == "diag":
        precisions = precisions[:, np.arange(D), np.arange(D)]
    if covariance_type == "spherical":
        precisions = precisions[:, 0, 0]
    if covariance_type == "tied":
        precisions = precisions[1]
    params = dict(n_components=K, covariance_type=covariance_type, weights_init=[0.2, 0.3, 0.5], means_init=means,
                  precisions_init=precisions, tol=1e-9, max_iter=1000)
    ours = mixle.GaussianMixture(**params).fit(X)
    theirs = SklearnGaussianMixture(**params).fit(X)
    assert ours.n_iter_ > 20, "the case should exercise many EM steps"
    assert_same_fit(ours, theirs, X)


def test_not_converged_warns_and_max_iter_zero_keeps_the_initial_parameters(blobs):
    with pytest.warns(ConvergenceWarning):
        gm = mixle.GaussianMixture(3, max_iter=1, tol=0, random_state=0).fit(blobs)
    assert gm.n_iter_ == 1 and not gm.converged_
    params = dict(n_components=3, max_iter=0, random_state=0)
    ours = mixle.GaussianMixture(**params).fit(blobs)
    theirs = SklearnGaussianMixture(**params).fit(blobs)
    assert ours.n_iter_ == theirs.n_iter_ == 0
    np.testing.assert_allclose(ours.means_, theirs.means_, rtol=TOL)
    np.testing.assert_allclose(ours.covariances_, theirs.covariances_, rtol=TOL, atol=TOL)


def test_warm_start_continues_from_the_previous_fit(overlapping):
    gm = mixle.GaussianMixture(3, warm_start=True, max_iter=2, tol=0, random_state=0)
    with pytest.warns(ConvergenceWarning):
        gm.fit(overlapping)
    first = gm.means_.copy()
    with pytest.warns(ConvergenceWarning):
        gm.fit(overlapping)
    cold = mixle.GaussianMixture(3, max_iter=4, tol=0, random_state=0)
    with pytest.warns(ConvergenceWarning):
        cold.fit(overlapping)
    assert np.abs(first - gm.means_).max() > 1e-3
    np.testing.assert_allclose(gm.means_, cold.means_, rtol=1e-9)


def test_native_initialisation_fits_the_clusters(blobs):
    gm = mixle.GaussianMixture(3, init_params="native", n_init=2, random_state=0).fit(blobs)
    assert gm.converged_
    order = np.argsort(gm.means_[:, 0])
    np.testing.assert_allclose(gm.means_[order].mean(axis=1), [0, 4, 8], atol=0.1)
    np.testing.assert_allclose(np.sort(gm.weights_), [1 / 3] * 3, atol=0.02)


def test_fp32_is_close_to_fp64(blobs):
    a = mixle.GaussianMixture(3, random_state=0, precision="fp32").fit(blobs)
    b = mixle.GaussianMixture(3, random_state=0).fit(blobs)
    np.testing.assert_allclose(a.means_, b.means_, atol=1e-3)


def test_sample_draws_from_the_model_and_repeats_for_a_seed(blobs):
    gm = mixle.GaussianMixture(3, random_state=5).fit(blobs)
    X, y = gm.sample(30000)
    assert X.shape == (30000, 5) and y.shape == (30000,)
    assert np.all(np.diff(y) >= 0), "grouped by component, as scikit-learn returns them"
    for k in range(3):
        np.testing.assert_allclose(X[y == k].mean(axis=0), gm.means_[k], atol=0.1)
        np.testing.assert_allclose(np.mean(y == k), gm.weights_[k], atol=0.02)
    X2, y2 = gm.sample(30000)
    np.testing.assert_array_equal(X, X2)
    with pytest.raises(ValueError, match="n_samples"):
        gm.sample(0)


@pytest.mark.parametrize(
    "params, message",
    [
        (dict(covariance_type="tied", precisions_init=np.ones((2, 5, 5))), r"expected \(5, 5\) for 'tied'"),
        (dict(covariance_type="spherical", precisions_init=np.ones((2, 5))), r"expected \(2,\) for 'spherical'"),
        (dict(covariance_type="banana"), "covariance_type"),
        (dict(init_params="nope"), "init_params"),
        (dict(tol=-1.0), "tol"),
        (dict(n_init=0), "n_init"),
        (dict(weights_init=[0.5, 0.6]), "weights_init"),
        (dict(means_init=np.zeros((2, 3))), r"means_init: shape \(2, 3\), expected \(2, 5\)"),
        (dict(precisions_init=np.ones((2, 5))), "precisions_init"),
    ],
)
def test_bad_parameters_are_named(blobs, params, message):
    with pytest.raises(ValueError, match=message):
        mixle.GaussianMixture(2, **params).fit(blobs)


def test_more_components_than_rows_is_refused():
    with pytest.raises(ValueError, match="n_samples >= n_components"):
        mixle.GaussianMixture(5).fit(np.ones((3, 2)))


@pytest.mark.parametrize("covariance_type", ["full", "tied", "diag", "spherical"])
def test_native_initialisation_takes_the_parameters_given_in_part(blobs, covariance_type):
    # means_init alone (or with weights_init) replaces the engine's k-means++ draws of them, in
    # every restart: the components come out in the order of the given means.
    centres = np.array([[8.0] * 5, [0.0] * 5, [4.0] * 5])
    for means in (centres, centres[::-1]):
        gm = mixle.GaussianMixture(3, covariance_type=covariance_type, init_params="native", n_init=2,
                                   means_init=means, weights_init=[0.2, 0.3, 0.5], random_state=1).fit(blobs)
        np.testing.assert_allclose(gm.means_.mean(axis=1), means[:, 0], atol=0.1)
