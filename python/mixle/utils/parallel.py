"""mixle.utils.parallel: resources, placement plans and the distributed training contracts.

The planning layer of mixle's engine (``include/mixle/plan``), under the names, signatures,
keywords and defaults of the Python planning API ``mixle.utils.parallel`` that mixle's engine
follows. Planning is advisory and deterministic: it decides where rows and components would go
and checks launch topologies; it never runs a fit.

- :class:`Resources` / :class:`DeviceSpec` — placement targets (this machine, MPI, Dask, Spark,
  torchrun, SLURM), JSON documents exchanged with ``mixle resources`` and ``mixle plan``;
- :func:`plan` → :class:`Placement` — throughput-proportional row ranges within memory caps;
- :func:`model_sharding_plan` → :class:`ModelShard` — contiguous component ranges;
- :func:`auto_parallel_estimator` — data parallel when the model fits every device, else
  :class:`UnrealizedModelPlacementError`;
- :class:`ParallelPlan`, :class:`ParallelAxis`, :class:`ParameterLayout`,
  :class:`DistributedUpdate`, :class:`StepReceipt`, :class:`BackendCapabilities`, the
  training-backend registry and :func:`attest_worker_coordinate`.

docs/python.md ("mixle.utils.parallel") lists where the semantics differ on purpose and what is
not provided (the encoded-data handles and model-parallel estimator wrappers, which wrap another
library's Python estimator objects).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .. import _core
from .._core import Model
from ._errors import EncodedDataControlConflictError, UnrealizedModelPlacementError, UnsupportedParallelismError

_p = _core.parallel

DeviceSpec = _p.DeviceSpec
Resources = _p.Resources
ModelSummary = _p.ModelSummary
PlacementShard = _p.PlacementShard
Placement = _p.Placement
ModelShard = _p.ModelShard
ParallelAxis = _p.ParallelAxis
PayloadKind = _p.PayloadKind
CollectiveKind = _p.CollectiveKind
StateLayout = _p.StateLayout
ParallelPlan = _p.ParallelPlan
ParameterLayout = _p.ParameterLayout
DistributedUpdate = _p.DistributedUpdate
StepReceipt = _p.StepReceipt
BackendCapabilities = _p.BackendCapabilities
WorkerTopologyAttestation = _p.WorkerTopologyAttestation
attest_worker_coordinate = _p.attest_worker_coordinate
em_statistics_update = _p.em_statistics_update

# ---- models, data and precision as the planner sees them --------------------------------------

_ESTIMATOR_PRECISION = {"fp64": "float64", "fp32": "float32", "tf32": "float32"}


def _estimator_layout(estimator: Any) -> str:
    """The layout text of an unfitted mixle estimator."""
    from .._gaussian_mixture import _FAMILIES, GaussianMixture
    from .._mixture_model import MixtureModel, layout_text

    if isinstance(estimator, GaussianMixture):
        if estimator.covariance_type not in _FAMILIES:
            accepted = ", ".join(map(repr, _FAMILIES))
            raise ValueError(f"covariance_type = {estimator.covariance_type!r}: one of {accepted}")
        return _FAMILIES[estimator.covariance_type]
    if isinstance(estimator, MixtureModel):
        return layout_text(estimator.layout)
    raise TypeError(
        f"estimator = {type(estimator).__name__}: a mixle.GaussianMixture or mixle.MixtureModel expected "
        "(or pass model=)"
    )


def _fitted_summary(obj: Any) -> ModelSummary | None:
    """The summary of a ModelSummary, a mixle.Model or a fitted mixle estimator; None otherwise."""
    if isinstance(obj, ModelSummary):
        return obj
    if isinstance(obj, Model):
        return ModelSummary.from_model(obj)
    fitted = getattr(obj, "_model", None)
    if isinstance(fitted, Model):
        return ModelSummary.from_model(fitted)
    return None


def _summary(model: Any, estimator: Any, columns: int | None) -> ModelSummary | None:
    """What a plan knows of the model: from `model` (ModelSummary, mixle.Model or a fitted
    estimator), else from `estimator` (fitted, or its n_components and layout over `columns`)."""
    if model is not None:
        summary = _fitted_summary(model)
        if summary is None:
            raise TypeError(
                f"model = {type(model).__name__}: a mixle.Model, a fitted mixle estimator or a "
                "mixle.utils.parallel.ModelSummary expected"
            )
        return summary
    if estimator is None:
        return None
    summary = _fitted_summary(estimator)
    if summary is not None:
        return summary
    layout = _estimator_layout(estimator)
    if columns is None:
        raise ValueError("an unfitted estimator needs data (its columns give the parts' sizes), or pass model=")
    return ModelSummary.from_layout(estimator.n_components, layout, columns)


def _data_shape(data: Any) -> tuple[int, int | None, int]:
    """(rows, columns, bytes per value) of the data, without copying it: numpy-like arrays by
    their shape and dtype (float32 stays 4 bytes, anything else is read as float64), sequences
    of rows by their length."""
    if data is None:
        return 0, None, 8
    shape = getattr(data, "shape", None)
    if shape is not None:
        rows = int(shape[0]) if len(shape) else 0
        columns = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        return rows, columns, 4 if getattr(data, "dtype", None) == np.float32 else 8
    rows = len(data)
    first = data[0] if rows else None
    columns = len(first) if hasattr(first, "__len__") and not isinstance(first, (str, bytes)) else 1
    return rows, columns, 8


def _auto_precision(data: Any, resources: Resources, sample_size: int) -> str:
    """float32 only when the fastest device is a GPU and a sample of the data is tame
    (max|x| < 1e4 and max|x|/std < 1e3); float64 otherwise."""
    if data is None or not resources.fastest().is_gpu:
        return "float64"
    sample = np.asarray(data[: max(1, int(sample_size))], dtype=np.float64)
    if sample.size == 0 or not np.all(np.isfinite(sample)):
        return "float64"
    peak, spread = float(np.max(np.abs(sample))), float(np.std(sample))
    return "float32" if peak < 1e4 and spread > 0 and peak / spread < 1e3 else "float64"


def _precision(precision: Any, estimator: Any) -> str | None:
    """The compute precision named by `precision`, else by the estimator's `precision`, else None."""
    if precision is not None:
        return str(precision)
    named = getattr(estimator, "precision", None)
    return _ESTIMATOR_PRECISION.get(named) if isinstance(named, str) else None


def _refuse_reference_object(name: str, value: Any, why: str) -> None:
    if value is not None:
        raise NotImplementedError(f"{name}={value!r}: {why}; pass {name}=None")


# ---- planners ---------------------------------------------------------------------------------


def plan(
    data: Any = None,
    model: Any = None,
    estimator: Any = None,
    encoder: Any = None,
    resources: Resources | None = None,
    engine: Any = None,
    precision: str | None = None,
    num_chunks: int | None = None,
    sub_chunks: int = 1,
    sample_size: int = 256,
    safety_factor: float = 1.25,
    *,
    rows_per_chunk: int = 65536,
) -> Placement:
    """Return an advisory row placement of `data` over `resources`.

    Rows are split in proportion to the devices' throughput (or into `num_chunks` near-equal
    ranges laid out as blocks), then ranges are cut so that each fits its device's memory:
    the encoded rows, one chunk of `rows_per_chunk` rows of the N×K working set and the fixed
    model and statistics bytes, all times `safety_factor` (docs/planning.md).

    Parameters
    ----------
    data : array-like of shape (n_rows, n_columns), optional
        Only its shape and dtype are read (float32 data count 4 bytes a value, others 8).
    model : mixle.Model, fitted mixle estimator or ModelSummary, optional
        Gives K and the fixed bytes; without it K = 1 and no fixed bytes.
    estimator : mixle.GaussianMixture or mixle.MixtureModel, optional
        Used when `model` is None (fitted: its model; unfitted: n_components and its layout over
        the data's columns), and for the compute precision when `precision` is None.
    encoder, engine
        Must be None: mixle has no encoder or engine objects (bytes come from the data's shape
        and the families' descriptors).
    resources : Resources, default Resources.single_cpu(precision)
    precision : str, optional
        Compute precision of the working set ("float32", "float64", aliases "fp32", …, or
        "auto": float32 only for a GPU and tame data). Default: the estimator's, else float64.
    num_chunks : int, optional
        Exact number of row ranges; default one range per device.
    sub_chunks : int, default 1
        Contiguous pieces each shard is streamed in.
    sample_size : int, default 256
        Rows sampled by precision="auto".
    safety_factor : float, default 1.25
    rows_per_chunk : int, default 65536
        mixle: rows of one working-set block resident at a time (0: a whole shard, the
        reference's accounting).

    Raises ValueError for bad options (or neither data nor num_chunks) and MemoryError when the
    fixed state or a single row does not fit a device.
    """
    _refuse_reference_object("encoder", encoder, "mixle reads arrays directly and has no encoders")
    _refuse_reference_object("engine", engine, "mixle picks its compute engine from the device")
    if data is None and num_chunks is None:
        raise ValueError("plan() needs data or num_chunks")
    rows, columns, value_bytes = _data_shape(data)
    chosen = _precision(precision, estimator)
    if chosen == "auto":
        chosen = _auto_precision(data, resources or Resources.single_cpu(), sample_size)
    if resources is None:
        resources = Resources.single_cpu(precision=chosen)
    summary = _summary(model, estimator, columns)
    return _p.native_plan(
        resources,
        rows,
        summary,
        columns=columns,
        data_dtype_bytes=value_bytes,
        precision=chosen or "float64",
        num_chunks=num_chunks,
        sub_chunks=sub_chunks,
        rows_per_chunk=rows_per_chunk,
        safety_factor=safety_factor,
    )


def model_sharding_plan(
    model: Any,
    resources: Resources,
    estimator: Any = None,
    axis: str = "components",
    min_components_per_shard: int = 1,
) -> tuple[ModelShard, ...]:
    """Return an advisory component-axis sharding plan: which contiguous component range each
    device would own.

    `model` is a mixle.Model, a fitted mixle estimator or a ModelSummary. The first
    max(1, min(#devices, K // min_components_per_shard)) devices take throughput-weighted ranges
    of at least `min_components_per_shard` components each; a shard's bytes are its components'
    parameters and statistics (MemoryError "capacity" when they exceed its device's memory).
    `estimator` is accepted for the reference's signature; the statistics' size comes from the
    families. Only axis="components" exists (ValueError otherwise).
    """
    summary = _summary(model, None, None)
    if summary is None:
        raise TypeError("model_sharding_plan() needs a model")
    return _p.native_model_sharding_plan(summary, resources, axis, min_components_per_shard)


def auto_parallel_estimator(
    estimator: Any,
    model: Any,
    resources: Resources | None = None,
    *,
    n_data: int | None = None,
    min_components_per_shard: int = 1,
) -> tuple[Any, Placement]:
    """Return ``(estimator, placement)`` when the whole model fits beside its rows on every
    device (data parallel: the estimator is returned unchanged), else raise
    :class:`UnrealizedModelPlacementError`.

    The rows (`n_data`; default one per device) are planned with one range per device of
    `resources` (default ``Resources.local()``). When the fixed model and statistics state does
    not fit a device, the components would have to be sharded: the error's ``plan`` is the
    tuple of :class:`ModelShard` that :func:`model_sharding_plan` proposes, and its message says
    how to run it (``mixle fit --shard-components G``); the Python estimators run data-parallel
    fits only. When no split fits either, ``plan`` is None and the message has both reasons.
    """
    resources = Resources.local() if resources is None else resources
    summary = _summary(model, estimator, None)
    if summary is None:
        raise TypeError("auto_parallel_estimator() needs a model (a mixle.Model or a fitted estimator)")
    rows = len(resources) if n_data is None else n_data
    precision = _precision(None, estimator) or "float64"
    try:
        placement = _p.native_plan(resources, rows, summary, precision=precision, num_chunks=len(resources))
    except MemoryError as too_big:
        try:
            shards = _p.native_model_sharding_plan(summary, resources, "components", min_components_per_shard)
        except MemoryError as no_split:
            raise UnrealizedModelPlacementError(
                None,
                f"the model does not fit one device ({too_big}) and no component split over "
                f"{len(resources)} device(s) fits either: {no_split}",
            ) from no_split
        raise UnrealizedModelPlacementError(
            shards,
            f"the model does not fit one device ({too_big}); it needs {len(shards)} component shards, which the "
            f"Python estimators cannot run (they fit data-parallel only): run `mixle fit --shard-components "
            f"{len(shards)}` under a launcher, or give the devices more memory",
        ) from too_big
    return estimator, placement


# ---- training-backend registry -----------------------------------------------------------------

_lock = threading.RLock()
_registered: dict[str, Any] = {}  # backends and lazy factories registered from Python
_resolved: dict[str, Any] = {}  # what get_training_backend returned, by key


def _is_backend(obj: Any) -> bool:
    return not isinstance(obj, type) and hasattr(obj, "capabilities")


def register_training_backend(name: str, backend: Any, *, override: bool = False) -> None:
    """Register a backend instance, or a zero-argument lazy factory, under `name`.

    The key is the name stripped, lowercased, with '-' → '_'. A different object under a key
    already taken — by Python or by mixle's built-ins (single, gloo, mpi, nccl,
    lightning_fabric, ray_train) — raises ValueError unless ``override=True``; registering the
    identical object again does nothing. Nothing is imported or called here.
    """
    if not isinstance(name, str):
        raise TypeError(f"name = {name!r}: a str expected")
    key = _p.training_backend_key(name)
    if not key:
        raise ValueError(f"training backend name = {name!r} is blank; accepted: a non-blank name")
    if backend is None:
        raise ValueError(f"training backend {key!r}: backend is None")
    with _lock:
        current = _registered.get(key)
        if current is backend:
            return
        taken = current is not None or key in _p.native_training_backends()
        if taken and not override:
            raise ValueError(
                f"training backend {key!r} is already registered to a different backend; pass override=True to "
                "replace it"
            )
        _registered[key] = backend
        _resolved.pop(key, None)


def get_training_backend(name: str) -> Any:
    """Resolve a registered backend; a lazy factory is called once and its result cached.

    Backends registered from Python come first; mixle's built-ins are
    ``NativeTrainingBackend`` objects whose ``capabilities`` say what mixle runs. ValueError for
    an unknown name (listing the registered ones); TypeError when a factory returns something
    without ``capabilities``.
    """
    key = _p.training_backend_key(name)
    with _lock:
        if key in _resolved:
            return _resolved[key]
        if key in _registered:
            value = _registered[key]
            if not _is_backend(value):
                if not callable(value):
                    raise TypeError(f"training backend {key!r} = {value!r} has no capabilities and is not callable")
                value = value()
                if not _is_backend(value):
                    raise TypeError(
                        f"training backend {key!r}: its factory returned {value!r}, which has no capabilities"
                    )
        elif key in _p.native_training_backends():
            value = _p.native_training_backend(key)
        else:
            raise ValueError(
                f"training backend {name!r} is not registered; registered: {', '.join(available_training_backends())}"
            )
        _resolved[key] = value
        return value


def available_training_backends() -> tuple[str, ...]:
    """The registered backend keys, sorted (mixle's built-ins and those registered from Python)."""
    with _lock:
        return tuple(sorted(set(_p.native_training_backends()) | set(_registered)))


# ---- names of the reference API that mixle does not provide -----------------------------------

_NOT_PROVIDED = {
    **dict.fromkeys(
        (
            "ModelParallelEstimator",
            "ComponentParallelEstimator",
            "ModelParallelEncodedData",
            "ComponentParallelEncodedData",
            "model_parallel_fold",
            "component_parallel_fold",
        ),
        "it wraps the estimator and accumulator objects of another Python library; mixle's component-parallel "
        "E-step runs inside the engine (`mixle fit --backend component_parallel --workers W`)",
    ),
    **dict.fromkeys(
        ("encoded_data", "is_encoded_data_handle", "register_encoded_data_backend", "available_encoded_data_backends"),
        "encoded-data handles hold another library's encoded Python records; mixle's estimators fit numpy arrays "
        "in place (GaussianMixture(distributed=...) for multi-process fits)",
    ),
    **dict.fromkeys(
        ("LightningFabricLauncher", "RayTrainLauncher"),
        "launchers drive Lightning or Ray, which mixle does not depend on; its engine checks those launch "
        "parameters in C++ (lightning_fabric_launch, ray_train_scaling) and launches with `mixle launch`",
    ),
    **dict.fromkeys(
        ("calibrate_resources", "CalibrationCatalog", "CalibrationRecord", "DeviceCalibration"),
        "calibration is measured by the C++ call mixle::calibrate_resources and `mixle resources --calibrate`, "
        "neither bound in Python yet",
    ),
}


def __getattr__(name: str) -> Any:
    if name in _NOT_PROVIDED:
        raise AttributeError(
            f"mixle.utils.parallel.{name} is not provided: {_NOT_PROVIDED[name]} (docs/python.md, "
            "'mixle.utils.parallel')"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BackendCapabilities",
    "CollectiveKind",
    "DeviceSpec",
    "DistributedUpdate",
    "EncodedDataControlConflictError",
    "ModelShard",
    "ModelSummary",
    "ParallelAxis",
    "ParallelPlan",
    "ParameterLayout",
    "PayloadKind",
    "Placement",
    "PlacementShard",
    "Resources",
    "StateLayout",
    "StepReceipt",
    "UnrealizedModelPlacementError",
    "UnsupportedParallelismError",
    "WorkerTopologyAttestation",
    "attest_worker_coordinate",
    "auto_parallel_estimator",
    "available_training_backends",
    "em_statistics_update",
    "get_training_backend",
    "model_sharding_plan",
    "plan",
    "register_training_backend",
]
