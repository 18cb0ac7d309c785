"""mixle.GaussianMixture: scikit-learn's GaussianMixture, fitted by mixle's engine."""

from __future__ import annotations

import numpy as np
from sklearn.cluster import KMeans, kmeans_plusplus
from sklearn.utils import check_random_state
from sklearn.utils.validation import validate_data

from . import _core
from ._base import _as_engine_array, _check_sample_weight, _MixtureBase, _Progress, _seed

_FAMILIES = {
    "full": "gaussian_full",
    "tied": "gaussian_tied",
    "diag": "gaussian_diag",
    "spherical": "gaussian_spherical",
}
_FULL_MATRICES = ("full", "tied")  # covariance types held as D×D matrices (tied: one for all)
_INIT_PARAMS = ("kmeans", "k-means++", "random", "random_from_data", "native")
_EPS = 10 * np.finfo(np.float64).eps  # scikit-learn's guard on empty components' mass


class GaussianMixture(_MixtureBase):
    """Gaussian mixture fitted by EM in mixle's native engine; a drop-in for
    :class:`sklearn.mixture.GaussianMixture`.

    The constructor parameters, methods and fitted attributes are scikit-learn's, with the same
    meanings; initialisation draws what scikit-learn's draws for the same ``random_state``, so
    both fit the same model (to rounding) from the same data. mixle adds:

    device : str, default="cpu"
        "cpu", "cuda", "cuda:i" or "auto" (a CUDA device when the build has one).
    precision : {"fp64", "fp32", "tf32"}, default="fp64"
        Arithmetic of the EM passes. "fp64" matches scikit-learn; "fp32" is about twice as fast
        on CPUs and far faster on GPUs (statistics are still summed in float64); "tf32" is CUDA only.
    prune : {"auto", "off"}, default="auto"
        Exact pruning of the E-step: from the second EM pass on, only the (row, component) pairs
        that a bound cannot prove to have exactly zero responsibility are evaluated (diag and
        spherical covariances on the CPU). "off" evaluates every pair. Both fit the same bits.
    n_threads : int or None, default=None
        CPU threads (None: all available).

    distributed : bool or dict, default=False
        True: fit across the processes of a job started by torchrun, mpirun, srun or
        ``mixle launch``, each rank passing its own rows to fit(); rank r's rows follow those of
        ranks 0…r−1, and every rank ends with the model a one-process fit of all rows gives. A
        dict sets the options: comm ("auto", "gloo", "mpi", "nccl"), timeout (seconds),
        checkpoint_dir, checkpoint_every, resume_dir, receipts_file. Initialisation then runs in
        the engine over all ranks' rows: use init_params="native", or give weights_init,
        means_init and precisions_init. After fit, ``distributed_`` says where this rank ran
        (rank, world_size, comm, device, first_row, local_rows, …).

    init_params also accepts "native": the engine's own k-means++ and one hard-assignment M-step,
    run in C++ (no scikit-learn k-means), with ``n_init`` restarts inside the engine.
    """

    def __init__(
        self,
        n_components=1,
        *,
        covariance_type="full",
        tol=1e-3,
        reg_covar=1e-6,
        max_iter=100,
        n_init=1,
        init_params="kmeans",
        weights_init=None,
        means_init=None,
        precisions_init=None,
        random_state=None,
        warm_start=False,
        verbose=0,
        verbose_interval=10,
        device="cpu",
        precision="fp64",
        prune="auto",
        n_threads=None,
        distributed=False,
    ):
        self.n_components = n_components
        self.covariance_type = covariance_type
        self.tol = tol
        self.reg_covar = reg_covar
        self.max_iter = max_iter
        self.n_init = n_init
        self.init_params = init_params
        self.weights_init = weights_init
        self.means_init = means_init
        self.precisions_init = precisions_init
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose
        self.verbose_interval = verbose_interval
        self.device = device
        self.precision = precision
        self.prune = prune
        self.n_threads = n_threads
        self.distributed = distributed

    # -- checks ---------------------------------------------------------------------------------

    def _check_parameters(self, n_features: int) -> None:
        if not isinstance(self.n_components, (int, np.integer)) or self.n_components < 1:
            raise ValueError(f"n_components = {self.n_components!r}: an integer >= 1 expected")
        if self.covariance_type not in _FAMILIES:
            raise ValueError(f"covariance_type = {self.covariance_type!r}: one of 'full', 'tied', 'diag', 'spherical'")
        if self.init_params not in _INIT_PARAMS:
            raise ValueError(f"init_params = {self.init_params!r}: one of {', '.join(map(repr, _INIT_PARAMS))}")
        for name, low in (("tol", 0.0), ("reg_covar", 0.0)):
            value = getattr(self, name)
            if not np.isfinite(value) or value < low:
                raise ValueError(f"{name} = {value!r}: a finite number >= {low} expected")
        for name, low in (("max_iter", 0), ("n_init", 1), ("verbose_interval", 1)):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < low:
                raise ValueError(f"{name} = {value!r}: an integer >= {low} expected")
        K, D = self.n_components, n_features
        if self.weights_init is not None:
            w = np.asarray(self.weights_init, dtype=np.float64)
            if w.shape != (K,):
                raise ValueError(f"weights_init: shape {w.shape}, expected ({K},)")
            if np.any(w < 0) or np.any(w > 1) or not np.isclose(w.sum(), 1.0, rtol=0, atol=1e-6):
                raise ValueError(f"weights_init: values in [0, 1] summing to 1 expected (sum {w.sum():.6g})")
        if self.means_init is not None:
            m = np.asarray(self.means_init, dtype=np.float64)
            if m.shape != (K, D):
                raise ValueError(f"means_init: shape {m.shape}, expected ({K}, {D})")
        if self.precisions_init is not None:
            p = np.asarray(self.precisions_init, dtype=np.float64)
            shape = {"full": (K, D, D), "tied": (D, D), "diag": (K, D), "spherical": (K,)}[self.covariance_type]
            if p.shape != shape:
                raise ValueError(f"precisions_init: shape {p.shape}, expected {shape} for '{self.covariance_type}'")
            if self.covariance_type not in _FULL_MATRICES and np.any(p <= 0):
                raise ValueError(f"precisions_init: '{self.covariance_type}' precisions must be positive")
            if self.covariance_type == "tied" and (not np.allclose(p, p.T) or np.any(np.linalg.eigvalsh(p) <= 0)):
                raise ValueError("precisions_init: a symmetric positive-definite matrix expected")
            if self.covariance_type == "full":
                for k in range(K):
                    if not np.allclose(p[k], p[k].T) or np.any(np.linalg.eigvalsh(p[k]) <= 0):
                        raise ValueError(f"precisions_init[{k}]: a symmetric positive-definite matrix expected")

    # -- initialisation (scikit-learn's, draw for draw) -----------------------------------------

    def _initial_assignment(self, X: np.ndarray, random_state, sample_weight=None):
        """Rows and their one-hot components, or a dense responsibility matrix ('random'), as
        scikit-learn's _initialize_parameters draws them. With sample weights, k-means weighs
        its rows and no row of weight 0 is drawn as a starting point."""
        n = X.shape[0]
        K = self.n_components
        if self.init_params == "kmeans":
            kmeans = KMeans(n_clusters=K, n_init=1, random_state=random_state)
            labels = kmeans.fit(X, sample_weight=sample_weight).labels_
            return np.arange(n), labels
        if self.init_params == "k-means++":
            _, indices = kmeans_plusplus(X, K, random_state=random_state, sample_weight=sample_weight)
            return indices, np.arange(K)
        if self.init_params == "random_from_data":
            if sample_weight is not None:
                return random_state.choice(np.flatnonzero(sample_weight > 0), size=K, replace=False), np.arange(K)
            return random_state.choice(n, size=K, replace=False), np.arange(K)
        resp = random_state.uniform(size=(n, K)).astype(X.dtype)
        resp /= resp.sum(axis=1)[:, np.newaxis]
        return resp

    def _moments(self, X: np.ndarray, assignment, sample_weight=None):
        """Weights (unnormalised mass), means and covariances of an initial assignment, as
        scikit-learn's _estimate_gaussian_parameters computes them; with sample weights, each
        row's responsibilities are weighed by them."""
        K, D = self.n_components, X.shape[1]
        diag = self.covariance_type not in _FULL_MATRICES  # spherical: the diagonal's mean, below
        cov = np.empty((K, D) if diag else (K, D, D))
        if sample_weight is not None:  # the dense form, weighed row by row
            if isinstance(assignment, tuple):
                rows, labels = assignment
                dense = np.zeros((X.shape[0], K))
                dense[rows, labels] = 1.0
                assignment = dense
            assignment = assignment * sample_weight[:, np.newaxis]
        if isinstance(assignment, tuple):  # one-hot rows: sums over each component's rows only
            rows, labels = assignment
            counts = np.bincount(labels, minlength=K)
            nk = counts + _EPS
            means = np.empty((K, D))
            rows = rows[np.argsort(labels, kind="stable")]  # grouped by component
            ends = np.cumsum(counts)
            for k in range(K):
                Xk = X[rows[ends[k] - counts[k] : ends[k]]].astype(np.float64)  # this component's rows
                means[k] = Xk.sum(axis=0) / nk[k]
                diff = Xk - means[k]
                cov[k] = (diff * diff).sum(axis=0) / nk[k] if diag else diff.T @ diff / nk[k]
        else:
            X = X.astype(np.float64, copy=False)
            resp = assignment.astype(np.float64)
            nk = resp.sum(axis=0) + _EPS
            means = resp.T @ X / nk[:, np.newaxis]
            if diag:
                # scikit-learn's expanded form E[x²] − μ² as one matrix product for all components,
                # taken about the (weighted) data mean (less cancellation for data far from the origin).
                centre = np.average(X, axis=0, weights=sample_weight)
                Xc = X - centre
                mc = means - centre
                cov = np.maximum(resp.T @ (Xc * Xc) / nk[:, np.newaxis] - mc * mc, 0.0)
            else:
                for k in range(K):
                    diff = X - means[k]
                    cov[k] = (resp[:, k] * diff.T) @ diff / nk[k]
        if diag:
            cov += self.reg_covar
        else:
            cov[:, np.arange(D), np.arange(D)] += self.reg_covar
        if self.covariance_type == "spherical":
            cov = cov.mean(axis=1)
        if self.covariance_type == "tied":
            # scikit-learn's tied estimate, (Σ_n x xᵀ − Σ_k N_k μ_k μ_kᵀ) / Σ_k N_k + reg_covar: the
            # pooled scatter when every row's responsibilities sum to 1 (its weight) — and, as in
            # scikit-learn, over all rows even when the start gives mass to K rows only
            # ('k-means++', 'random_from_data').
            Xf = X.astype(np.float64, copy=False)
            weight = np.ones(len(Xf)) if sample_weight is None else sample_weight
            cov = (Xf.T @ (Xf * weight[:, np.newaxis]) - (nk * means.T) @ means) / nk.sum()
            cov[np.arange(D), np.arange(D)] += self.reg_covar
        return nk, means, cov

    def _initial_model(self, X: np.ndarray, random_state, sample_weight=None) -> _core.Model:
        n, D = X.shape
        given = (self.weights_init, self.means_init, self.precisions_init)
        weights = means = cov = None
        if any(v is None for v in given):
            assignment = self._initial_assignment(X, random_state, sample_weight)
            nk, means, cov = self._moments(X, assignment, sample_weight)
            weights = nk / (n if sample_weight is None else sample_weight.sum())
        if self.weights_init is not None:
            weights = np.asarray(self.weights_init, dtype=np.float64)
        if self.means_init is not None:
            means = np.asarray(self.means_init, dtype=np.float64)
        if self.precisions_init is not None:
            p = np.asarray(self.precisions_init, dtype=np.float64)
            cov = np.linalg.inv(p) if self.covariance_type in _FULL_MATRICES else 1.0 / p
            if self.covariance_type in _FULL_MATRICES:
                cov = (cov + np.swapaxes(cov, -1, -2)) / 2
        return self._model_from(weights / weights.sum(), means, cov, D)

    def _given_initial_parameters(self) -> dict:
        """weights_init, means_init and precisions_init as the engine takes them (flat float64
        lists): those given replace the engine's k-means++ draws of them ('native')."""
        given = (("init_weights", self.weights_init), ("init_means", self.means_init),
                 ("init_precisions", self.precisions_init))
        return {key: np.ravel(np.asarray(v, dtype=np.float64)).tolist() for key, v in given if v is not None}

    def _model_from(self, weights, means, cov, D) -> _core.Model:
        part = {"family": _FAMILIES[self.covariance_type], "columns": (0, D)}
        part["mean"] = np.ascontiguousarray(means, dtype=np.float64)
        if self.covariance_type == "tied":  # the engine holds the shared matrix once per component
            cov = np.broadcast_to(cov, (len(weights), D, D))
        part["cov" if self.covariance_type in _FULL_MATRICES else "var"] = np.ascontiguousarray(cov, dtype=np.float64)
        return _core.Model.from_arrays(np.ascontiguousarray(weights, dtype=np.float64), [part])

    # -- fitting ----------------------------------------------------------------------------------

    def fit_predict(self, X, y=None, sample_weight=None):
        """Fits the mixture n_init times by EM, keeps the fit with the largest lower bound (mean
        log-likelihood per unit of weight) and returns each row's most responsible component.
        sample_weight: one weight >= 0 per row (None: all 1); a row of integer weight w counts
        as w copies of it, in the initialisation as in EM."""
        distributed = self._distributed_options() is not None  # this rank's rows: any number
        X = validate_data(self, X, dtype=[np.float64, np.float32], ensure_min_samples=0 if distributed else 2)
        sample_weight = _check_sample_weight(sample_weight, X.shape[0], all_rows=not distributed)
        if not distributed and X.shape[0] < self.n_components:
            raise ValueError(
                "Expected n_samples >= n_components "
                f"but got n_components = {self.n_components}, n_samples = {X.shape[0]}"
            )
        self._check_parameters(X.shape[1])
        X = _as_engine_array(X)
        do_init = not (self.warm_start and hasattr(self, "converged_"))
        # Restarts from the same given parameters would repeat one fit: run it once.
        given = self.weights_init is not None and self.means_init is not None and self.precisions_init is not None
        n_init = self.n_init if do_init and not given else 1
        random_state = check_random_state(self.random_state)
        progress = _Progress(self.verbose, self.verbose_interval)
        common = {
            "layout": _FAMILIES[self.covariance_type],
            "max_iter": self.max_iter,
            "tol": float(self.tol),
            "reg_covar": float(self.reg_covar),
        }
        if distributed and do_init and not given and self.init_params != "native":
            raise ValueError(
                f"init_params = {self.init_params!r} draws from this rank's rows only; a distributed fit "
                "initialises in the engine over every rank's rows: use init_params='native', or give "
                "weights_init, means_init and precisions_init"
            )
        best = None
        if do_init and self.init_params == "native":
            progress.restart(0)
            if self.max_iter == 0:
                raise ValueError("max_iter = 0 needs init_params other than 'native' (nothing would be initialised)")
            r = self._run_fit(
                X,
                progress,
                sample_weight=sample_weight,
                components=self.n_components,
                init="kmeanspp",
                n_init=n_init,
                seed=_seed(random_state),
                **self._given_initial_parameters(),
                **common,
            )
            best = (r["model"], r["mean_loglik"][-1], r["iterations"], r["converged"], r["mean_loglik"])
            progress.finished(best[1], best[3])
        else:
            for restart in range(n_init):
                progress.restart(restart)
                start = self._initial_model(X, random_state, sample_weight) if do_init else self._model
                if self.max_iter == 0:
                    candidate = (start, -np.inf, 0, False, [])
                else:
                    r = self._run_fit(
                        X, progress, sample_weight=sample_weight, init="model", init_model=start, **common
                    )
                    candidate = (r["model"], r["mean_loglik"][-1], r["iterations"], r["converged"], r["mean_loglik"])
                    progress.finished(candidate[1], candidate[3])
                if best is None or candidate[1] > best[1]:
                    best = candidate
        model, self.lower_bound_, self.n_iter_, self.converged_, bounds = best
        self.lower_bounds_ = list(bounds)
        if not self.converged_ and self.max_iter > 0:
            self._warn_not_converged()
        self._set_model(model)
        o = self._engine_options()
        return _core.predict(self._model, X, o["device"], o["threads"], "fp64")

    def _set_model(self, model: _core.Model) -> None:
        self._model = model
        part = model.parts[0]
        self.weights_ = model.weights
        self.means_ = part["mean"]
        if self.covariance_type not in _FULL_MATRICES:  # diag (K, D) or spherical (K,)
            self.covariances_ = part["var"]
            self.precisions_cholesky_ = 1.0 / np.sqrt(self.covariances_)
            self.precisions_ = 1.0 / self.covariances_
        else:  # full (K, D, D); tied (D, D), the matrix every component shares
            self.covariances_ = part["cov"] if self.covariance_type == "full" else part["cov"][0]
            D = self.covariances_.shape[1]
            chol = np.linalg.cholesky(self.covariances_)
            eye = np.broadcast_to(np.eye(D), self.covariances_.shape)
            # scikit-learn's form: the transposed inverse of the covariance's Cholesky factor, so
            # that precision = U Uᵀ with U upper triangular.
            self.precisions_cholesky_ = np.swapaxes(np.linalg.solve(chol, eye), -1, -2)
            self.precisions_ = self.precisions_cholesky_ @ np.swapaxes(self.precisions_cholesky_, -1, -2)
