"""Host roofline health check: measure this machine, run a panel of real numpy operators on it,
and compare measured times with the predictor's on a template of the host.

Measurements (numpy, the code the user runs):

* peak FLOP/s: best-of-N BLAS GEMM (``np.matmul``) in fp64 and fp32, with whatever threads and
  BLAS settings the environment gives (``OPENBLAS_*`` recorded in the template's source);
* bandwidth per level: ``np.add(x, y, out=z)`` with the three arrays filling half of L1, L2, L3
  (sizes from ``/sys/devices/system/cpu``) and 16x the L3 for DRAM, per-call overhead removed:
  single-threaded, the rate numpy's elementwise kernels reach from each level;
* vector peak: the same add in L1 (one FLOP per element);
* per-call overhead: a numpy call on 8 elements.

Each panel operator is described by the numpy calls it really makes (``x - m`` then ``np.exp`` is two
passes with a temporary), so the prediction models the code, not an idealised fused kernel.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from dse.document import Document, Figure, Table
from dse.hardware.designs import DesignBatch
from dse.hardware.schema import Hardware
from dse.predict import OpArrays, bound_names, evaluate
from dse.workloads import ops as oprows

FP = {"fp32": np.float32, "fp64": np.float64}


# ------------------------------------------------------------------------------------- timing
def timeit(fn: Callable[[], object], min_time: float = 0.15, min_repeats: int = 5, warmup: int = 2,
           flush: np.ndarray | None = None) -> float:
    """Median wall time of ``fn`` after ``warmup`` calls, over at least ``min_repeats`` calls and
    ``min_time`` seconds; with ``flush``, that buffer is rewritten (evicting the caches) before each
    timed call, so every call starts cold as the predictor assumes."""
    for _ in range(warmup):
        fn()
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < min_repeats or time.perf_counter() - start < min_time:
        if flush is not None:
            flush += 1.0
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if len(times) > 2000:
            break
    return float(np.median(times))


# ------------------------------------------------------------------------------------- machine
@dataclass(frozen=True)
class Caches:
    """Per-core L1d/L2 and shared L3 sizes in bytes, from /sys (0 when unknown)."""

    l1: int
    l2: int
    l3: int
    cores: int


def _size(text: str) -> int:
    text = text.strip().upper()
    mult = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1:], 1)
    return int(float(text.rstrip("KMG")) * mult)


def read_caches(root: str = "/sys/devices/system/cpu/cpu0/cache") -> Caches:
    sizes = {1: 0, 2: 0, 3: 0}
    base = Path(root)
    for idx in sorted(base.glob("index*")) if base.exists() else []:
        try:
            kind = (idx / "type").read_text().strip()
            level = int((idx / "level").read_text())
            if kind in ("Data", "Unified") and level in sizes:
                sizes[level] = _size((idx / "size").read_text())
        except (OSError, ValueError):
            continue
    return Caches(sizes[1] or 32 * 1024, sizes[2] or 1024**2, sizes[3] or 8 * 1024**2, os.cpu_count() or 1)


def dram_bytes() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 8 * 1024**3


def gemm_flops(dtype: str, n: int = 1536) -> float:
    a = np.random.default_rng(0).standard_normal((n, n)).astype(FP[dtype])
    b = a.copy()
    return 2.0 * n**3 / timeit(lambda: a @ b, min_time=0.3)


def stream_bandwidth(footprint: int, overhead_s: float, dtype: str = "fp32") -> tuple[float, float]:
    """(byte/s, element/s) of ``np.add(x, y, out=z)`` with the three arrays filling ``footprint``
    bytes: the rate numpy's elementwise kernels reach from the level that holds them."""
    item = np.dtype(FP[dtype]).itemsize
    n = max(footprint // (3 * item), 256)
    x, y, z = (np.ones(n, dtype=FP[dtype]) for _ in range(3))
    t = max(timeit(lambda: np.add(x, y, out=z), min_repeats=5) - overhead_s, 1e-9)
    return 3 * n * item / t, n / t


def call_overhead() -> float:
    a = np.ones(8, dtype=np.float32)
    return timeit(lambda: np.add(a, a), min_time=0.05)


@dataclass
class HostMeasurement:
    caches: Caches
    peak: dict[str, float]  # dtype -> FLOP/s (BLAS GEMM)
    vector: dict[str, float]  # dtype -> FLOP/s (reduction in L1)
    bandwidth: dict[str, float]  # level -> byte/s
    overhead_s: float
    dram: int
    env: dict[str, str] = field(default_factory=dict)


def measure_host() -> HostMeasurement:
    c = read_caches()
    over = call_overhead()
    levels = {"l1": c.l1 // 2, "l2": c.l2 // 2, "l3": c.l3 // 2, "dram": 16 * c.l3}
    bw, rate = {}, {}
    for name, footprint in levels.items():
        bw[name], rate[name] = stream_bandwidth(footprint, over)
    vector = {"fp32": rate["l1"], "fp64": stream_bandwidth(levels["l1"], over, "fp64")[1]}
    env = {k: os.environ.get(k, "") for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS",
                                             "OPENBLAS_NUM_THREADS")}
    return HostMeasurement(c, {"fp64": gemm_flops("fp64"), "fp32": gemm_flops("fp32")}, vector, bw, over,
                           dram_bytes(), env)


def host_template(m: HostMeasurement, name: str = "host") -> Hardware:
    """A hardware template of the host from its measurements (efficiencies 1: the roofs are measured)."""
    env = ", ".join(f"{k}={v}" for k, v in m.env.items() if v) or "no BLAS overrides"
    src = f"measured by dse host on {time.strftime('%Y-%m-%d')} ({env}; numpy {np.__version__})"
    c = m.caches
    data = {
        "name": name, "description": "This machine as numpy sees it (BLAS GEMM peaks; single-thread bandwidths)",
        "process_node": "7nm", "reference_dtype": "fp32", "source": src + "; process_node is a placeholder",
        "compute": {
            "cores": c.cores, "clock_ghz": 1.0, "register_kib_per_core": 2.0,
            "launch_overhead_us": round(m.overhead_s * 1e6, 3),
            "source": f"{c.cores} cores (os.cpu_count); clock not measured; registers ~32 x 64 B; {src}",
            "matrix": {"kind": "matrix", "peak_tflops": {k: v / 1e12 for k, v in m.peak.items()},
                       "array_rows": 1, "array_cols": 1, "efficiency": 1.0, "source": "BLAS GEMM, " + src},
            "vector": {"kind": "vector", "peak_tflops": {k: v / 1e12 for k, v in m.vector.items()},
                       "efficiency": 1.0, "source": "np.add in L1 (one FLOP per element), " + src},
        },
        "memory": [
            {"name": "l1", "kind": "sram", "capacity_mib": c.l1 * c.cores / 2**20, "instances": c.cores,
             "bandwidth_gbps": m.bandwidth["l1"] / 1e9, "efficiency": 1.0, "source": "L1d per core (/sys); " + src},
            {"name": "l2", "kind": "sram", "capacity_mib": c.l2 * c.cores / 2**20, "instances": c.cores,
             "bandwidth_gbps": m.bandwidth["l2"] / 1e9, "efficiency": 1.0, "source": "L2 per core (/sys); " + src},
            {"name": "l3", "kind": "sram", "capacity_mib": c.l3 / 2**20,
             "bandwidth_gbps": m.bandwidth["l3"] / 1e9, "efficiency": 1.0, "source": "L3 shared (/sys); " + src},
            {"name": "dram", "kind": "ddr", "capacity_gib": m.dram / 2**30,
             "bandwidth_gbps": m.bandwidth["dram"] / 1e9, "efficiency": 1.0, "source": "/proc/meminfo; " + src},
        ],
    }
    return Hardware.model_validate(data)


# ------------------------------------------------------------------------------------- panel
@dataclass(frozen=True)
class PanelOp:
    """A real numpy operator and the op rows describing the calls it makes."""

    name: str
    kind: str
    rows: list[dict]
    run: Callable[[], object]


def _stream(name: str, n: float, flops: float, reads: float, writes: float, dt: str = "fp32") -> dict:
    b = np.dtype(FP[dt]).itemsize
    return oprows.streaming(name, kind="elementwise", elems=n, flops_per_elem=flops, dtype=dt,
                       read_bytes=reads * n * b, write_bytes=writes * n * b)


def panel() -> list[PanelOp]:
    rng = np.random.default_rng(1)
    items: list[PanelOp] = []

    def gemm(m: int, n: int, k: int, dt: str = "fp32") -> None:
        a = rng.standard_normal((m, k)).astype(FP[dt])
        b = rng.standard_normal((k, n)).astype(FP[dt])
        items.append(PanelOp(f"gemm {m}x{n}x{k} {dt}", "gemm", [oprows.gemm("gemm", m, n, k, dtype=dt)], lambda: a @ b))

    for s in (256, 512, 1024, 2048):
        gemm(s, s, s)
    gemm(1024, 1024, 1024, "fp64")
    gemm(1, 4096, 4096)
    gemm(16, 4096, 4096)
    gemm(4096, 64, 4096)
    for n in (1 << 14, 1 << 20, 1 << 24):
        x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        z = np.empty_like(x)
        items.append(PanelOp(f"add n={n}", "elementwise", [_stream("add", n, 1, 2, 1)],
                             lambda x=x, y=y, z=z: np.add(x, y, out=z)))
    big = rng.standard_normal(1 << 24).astype(np.float32)
    items.append(PanelOp("sum n=16M", "reduce", [_stream("sum", 1 << 24, 1, 1, 0)], lambda: big.sum()))
    rows, cols = 4096, 1024
    xm = rng.standard_normal((rows, cols)).astype(np.float32)
    n = rows * cols

    def softmax() -> np.ndarray:
        m = xm.max(axis=1, keepdims=True)
        e = np.exp(xm - m)
        return e / e.sum(axis=1, keepdims=True)

    items.append(PanelOp("softmax 4096x1024", "softmax",
                         [_stream("max", n, 1, 1, 0), _stream("sub", n, 1, 1, 1), _stream("exp", n, 4, 1, 1),
                          _stream("sum", n, 1, 1, 0), _stream("div", n, 1, 1, 1)], softmax))
    g = rng.standard_normal(cols).astype(np.float32)

    def layernorm() -> np.ndarray:
        mu = xm.mean(axis=1, keepdims=True)
        xc = xm - mu
        var = (xc * xc).mean(axis=1, keepdims=True)
        return xc / np.sqrt(var + 1e-5) * g + g

    items.append(PanelOp("layernorm 4096x1024", "norm",
                         [_stream("mean", n, 1, 1, 0), _stream("sub", n, 1, 1, 1), _stream("square", n, 1, 1, 1),
                          _stream("mean", n, 1, 1, 0), _stream("div", n, 1, 1, 1), _stream("mul", n, 1, 1, 1),
                          _stream("add", n, 1, 1, 1)], layernorm))
    return items


# ------------------------------------------------------------------------------------- compare
def predict_item(item: PanelOp, d: DesignBatch) -> tuple[float, float, str]:
    """(predicted seconds, roof seconds without efficiency/overhead, binding ceiling)."""
    table = oprows.table(item.rows, compact=False)
    r = evaluate(d, OpArrays.from_table(table))
    counts = table["count"].to_numpy(dtype=float)
    t = float(r.time[0] @ counts)
    roof = float(np.maximum(np.where(r.peak[0] > 0, table["flops"].to_numpy() / np.where(r.peak[0] > 0, r.peak[0], 1),
                                     0.0), (r.traffic[0] / d.bandwidth[0]).max(axis=1)) @ counts)
    names = bound_names(d.level_names)
    shares: dict[str, float] = {}
    for b, tt in zip(r.bound[0], r.time[0] * counts, strict=True):
        shares[names[b]] = shares.get(names[b], 0.0) + float(tt)
    return t, roof, max(shares, key=shares.get)


def measure_panel(items: list[PanelOp], flush_bytes: int | None = None) -> np.ndarray:
    """Cold-cache median seconds of every panel operator (the caches are flushed before each call)."""
    c = read_caches()
    flush = np.zeros((flush_bytes or 4 * c.l3) // 8)
    return np.array([timeit(it.run, flush=flush, min_time=0.1) for it in items])


def run_panel(items: list[PanelOp], hw: Hardware, measured: np.ndarray | None = None) -> pd.DataFrame:
    d = DesignBatch.from_hardware(hw)
    times = measure_panel(items) if measured is None else measured
    recs = []
    for it, measured in zip(items, times, strict=True):
        pred, roof, bound = predict_item(it, d)
        table = oprows.table(it.rows, compact=False)
        flops = float((table["flops"] * table["count"]).sum())
        nbytes = float(((table["bytes_read"] + table["bytes_written"]) * table["count"]).sum())
        util = roof / measured
        region = "far below roof" if util < 0.5 else ("compute-bound" if bound in ("compute", "array") else "memory-bound")
        recs.append({"operator": it.name, "kind": it.kind, "flops": flops, "bytes": nbytes,
                     "ai_flop_per_byte": flops / nbytes if nbytes else np.inf, "measured_s": measured,
                     "predicted_s": pred, "error_pct": (pred / measured - 1) * 100,
                     "measured_gflops": flops / measured / 1e9, "roof_utilization": util, "bound": bound,
                     "region": region})
    return pd.DataFrame(recs)


def panel_cases(items: list[PanelOp], measured: np.ndarray, hw: Hardware) -> list:
    """The panel as validation cases (metric: seconds per call) for :func:`dse.validate.calibrate.calibrate`."""
    from dse.validate.suite import RowCase
    from dse.workloads.library import Workload

    return [RowCase(it.name, Workload(it.name, oprows.table(it.rows, compact=False), {"batch": 1}), hw, "time_s", float(t))
            for it, t in zip(items, measured, strict=True)]


def host_document(table: pd.DataFrame, after: pd.DataFrame, calibrated: Hardware) -> Document:
    """What ``dse host`` writes besides its templates (files only): host_panel.csv and the panel on the
    calibrated template's roofline (``dse.report.plots.host_roofline``)."""
    fig = Figure("host_roofline.png", "host_roofline", (after, calibrated),
                 "this machine: measured roofs, operators measured (dot) and predicted by the calibrated host "
                 "template (ring)")
    return Document("dse host", (), (Table("host_panel.csv", table),), (fig,))
