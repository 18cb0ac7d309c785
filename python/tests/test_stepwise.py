"""Stepwise EM from Python: MixtureModel(batch_size=...) is the engine's stepwise fit (the CLI's
model bit for bit), partial_fit streams batches into one model, and bad controls are ValueErrors."""

import json
import os
import subprocess

import numpy as np
import pytest

import mixle

LAYOUT = "gaussian_diag:0-2,poisson:2-3"
TRUTH = {
    "format": "mixle-model",
    "version": 1,
    "weights": [0.5, 0.5],
    "parts": [
        {"family": "gaussian_diag", "columns": [0, 2], "mean": [[0, 0], [3, 3]], "var": [[1, 1], [1, 2]]},
        {"family": "poisson", "columns": [2, 3], "rate": [[2], [7]]},
    ],
}


def rows(n=3000, seed=3):
    truth = mixle.MixtureModel.from_json(json.dumps(TRUTH))
    X, _ = truth.sample(n)
    return np.random.default_rng(seed).permutation(X)


def test_a_batch_size_fits_what_the_command_line_fits(tmp_path):
    X = rows()
    params = dict(n_components=2, layout=LAYOUT, precision="fp64", random_state=3, batch_size=300, epochs=3,
                  shuffle=True, step_decay=0.8, step_offset=1.0, tol=0.0)
    with pytest.warns(Warning):  # three epochs, no convergence test
        est = mixle.MixtureModel(**params).fit(X)
    assert est.n_iter_ == 3 and len(est.lower_bounds_) == 3
    np.save(tmp_path / "x.npy", X)
    cli = os.environ.get("MIXLE_CLI", "mixle")
    subprocess.run([cli, "fit", "--data", str(tmp_path / "x.npy"), "--layout", LAYOUT, "-k", "2", "--seed", "3",
                    "--precision", "fp64", "--batch-size", "300", "--epochs", "3", "--shuffle", "--step-decay", "0.8",
                    "--step-offset", "1", "--tol", "0", "--quiet", "--out", str(tmp_path / "m.json")],
                   check=True, capture_output=True)
    assert json.loads(est.to_json()) == json.loads((tmp_path / "m.json").read_text())


def test_stepwise_lands_near_the_full_batch_optimum():
    X = rows(6000)
    full = mixle.MixtureModel(n_components=2, layout=LAYOUT, precision="fp64", random_state=1, tol=1e-9,
                              max_iter=500).fit(X)
    stepwise = mixle.MixtureModel(n_components=2, layout=LAYOUT, precision="fp64", random_state=1, batch_size=500,
                                  epochs=4, shuffle=True, tol=1e-9, full_batch_iterations=500).fit(X)
    assert stepwise.converged_
    assert stepwise.score(X) == pytest.approx(full.score(X), abs=1e-7)


def test_partial_fit_streams_batches_into_one_model():
    X = rows(4000)
    est = mixle.MixtureModel(n_components=2, layout=LAYOUT, precision="fp64", random_state=2)
    est.partial_fit(X[:500])  # fits the first batch to start, then folds it
    assert est.n_steps_ == 1
    first = est.score(X)
    for begin in range(500, 4000, 500):
        est.partial_fit(X[begin:begin + 500])
    assert est.n_steps_ == 8
    assert est.score(X) >= first - 1e-3
    full = mixle.MixtureModel(n_components=2, layout=LAYOUT, precision="fp64", random_state=2, tol=1e-9,
                              max_iter=500).fit(X)
    assert est.score(X) == pytest.approx(full.score(X), abs=2e-2)
    # fit starts a new model, and so a new stream
    est.fit(X[:100])
    assert est.n_steps_ == 0
    with pytest.raises(ValueError, match="features"):
        est.partial_fit(X[:10, :2])


def test_bad_stepwise_controls_are_value_errors():
    X = rows(200)
    for params, words in [
        (dict(batch_size=0), "batch_size = 0"),
        (dict(batch_size=50, step_decay=0.4), "step decay"),
        (dict(batch_size=50, epochs=0), "epochs 0"),
        (dict(batch_size=50, empty="reseed"), "reseed"),
    ]:
        with pytest.raises(ValueError, match=words):
            mixle.MixtureModel(n_components=2, layout=LAYOUT, **params).fit(X)
    with pytest.raises(ValueError, match="step decay"):
        mixle.MixtureModel(n_components=2, layout=LAYOUT, step_decay=1.5).partial_fit(X)
