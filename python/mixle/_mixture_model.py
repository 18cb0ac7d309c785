"""mixle.MixtureModel: mixtures of any of the engine's families over column ranges (mixed records)."""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import validate_data

from . import _core
from ._base import _as_engine_array, _check_sample_weight, _MixtureBase, _Progress, _seed


def layout_text(layout) -> str:
    """The engine's layout string from a string (returned as is) or a list of parts, each a tuple
    (family, begin, end) or (family, begin, end, categories) with columns half-open."""
    if isinstance(layout, str):
        return layout
    items = []
    for i, part in enumerate(layout):
        if not isinstance(part, (tuple, list)) or len(part) not in (3, 4):
            raise ValueError(
                f"layout[{i}] = {part!r}: (family, begin, end) or (family, begin, end, categories) expected"
            )
        text = f"{part[0]}:{int(part[1])}-{int(part[2])}"
        if len(part) == 4:
            text += f":{int(part[3])}"
        items.append(text)
    return ",".join(items)


class MixtureModel(_MixtureBase):
    """A finite mixture whose components are products of parts, each part one family over a range
    of columns: continuous, count, categorical and binary columns in one model.

    Parameters
    ----------
    n_components : int, default=1
    layout : str or list, default="gaussian_diag"
        A family for all columns ("poisson"), the CLI's form
        ("gaussian_diag:0-4,categorical:4-5:3,poisson:5-7"), or a list of parts
        [("gaussian_diag", 0, 4), ("categorical", 4, 5, 3), ("poisson", 5, 7)]. Families:
        ``mixle.family_names()``.
    tol, max_iter, n_init, reg_covar, random_state, warm_start, verbose, verbose_interval
        As for GaussianMixture.
    init : {"kmeanspp", "kmeans", "select"}, default="kmeanspp"
        The engine's initialisation: k-means++ on a sample then one hard-assignment M-step;
        "kmeans": the same start, then Lloyd's iterations on all rows (all ranks') to
        convergence before the M-step; or each row kept with probability ``init_p`` and given a
        random component.
    init_p : float, default=0.1
    pseudo_count : float, default=1e-3
        Prior counts of categorical and bernoulli probabilities.
    rate_floor : float, default=1e-6
        Floor of poisson rates and exponential means.
    empty : {"keep", "reseed"}, default="keep"
        A component that captures no rows keeps its parameters at weight 0, or is restarted once
        from the rows the model explains worst (a warning names it either way).
    missing : {"error", "drop", "marginalise"}, default="error"
        A row with NaN in a modelled column is refused, left out of the fit ("drop": counted in
        ``n_dropped_rows_`` and named in a warning), or fitted from its observed columns
        ("marginalise": its missing values are left out of its log-density and of their columns'
        statistics; every family but gaussian_full and gaussian_tied; counted in
        ``n_marginalised_rows_``). ``fit_predict`` labels a row holding NaN -1 under either;
        ``predict`` and ``score_samples`` refuse NaN.
    device, precision, prune, n_threads, distributed
        As for GaussianMixture (a distributed fit's initialisation runs over every rank's rows).
    batch_size : int or None, default=None
        Stepwise (mini-batch) EM: the M-step runs after every ``batch_size`` rows, the running
        statistics moving toward each batch's by rho_t = (t + step_offset)^-step_decay
        (docs/streaming.md). None: full-batch EM. With ``distributed`` every rank folds its rows of
        each batch and the batch's statistics are all-reduced. Not with ``empty="reseed"`` or
        ``missing="marginalise"``. ``n_iter_`` and ``lower_bounds_`` then count epochs.
    step_decay : float, default=0.6
        In (0.5, 1]; also used by ``partial_fit``.
    step_offset : float, default=2.0
        >= 0; also used by ``partial_fit``.
    epochs : int, default=10
        Stepwise passes over the rows; ``tol`` between two epochs' means ends them earlier.
    shuffle : bool, default=False
        Visit the batches in a new order each epoch, drawn from ``random_state``.
    full_batch_iterations : int, default=0
        Full-batch EM iterations after the stepwise epochs.

    Attributes
    ----------
    weights_ : ndarray (n_components,)
    parts_ : list of dict
        Each part: family, columns (begin, end), categories and its parameter arrays by the
        model file's names ("mean", "var", "cov", "prob", "rate", "shape", "log_mean", "log_var").
    converged_, n_iter_, lower_bound_, lower_bounds_
        As for GaussianMixture.
    """

    def __init__(
        self,
        n_components=1,
        *,
        layout="gaussian_diag",
        tol=1e-3,
        reg_covar=1e-6,
        max_iter=100,
        n_init=1,
        init="kmeanspp",
        init_p=0.1,
        pseudo_count=1e-3,
        rate_floor=1e-6,
        empty="keep",
        missing="error",
        random_state=None,
        warm_start=False,
        verbose=0,
        verbose_interval=10,
        device="cpu",
        precision="fp64",
        prune="auto",
        n_threads=None,
        distributed=False,
        batch_size=None,
        step_decay=0.6,
        step_offset=2.0,
        epochs=10,
        shuffle=False,
        full_batch_iterations=0,
    ):
        self.n_components = n_components
        self.layout = layout
        self.tol = tol
        self.reg_covar = reg_covar
        self.max_iter = max_iter
        self.n_init = n_init
        self.init = init
        self.init_p = init_p
        self.pseudo_count = pseudo_count
        self.rate_floor = rate_floor
        self.empty = empty
        self.missing = missing
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose
        self.verbose_interval = verbose_interval
        self.device = device
        self.precision = precision
        self.prune = prune
        self.n_threads = n_threads
        self.distributed = distributed
        self.batch_size = batch_size
        self.step_decay = step_decay
        self.step_offset = step_offset
        self.epochs = epochs
        self.shuffle = shuffle
        self.full_batch_iterations = full_batch_iterations

    def _stepwise_options(self) -> dict:
        if self.batch_size is None:
            return {}
        if not isinstance(self.batch_size, (int, np.integer)) or self.batch_size < 1:
            raise ValueError(f"batch_size = {self.batch_size!r}: an integer >= 1 expected (None: full-batch EM)")
        return {
            "batch_size": int(self.batch_size),
            "step_decay": float(self.step_decay),
            "step_offset": float(self.step_offset),
            "epochs": int(self.epochs),
            "shuffle": bool(self.shuffle),
            "full_batch_iterations": int(self.full_batch_iterations),
        }

    def partial_fit(self, X, y=None, sample_weight=None):
        """One stepwise EM step on the batch X (docs/streaming.md) and returns self. The first
        call (on an unfitted estimator) fits X as ``fit`` does to start the model; every call then
        folds X into the running statistics — scaled to the first batch's weight — with step size
        rho_t = (t + step_offset)^-step_decay and runs the M-step. ``n_steps_`` counts the batches
        folded. The running state belongs to the model: ``fit`` starts it again."""
        first = not hasattr(self, "_model")
        if first:
            self.fit(X, sample_weight=sample_weight)
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        sample_weight = _check_sample_weight(sample_weight, X.shape[0], all_rows=True)
        o = self._engine_options()
        model, self._stepwise_state = _core.partial_fit(
            self._model,
            _as_engine_array(X),
            sample_weight=sample_weight,
            state=getattr(self, "_stepwise_state", ""),
            step_decay=float(self.step_decay),
            step_offset=float(self.step_offset),
            precision=o["precision"],
            device=o["device"],
            threads=o["threads"],
            reg_covar=float(self.reg_covar),
            pseudo_count=float(self.pseudo_count),
            rate_floor=float(self.rate_floor),
        )
        self._set_model(model)
        self.n_steps_ = getattr(self, "n_steps_", 0) + 1
        return self

    def fit_predict(self, X, y=None, sample_weight=None):
        """Fits the mixture by EM (n_init restarts inside the engine, the best kept) and returns
        each row's most responsible component. sample_weight: one weight >= 0 per row (None: all
        1); a row of integer weight w counts as w copies of it."""
        distributed = self._distributed_options() is not None  # this rank's rows: any number
        if self.missing not in ("error", "drop", "marginalise"):
            raise ValueError(f"missing = {self.missing!r}: one of 'error', 'drop', 'marginalise'")
        X = validate_data(
            self,
            X,
            dtype=[np.float64, np.float32],
            ensure_min_samples=0 if distributed else 2,
            ensure_all_finite="allow-nan" if self.missing != "error" else True,
        )
        sample_weight = _check_sample_weight(sample_weight, X.shape[0], all_rows=not distributed)
        if self.init not in ("kmeanspp", "kmeans", "select"):
            raise ValueError(f"init = {self.init!r}: one of 'kmeanspp', 'kmeans', 'select'")
        if self.empty not in ("keep", "reseed"):
            raise ValueError(f"empty = {self.empty!r}: one of 'keep', 'reseed'")
        if not isinstance(self.max_iter, (int, np.integer)) or self.max_iter < 1:
            raise ValueError(f"max_iter = {self.max_iter!r}: an integer >= 1 expected")
        X = _as_engine_array(X)
        progress = _Progress(self.verbose, self.verbose_interval)
        progress.restart(0)
        warm = self.warm_start and hasattr(self, "_model")
        options = {
            "components": int(self.n_components),
            "layout": layout_text(self.layout),
            "max_iter": int(self.max_iter),
            "tol": float(self.tol),
            "reg_covar": float(self.reg_covar),
            "pseudo_count": float(self.pseudo_count),
            "rate_floor": float(self.rate_floor),
            "empty": self.empty,
            "missing": self.missing,
            "n_init": 1 if warm else int(self.n_init),
            "seed": _seed(self.random_state),
            "init": "model" if warm else self.init,
            "init_p": float(self.init_p),
            **self._stepwise_options(),
        }
        if warm:
            options["init_model"] = self._model
        r = self._run_fit(X, progress, sample_weight=sample_weight, **options)
        self._set_model(r["model"])
        self._stepwise_state = ""  # a new model: partial_fit starts a new stream
        self.n_steps_ = 0
        self.converged_ = r["converged"]
        self.n_iter_ = r["iterations"]
        self.n_dropped_rows_ = int(r.get("dropped_rows", 0))
        self.n_marginalised_rows_ = int(r.get("marginalised_rows", 0))
        self.lower_bounds_ = list(r["mean_loglik"])
        self.lower_bound_ = self.lower_bounds_[-1]
        progress.finished(self.lower_bound_, self.converged_)
        if not self.converged_:
            self._warn_not_converged()
        o = self._engine_options()
        holed = np.isnan(X).any(axis=1) if self.missing != "error" else None
        if holed is None or not holed.any():
            return _core.predict(self._model, X, o["device"], o["threads"], "fp64")
        labels = np.full(X.shape[0], -1, dtype=np.int64)  # a row holding NaN has no label
        labels[~holed] = _core.predict(self._model, np.ascontiguousarray(X[~holed]), o["device"], o["threads"], "fp64")
        return labels

    def _set_model(self, model: _core.Model) -> None:
        self._model = model
        self.weights_ = model.weights
        self.parts_ = model.parts

    @classmethod
    def from_json(cls, text: str, **params) -> "MixtureModel":
        """A fitted MixtureModel holding the model in `text` (mixle's model format, as to_json and
        `mixle fit` write it); `params` set the estimator's parameters (device, precision, …)."""
        model = _core.Model.from_json(text)
        parts = model.parts
        layout = [
            (p["family"], p["columns"][0], p["columns"][1]) + ((p["categories"],) if p["categories"] else ())
            for p in parts
        ]
        est = cls(n_components=model.components, layout=layout, **params)
        est._set_model(model)
        est.n_features_in_ = model.columns
        est.converged_, est.n_iter_, est.lower_bound_, est.lower_bounds_ = True, 0, float("nan"), []
        return est
