"""Bad input through the Python estimators: the array-level cases of the C++ bad-input matrix
(tests/cli/bad_input_matrix_test.cpp; docs/testing.md lists both). Each is a ValueError naming its
row, column, field or option — never a crash, a hang or a silent NaN."""

import numpy as np
import pytest

import mixle

LAYOUT = "gaussian_diag:0-2,categorical:2-3:3,poisson:3-4"


def good_rows():
    r = np.arange(40, dtype=float)
    return np.column_stack([np.sin(r), 2 * np.cos(r), r % 3, r % 5])


def with_value(row, column, value):
    X = good_rows()
    X[row, column] = value
    return X


MODEL = """{"format":"mixle-model","version":1,"weights":[0.5,0.5],"parts":[
    {"family":"gaussian_diag","columns":[0,2],"mean":[[0,0],[1,1]],"var":[[1,1],[1,VAR]]},
    {"family":"categorical","columns":[2,3],"categories":3,"prob":[[0.4,0.3,0.3],[0.3,0.3,0.4]]},
    {"family":"poisson","columns":[3,4],"rate":[[1],[4]]}]}"""

ROW_CASES = [
    ("infinite value", with_value(6, 0, np.inf), None, r"infinity|inf"),
    ("fractional code", with_value(7, 2, 2.5), None, r"row 7, column 2: value 2\.5 is not valid for categorical"),
    ("negative code", with_value(8, 2, -1), None, r"row 8, column 2: value -1 is not valid for categorical"),
    ("code past the categories", with_value(9, 2, 3), None, r"row 9, column 2: value 3 is not valid for categorical"),
    ("negative count", with_value(10, 3, -2), None, r"row 10, column 3: value -2 is not valid for poisson"),
    ("negative weight", good_rows(), np.r_[np.ones(11), -1.0, np.ones(28)], r"row 11 \(counted from 0\) has weight -1"),
    ("NaN weight", good_rows(), np.r_[np.ones(11), np.nan, np.ones(28)], r"row 11 \(counted from 0\) has weight nan"),
    ("weights of another length", good_rows(), np.ones(7), r"sample_weight: shape \(7,\), expected \(40,\)"),
]


@pytest.mark.parametrize("name,X,weights,message", ROW_CASES, ids=[c[0] for c in ROW_CASES])
def test_bad_rows_and_weights_are_named(name, X, weights, message):
    with pytest.raises(ValueError, match=message):
        mixle.MixtureModel(2, layout=LAYOUT).fit(X, sample_weight=weights)


def test_nan_is_named_or_handled_as_asked():
    X = with_value(5, 1, np.nan)
    with pytest.raises(ValueError, match="NaN"):
        mixle.MixtureModel(2, layout=LAYOUT).fit(X)
    with pytest.raises(ValueError, match="NaN"):
        mixle.GaussianMixture(2).fit(X[:, :2])


OPTION_CASES = [
    ("unknown family in the layout", dict(layout="gaussian:0-4"), r'unknown family "gaussian"'),
    ("layout past the columns", dict(layout="gaussian_diag:0-6"), r"column 5 is past the data's 4 columns"),
    ("more components than rows", dict(n_components=41), r"components = 41 exceeds the 40 data rows"),
    ("unknown missing policy", dict(missing="skip"), r"'error', 'drop', 'marginalise'"),
]


@pytest.mark.parametrize("name,params,message", OPTION_CASES, ids=[c[0] for c in OPTION_CASES])
def test_bad_options_are_named(name, params, message):
    params = {"n_components": 2, "layout": LAYOUT, **params}
    with pytest.raises(ValueError, match=message):
        mixle.MixtureModel(**params).fit(good_rows())


def test_bad_arrays_are_refused_before_the_engine():
    with pytest.raises(ValueError):
        mixle.MixtureModel(2, layout=LAYOUT).fit(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError):
        mixle.MixtureModel(2, layout=LAYOUT).fit(np.array([["a", "b"], ["c", "d"]]))
    with pytest.raises((ValueError, TypeError)):
        mixle.MixtureModel(2, layout=LAYOUT).fit(good_rows().astype(np.complex128))


def test_bad_models_are_named():
    with pytest.raises(ValueError, match=r"parts\[0\] \(gaussian_diag\): var\[1\]\[1\] = -2 is invalid"):
        mixle.MixtureModel.from_json(MODEL.replace("VAR", "-2"))
    with pytest.raises(ValueError, match="not valid JSON"):
        mixle.MixtureModel.from_json('{"format": ')
