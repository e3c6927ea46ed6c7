"""Measured kernels onto the roof: import a profiler export and place each kernel on a template's
roofline with its roof utilization and region.

Accepted files:

* a generic CSV with columns ``name, flops, bytes, seconds``;
* an Nsight Compute raw CSV (``ncu --csv --page raw --metrics gpu__time_duration.sum,dram__bytes.sum,
  sm__sass_thread_inst_executed_op_{f,h,d}{add,mul,fma}_pred_on.sum``): a header row and a units row;
  FLOPs = adds + muls + 2 x FMAs over the precisions present; durations and bytes are converted from
  their units.

A row with a zero duration or unreadable numbers is reported with its reason; the other rows are
still placed.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from dse.document import Document, Figure, Table
from dse.errors import DseError
from dse.hardware.schema import Hardware

GENERIC = ("name", "flops", "bytes", "seconds")
NCU_TIME = "gpu__time_duration.sum"
NCU_BYTES = ("dram__bytes.sum", "dram__bytes_read.sum", "dram__bytes_write.sum")
TIME_UNITS = {"nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0, "ns": 1e-9, "us": 1e-6, "ms": 1e-3,
              "s": 1.0}
BYTE_UNITS = {"byte": 1.0, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12}
FLOP_RE = re.compile(r"sm__sass_thread_inst_executed_op_([hfd])(add|mul|fma)_pred_on\.sum")


def _ncu(df: pd.DataFrame, path: Path) -> pd.DataFrame:
    units = df.iloc[0]
    body = df.iloc[1:].reset_index(drop=True)
    if NCU_TIME not in df.columns:
        raise DseError(f"missing column {NCU_TIME!r}; accepted: an ncu --csv --page raw export with "
                       f"{NCU_TIME}, dram__bytes.sum and sm__sass_thread_inst_executed_op_*_pred_on.sum", file=str(path))
    byte_cols = [c for c in NCU_BYTES if c in df.columns]
    if not byte_cols:
        raise DseError(f"missing a DRAM bytes column; accepted: one of {', '.join(NCU_BYTES)}", file=str(path))
    if "dram__bytes.sum" in byte_cols:
        byte_cols = ["dram__bytes.sum"]
    flop_cols = [c for c in df.columns if FLOP_RE.fullmatch(c)]
    if not flop_cols:
        raise DseError("missing FLOP counters; accepted: sm__sass_thread_inst_executed_op_{f,h,d}{add,mul,fma}"
                       "_pred_on.sum", file=str(path))

    def num(col: str, scale: dict[str, float] | None = None) -> pd.Series:
        v = pd.to_numeric(body[col].astype(str).str.replace(",", ""), errors="coerce")
        if scale is not None:
            v = v * scale.get(str(units[col]).strip().lower(), np.nan)
        return v

    flops = sum(num(c) * (2.0 if FLOP_RE.fullmatch(c).group(2) == "fma" else 1.0) for c in flop_cols)
    name_col = next((c for c in ("Kernel Name", "kernel_name", "Function Name") if c in df.columns), None)
    return pd.DataFrame({
        "name": body[name_col] if name_col else [f"kernel {i}" for i in range(len(body))],
        "flops": flops, "bytes": sum(num(c, BYTE_UNITS) for c in byte_cols), "seconds": num(NCU_TIME, TIME_UNITS)})


def load_kernels(path: str | Path) -> pd.DataFrame:
    """Kernels as ``name, flops, bytes, seconds`` (SI), from a generic or an Nsight Compute CSV."""
    from dse.yamlio import load_csv

    path = Path(path)
    df = load_csv(path, "a profiler CSV (name,flops,bytes,seconds or ncu --csv --page raw)")
    if all(c in df.columns for c in GENERIC):
        out = df[list(GENERIC)].copy()
        for c in GENERIC[1:]:
            out[c] = pd.to_numeric(out[c], errors="coerce")
        return out
    if any(c.startswith(("gpu__", "sm__", "dram__")) for c in df.columns):
        return _ncu(df, path)
    missing = [c for c in GENERIC if c not in df.columns]
    raise DseError(f"missing column(s) {missing}; accepted: {', '.join(GENERIC)} or an ncu --csv --page raw export",
                   file=str(path))


#: how far above a roof a profiled kernel may land before it is called suspect (clock boost, timer resolution)
ABOVE_ROOF = 1.05


def place(kernels: pd.DataFrame, hw: Hardware, dtype: str | None = None) -> pd.DataFrame:
    """Each kernel's AI (FLOP per DRAM byte), achieved FLOP/s, roof, utilization and region on ``hw``."""
    from dse.units import TERA, fallback_dtype

    dt = dtype or hw.reference_dtype
    mode = fallback_dtype(dt, hw.compute.matrix.peak_tflops)
    if mode is None:
        raise DseError(f"template {hw.name} has no matrix mode for {dt}", field="--dtype")
    peak = hw.compute.matrix.peak_tflops[mode] * TERA
    bw = hw.dram.bandwidth_bps
    out = kernels.copy()
    finite = np.isfinite(out[["seconds", "flops", "bytes"]].to_numpy(dtype=float)).all(axis=1)
    bad = ~((out["seconds"] > 0) & (out["flops"] >= 0) & (out["bytes"] >= 0) & finite)
    out["status"] = np.where(bad, "error", "ok")
    negative = finite & ((out["flops"] < 0) | (out["bytes"] < 0)).to_numpy()
    out["reason"] = np.where(out["seconds"].fillna(0) <= 0, "duration is zero or missing",
                             np.where(negative, "negative FLOPs or bytes (accepted: counts >= 0)",
                                      np.where(bad, "unreadable FLOPs or bytes", "")))
    ok = ~bad
    secs = out["seconds"].where(ok)
    # AI: FLOPs per DRAM byte; a kernel with FLOPs and no DRAM bytes (served from on-chip memory) has AI
    # infinity for the placement (the CSV column stays empty: no inf in files)
    with np.errstate(divide="ignore", invalid="ignore"):
        ai = np.where(out["bytes"] > 0, out["flops"] / out["bytes"], np.where(out["flops"] > 0, np.inf, np.nan))
    out["ai_flop_per_byte"] = pd.Series(ai, index=out.index).replace(np.inf, np.nan).where(ok)
    out["achieved_tflops"] = (out["flops"] / secs / TERA).where(ok)
    out["achieved_bandwidth_tbps"] = (out["bytes"] / secs / TERA).where(ok)
    with np.errstate(over="ignore", invalid="ignore"):
        roof = pd.Series(np.minimum(peak, bw * np.where(np.isnan(ai), np.inf, ai)), index=out.index)
    out["roof_tflops"] = (roof / TERA).where(ok)
    # Utilization of the binding roof: FLOP roof for compute-heavy kernels, bandwidth for the rest.
    compute_side = ai >= peak / bw
    util_flop = out["flops"] / secs / roof
    util_bw = out["bytes"] / secs / bw
    out["roof_utilization"] = np.where(compute_side, util_flop, util_bw)
    out["region"] = np.where(~ok, "", np.where(out["roof_utilization"] < 0.5, "far below roof",
                             np.where(compute_side, "compute-bound", "memory-bound")))
    # faster than the chip's peak FLOP/s (or its DRAM bandwidth) by more than a measurement's noise: the FLOPs, bytes,
    # duration or dtype are wrong, which the row says instead of placing it
    above = ok & ((out["flops"] / secs > ABOVE_ROOF * peak) | (out["bytes"] / secs > ABOVE_ROOF * bw))
    out["status"] = np.where(above, "suspect", out["status"])
    out["reason"] = np.where(above, f"faster than {hw.name}'s peak ({peak / TERA:g} TFLOP/s {mode}, "
                                    f"{bw / TERA:g} TB/s DRAM): check its FLOPs, bytes, duration or --dtype",
                             out["reason"])
    out["region"] = np.where(above, "above roof", out["region"])
    return out


def kernels_document(placed: pd.DataFrame, hw: Hardware, peak_tflops: float) -> Document:
    """What ``dse kernels`` writes (files only): kernels.csv (:func:`place`'s table) and the kernels on the
    template's roofline at ``peak_tflops`` (``dse.report.plots.kernels_roofline``)."""
    fig = Figure("kernels_roofline.png", "kernels_roofline", (placed, hw, peak_tflops), f"profiled kernels on {hw.name}")
    return Document("dse kernels", (), (Table("kernels.csv", placed),), (fig,))
