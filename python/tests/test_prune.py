"""Exact pruning from Python: prune="auto" (the default) and prune="off" fit the same bits, and a
prune value the engine does not know is refused by name."""
import numpy as np
import pytest

import mixle


def separated_blobs(seed=0, k=12, d=16, n=3000):
    rng = np.random.default_rng(seed)
    means = 4.0 * rng.normal(size=(k, d))
    scales = rng.uniform(0.5, 1.5, size=(k, d))
    labels = rng.integers(0, k, size=n)
    return means[labels] + scales[labels] * rng.normal(size=(n, d)), means


@pytest.mark.parametrize("covariance_type", ["diag", "spherical"])
@pytest.mark.parametrize("precision", ["fp32", "fp64"])
def test_auto_and_off_fit_the_same_bits(covariance_type, precision):
    X, means = separated_blobs()
    fits = []
    for prune in ("auto", "off"):
        gm = mixle.GaussianMixture(12, covariance_type=covariance_type, precision=precision, prune=prune,
                                   means_init=means, max_iter=8, tol=0.0, random_state=1)
        fits.append(gm.fit(X))
    auto, off = fits
    assert np.array_equal(auto.means_, off.means_)
    assert np.array_equal(auto.covariances_, off.covariances_)
    assert np.array_equal(auto.weights_, off.weights_)
    assert auto.lower_bound_ == off.lower_bound_


def test_an_unknown_prune_is_refused_by_name():
    X, _ = separated_blobs(n=300)
    with pytest.raises(Exception, match="sometimes"):
        mixle.GaussianMixture(3, covariance_type="diag", prune="sometimes").fit(X)
