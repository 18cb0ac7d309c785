"""Distributed fits from Python with real processes on 127.0.0.1: each rank passes its own rows,
and every rank ends with the model a one-process fit of all rows gives. The ranks are started
as torchrun starts them (RANK, WORLD_SIZE, MASTER_ADDR/PORT, …); `mixle launch` sets the same."""

import json
import os
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import mixle

RANK_SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    import numpy as np
    import mixle

    data, out, kind, first = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    X = np.load(data)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    out = out.replace("{rank}", str(rank))
    cut = int(first * len(X))
    bounds = [0, cut] + [cut + (len(X) - cut) * r // (world - 1) for r in range(1, world)]
    mine = X[bounds[rank]:bounds[rank + 1]]
    weights = (np.arange(len(X)) % 4.0)[bounds[rank]:bounds[rank + 1]] if kind == "weighted" else None
    common = dict(max_iter=25, tol=0.0, random_state=3, distributed={"timeout": 60})
    if kind in ("gaussian", "weighted"):
        # weighted: one start (two restarts of these weights reach one optimum, in two component
        # orders, whose bounds tie to rounding — which one is kept would be rounding's choice)
        n_init = 1 if kind == "weighted" else 2
        est = mixle.GaussianMixture(3, covariance_type="full", init_params="native", n_init=n_init, **common)
    else:
        est = mixle.MixtureModel(3, layout="gaussian_diag:0-2,poisson:2-3", **common)
    import warnings
    warnings.simplefilter("ignore")
    est.fit(mine, sample_weight=weights)
    with open(out, "w") as f:
        json.dump({"model": json.loads(est.to_json()), "where": est.distributed_,
                   "labels": est.predict(mine).tolist() if len(mine) else []}, f)
    """
)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(tmp_path, data, kind, world, first_share):
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    port = str(free_port())
    procs = []
    for r in range(world):
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=port, TORCHELASTIC_RUN_ID=f"py-{kind}-{port}",
                   TORCHELASTIC_USE_AGENT_STORE="False")
        out = tmp_path / f"{kind}{world}-rank{r}.json"
        procs.append((subprocess.Popen([sys.executable, str(script), str(data), str(out), kind, str(first_share)],
                                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True), out))
    results = []
    for p, out in procs:
        text, _ = p.communicate(timeout=240)
        assert p.returncode == 0, text
        results.append(json.loads(out.read_text()))
    return results


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(8)
    centres = np.array([[0, 0, 2], [4, 1, 6], [1, 5, 12]], dtype=float)
    labels = rng.integers(0, 3, size=6000)
    X = centres[labels] + np.c_[rng.normal(size=(6000, 2)), np.zeros(6000)]
    X[:, 2] = rng.poisson(centres[labels, 2])
    path = tmp_path_factory.mktemp("data") / "X.npy"
    np.save(path, X)
    return path, X


@pytest.mark.parametrize("kind, world, first_share", [("gaussian", 2, 0.5), ("gaussian", 3, 0.1),
                                                      ("mixture", 2, 0.0), ("weighted", 3, 0.3)])
def test_every_rank_gets_the_one_process_model(tmp_path, data, kind, world, first_share):
    # "weighted": each rank passes its rows' sample weights (0 … 3) with its rows.
    path, X = data
    results = run_ranks(tmp_path, path, kind, world, first_share)
    if kind in ("gaussian", "weighted"):
        one = mixle.GaussianMixture(3, covariance_type="full", init_params="native",
                                    n_init=1 if kind == "weighted" else 2, max_iter=25, tol=0.0, random_state=3)
    else:
        one = mixle.MixtureModel(3, layout="gaussian_diag:0-2,poisson:2-3", max_iter=25, tol=0.0, random_state=3)
    with pytest.warns(Warning):
        one.fit(X, sample_weight=np.arange(len(X)) % 4.0 if kind == "weighted" else None)
    reference = json.loads(one.to_json())
    first_rows = 0
    for r, res in enumerate(results):
        where = res["where"]
        assert (where["rank"], where["world_size"], where["comm"], where["device"]) == (r, world, "gloo", "cpu")
        assert where["first_row"] == first_rows
        first_rows += where["local_rows"]
        assert res["model"] == results[0]["model"], "every rank ends with the same model"
        assert len(res["labels"]) == where["local_rows"]
    assert first_rows == len(X)
    ours = mixle.Model.from_json(json.dumps(results[0]["model"]))
    theirs = mixle.Model.from_json(json.dumps(reference))
    np.testing.assert_allclose(ours.weights, theirs.weights, rtol=1e-9)
    for a, b in zip(ours.parts, theirs.parts):
        for key, value in a.items():
            if isinstance(value, np.ndarray):
                np.testing.assert_allclose(value, b[key], rtol=1e-9, err_msg=key)


def mixle_cli():
    """The mixle command-line program: MIXLE_CLI (scripts/test-python sets it), else `mixle` on
    PATH. Without one the test skips, visibly — and fails under MIXLE_REQUIRE_TOOLS=1."""
    import shutil

    cli = os.environ.get("MIXLE_CLI") or shutil.which("mixle")
    if not cli:
        message = "no mixle program (set MIXLE_CLI or put mixle on PATH)"
        if os.environ.get("MIXLE_REQUIRE_TOOLS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return cli


def test_mixle_launch_runs_a_python_script_on_every_rank(tmp_path, data):
    path, X = data
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    out = tmp_path / "launched-{rank}.json"
    p = subprocess.run([mixle_cli(), "launch", "--nproc", "2", "--", sys.executable, str(script), str(path), str(out),
                        "gaussian", "0.5"], capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    results = [json.loads((tmp_path / f"launched-{r}.json").read_text()) for r in range(2)]
    assert [r["where"]["rank"] for r in results] == [0, 1]
    assert results[0]["model"] == results[1]["model"]
    one = mixle.GaussianMixture(3, covariance_type="full", init_params="native", n_init=2, max_iter=25, tol=0.0,
                                random_state=3)
    with pytest.warns(Warning):
        one.fit(X)
    ours = mixle.Model.from_json(json.dumps(results[0]["model"]))
    theirs = mixle.Model.from_json(one.to_json())
    np.testing.assert_allclose(ours.parts[0]["cov"], theirs.parts[0]["cov"], rtol=1e-9)
    np.testing.assert_allclose(ours.parts[0]["mean"], theirs.parts[0]["mean"], rtol=1e-9)


def test_distributed_needs_an_initialisation_over_every_rank(data):
    _, X = data
    with pytest.raises(ValueError, match="init_params='native'"):
        mixle.GaussianMixture(3, distributed=True).fit(X)
    with pytest.raises(ValueError, match="unknown option 'bogus'"):
        mixle.GaussianMixture(3, init_params="native", distributed={"bogus": 1}).fit(X)


def test_one_process_alone_fits_all_its_rows(data):
    _, X = data
    gm = mixle.GaussianMixture(3, init_params="native", distributed=True, random_state=0).fit(X)
    assert gm.distributed_["world_size"] == 1 and gm.distributed_["local_rows"] == len(X)
    np.testing.assert_allclose(
        gm.means_, mixle.GaussianMixture(3, init_params="native", random_state=0).fit(X).means_, rtol=1e-9
    )
