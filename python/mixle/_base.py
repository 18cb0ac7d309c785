"""What mixle's estimators share: input checks, the native fit, scoring, sampling, progress."""

from __future__ import annotations

import logging
import sys
import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator, DensityMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _core

logger = logging.getLogger("mixle")

_INT64_MAX = np.iinfo(np.int64).max


def _seed(random_state) -> int:
    """A 64-bit engine seed from a scikit-learn random_state (None, int or RandomState)."""
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return int(random_state) & 0xFFFFFFFFFFFFFFFF
    return int(check_random_state(random_state).randint(0, _INT64_MAX, dtype=np.int64))


def _as_engine_array(X) -> np.ndarray:
    """X as the engine reads it in place: C-contiguous float32 or float64 (a copy only if not)."""
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    return np.ascontiguousarray(X)


def _check_sample_weight(sample_weight, n_rows: int, all_rows: bool = True):
    """None, or sample_weight as the engine reads it: a C-contiguous float64 vector of n_rows
    values, each finite and >= 0, and — when these are all the fit's rows (`all_rows`; not one
    rank's share) — not all 0. Checked here because scikit-learn's k-means sees them first."""
    if sample_weight is None:
        return None
    w = np.ascontiguousarray(np.asarray(sample_weight, dtype=np.float64))
    if w.ndim != 1 or w.shape[0] != n_rows:
        raise ValueError(f"sample_weight: shape {w.shape}, expected ({n_rows},): one weight per row of X")
    bad = np.flatnonzero(~(np.isfinite(w) & (w >= 0)))
    if bad.size:
        raise ValueError(
            f"sample_weight: row {bad[0]} (counted from 0) has weight {w[bad[0]]}; weights must be finite and >= 0"
        )
    if all_rows and n_rows and not np.any(w > 0):
        raise ValueError("sample_weight: all weights are zero; at least one row must weigh more than 0")
    return w


class _StdoutHandler(logging.Handler):
    """Writes records to whatever sys.stdout is at the time (as print would)."""

    def emit(self, record: logging.LogRecord) -> None:
        sys.stdout.write(self.format(record) + "\n")


_default_handler = _StdoutHandler()
_default_handler.setFormatter(logging.Formatter("%(message)s"))


class _Progress:
    """Reports each EM iteration through the 'mixle' logger, in scikit-learn's verbose format
    (every verbose_interval iterations; verbose >= 2 adds times and log-likelihood changes).
    Unless the application gave the 'mixle' logger handlers of its own, the messages go to
    stdout, as scikit-learn prints them."""

    def __init__(self, verbose: int, interval: int):
        self.verbose = verbose
        self.interval = max(1, int(interval))
        self.last = self.start = time.perf_counter()
        if verbose and (not logger.handlers or logger.handlers == [_default_handler]):
            logger.handlers = [_default_handler]
            logger.setLevel(logging.INFO)
            logger.propagate = False

    def restart(self, index: int) -> None:
        if self.verbose:
            logger.info("Initialization %d", index)
        self.start = self.last = time.perf_counter()

    def __call__(self, p: dict) -> None:
        if not self.verbose or p["iteration"] % self.interval:
            return
        if self.verbose == 1:
            logger.info("  Iteration %d", p["iteration"])
        else:
            now = time.perf_counter()
            lapse = now - self.last
            logger.info("  Iteration %d\t time lapse %.5fs\t ll change %.5f", p["iteration"], lapse, p["delta"])
            self.last = now

    def finished(self, lower_bound: float, converged: bool) -> None:
        if not self.verbose:
            return
        state = "converged" if converged else "did not converge"
        if self.verbose == 1:
            logger.info("Initialization %s.", state)
        else:
            logger.info(
                "Initialization %s. time lapse %.5fs\t lower bound %.5f.",
                state,
                time.perf_counter() - self.start,
                lower_bound,
            )


class _MixtureBase(DensityMixin, BaseEstimator):
    """Scoring, prediction, sampling and information criteria over a fitted native model
    (``self._model``, a :class:`mixle._core.Model`)."""

    def _engine_options(self) -> dict:
        return {
            "device": self.device,
            "threads": 0 if self.n_threads is None else int(self.n_threads),
            "precision": self.precision,
            "prune": getattr(self, "prune", "auto"),
        }

    def _distributed_options(self):
        """None for a one-process fit, else the options of a distributed one (`distributed`: True
        or a dict of comm, timeout, checkpoint_dir, checkpoint_every, resume_dir, receipts_file)."""
        d = self.distributed
        if d is False or d is None:
            return None
        if d is True:
            return {}
        if isinstance(d, dict):
            return dict(d)
        raise ValueError(f"distributed = {d!r}: False, True or a dict of options expected")

    def _run_fit(self, X: np.ndarray, progress: _Progress, sample_weight=None, **options) -> dict:
        """One native fit of X (rows weighted by sample_weight, a checked float64 vector or None)
        — of this rank's rows, when distributed; warns as scikit-learn does and returns the
        engine's result."""
        options.update(self._engine_options())
        reporter = progress if progress.verbose else None
        dist = self._distributed_options()
        if dist is None:
            result = _core.fit(X, progress=reporter, sample_weight=sample_weight, **options)
        else:
            result = _core.fit_distributed(X, dist, progress=reporter, sample_weight=sample_weight, **options)
            keys = ("rank", "world_size", "comm", "device", "first_row", "local_rows", "collective_bytes",
                    "collective_seconds", "resumed_from_iteration")
            self.distributed_ = {key: result[key] for key in keys}
        for message in result["warnings"]:
            # Said by a ConvergenceWarning instead.
            if not message.startswith(("EM did not converge", "stepwise EM did not converge")):
                warnings.warn(message, RuntimeWarning, stacklevel=3)
        return result

    @staticmethod
    def _warn_not_converged() -> None:
        warnings.warn(
            "Best performing initialization did not converge. Try different init parameters, "
            "or increase max_iter, tol, or check for degenerate data.",
            ConvergenceWarning,
            stacklevel=3,
        )

    def _check_X(self, X) -> np.ndarray:
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        return _as_engine_array(X)

    def score_samples(self, X):
        """Log-likelihood log p(x) of each row of X, shape (n_samples,)."""
        X = self._check_X(X)
        o = self._engine_options()
        return _core.score_samples(self._model, X, o["device"], o["threads"], "fp64")

    def score(self, X, y=None):
        """Mean log-likelihood per row of X."""
        return float(np.mean(self.score_samples(X)))

    def predict_proba(self, X):
        """Responsibilities p(k | x) of each component for each row, shape (n_samples, n_components)."""
        X = self._check_X(X)
        o = self._engine_options()
        return _core.predict_proba(self._model, X, o["device"], o["threads"], "fp64")

    def predict(self, X):
        """The most responsible component of each row, shape (n_samples,)."""
        X = self._check_X(X)
        o = self._engine_options()
        return _core.predict(self._model, X, o["device"], o["threads"], "fp64")

    def fit(self, X, y=None, sample_weight=None):
        """Fits the mixture by EM (see fit_predict) and returns self. sample_weight: one weight
        >= 0 per row (None: all 1); a row of integer weight w counts as w copies of it."""
        self.fit_predict(X, y, sample_weight=sample_weight)
        return self

    def sample(self, n_samples=1):
        """Draws n_samples rows from the fitted mixture: (X, labels), grouped by component as
        scikit-learn returns them. Deterministic for an integer random_state."""
        check_is_fitted(self)
        if n_samples < 1:
            raise ValueError(
                "Invalid value for 'n_samples': %d . The sampling requires at least one sample." % n_samples
            )
        X, labels = _core.sample(self._model, int(n_samples), _seed(self.random_state))
        order = np.argsort(labels, kind="stable")
        return X[order], labels[order]

    def _n_parameters(self) -> int:
        return int(self._model.free_parameters())

    def bic(self, X):
        """Bayesian information criterion on X (lower is better): -2·log L + p·ln n."""
        log_likelihood = self.score_samples(X)  # checks X once
        n = log_likelihood.shape[0]
        return -2 * float(np.mean(log_likelihood)) * n + self._n_parameters() * np.log(n)

    def aic(self, X):
        """Akaike information criterion on X (lower is better): -2·log L + 2p."""
        log_likelihood = self.score_samples(X)
        return -2 * float(np.mean(log_likelihood)) * log_likelihood.shape[0] + 2 * self._n_parameters()

    def to_json(self, indent: int = 1) -> str:
        """The fitted model in mixle's model format (the JSON `mixle fit` writes)."""
        check_is_fitted(self)
        return self._model.to_json(indent)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags
