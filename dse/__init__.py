"""dse: design-space exploration for AI chips (hierarchical roofline, area, optuna search).

The public names load on first use (PEP 562 and a module class), so ``import dse`` costs
almost nothing; ``dse.predict`` pulls numpy, pydantic and pandas, a search optuna, a report matplotlib.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from dse._version import __version__

#: public name -> module that defines it
_API = {
    **dict.fromkeys(("AreaBreakdown", "DesignBatch", "Hardware", "Prediction", "Workload", "area", "best_batch",
                     "compare", "compare_chips", "elementwise", "gemm", "hardware", "list_hardware", "list_workloads",
                     "predict", "predict_many", "sweep", "whatif", "workload"), "dse.api"),
    "Study": "dse.batch", "StudyRun": "dse.batch", "DseError": "dse.errors", "best_plan": "dse.api",
}
__all__ = ["__version__", *sorted(_API)]
_resolved: dict[str, Any] = {}


def _resolve(name: str) -> Any:
    value = _resolved.get(name)
    if value is None:
        value = _resolved[name] = getattr(importlib.import_module(_API[name]), name)
    return value


class _Module(types.ModuleType):
    """The public names win over same-named subpackages (``dse.predict`` is the function, ``dse.hardware``
    the loader) whichever was imported first, as with the eager ``from dse.api import ...`` before."""

    def __getattribute__(self, name: str) -> Any:
        if name in _API:
            return _resolve(name)
        return super().__getattribute__(name)

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *__all__})


sys.modules[__name__].__class__ = _Module

if TYPE_CHECKING:  # for type checkers and IDEs
    from dse.api import (  # noqa: F401
        AreaBreakdown,
        DesignBatch,
        Hardware,
        Prediction,
        Workload,
        area,
        best_batch,
        best_plan,
        compare,
        compare_chips,
        elementwise,
        gemm,
        hardware,
        list_hardware,
        list_workloads,
        predict,
        predict_many,
        sweep,
        whatif,
        workload,
    )
    from dse.batch import Study, StudyRun  # noqa: F401
    from dse.errors import DseError  # noqa: F401
