import numpy as np
import pytest


@pytest.fixture(scope="session")
def blobs():
    """9000 rows of three well separated 5-D Gaussian clusters (fixed seed)."""
    rng = np.random.default_rng(0)
    scales = np.array([1.0, 0.5, 2.0])
    return np.vstack([rng.normal(size=(3000, 5)) * s + 4 * i for i, s in enumerate(scales)])


@pytest.fixture(scope="session")
def overlapping():
    """6000 rows of three overlapping 4-D Gaussian clusters: EM takes many steps (fixed seed)."""
    rng = np.random.default_rng(3)
    return np.vstack([rng.normal(size=(2000, 4)) + 1.2 * i for i in range(3)])


@pytest.fixture(scope="session")
def rows():
    """9000 rows of three 3-D Gaussian clusters with unequal spreads (fixed seed): the cluster
    tests' data (Dask, Spark)."""
    rng = np.random.default_rng(4)
    centres = np.array([[0.0, 0.0, 0.0], [4.0, 1.0, -2.0], [1.0, 5.0, 3.0]])
    labels = rng.integers(0, 3, size=9000)
    return centres[labels] + rng.normal(size=(9000, 3)) * np.array([1.0, 0.7, 1.3])


def _given_start(X, covariance_type="full"):
    precisions = {"full": np.stack([np.eye(3)] * 3), "tied": np.eye(3), "diag": np.ones((3, 3)),
                  "spherical": np.ones(3)}
    rng = np.random.default_rng(1)
    return dict(weights_init=[0.3, 0.3, 0.4], means_init=X[rng.choice(len(X), 3, replace=False)],
                precisions_init=precisions[covariance_type])


@pytest.fixture(scope="session")
def given_start():
    """given_start(X, covariance_type="full"): initial weights, means and precisions of a K = 3
    model over X's 3 columns that need no data draws, so a cluster fit and a one-process fit
    start from the same model."""
    return _given_start
