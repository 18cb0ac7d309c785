"""The Ray recipe of docs/python.md ("Ray (a recipe)"), run as written on a local Ray (3 CPUs, no
dashboard): three ranks, each a Ray task in one placement group holding its own share of the rows,
fit to the one-process model from the same initial model. The recipe is read from the guide, so
the guide's code is what is tested."""

import os
import re
from pathlib import Path

import numpy as np
import pytest

try:
    import ray
except ImportError:  # visible, and a failure under MIXLE_REQUIRE_TOOLS=1 (scripts/test-python)
    if os.environ.get("MIXLE_REQUIRE_TOOLS") == "1":
        raise
    pytest.skip("the Ray recipe's test needs ray (python/requirements-test.txt)", allow_module_level=True)

import mixle  # noqa: E402

RTOL = 1e-9  # the statistics are summed per rank, then across ranks: rounding only
GUIDE = Path(__file__).resolve().parents[2] / "docs" / "python.md"


def recipe() -> dict:
    """The names the guide's Ray code block defines (Rendezvous, fit_rank, fit_on_ray). Executed
    under a module name that no worker can import, so Ray pickles its functions by value, as it
    does a user's script."""
    section = GUIDE.read_text().split("## Ray (a recipe)", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    names = {"__name__": "mixle_ray_recipe"}
    exec(compile(code, f"{GUIDE}:Ray", "exec"), names)
    return names


@pytest.fixture(scope="module")
def local_ray():
    # No dashboard, no usage reporting: nothing reaches outside this machine.
    before = os.environ.get("RAY_USAGE_STATS_ENABLED")
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()
    if before is None:
        del os.environ["RAY_USAGE_STATS_ENABLED"]
    else:
        os.environ["RAY_USAGE_STATS_ENABLED"] = before


def assert_same(a, b):
    assert a.n_iter_ == b.n_iter_
    np.testing.assert_allclose(a.weights_, b.weights_, rtol=RTOL)
    np.testing.assert_allclose(a.means_, b.means_, rtol=RTOL)
    np.testing.assert_allclose(a.covariances_, b.covariances_, rtol=RTOL)
    np.testing.assert_allclose(a.lower_bound_, b.lower_bound_, rtol=RTOL)


def test_the_recipe_fits_from_three_ray_tasks_as_one_process(local_ray, rows, given_start):
    fit_on_ray = recipe()["fit_on_ray"]
    params = dict(n_components=3, covariance_type="full", tol=1e-6, max_iter=300, **given_start(rows))
    shares = [rows[:2000], rows[2000:6500], rows[6500:]]  # unequal shares, in rank order
    ours = fit_on_ray([ray.put(s) for s in shares], timeout=60.0, **params)
    assert_same(ours, mixle.GaussianMixture(**params).fit(rows))
    assert ours.distributed_["world_size"] == 3 and ours.distributed_["rank"] == 0
    assert ours.distributed_["comm"] == "gloo"
    assert ours.distributed_["local_rows"] == 2000
