"""Utilities around mixle's estimators.

- :mod:`mixle.utils.parallel` — the planning layer: resources, placement plans, component
  sharding plans and the distributed training contracts.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["parallel"]


def __getattr__(name: str) -> Any:
    # `import mixle.utils` stays cheap; mixle.utils.parallel loads on first use.
    if name == "parallel":
        return importlib.import_module(".parallel", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
