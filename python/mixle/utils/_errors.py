"""The planning layer's exceptions. The native module raises them for the engine's
UnrealizedModelPlacement and EncodedDataControlConflict errors, so this module imports nothing
of mixle."""

from __future__ import annotations

from typing import Any

_UNREALIZED = (
    "the plan places parts of the model on separate devices, and this process keeps the whole model "
    "resident: it cannot execute that placement"
)


class UnrealizedModelPlacementError(RuntimeError):
    """A planner chose a placement (model shards on separate devices, or parallel axes a backend
    does not run) for which this runtime has no executor.

    ``plan`` is what the planner chose (for :func:`auto_parallel_estimator`, the tuple of
    :class:`ModelShard`), or None when the error comes from the engine, whose message then
    carries the numbers.
    """

    takes_plan = True  # constructed as (plan, message); the native module reads this

    def __init__(self, plan: Any = None, message: str | None = None) -> None:
        self.plan = plan
        super().__init__(message if message is not None else _UNREALIZED)

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.plan, str(self))


class UnsupportedParallelismError(UnrealizedModelPlacementError, NotImplementedError):
    """Raised by :meth:`BackendCapabilities.validate` for active axes, axis combinations or world
    sizes a backend does not execute. It is both a NotImplementedError (what
    ``BackendCapabilities.validate`` raises in the reference API) and an
    UnrealizedModelPlacementError (what mixle's engine raises)."""


class EncodedDataControlConflictError(ValueError):
    """Raised when encoding controls (chunking, placement, backend) are passed together with data
    that is already encoded: the encoded data cannot be re-chunked or moved, and ignoring the
    controls would misreport the execution. Omit the controls to reuse it unchanged."""

    takes_plan = False
