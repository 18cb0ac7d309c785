"""mixle.MixtureModel: mixed records, the model format, pickling, errors."""

import json
import pickle

import numpy as np
import pytest

import mixle
from mixle import _core

TRUTH = """{"format":"mixle-model","version":1,"weights":[0.3,0.7],"parts":[
  {"family":"gaussian_diag","columns":[0,2],"mean":[[-3,0],[3,1]],"var":[[1,0.5],[0.5,1]]},
  {"family":"categorical","columns":[2,3],"categories":3,"prob":[[0.8,0.1,0.1],[0.1,0.1,0.8]]},
  {"family":"poisson","columns":[3,4],"rate":[[2],[9]]}]}"""


@pytest.fixture(scope="module")
def records():
    """20000 rows drawn from TRUTH and their components."""
    return _core.sample(mixle.Model.from_json(TRUTH), 20000, 11)


def fitted(records, layout):
    X, _ = records
    return mixle.MixtureModel(2, layout=layout, random_state=0, n_init=2).fit(X)


@pytest.mark.parametrize(
    "layout",
    [
        "gaussian_diag:0-2,categorical:2-3:3,poisson:3-4",
        [("gaussian_diag", 0, 2), ("categorical", 2, 3, 3), ("poisson", 3, 4)],
    ],
)
def test_recovers_a_mixed_mixture(records, layout):
    gm = fitted(records, layout)
    X, labels = records
    order = np.argsort(gm.parts_[0]["mean"][:, 0])
    np.testing.assert_allclose(gm.weights_[order], [0.3, 0.7], atol=0.02)
    np.testing.assert_allclose(gm.parts_[0]["mean"][order], [[-3, 0], [3, 1]], atol=0.05)
    np.testing.assert_allclose(gm.parts_[1]["prob"][order][:, 0, :], [[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]], atol=0.02)
    np.testing.assert_allclose(gm.parts_[2]["rate"][order][:, 0], [2, 9], rtol=0.03)
    agreement = np.mean(order[gm.predict(X)] == labels)
    assert max(agreement, 1 - agreement) > 0.99
    assert [p["family"] for p in gm.parts_] == ["gaussian_diag", "categorical", "poisson"]


def test_json_and_pickle_round_trips(records):
    X, _ = records
    gm = fitted(records, "gaussian_diag:0-2,categorical:2-3:3,poisson:3-4")
    again = mixle.MixtureModel.from_json(gm.to_json())
    np.testing.assert_array_equal(again.score_samples(X), gm.score_samples(X))
    unpickled = pickle.loads(pickle.dumps(gm))
    np.testing.assert_array_equal(unpickled.predict_proba(X), gm.predict_proba(X))
    assert unpickled.get_params() == gm.get_params()
    model = pickle.loads(pickle.dumps(gm._model))
    assert model.to_json() == gm._model.to_json()


def test_model_arrays_round_trip():
    model = mixle.Model.from_json(TRUTH)
    assert model.components == 2 and model.columns == 4
    rebuilt = mixle.Model.from_arrays(model.weights, model.parts)
    assert rebuilt.to_json() == model.to_json()
    parts = model.parts
    parts[0]["var"] = -parts[0]["var"]
    with pytest.raises(ValueError, match="var"):
        mixle.Model.from_arrays(model.weights, parts)
    with pytest.raises(ValueError, match="parts\\[1\\].prob: 3 values, expected 6"):
        mixle.Model.from_arrays(model.weights, [model.parts[0], dict(model.parts[1], prob=np.ones(3))])
    with pytest.raises(ValueError, match="unknown family 'gauss'"):
        mixle.Model.from_arrays(model.weights, [dict(model.parts[0], family="gauss")])


def test_every_family_is_listed():
    names = mixle.family_names()
    for family in ("gaussian_diag", "gaussian_full", "categorical", "poisson", "gamma", "lognormal"):
        assert family in names


@pytest.mark.parametrize("init", ["kmeans", "select"])
def test_every_engine_initialisation_recovers_the_mixture(records, init):
    X, labels = records
    gm = mixle.MixtureModel(2, layout="gaussian_diag:0-2,categorical:2-3:3,poisson:3-4", init=init, random_state=0)
    gm.fit(X)
    order = np.argsort(gm.parts_[0]["mean"][:, 0])
    np.testing.assert_allclose(gm.weights_[order], [0.3, 0.7], atol=0.02)
    agreement = np.mean(order[gm.predict(X)] == labels)
    assert max(agreement, 1 - agreement) > 0.99
    with pytest.raises(ValueError, match="'kmeanspp', 'kmeans', 'select'"):
        mixle.MixtureModel(2, init="kmeans+").fit(X)


def test_engine_errors_are_value_errors_naming_the_problem(records):
    X, _ = records
    bad = X.copy()
    bad[5, 3] = -1.0  # a negative count in the poisson column
    with pytest.raises(ValueError, match="row"):
        mixle.MixtureModel(2, layout="gaussian_diag:0-2,categorical:2-3:3,poisson:3-4").fit(bad)
    with pytest.raises(ValueError, match="layout|family"):
        mixle.MixtureModel(2, layout="banana:0-4").fit(X)
    with pytest.raises(ValueError, match=r"layout\[0\]"):
        mixle.MixtureModel(2, layout=[("poisson", 0)]).fit(X)


def test_an_empty_component_is_kept_or_reseeded_as_asked():
    rng = np.random.default_rng(3)
    centres = np.array([[0.0, 0.0], [8.0, 0.0], [-40.0, 5.0]])
    X = np.concatenate([c + rng.standard_normal((600, 2)) for c in centres])
    # Components 0 and 1 on the first two clusters, component 2 far from every row.
    start = """{"format":"mixle-model","version":1,"weights":[0.5,0.5,0],"parts":[
      {"family":"gaussian_diag","columns":[0,2],"mean":[[0,0],[8,0],[1000,1000]],"var":[[1,1],[1,1],[1,1]]}]}"""
    fits = {}
    for empty in ("keep", "reseed"):
        gm = mixle.MixtureModel.from_json(start, warm_start=True, empty=empty, precision="fp64", tol=1e-8)
        with pytest.warns(RuntimeWarning, match="component 2 captured no rows") as caught:
            gm.fit(X)
        fits[empty] = (gm, [str(w.message) for w in caught])
    kept, kept_warnings = fits["keep"]
    assert kept.weights_[2] == 0.0
    assert any("keeps its previous parameters" in w for w in kept_warnings)
    reseeded, reseeded_warnings = fits["reseed"]
    assert any("reseeded from the 600 worst-explained rows" in w for w in reseeded_warnings)
    np.testing.assert_allclose(reseeded.weights_, [1 / 3] * 3, atol=1e-6)
    cluster_means = X.reshape(3, 600, 2).mean(axis=1)
    np.testing.assert_allclose(reseeded.parts_[0]["mean"], cluster_means, atol=1e-4)
    assert reseeded.score(X) > kept.score(X) + 1.0
    with pytest.raises(ValueError, match="'keep', 'reseed'"):
        mixle.MixtureModel(2, empty="split").fit(X)


def test_rows_with_nan_are_refused_or_dropped_as_asked(records):
    X, _ = records
    X = X[:4000].copy()
    holes = [3, 10, 2500, 3999]
    holed = X.copy()
    holed[holes, [0, 2, 3, 1]] = np.nan  # the Gaussian, categorical and Poisson columns
    layout = "gaussian_diag:0-2,categorical:2-3:3,poisson:3-4"
    with pytest.raises(ValueError, match="NaN"):
        mixle.MixtureModel(2, layout=layout).fit(holed)
    params = dict(precision="fp64", random_state=0, init="select", tol=0.0, max_iter=10)
    start = mixle.MixtureModel(2, layout=layout, max_iter=3).fit(np.delete(X, holes, axis=0)).to_json()
    dropped = mixle.MixtureModel.from_json(start, warm_start=True, missing="drop", **params)
    with pytest.warns(RuntimeWarning, match=r"dropped 4 row\(s\) .* \(rows 3, 10, 2500, 3999, counted from 0\)"):
        labels = dropped.fit_predict(holed)
    by_hand = mixle.MixtureModel.from_json(start, warm_start=True, **params).fit(np.delete(X, holes, axis=0))
    assert dropped.n_dropped_rows_ == 4
    np.testing.assert_allclose(dropped.weights_, by_hand.weights_, rtol=1e-9)
    np.testing.assert_allclose(dropped.parts_[0]["mean"], by_hand.parts_[0]["mean"], rtol=1e-9)
    assert (labels[holes] == -1).all() and (labels[np.delete(np.arange(4000), holes)] >= 0).all()
    with pytest.raises(ValueError, match="'error', 'drop'"):
        mixle.MixtureModel(2, missing="skip").fit(X)


def test_marginalise_fits_rows_from_their_observed_columns(records):
    # A column missing in every row, marginalised: the fit of the data and the start without it.
    X, _ = records
    X = X[:3000].copy()
    layout = "gaussian_diag:0-2,categorical:2-3:3,poisson:3-4"
    params = dict(precision="fp64", init="select", tol=0.0, max_iter=10)
    start = mixle.MixtureModel(2, layout=layout, max_iter=3, random_state=0).fit(X).to_json()
    holed = X.copy()
    holed[:, 1] = np.nan
    marginalised = mixle.MixtureModel.from_json(start, warm_start=True, missing="marginalise", **params)
    with pytest.warns(RuntimeWarning, match=r"3000 row\(s\) have a missing value .* left out \(marginalised\)"):
        labels = marginalised.fit_predict(holed)
    narrow = json.loads(start)
    gaussian = narrow["parts"][0]
    gaussian["columns"] = [0, 1]
    gaussian["mean"] = [row[:1] for row in gaussian["mean"]]
    gaussian["var"] = [row[:1] for row in gaussian["var"]]
    for part in narrow["parts"][1:]:
        part["columns"] = [c - 1 for c in part["columns"]]
    by_hand = mixle.MixtureModel.from_json(json.dumps(narrow), warm_start=True, **params)
    by_hand.fit(np.delete(X, 1, axis=1))
    assert marginalised.n_marginalised_rows_ == 3000 and marginalised.n_dropped_rows_ == 0
    np.testing.assert_allclose(marginalised.weights_, by_hand.weights_, rtol=1e-9)
    np.testing.assert_allclose(
        np.asarray(marginalised.parts_[0]["mean"])[:, 0], np.asarray(by_hand.parts_[0]["mean"])[:, 0], rtol=1e-9
    )
    np.testing.assert_allclose(marginalised.parts_[2]["rate"], by_hand.parts_[2]["rate"], rtol=1e-9)
    # Column 1 was observed by no row: its parameters are the start's.
    np.testing.assert_array_equal(
        np.asarray(marginalised.parts_[0]["mean"])[:, 1], np.asarray(json.loads(start)["parts"][0]["mean"])[:, 1]
    )
    assert (labels == -1).all()  # fit_predict labels a row holding NaN -1
    with pytest.raises(ValueError, match="gaussian_full"):
        mixle.MixtureModel(2, layout="gaussian_full", missing="marginalise").fit(holed[:, :2])
