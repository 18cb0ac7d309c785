"""mixle on a Dask cluster: fit the rows of a dask array where they lie, one rank per worker.

    from dask.distributed import Client
    import mixle.dask

    client = Client(...)                       # any dask.distributed cluster
    gm = mixle.dask.GaussianMixture(8, init_params="native", random_state=0).fit(X)   # X: dask array
    labels = gm.predict(X)                     # a dask array, computed block by block

How a fit runs (docs/python.md, "Dask"):

- X is persisted and left where its blocks are (``who_has``); the workers that hold rows become
  the ranks, ordered by (host, worker address), so a fit is reproducible for a seed and a cluster
  layout. Rank r's rows are its blocks in block order, after those of ranks 0…r−1.
- One task per rank, pinned to its worker; a task that runs elsewhere fails at once. Fits on one
  cluster take a cluster-wide lock (``distributed.Lock("mixle-fit")``), so two fits never share a
  worker at once.
- Rank 0's task hosts the rendezvous on a port the operating system picks and publishes it
  through the scheduler (a ``distributed.Variable``); rank, world size and address reach the engine
  as arguments (``launch_environment``), never through the worker's ``os.environ``.
- CPU workers all-reduce with Gloo; every rank ends with the same model, which the client keeps.
  ``predict``, ``predict_proba``, ``score_samples`` run block by block (``map_blocks``) and return
  dask arrays; ``score`` returns a number.
- A lost or failing rank makes the other tasks fail within the fit's ``timeout`` (the
  ``distributed`` option, default 60 s); the client sees the first error.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from urllib.parse import urlsplit

import numpy as np

from . import _core
from ._gaussian_mixture import _FAMILIES
from ._gaussian_mixture import GaussianMixture as _LocalGaussianMixture
from ._launch import rank_environment
from ._mixture_model import MixtureModel as _LocalMixtureModel

_LOCK_NAME = "mixle-fit"


def _dask():
    try:
        import dask.array as da
        from distributed import Lock, Variable, default_client, futures_of, get_worker, wait
    except ImportError as e:  # pragma: no cover - the tests install dask
        raise ImportError("mixle.dask needs dask and distributed: pip install 'dask[array]' distributed") from e
    return da, Lock, Variable, default_client, futures_of, get_worker, wait


def _host(address: str) -> str:
    """The host of a worker address such as 'tcp://10.0.0.5:38211'."""
    return urlsplit(address).hostname or address


def _as_dask_array(X):
    """X as a dask array chunked along rows only (a dask DataFrame becomes its values)."""
    da = _dask()[0]
    if hasattr(X, "to_dask_array"):  # a dask DataFrame
        X = X.to_dask_array(lengths=True)
    if not isinstance(X, da.Array):
        raise TypeError(f"X: a dask array or dask DataFrame expected, got {type(X).__name__}")
    if X.ndim != 2:
        raise ValueError(f"X: a 2-D array expected, got {X.ndim} dimensions")
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    return X


def _with_weight_column(X, sample_weight):
    """(X, False) without weights; else (X with the weights as one more, last column, float64,
    True) — so each row's weight lies in the same block, on the same worker, as the row."""
    if sample_weight is None:
        return X, False
    da = _dask()[0]
    w = sample_weight
    if hasattr(w, "to_dask_array"):  # a dask Series
        w = w.to_dask_array(lengths=True)
    if not isinstance(w, da.Array):
        w = np.asarray(w, dtype=np.float64)
        if w.shape == (X.shape[0],):
            w = da.from_array(w, chunks=(X.chunks[0],))
    if w.ndim != 1 or w.shape[0] != X.shape[0]:
        raise ValueError(f"sample_weight: shape {w.shape}, expected ({X.shape[0]},): one weight per row of X")
    w = w.astype(np.float64).rechunk((X.chunks[0],))
    return da.concatenate([X.astype(np.float64), w[:, None]], axis=1).rechunk({1: -1}), True


def _rank_task(rank, world, planned, address, port_name, token, fit_kwargs, dist, columns, weighted, *blocks):
    """One rank's fit, run on its worker: the blocks held there, concatenated in block order
    (their last column the rows' sample weights when `weighted`)."""
    _, _, Variable, _, _, get_worker, _ = _dask()
    here = get_worker().address
    if here != planned:
        raise RuntimeError(f"mixle.dask: rank {rank} was planned on worker {planned} but runs on {here}")
    rows = [np.ascontiguousarray(b) for b in blocks if b.shape[0]]
    X = np.concatenate(rows) if rows else np.empty((0, columns + weighted), dtype=np.float64)
    weights = None
    if weighted:
        weights = np.ascontiguousarray(X[:, -1])
        X = np.ascontiguousarray(X[:, :-1])
    env = rank_environment(rank, world, token, address)
    port = Variable(port_name)
    options = dict(dist, launch_environment=env)
    if rank == 0:
        env["MASTER_PORT"] = "0"  # the store binds a port the OS picks; publish it
        options["on_store_port"] = lambda p: port.set(p)
    else:
        env["MASTER_PORT"] = str(port.get(timeout=float(dist.get("timeout", 60.0))))
    result = _core.fit_distributed(X, options, sample_weight=weights, **fit_kwargs)
    return {key: result[key] for key in ("mean_loglik", "iterations", "converged", "rank", "world_size",
                                         "first_row", "local_rows", "comm", "warnings")} | {
        "model": result["model"].to_json()
    }


def _gather_or_first_error(client, futures):
    """Every rank's result; or, as soon as one rank fails, the error of the lowest failed rank
    (the other tasks are cancelled). A rank whose worker was lost never finishes — its task waits
    for that worker — but the other ranks then fail within the fit's timeout, so this returns or
    raises in bounded time."""
    wait = _dask()[6]
    pending = set(futures)
    while pending:
        _, pending = wait(pending, return_when="FIRST_COMPLETED")
        failed = [f for f in futures if f.status == "error"]
        if failed:
            client.cancel(futures)
            failed[0].result()  # raises that rank's error
    return client.gather(futures)


class _DaskFit:
    """The cluster fit shared by the estimators: plan ranks from where X's blocks are, run one
    pinned task per rank, keep the model."""

    def _client(self):
        return self.client if self.client is not None else _dask()[3]()

    def _fit_on_cluster(self, X, fit_kwargs: dict, sample_weight=None) -> dict:
        da, Lock, _, _, futures_of, _, wait = _dask()
        client = self._client()
        X, weighted = _with_weight_column(_as_dask_array(X), sample_weight)
        columns = X.shape[1] - weighted
        X = client.persist(X)
        wait(X)
        blocks = futures_of(X)
        # futures_of returns the blocks in key order: (name, row block, 0).
        blocks.sort(key=lambda f: f.key[1])
        holders = client.who_has(blocks)
        by_worker = defaultdict(list)
        for f in blocks:
            where = sorted(holders[f.key])
            if not where:
                raise RuntimeError(f"mixle.dask: block {f.key} is held by no worker")
            by_worker[where[0]].append(f)
        workers = sorted(by_worker, key=lambda w: (_host(w), w))
        world = len(workers)
        token = f"mixle-dask-{uuid.uuid4().hex}"
        dist = self._distributed_options() or {}
        with Lock(_LOCK_NAME):
            futures = [
                client.submit(
                    _rank_task,
                    r,
                    world,
                    w,
                    _host(workers[0]),
                    token + "-port",
                    token,
                    fit_kwargs,
                    dist,
                    columns,
                    weighted,
                    *by_worker[w],
                    workers=[w],
                    allow_other_workers=False,
                    pure=False,
                    key=f"{token}-rank{r}",
                )
                for r, w in enumerate(workers)
            ]
            results = _gather_or_first_error(client, futures)
        first = results[0]
        self.n_features_in_ = columns
        self.distributed_ = {
            "world_size": world,
            "workers": workers,
            "rows_per_rank": [r["local_rows"] for r in results],
            "comm": first["comm"],
        }
        return first

    def _adopt(self, result: dict) -> None:
        """The fitted state from rank 0's result: the model and the fit's numbers."""
        self._set_model(_core.Model.from_json(result["model"]))
        self.lower_bounds_ = list(result["mean_loglik"])
        self.lower_bound_ = self.lower_bounds_[-1]
        self.n_iter_ = result["iterations"]
        self.converged_ = result["converged"]
        if not self.converged_:
            self._warn_not_converged()

    # Queries of dask arrays run block by block on the workers and stay dask arrays; the model
    # travels to them as mixle.Model (pickled as its JSON), not the estimator and its client.
    def _blockwise(self, X, method: str, per_component: bool):
        X = _as_dask_array(X)
        o = self._engine_options()
        args = (self._model, method, o["device"], o["threads"])
        if per_component:
            return X.map_blocks(_block_query, *args, dtype=np.float64, chunks=(X.chunks[0], (self.n_components,)))
        dtype = np.int64 if method == "predict" else np.float64
        return X.map_blocks(_block_query, *args, dtype=dtype, drop_axis=1, chunks=(X.chunks[0],))

    def predict(self, X):
        """Labels: a dask array for a dask input (block by block), else as mixle's estimator."""
        return self._blockwise(X, "predict", False) if _is_dask(X) else super().predict(X)

    def predict_proba(self, X):
        """Responsibilities: a dask array for a dask input (block by block), else as mixle's estimator."""
        return self._blockwise(X, "predict_proba", True) if _is_dask(X) else super().predict_proba(X)

    def score_samples(self, X):
        """Per-row log-likelihoods: a dask array for a dask input, else as mixle's estimator."""
        return self._blockwise(X, "score_samples", False) if _is_dask(X) else super().score_samples(X)

    def score(self, X, y=None):
        """Mean log-likelihood per row (computed on the cluster for a dask input)."""
        if _is_dask(X):
            return float(self.score_samples(X).mean().compute())
        return super().score(X)


def _is_dask(X) -> bool:
    return hasattr(X, "dask") and (hasattr(X, "map_blocks") or hasattr(X, "to_dask_array"))


def _block_query(block, model, method, device, threads):
    """One block's predict / predict_proba / score_samples on a worker."""
    if block.shape[0] == 0:
        shape = (0, model.components) if method == "predict_proba" else (0,)
        return np.empty(shape, dtype=np.int64 if method == "predict" else np.float64)
    X = np.ascontiguousarray(block if block.dtype in (np.float32, np.float64) else block.astype(np.float64))
    return getattr(_core, method)(model, X, device, threads, "fp64")


class GaussianMixture(_DaskFit, _LocalGaussianMixture):
    """mixle.GaussianMixture fitted across a Dask cluster (module docstring). Parameters are
    mixle.GaussianMixture's plus ``client`` (default: the current client). Initialisation runs in
    the engine over every rank's rows: ``init_params="native"``, or all of ``weights_init``,
    ``means_init`` and ``precisions_init``. ``distributed`` may hold the distributed options
    (``timeout``, ``checkpoint_dir``, ``receipts_file``, …)."""

    def __init__(self, n_components=1, *, client=None, **params):
        super().__init__(n_components, **params)
        self.client = client

    @classmethod
    def _get_param_names(cls):
        return sorted(set(_LocalGaussianMixture._get_param_names()) | {"client"})

    def fit(self, X, y=None, sample_weight=None):
        """Fits the rows of the dask array (or DataFrame) X where they lie; returns self.
        sample_weight: a dask array or Series (or array) of one weight >= 0 per row."""
        K = self.n_components
        given = self.weights_init is not None and self.means_init is not None and self.precisions_init is not None
        if self.init_params != "native" and not given:
            raise ValueError(
                "mixle.dask initialises in the engine over every worker's rows: use init_params='native', or give "
                "weights_init, means_init and precisions_init"
            )
        Xd = _as_dask_array(X)
        self._check_parameters(Xd.shape[1])
        common = dict(
            layout=_FAMILIES[self.covariance_type],
            max_iter=self.max_iter,
            tol=float(self.tol),
            reg_covar=float(self.reg_covar),
            precision=self.precision,
            prune=getattr(self, "prune", "auto"),
            device=self.device,
            threads=0 if self.n_threads is None else int(self.n_threads),
        )
        if self.warm_start and hasattr(self, "_model"):
            fit_kwargs = dict(common, init="model", init_model=self._model)
        elif given:
            fit_kwargs = dict(common, init="model", init_model=self._given_model(Xd.shape[1]))
        else:
            from ._base import _seed

            fit_kwargs = dict(common, components=K, init="kmeanspp", n_init=self.n_init, seed=_seed(self.random_state),
                              **self._given_initial_parameters())
        self._adopt(self._fit_on_cluster(Xd, fit_kwargs, sample_weight))
        return self

    def _given_model(self, columns: int) -> _core.Model:
        """The initial model from weights_init, means_init and precisions_init (no data needed)."""
        return self._initial_model(np.empty((0, columns)), None)

    def fit_predict(self, X, y=None, sample_weight=None):
        return self.fit(X, sample_weight=sample_weight).predict(X)


class MixtureModel(_DaskFit, _LocalMixtureModel):
    """mixle.MixtureModel fitted across a Dask cluster (module docstring); parameters are
    mixle.MixtureModel's plus ``client``."""

    def __init__(self, n_components=1, *, client=None, **params):
        super().__init__(n_components, **params)
        self.client = client

    @classmethod
    def _get_param_names(cls):
        return sorted(set(_LocalMixtureModel._get_param_names()) | {"client"})

    def fit(self, X, y=None, sample_weight=None):
        """Fits the rows of the dask array (or DataFrame) X where they lie; returns self.
        sample_weight: a dask array or Series (or array) of one weight >= 0 per row."""
        from ._base import _seed
        from ._mixture_model import layout_text

        Xd = _as_dask_array(X)
        warm = self.warm_start and hasattr(self, "_model")
        fit_kwargs = dict(
            components=int(self.n_components),
            layout=layout_text(self.layout),
            max_iter=int(self.max_iter),
            tol=float(self.tol),
            reg_covar=float(self.reg_covar),
            pseudo_count=float(self.pseudo_count),
            rate_floor=float(self.rate_floor),
            n_init=1 if warm else int(self.n_init),
            seed=_seed(self.random_state),
            init="model" if warm else self.init,
            init_p=float(self.init_p),
            precision=self.precision,
            prune=getattr(self, "prune", "auto"),
            device=self.device,
            threads=0 if self.n_threads is None else int(self.n_threads),
        )
        if warm:
            fit_kwargs["init_model"] = self._model
        self._adopt(self._fit_on_cluster(Xd, fit_kwargs, sample_weight))
        return self

    def fit_predict(self, X, y=None, sample_weight=None):
        return self.fit(X, sample_weight=sample_weight).predict(X)


__all__ = ["GaussianMixture", "MixtureModel"]
