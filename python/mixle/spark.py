"""mixle on Spark: a Spark ML Estimator/Model pair that fits with mixle's engine, one rank per
Spark task, in barrier execution mode.

    from pyspark.sql import SparkSession
    import mixle.spark

    gm = mixle.spark.GaussianMixture(k=8, featuresCol="features", seed=0)
    model = gm.fit(df)                 # df: a vector column or an array<double> column
    out = model.transform(df)          # adds "prediction" and "probability"
    model.write().overwrite().save(path); mixle.spark.GaussianMixtureModel.load(path)

How a fit runs (docs/python.md, "Spark"):

- The features column becomes array<double>; the DataFrame keeps its partitions (or is
  repartitioned to ``numWorkers``), and one barrier task runs per partition: rank = the
  partition's index, world size = the number of partitions. Every task holds all Spark task
  slots of the stage at once, so the cluster needs at least that many free slots.
- Each task gathers its partition's rows into one float64 array (any number of rows, zero
  included). A first ``allGather`` shares every rank's row and column counts, or the error that
  reading its rows raised, so that all tasks agree to go on or to stop before any rendezvous.
- Rank 0's store binds a port the operating system picks and publishes it, with rank 0's host,
  through a second ``allGather``; the other ranks wait for that message. Rank, world size,
  address and port reach the engine as arguments (``launch_environment``), never through the
  executor's ``os.environ``. The ranks all-reduce with Gloo; every rank ends with the same model.
- Rank 0 yields one row (the model's JSON and the fit's numbers); the others yield nothing, or
  a row with their error. The driver collects those rows, so only the model comes back to it.
- ``transform`` runs a pandas UDF per batch on the executors; the data are never collected.
"""

from __future__ import annotations

import json
import re
import uuid

import numpy as np

from . import _core
from ._base import _seed
from ._gaussian_mixture import _FAMILIES
from ._gaussian_mixture import GaussianMixture as _LocalGaussianMixture
from ._launch import rank_environment

try:
    import pandas as pd  # a module global: pandas_udf reads the query's type hints through it
    from pyspark import keyword_only
    from pyspark.ml import Estimator, Model
    from pyspark.ml.functions import array_to_vector, vector_to_array
    from pyspark.ml.linalg import VectorUDT
    from pyspark.ml.param import Param, Params, TypeConverters
    from pyspark.ml.param.shared import (
        HasFeaturesCol,
        HasMaxIter,
        HasPredictionCol,
        HasProbabilityCol,
        HasSeed,
        HasTol,
        HasWeightCol,
    )
    from pyspark.ml.util import DefaultParamsReader, DefaultParamsWriter, MLReadable, MLReader, MLWritable, MLWriter
    from pyspark.ml.util import DefaultParamsReadable, DefaultParamsWritable
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
except ImportError as e:  # pragma: no cover - the tests install pyspark
    raise ImportError("mixle.spark needs pyspark (with pandas and pyarrow): pip install 'pyspark[sql]'") from e

_RESULT_SCHEMA = (
    "rank int, error string, error_type string, model string, mean_loglik array<double>, iterations int, "
    "converged boolean, comm string, rows array<long>"
)
_NUMERIC = (T.DoubleType, T.FloatType, T.IntegerType, T.LongType, T.ShortType, T.ByteType)


def _features_as_array(df, column: str):
    """The column `column` of df as array<double>: a vector column (pyspark.ml.linalg) or an array
    of numbers; anything else is refused by name."""
    if column not in df.columns:
        raise ValueError(f"featuresCol = {column!r}: no such column (columns: {', '.join(df.columns)})")
    kind = df.schema[column].dataType
    if isinstance(kind, VectorUDT):
        return vector_to_array(F.col(column), "float64")
    if isinstance(kind, T.ArrayType) and isinstance(kind.elementType, _NUMERIC):
        return F.col(column).cast(T.ArrayType(T.DoubleType()))
    raise TypeError(
        f"featuresCol = {column!r} has type {kind.simpleString()}: a vector column (pyspark.ml.linalg.VectorUDT) "
        "or an array of numbers (array<double>, array<float>, array<int>, ...) expected"
    )


def _rows_of(batches, columns: int | None = None) -> np.ndarray:
    """The rows of a partition (pandas batches of one array column 'x') as a C-contiguous float64
    array; a null row or rows of different lengths raise ValueError."""
    parts = []
    for batch in batches:
        values = batch["x"].to_numpy()
        if len(values) == 0:
            continue
        if any(v is None for v in values):
            raise ValueError("a null row in the features column")
        lengths = np.fromiter((len(v) for v in values), dtype=np.int64, count=len(values))
        width = int(lengths[0]) if columns is None else columns
        if np.any(lengths != width):
            raise ValueError(f"rows of {sorted(set(lengths.tolist()))} values; all rows need {width}")
        columns = width
        parts.append(np.concatenate(values).astype(np.float64, copy=False).reshape(len(values), width))
    if not parts:
        return np.empty((0, columns or 0), dtype=np.float64)
    return np.ascontiguousarray(np.concatenate(parts) if len(parts) > 1 else parts[0])


def _weight_column(df, column: str):
    """The column `column` of df (sample weights: numbers) as double; anything else is refused."""
    if column not in df.columns:
        raise ValueError(f"weightCol = {column!r}: no such column (columns: {', '.join(df.columns)})")
    kind = df.schema[column].dataType
    if not isinstance(kind, _NUMERIC):
        raise TypeError(f"weightCol = {column!r} has type {kind.simpleString()}: a numeric column expected")
    return F.col(column).cast(T.DoubleType())


def _host_of(address: str) -> str:
    """The host of a Spark task address 'host:port' (an IPv6 host may be bracketed)."""
    host = address.rsplit(":", 1)[0] if ":" in address else address
    return host.strip("[]")


def _train_task(fit_kwargs: dict, dist: dict, token: str):
    """The function of the barrier stage: one rank's fit over its partition's rows."""

    def train(batches):
        from pyspark import BarrierTaskContext

        context = BarrierTaskContext.get()
        rank = context.partitionId()
        infos = context.getTaskInfos()
        world = len(infos)
        # Round 1: every rank's rows and columns, or its error, so all ranks stop or go on together.
        weights = None
        try:
            batches = list(batches)
            X = _rows_of(batches)
            if batches and "w" in batches[0]:  # weightCol: a null weight is NaN, refused by the engine
                weights = np.ascontiguousarray(
                    np.concatenate([b["w"].to_numpy(dtype=np.float64, na_value=np.nan) for b in batches])
                )
                bad = np.flatnonzero(~(np.isfinite(weights) & (weights >= 0)))
                if bad.size:  # here, so that every rank stops in round 1 rather than at a timeout
                    raise ValueError(
                        f"weightCol: row {bad[0]} (counted from 0) of this partition has weight {weights[bad[0]]}; "
                        "weights must be finite and >= 0"
                    )
            mine = {"rows": int(X.shape[0]), "columns": int(X.shape[1]) if X.shape[0] else None}
        except Exception as e:  # reported by rank 0 below, after every rank has heard of it
            X, mine = None, {"error": f"rank {rank}: {e}", "type": type(e).__name__}
        everyone = [json.loads(m) for m in context.allGather(json.dumps(mine))]
        errors = [m for m in everyone if "error" in m]
        widths = sorted({m["columns"] for m in everyone if m.get("columns") is not None})
        rows = [m.get("rows", 0) for m in everyone]
        problem = None
        if errors:
            problem = (errors[0]["type"], "; ".join(m["error"] for m in errors))
        elif len(widths) > 1:
            problem = ("ValueError", f"the partitions' rows have different numbers of features: {widths}")
        elif not widths:
            problem = ("ValueError", "the features column has no rows")
        elif sum(rows) < fit_kwargs.get("components", 1):
            problem = ("ValueError", f"{sum(rows)} rows for k = {fit_kwargs['components']} components")
        if problem is not None:
            if rank == 0:
                yield _result_frame(rank, error=problem[1], error_type=problem[0])
            return
        if X.shape[0] == 0:
            X = np.empty((0, widths[0]), dtype=np.float64)
        env = rank_environment(rank, world, token)
        options = dict(dist, launch_environment=env)
        kwargs = dict(fit_kwargs)
        if "init_model" in kwargs:
            kwargs["init_model"] = _core.Model.from_json(kwargs["init_model"])
        if kwargs.get("threads", 0) == 0:
            try:
                kwargs["threads"] = max(1, int(context.cpus()))  # the cores Spark gave this task
            except Exception:  # pragma: no cover - TaskContext.cpus() is Spark 3.3+
                kwargs["threads"] = 1
        # Round 2: rank 0's host and the port its store bound.
        if rank == 0:
            host = _host_of(infos[0].address)
            env["MASTER_ADDR"] = host
            env["MASTER_PORT"] = "0"  # the store binds a port the OS picks; publish it
            options["on_store_port"] = lambda port: context.allGather(json.dumps({"host": host, "port": int(port)}))
        else:
            first = json.loads(context.allGather("")[0])
            env["MASTER_ADDR"] = first["host"]
            env["MASTER_PORT"] = str(first["port"])
        try:
            result = _core.fit_distributed(X, options, sample_weight=weights, **kwargs)
        except Exception as e:  # every rank reports; the driver raises the first (lowest rank)
            yield _result_frame(rank, error=f"rank {rank}: {e}", error_type=type(e).__name__)
            return
        if rank == 0:
            yield _result_frame(
                rank,
                model=result["model"].to_json(),
                mean_loglik=list(result["mean_loglik"]),
                iterations=int(result["iterations"]),
                converged=bool(result["converged"]),
                comm=result["comm"],
                rows=rows,
            )

    return train


def _result_frame(rank, **values):
    row = {"rank": rank, "error": None, "error_type": None, "model": None, "mean_loglik": None, "iterations": None,
           "converged": None, "comm": None, "rows": None}
    row.update(values)
    return pd.DataFrame([row])


def _run_barrier_fit(dataset, features_col: str, num_workers, fit_kwargs: dict, dist: dict, weight_col=None) -> dict:
    """Runs the barrier stage over dataset's features (and sample weights, when weight_col names
    a column) and returns rank 0's result row as a dict."""
    columns = [_features_as_array(dataset, features_col).alias("x")]
    if weight_col:
        columns.append(_weight_column(dataset, weight_col).alias("w"))
    data = dataset.select(*columns)
    if num_workers is not None:
        data = data.repartition(int(num_workers))
    token = f"mixle-spark-{uuid.uuid4().hex}"
    stage = data.mapInPandas(_train_task(fit_kwargs, dist, token), _RESULT_SCHEMA, barrier=True)
    try:
        rows = [r.asDict() for r in stage.collect()]
    except Exception as e:  # Py4JJavaError or PySparkException, by PySpark version
        text = str(e)
        if "BarrierJobUnsupportedRDDChainException" in text and num_workers is None:
            raise RuntimeError(
                "mixle.spark: Spark refuses a barrier stage over this DataFrame's partitions as they are (a union or "
                "coalesce in its plan); set numWorkers to repartition the input. Spark said: " + text.split("\n")[0]
            ) from e
        if "BarrierJobSlotsNumberCheckFailed" in text:
            raise RuntimeError(
                f"mixle.spark: the fit needs {data.rdd.getNumPartitions()} task slots at once (one per rank) and the "
                "cluster has fewer; set numWorkers lower. Spark said: " + text.split("\n")[0]
            ) from e
        # A task that failed rather than report (its Python worker or executor died): Spark stops
        # the whole barrier stage and names the task by (stage, partition); the partition is the rank.
        failed = re.search(r"barrier task \w+\((\d+), (\d+)\) finished unsuccessfully\.\s*(.*)", text)
        if failed:
            raise RuntimeError(
                f"mixle.spark fit: rank {failed.group(2)}'s task failed, so Spark stopped the barrier stage and every "
                f"rank with it. Spark said: {failed.group(3)}"
            ) from e
        raise
    rows.sort(key=lambda r: r["rank"])
    errors = [r for r in rows if r["error"] is not None]
    if errors:
        # A rank that failed first makes the others time out: its own error comes first by rank
        # unless it is one of those timeouts.
        message = "; ".join(r["error"] for r in errors)
        kinds = {r["error_type"] for r in errors}
        raise (ValueError if kinds <= {"ValueError", "TypeError"} else RuntimeError)(f"mixle.spark fit: {message}")
    if len(rows) != 1 or rows[0]["model"] is None:
        raise RuntimeError(f"mixle.spark fit: expected one result from rank 0, got {len(rows)}")
    return rows[0]


class _GaussianMixtureParams(HasFeaturesCol, HasPredictionCol, HasProbabilityCol, HasMaxIter, HasTol, HasSeed,
                             HasWeightCol):
    """The params GaussianMixture and GaussianMixtureModel share."""

    k = Param(Params._dummy(), "k", "number of components (>= 1)", typeConverter=TypeConverters.toInt)
    covarianceType = Param(Params._dummy(), "covarianceType", "'full', 'tied', 'diag' or 'spherical'",
                           typeConverter=TypeConverters.toString)
    regCovar = Param(Params._dummy(), "regCovar", "added to the covariances' diagonals (>= 0)",
                     typeConverter=TypeConverters.toFloat)
    initMode = Param(Params._dummy(), "initMode",
                     "'native' (the engine's k-means++ over every rank's rows, seeded by seed) or 'given' "
                     "(initialWeights, initialMeans and initialPrecisions)", typeConverter=TypeConverters.toString)
    initialWeights = Param(Params._dummy(), "initialWeights", "initial weights, k values summing to 1",
                           typeConverter=TypeConverters.toListFloat)
    initialMeans = Param(Params._dummy(), "initialMeans", "initial means, k lists of d values")
    initialPrecisions = Param(Params._dummy(), "initialPrecisions",
                              "initial precisions: k d×d matrices (full), one d×d matrix (tied), k lists of d "
                              "values (diag) or k values (spherical)")
    numWorkers = Param(Params._dummy(), "numWorkers",
                       "number of ranks: the input is repartitioned to it (default: the DataFrame's partitions, "
                       "kept as they are)", typeConverter=TypeConverters.toInt)
    timeout = Param(Params._dummy(), "timeout", "seconds a rank waits for the others (rendezvous, collectives)",
                    typeConverter=TypeConverters.toFloat)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(k=2, covarianceType="full", regCovar=1e-6, initMode="native", maxIter=100, tol=1e-3,
                         timeout=60.0, featuresCol="features", predictionCol="prediction",
                         probabilityCol="probability")

    # The column setters both the estimator and its model offer.
    def setFeaturesCol(self, value: str):
        return self._set(featuresCol=value)

    def setPredictionCol(self, value: str):
        return self._set(predictionCol=value)

    def setProbabilityCol(self, value: str):
        return self._set(probabilityCol=value)

    def getK(self) -> int:
        return self.getOrDefault(self.k)

    def getCovarianceType(self) -> str:
        return self.getOrDefault(self.covarianceType)

    def getRegCovar(self) -> float:
        return self.getOrDefault(self.regCovar)

    def getInitMode(self) -> str:
        return self.getOrDefault(self.initMode)

    def getNumWorkers(self):
        return self.getOrDefault(self.numWorkers) if self.isDefined(self.numWorkers) else None

    def getTimeout(self) -> float:
        return self.getOrDefault(self.timeout)


def _nested_floats(value):
    """A JSON-storable nested list of floats from an array-like."""
    return np.asarray(value, dtype=np.float64).tolist()


class GaussianMixture(_GaussianMixtureParams, Estimator, DefaultParamsReadable, DefaultParamsWritable):
    """Gaussian mixture fitted by EM in mixle's engine across Spark tasks (barrier execution mode).

    Params: featuresCol (a vector column or an array of numbers; default "features"),
    predictionCol ("prediction"), probabilityCol ("probability"), k (2), covarianceType ("full",
    "tied", "diag" or "spherical"), maxIter (100), tol (1e-3, on the change of the mean log-likelihood
    per row), seed, regCovar (1e-6), initMode ("native": the engine's k-means++ over every rank's
    rows; "given": initialWeights, initialMeans, initialPrecisions), numWorkers (the input is
    repartitioned to that many ranks; default: the DataFrame's partitions as they are), timeout
    (seconds, default 60), weightCol (optional: a numeric column of sample weights >= 0; a row of
    integer weight w counts as w copies of it).

    fit(df) runs one barrier task per partition (the module's docstring) and returns a
    :class:`GaussianMixtureModel`; it needs as many free task slots as ranks.
    """

    @keyword_only
    def __init__(self, *, featuresCol="features", predictionCol="prediction", probabilityCol="probability", k=2,
                 covarianceType="full", maxIter=100, tol=1e-3, seed=None, regCovar=1e-6, initMode="native",
                 initialWeights=None, initialMeans=None, initialPrecisions=None, numWorkers=None, timeout=60.0,
                 weightCol=None):
        super().__init__()
        self._set(**self._input_kwargs)

    @keyword_only
    def setParams(self, *, featuresCol="features", predictionCol="prediction", probabilityCol="probability", k=2,
                  covarianceType="full", maxIter=100, tol=1e-3, seed=None, regCovar=1e-6, initMode="native",
                  initialWeights=None, initialMeans=None, initialPrecisions=None, numWorkers=None, timeout=60.0,
                  weightCol=None):
        """Sets the given params (keywords only) and returns self."""
        return self._set(**self._input_kwargs)

    def _set(self, **kwargs):
        for name in ("initialMeans", "initialPrecisions"):
            if kwargs.get(name) is not None:
                kwargs[name] = _nested_floats(kwargs[name])
        return super()._set(**kwargs)

    def setK(self, value: int):
        return self._set(k=value)

    def setCovarianceType(self, value: str):
        return self._set(covarianceType=value)

    def setRegCovar(self, value: float):
        return self._set(regCovar=value)

    def setInitMode(self, value: str):
        return self._set(initMode=value)

    def setNumWorkers(self, value: int):
        return self._set(numWorkers=value)

    def setTimeout(self, value: float):
        return self._set(timeout=value)

    def setWeightCol(self, value: str):
        return self._set(weightCol=value)

    def setMaxIter(self, value: int):
        return self._set(maxIter=value)

    def setTol(self, value: float):
        return self._set(tol=value)

    def setSeed(self, value: int):
        return self._set(seed=value)

    def _fit_kwargs(self) -> dict:
        """The engine's fit options from the params; refuses bad values by name."""
        K = self.getK()
        cov = self.getCovarianceType()
        if K < 1:
            raise ValueError(f"k = {K}: an integer >= 1 expected")
        if cov not in _FAMILIES:
            raise ValueError(f"covarianceType = {cov!r}: one of 'full', 'tied', 'diag', 'spherical'")
        if self.getMaxIter() < 1:
            raise ValueError(f"maxIter = {self.getMaxIter()}: an integer >= 1 expected")
        for name, value in (("tol", self.getTol()), ("regCovar", self.getRegCovar())):
            if not np.isfinite(value) or value < 0:
                raise ValueError(f"{name} = {value!r}: a finite number >= 0 expected")
        workers = self.getNumWorkers()
        if workers is not None and workers < 1:
            raise ValueError(f"numWorkers = {workers}: an integer >= 1 expected")
        if not self.getTimeout() > 0:
            raise ValueError(f"timeout = {self.getTimeout()!r}: a positive number of seconds expected")
        common = dict(layout=_FAMILIES[cov], max_iter=int(self.getMaxIter()), tol=float(self.getTol()),
                      reg_covar=float(self.getRegCovar()), precision="fp64", device="cpu", threads=0, components=K)
        mode = self.getInitMode()
        given = [self.getOrDefault(p) if self.isDefined(p) else None
                 for p in (self.initialWeights, self.initialMeans, self.initialPrecisions)]
        if mode == "native":
            if any(v is not None for v in given):
                raise ValueError("initialWeights, initialMeans or initialPrecisions is set: use initMode='given'")
            return dict(common, init="kmeanspp", n_init=1, seed=_seed(self.getSeed()))
        if mode != "given":
            raise ValueError(f"initMode = {mode!r}: 'native' or 'given'")
        if any(v is None for v in given):
            raise ValueError("initMode = 'given' needs initialWeights, initialMeans and initialPrecisions")
        means = np.asarray(given[1], dtype=np.float64)
        if means.ndim != 2:
            raise ValueError(f"initialMeans: k lists of d values expected, got shape {means.shape}")
        local = _LocalGaussianMixture(K, covariance_type=cov, reg_covar=self.getRegCovar(), weights_init=given[0],
                                      means_init=means, precisions_init=given[2])
        local._check_parameters(means.shape[1])
        start = local._initial_model(np.empty((0, means.shape[1])), None)
        return dict(common, init="model", init_model=start.to_json())

    def _fit(self, dataset):
        fit_kwargs = self._fit_kwargs()
        dist = {"timeout": float(self.getTimeout())}
        weight_col = self.getOrDefault(self.weightCol) if self.isDefined(self.weightCol) else None
        result = _run_barrier_fit(dataset, self.getFeaturesCol(), self.getNumWorkers(), fit_kwargs, dist, weight_col)
        info = {
            "lowerBounds": list(result["mean_loglik"]),
            "numIter": int(result["iterations"]),
            "converged": bool(result["converged"]),
            "comm": result["comm"],
            "rowsPerRank": [int(n) for n in result["rows"]],
        }
        return self._copyValues(GaussianMixtureModel(result["model"], info))


class GaussianMixtureModel(_GaussianMixtureParams, Model, MLReadable, MLWritable):
    """A Gaussian mixture fitted by :class:`GaussianMixture`.

    ``transform(df)`` adds predictionCol (int: the most responsible component) and probabilityCol
    (a dense vector of the k responsibilities), computed on the executors, batch by batch.
    Fitted values: ``weights`` (k,), ``means`` (k, d), ``covariances`` ((k, d, d) full, (d, d)
    tied, (k, d) diag, (k,) spherical), ``lowerBound`` and ``lowerBounds`` (mean log-likelihood per row),
    ``numIter``, ``converged``, ``rowsPerRank``; ``to_json()`` is mixle's model JSON, and
    ``toLocal()`` gives the fitted ``mixle.GaussianMixture``.
    """

    def __init__(self, model_json: str | None = None, info: dict | None = None):
        super().__init__()
        self._json = model_json
        self._info = dict(info or {})

    def _local(self) -> _LocalGaussianMixture:
        if self._json is None:
            raise ValueError("GaussianMixtureModel: not fitted (no model)")
        local = _LocalGaussianMixture(self.getK(), covariance_type=self.getCovarianceType())
        local._set_model(_core.Model.from_json(self._json))
        local.n_features_in_ = local.means_.shape[1]
        local.converged_ = self._info.get("converged", True)
        local.n_iter_ = self._info.get("numIter", 0)
        local.lower_bounds_ = list(self._info.get("lowerBounds", []))
        local.lower_bound_ = local.lower_bounds_[-1] if local.lower_bounds_ else float("nan")
        return local

    def toLocal(self) -> _LocalGaussianMixture:
        """The fitted model as a one-process ``mixle.GaussianMixture`` (predict on numpy arrays)."""
        return self._local()

    def to_json(self, indent: int = 1) -> str:
        """The fitted model in mixle's model format (the JSON `mixle fit` writes)."""
        return _core.Model.from_json(self._json).to_json(indent)

    @property
    def weights(self) -> np.ndarray:
        return self._local().weights_

    @property
    def means(self) -> np.ndarray:
        return self._local().means_

    @property
    def covariances(self) -> np.ndarray:
        return self._local().covariances_

    @property
    def lowerBounds(self) -> list:
        return list(self._info.get("lowerBounds", []))

    @property
    def lowerBound(self) -> float:
        return self.lowerBounds[-1] if self.lowerBounds else float("nan")

    @property
    def numIter(self) -> int:
        return int(self._info.get("numIter", 0))

    @property
    def converged(self) -> bool:
        return bool(self._info.get("converged", False))

    @property
    def rowsPerRank(self) -> list:
        return list(self._info.get("rowsPerRank", []))

    def _transform(self, dataset):
        from pyspark.sql.functions import pandas_udf

        model_json = self._json
        if model_json is None:
            raise ValueError("GaussianMixtureModel: not fitted (no model)")
        columns = int(self.means.shape[1])
        K = self.getK()
        features = _features_as_array(dataset, self.getFeaturesCol())
        schema = T.StructType([T.StructField("p", T.IntegerType()), T.StructField("r", T.ArrayType(T.DoubleType()))])
        cache = {}

        @pandas_udf(schema)
        def query(x: pd.Series) -> pd.DataFrame:
            model = cache.get("model")
            if model is None:
                model = cache["model"] = _core.Model.from_json(model_json)
            if len(x) == 0:
                return pd.DataFrame({"p": pd.Series([], dtype="int32"), "r": pd.Series([], dtype=object)})
            X = _rows_of([pd.DataFrame({"x": x})], columns)
            labels = _core.predict(model, X, "cpu", 1, "fp64").astype(np.int32)
            resp = _core.predict_proba(model, X, "cpu", 1, "fp64")
            assert resp.shape == (len(x), K)
            return pd.DataFrame({"p": labels, "r": list(resp)})

        tmp = f"__mixle_{uuid.uuid4().hex}"
        out = dataset.withColumn(tmp, query(features))
        out = out.withColumn(self.getPredictionCol(), F.col(f"{tmp}.p"))
        out = out.withColumn(self.getProbabilityCol(), array_to_vector(F.col(f"{tmp}.r")))
        return out.drop(tmp)

    # -- persistence: Spark ML's params metadata, with mixle's model JSON in its own file beside it --------------

    def write(self) -> MLWriter:
        return _ModelWriter(self)

    @classmethod
    def read(cls) -> MLReader:
        return _ModelReader(cls)


class _ModelWriter(MLWriter):
    def __init__(self, instance: GaussianMixtureModel):
        super().__init__()
        self.instance = instance

    def saveImpl(self, path: str) -> None:
        # The SparkContext, which both PySpark 3.5 and 4 accept here.
        DefaultParamsWriter.saveMetadata(self.instance, path, self.sparkSession.sparkContext,
                                         extraMetadata={"mixleFit": self.instance._info})
        model = self.sparkSession.createDataFrame([(self.instance.to_json(),)], "json string")
        model.coalesce(1).write.text(f"{path}/mixle")


class _ModelReader(MLReader):
    def __init__(self, cls):
        super().__init__()
        self.cls = cls

    def load(self, path: str) -> GaussianMixtureModel:
        expected = "mixle.spark.GaussianMixtureModel"
        metadata = DefaultParamsReader.loadMetadata(path, self.sparkSession.sparkContext, expected)
        text = self.sparkSession.read.text(f"{path}/mixle", wholetext=True).collect()
        if len(text) != 1:
            raise ValueError(f"{path}/mixle: one mixle model JSON file expected, found {len(text)}")
        model = self.cls(text[0][0], metadata.get("mixleFit", {}))
        model._resetUid(metadata["uid"])
        DefaultParamsReader.getAndSetParams(model, metadata)
        return model


__all__ = ["GaussianMixture", "GaussianMixtureModel"]
