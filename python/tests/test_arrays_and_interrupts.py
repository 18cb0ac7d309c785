"""Arrays are fitted in place; progress, errors and Ctrl-C cross the binding intact."""

import os
import signal
import threading
import tracemalloc

import numpy as np
import pytest

import mixle
from mixle import _core


def test_a_contiguous_array_is_not_copied():
    X = np.random.default_rng(0).normal(size=(400_000, 16)).astype(np.float32)  # 25.6 MB
    tracemalloc.start()
    try:
        mixle.GaussianMixture(2, covariance_type="diag", init_params="native", max_iter=3, tol=0,
                              precision="fp32").fit(X)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < X.nbytes / 4, f"numpy allocated {peak} bytes for a {X.nbytes}-byte input"


def test_other_layouts_and_types_are_converted():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 3))
    reference = mixle.GaussianMixture(2, random_state=0).fit(X).means_
    for variant in (np.asfortranarray(X), X.astype(np.float64)[:, :], X.tolist()):
        np.testing.assert_allclose(mixle.GaussianMixture(2, random_state=0).fit(variant).means_, reference)
    readonly = X.copy()
    readonly.setflags(write=False)
    np.testing.assert_allclose(mixle.GaussianMixture(2, random_state=0).fit(readonly).means_, reference)
    counts = rng.poisson(3.0, size=(3000, 2))  # int64
    gm = mixle.MixtureModel(1, layout="poisson", random_state=0).fit(counts)
    np.testing.assert_allclose(gm.parts_[0]["rate"][0], counts.mean(axis=0), rtol=1e-9)


def test_the_progress_callback_sees_every_iteration_and_its_errors_propagate():
    X = np.random.default_rng(2).normal(size=(2000, 2))
    seen = []
    _core.fit(X, progress=seen.append, components=2, max_iter=5, tol=0.0, seed=1)
    assert [p["iteration"] for p in seen] == [1, 2, 3, 4, 5]

    def stop(p):
        if p["iteration"] == 2:
            raise LookupError("stopped by the callback")

    with pytest.raises(LookupError, match="stopped by the callback"):
        _core.fit(X, progress=stop, components=2, max_iter=50, tol=0.0, seed=1)


def test_ctrl_c_stops_a_fit_with_keyboard_interrupt():
    X = np.random.default_rng(3).normal(size=(200_000, 8))
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            _core.fit(X, components=8, max_iter=100_000, tol=0.0, seed=1, threads=1)
    finally:
        timer.cancel()


def test_verbose_reports_like_scikit_learn(capsys):
    X = np.random.default_rng(4).normal(size=(2000, 2))
    with pytest.warns(Warning):
        mixle.GaussianMixture(2, verbose=2, verbose_interval=2, max_iter=4, tol=0, random_state=0).fit(X)
    out = capsys.readouterr().out
    assert "Initialization 0" in out
    assert "  Iteration 2\t time lapse" in out and "  Iteration 4\t" in out and "  Iteration 3" not in out
    assert "Initialization did not converge." in out


def test_cuda_without_a_gpu_is_named():
    # A CPU-only build says CUDA is not compiled (NotImplementedError); a CUDA build on a machine
    # without a GPU says the device does not exist (ValueError). Both name CUDA.
    X = np.random.default_rng(5).normal(size=(100, 2))
    with pytest.raises((NotImplementedError, ValueError), match="(?i)cuda"):
        mixle.GaussianMixture(1, device="cuda").fit(X)


def test_other_python_threads_run_while_the_engine_fits():
    X = np.random.default_rng(6).normal(size=(200_000, 8))
    done = threading.Event()

    def fit():
        try:
            _core.fit(X, components=8, max_iter=40, tol=0.0, seed=1, threads=1)
        finally:
            done.set()

    worker = threading.Thread(target=fit)
    worker.start()
    spins = 0
    while not done.is_set():
        spins += 1
    worker.join()
    # Had the fit held the GIL, this loop would have run for one switch interval (5 ms, a few
    # hundred thousand spins) at most; the fit takes about a second.
    assert spins > 2_000_000
