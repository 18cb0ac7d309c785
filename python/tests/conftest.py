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
