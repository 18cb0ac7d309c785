"""sample_weight: a row of integer weight w counts as w copies of it, in EM and in every
initialisation; rows of weight 0 never start a component; bad weights are clear errors."""

import numpy as np
import pytest

import mixle


@pytest.fixture(scope="module")
def weighted():
    rng = np.random.default_rng(5)
    X = np.vstack([rng.normal(size=(400, 3)) * s + 5 * i for i, s in enumerate([1.0, 0.6, 1.5])])
    w = (np.arange(len(X)) * 7 + 3) % 4  # 0 … 3
    return X, w.astype(np.float64), np.repeat(X, w, axis=0)


def initial_parameters(X, covariance_type):
    means = X[[10, 500, 900]]
    precisions = {"full": np.stack([np.eye(3)] * 3), "tied": np.eye(3), "diag": np.ones((3, 3)),
                  "spherical": np.ones(3)}
    return dict(weights_init=[0.3, 0.3, 0.4], means_init=means, precisions_init=precisions[covariance_type])


@pytest.mark.parametrize("covariance_type", ["full", "tied", "diag", "spherical"])
def test_integer_weights_equal_repeated_rows(weighted, covariance_type):
    X, w, repeated = weighted
    params = dict(n_components=3, covariance_type=covariance_type, tol=0.0, max_iter=15, precision="fp64",
                  **initial_parameters(X, covariance_type))
    ours = mixle.GaussianMixture(**params).fit(X, sample_weight=w)
    copies = mixle.GaussianMixture(**params).fit(repeated)
    for name in ("weights_", "means_", "covariances_"):
        np.testing.assert_allclose(getattr(ours, name), getattr(copies, name), rtol=1e-10, err_msg=name)
    np.testing.assert_allclose(ours.lower_bounds_, copies.lower_bounds_, rtol=1e-12)
    unweighted = mixle.GaussianMixture(**params).fit(X)
    assert not np.allclose(unweighted.means_, ours.means_, rtol=1e-6), "the weights changed nothing"


def test_mixture_model_weights_equal_repeated_rows(weighted):
    X, w, repeated = weighted
    start = mixle.MixtureModel(3, layout="gaussian_diag:0-3", max_iter=2, random_state=1, precision="fp64").fit(X)
    fits = []
    for data, weights in ((X, w), (repeated, None)):
        est = mixle.MixtureModel(3, layout="gaussian_diag:0-3", max_iter=10, tol=0.0, precision="fp64",
                                 warm_start=True)
        est._model = start._model  # the same starting model for both
        fits.append(est.fit(data, sample_weight=weights))
    np.testing.assert_allclose(fits[0].weights_, fits[1].weights_, rtol=1e-10)
    for key in ("mean", "var"):
        np.testing.assert_allclose(fits[0].parts_[0][key], fits[1].parts_[0][key], rtol=1e-10, err_msg=key)
    np.testing.assert_allclose(fits[0].lower_bounds_, fits[1].lower_bounds_, rtol=1e-12)


@pytest.mark.parametrize("init_params", ["native", "kmeans", "k-means++", "random_from_data"])
def test_rows_of_weight_zero_never_start_a_component(init_params):
    rng = np.random.default_rng(2)
    X = np.vstack([rng.normal(size=(500, 2)) - 5, rng.normal(size=(500, 2)) + 5, rng.normal(size=(30, 2)) + 1e6])
    w = np.r_[np.ones(1000), np.zeros(30)]
    for seed in range(3):
        gm = mixle.GaussianMixture(2, init_params=init_params, random_state=seed, precision="fp64")
        gm.fit(X, sample_weight=w)
        assert np.all(np.abs(gm.means_) < 20), (init_params, seed, gm.means_)


def test_bad_weights_are_clear_errors(weighted):
    X, w, _ = weighted
    gm = mixle.GaussianMixture(2)
    with pytest.raises(ValueError, match=r"sample_weight: shape \(5,\), expected \(1200,\)"):
        gm.fit(X, sample_weight=np.ones(5))
    bad = np.ones(len(X))
    bad[41] = -1.0
    with pytest.raises(ValueError, match=r"sample_weight: row 41 \(counted from 0\) has weight -1.0"):
        gm.fit(X, sample_weight=bad)
    bad[41] = np.nan
    with pytest.raises(ValueError, match=r"row 41 \(counted from 0\)"):
        mixle.MixtureModel(2, layout="gaussian_diag:0-3").fit(X, sample_weight=bad)
    with pytest.raises(ValueError, match="sample_weight: all weights are zero"):
        gm.fit(X, sample_weight=np.zeros(len(X)))
