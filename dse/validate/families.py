"""Which validation family a workload belongs to, and which result rows are out of sample.

Below both ``dse.validate.suite`` (which labels each row with its family) and ``dse.validate.bands`` (which
runs the shipped suite for the bands), so neither imports the other in a circle; ``dse.validate.bands``
re-exports both names. See ``dse.validate.bands`` for the families and what out of sample means.
"""

from __future__ import annotations

import pandas as pd

from dse.workloads.library import COLLECTIVE_OPS, Workload


def family_of(wl: Workload) -> str:
    """The validation family of a workload (see the module docstring)."""
    if wl.name.startswith(COLLECTIVE_OPS):
        return "collective"  # one collective alone (nccl-tests, hccl_demo)
    if wl.scenario.get("phase") == "serving":
        return "serving"
    if wl.chips > 1:
        return "multi-chip-training" if wl.scenario.get("phase") == "training" else "multi-chip"
    name = wl.name.split(":")[0]
    if name in ("gemm", "copy", "attention"):
        return name
    if name == "elementwise":  # copy:N and other single streaming operators
        return "copy"
    phase = wl.scenario.get("phase")
    if phase in ("decode", "prefill", "training"):
        return str(phase)
    if wl.ops["kind"].eq("conv").any():
        return "cnn"
    return "encoder"


def fitted(rows: pd.DataFrame) -> pd.Series:
    """Whether each row's measurement set a template coefficient (``fitted_into`` names what; an optional column:
    a measurements file without it has none)."""
    col = rows.get("fitted_into", pd.Series("", index=rows.index))
    return col.fillna("").astype(str).str.strip() != ""


def out_of_sample(results: pd.DataFrame) -> pd.DataFrame:
    """Covered rows whose measurement set no template coefficient."""
    return results[(results["status"] == "covered") & ~fitted(results)]
