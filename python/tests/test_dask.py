"""mixle.dask with a real distributed.LocalCluster (3 worker processes on 127.0.0.1): fits of dask
arrays equal one-process fits of the same rows from the same initial model; empty blocks, a
worker without rows and concurrent fits work; queries return dask arrays."""

import os
import threading

import numpy as np
import pytest

try:
    import dask.array as da
    import distributed
except ImportError:  # visible, and a failure under MIXLE_REQUIRE_TOOLS=1 (scripts/test-python)
    if os.environ.get("MIXLE_REQUIRE_TOOLS") == "1":
        raise
    pytest.skip("mixle.dask needs dask and distributed (python/requirements-test.txt)", allow_module_level=True)

import mixle  # noqa: E402
import mixle.dask  # noqa: E402

RTOL = 1e-9  # the statistics are summed per rank, then across ranks: rounding only


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True, dashboard_address=None,
                                       host="127.0.0.1")
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def assert_same(a, b):
    assert a.n_iter_ == b.n_iter_
    np.testing.assert_allclose(a.weights_, b.weights_, rtol=RTOL)
    np.testing.assert_allclose(a.means_, b.means_, rtol=RTOL)
    np.testing.assert_allclose(a.covariances_, b.covariances_, rtol=RTOL)
    np.testing.assert_allclose(a.lower_bound_, b.lower_bound_, rtol=RTOL)


def test_a_dask_array_fit_equals_the_one_process_fit(client, rows, given_start):
    X = da.from_array(rows, chunks=(1000, 3))
    params = dict(covariance_type="full", tol=1e-6, max_iter=300, **given_start(rows))
    ours = mixle.dask.GaussianMixture(3, client=client, **params).fit(X)
    assert_same(ours, mixle.GaussianMixture(3, **params).fit(rows))
    assert ours.distributed_["world_size"] == len(ours.distributed_["workers"]) >= 2
    assert sum(ours.distributed_["rows_per_rank"]) == len(rows)
    assert ours.distributed_["comm"] == "gloo"
    # Queries run block by block and stay dask arrays.
    labels = ours.predict(X)
    assert isinstance(labels, da.Array)
    np.testing.assert_array_equal(labels.compute(), ours.predict(rows))
    np.testing.assert_allclose(ours.predict_proba(X).compute(), ours.predict_proba(rows), atol=1e-12)
    np.testing.assert_allclose(ours.score(X), ours.score(rows), rtol=1e-12)


def test_tied_covariance_on_the_cluster(client, rows, given_start):
    X = da.from_array(rows, chunks=(2500, 3))
    params = dict(covariance_type="tied", tol=1e-8, max_iter=200, **given_start(rows, "tied"))
    ours = mixle.dask.GaussianMixture(3, client=client, **params).fit(X)
    assert ours.covariances_.shape == (3, 3)
    assert_same(ours, mixle.GaussianMixture(3, **params).fit(rows))


def test_an_empty_block_and_a_worker_without_rows(client, rows, given_start):
    workers = sorted(client.scheduler_info()["workers"])
    X = da.from_array(rows, chunks=((3000, 0, 3000, 3000), (3,)))
    X = client.persist(X, workers=workers[:2])  # the third worker holds nothing: not a rank
    params = dict(covariance_type="diag", tol=1e-8, max_iter=200, **given_start(rows, "diag"))
    ours = mixle.dask.GaussianMixture(3, client=client, **params).fit(X)
    assert ours.distributed_["world_size"] <= 2
    assert workers[2] not in ours.distributed_["workers"]
    assert_same(ours, mixle.GaussianMixture(3, **params).fit(rows))


def test_native_initialisation_repeats_for_a_seed(client, rows):
    # Reproducible for a seed and a cluster layout: persisted once, the blocks stay put for both.
    X = client.persist(da.from_array(rows, chunks=(1500, 3)))
    distributed.wait(X)
    a = mixle.dask.GaussianMixture(3, init_params="native", random_state=7, client=client).fit(X)
    b = mixle.dask.GaussianMixture(3, init_params="native", random_state=7, client=client).fit(X)
    np.testing.assert_array_equal(a.means_, b.means_)
    order = np.argsort(a.means_[:, 0])
    np.testing.assert_allclose(a.means_[order, 0], [0, 1, 4], atol=0.1)


def test_mixture_model_and_concurrent_fits(client, rows):
    X = da.from_array(rows, chunks=(1000, 3))
    results = {}

    def fit(name, layout):
        results[name] = mixle.dask.MixtureModel(3, layout=layout, random_state=0, client=client).fit(X)

    threads = [threading.Thread(target=fit, args=(n, layout)) for n, layout in
               (("diag", "gaussian_diag"), ("spherical", "gaussian_spherical"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert set(results) == {"diag", "spherical"}, "both concurrent fits finish"
    for name, est in results.items():
        assert est.converged_, name
        assert [p["family"] for p in est.parts_] == [f"gaussian_{name}"]


def test_refuses_initialisations_that_read_one_worker(client, rows):
    X = da.from_array(rows, chunks=(3000, 3))
    with pytest.raises(ValueError, match="init_params='native'"):
        mixle.dask.GaussianMixture(3, client=client).fit(X)
    with pytest.raises(TypeError, match="dask array"):
        mixle.dask.GaussianMixture(3, init_params="native", client=client).fit(rows)


def test_a_worker_killed_mid_fit_fails_the_fit_in_bounded_time(rows):
    # A cluster of its own: one of its workers dies.
    import signal
    import time

    cluster = distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True, dashboard_address=None,
                                       host="127.0.0.1")
    try:
        with distributed.Client(cluster) as c:
            big = np.tile(rows, (20, 1))  # 180,000 rows: long enough to be killed while fitting
            X = da.from_array(big, chunks=(20000, 3))
            gm = mixle.dask.GaussianMixture(3, init_params="native", max_iter=100000, tol=0.0, client=c,
                                            distributed={"timeout": 10})
            errors = []

            def fit():
                try:
                    gm.fit(X)
                except Exception as e:  # noqa: BLE001 - the test inspects it
                    errors.append(e)

            t = threading.Thread(target=fit)
            t.start()
            # Wait until the rank tasks run, then kill the worker running rank 1.
            victim, deadline = None, time.monotonic() + 60
            while victim is None and time.monotonic() < deadline:
                for worker, keys in c.processing().items():
                    if any("-rank1" in str(k) for k in keys):
                        victim = worker
                time.sleep(0.05)
            assert victim is not None, "the fit's tasks never started"
            time.sleep(1.0)  # well inside EM
            pid = c.run(os.getpid, workers=[victim])[victim]
            killed_at = time.monotonic()
            os.kill(pid, signal.SIGKILL)
            t.join(timeout=120)
            assert not t.is_alive(), "the fit hung after a worker was killed"
            assert time.monotonic() - killed_at < 10 + 60, "failed within the timeout plus a bound"
            assert len(errors) == 1, "one exception reaches the client"
            assert "rank" in str(errors[0]).lower() or "lost" in str(errors[0]).lower(), errors[0]
    finally:
        cluster.close()


def test_a_dask_dataframe_is_fitted_through_its_values(client, rows, given_start):
    import dask.dataframe as dd
    import pandas as pd

    frame = dd.from_pandas(pd.DataFrame(rows, columns=["a", "b", "c"]), npartitions=4)
    params = dict(covariance_type="diag", tol=1e-6, max_iter=300, **given_start(rows, "diag"))
    ours = mixle.dask.GaussianMixture(3, client=client, **params).fit(frame)
    assert_same(ours, mixle.GaussianMixture(3, **params).fit(rows))
    assert sum(ours.distributed_["rows_per_rank"]) == len(rows)
    np.testing.assert_array_equal(ours.predict(frame).compute(), ours.predict(rows))


def test_sample_weights_travel_with_their_rows(client, rows, given_start):
    # A dask array of weights chunked unlike X, and a dask Series beside a dask DataFrame: both
    # give the one-process weighted fit; the weights change the fit.
    import dask.dataframe as dd
    import pandas as pd

    w = (np.arange(len(rows)) * 5 + 1) % 4.0
    params = dict(covariance_type="diag", tol=1e-8, max_iter=200, **given_start(rows, "diag"))
    one = mixle.GaussianMixture(3, **params).fit(rows, sample_weight=w)
    X = da.from_array(rows, chunks=(1500, 3))
    ours = mixle.dask.GaussianMixture(3, client=client, **params).fit(X, sample_weight=da.from_array(w, chunks=2000))
    assert_same(ours, one)
    assert ours.n_features_in_ == 3
    frame = dd.from_pandas(pd.DataFrame(rows, columns=["a", "b", "c"]).assign(w=w), npartitions=3)
    # From one starting model (warm_start): the engine's k-means++ keys its sample by the ranks'
    # row order, which is the cluster's, not the array's.
    start = mixle.MixtureModel(3, layout="gaussian_diag:0-3", max_iter=2, random_state=2).fit(rows)._model
    common = dict(layout="gaussian_diag:0-3", tol=0.0, max_iter=5, warm_start=True)
    mm = mixle.dask.MixtureModel(3, client=client, **common)
    local = mixle.MixtureModel(3, **common)
    mm._model = local._model = start
    mm.fit(frame[["a", "b", "c"]], sample_weight=frame["w"])
    local.fit(rows, sample_weight=w)
    np.testing.assert_allclose(mm.weights_, local.weights_, rtol=RTOL)
    np.testing.assert_allclose(mm.parts_[0]["mean"], local.parts_[0]["mean"], rtol=RTOL)
    assert not np.allclose(one.means_, mixle.GaussianMixture(3, **params).fit(rows).means_, rtol=1e-6)
    with pytest.raises(ValueError, match="sample_weight: shape"):
        mixle.dask.GaussianMixture(3, client=client, **params).fit(X, sample_weight=np.ones(7))
