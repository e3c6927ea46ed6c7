"""dse: design-space exploration for AI chips (hierarchical roofline, area, optuna search)."""

from dse._version import __version__
from dse.api import (
    AreaBreakdown,
    DesignBatch,
    Hardware,
    Prediction,
    Workload,
    area,
    compare,
    elementwise,
    gemm,
    hardware,
    list_hardware,
    list_workloads,
    predict,
    sweep,
    whatif,
    workload,
)
from dse.batch import Study, StudyRun
from dse.errors import DseError

__all__ = [
    "__version__", "AreaBreakdown", "DesignBatch", "DseError",
    "Hardware", "Prediction", "Study", "StudyRun", "Workload", "area",
    "compare", "elementwise", "gemm", "hardware", "list_hardware", "list_workloads", "predict", "sweep", "whatif",
    "workload",
]
