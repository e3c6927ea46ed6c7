"""Search space: config ranges -> optuna distributions, and trial parameters -> a DesignBatch."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import optuna

from dse.config import Space
from dse.hardware.designs import DesignBatch
from dse.units import MIB, TERA

#: knob name -> factor from the config unit to SI
KNOB_SI = {"peak_tflops": TERA, "dram_bandwidth_tbps": TERA, "sram_mib": MIB}
KNOB_LABEL = {
    "peak_tflops": "peak compute (TFLOP/s)",
    "dram_bandwidth_tbps": "DRAM bandwidth (TB/s)",
    "sram_mib": "on-chip SRAM (MiB)",
}


def distributions(space: Space) -> dict[str, optuna.distributions.BaseDistribution]:
    return {k: optuna.distributions.FloatDistribution(r.low, r.high, log=r.log) for k, r in space.knobs().items()}


def grid(space: Space, points: int) -> dict[str, list[float]]:
    """Grid values per knob: ``points`` values from low to high (geometric for log ranges)."""
    out = {}
    for k, r in space.knobs().items():
        vals = np.geomspace(r.low, r.high, points) if r.log else np.linspace(r.low, r.high, points)
        out[k] = [float(v) for v in vals]
    return out


def base_knobs(base: DesignBatch) -> dict[str, float]:
    """The base design's knob values in config units."""
    return {
        "peak_tflops": float(base.peak_flops[0] / TERA),
        "dram_bandwidth_tbps": float(base.dram_bandwidth[0] / TERA),
        "sram_mib": float(base.capacity[0, base.sram_level] / MIB),
    }


def designs_from_params(base: DesignBatch, params: list[Mapping[str, float]] | Mapping[str, np.ndarray]) -> DesignBatch:
    """A batch with one design per parameter set (knobs absent from a set keep the base value)."""
    if isinstance(params, Mapping):
        cols = {k: np.asarray(v, dtype=float) for k, v in params.items()}
        n = len(next(iter(cols.values())))
    else:
        n = len(params)
        defaults = base_knobs(base)
        cols = {k: np.array([p.get(k, defaults[k]) for p in params], dtype=float) for k in KNOB_SI}
    batch = DesignBatch.stack([base] * n) if base.n == 1 else base
    return batch.with_knobs(
        peak_flops=cols["peak_tflops"] * TERA if "peak_tflops" in cols else None,
        dram_bandwidth=cols["dram_bandwidth_tbps"] * TERA if "dram_bandwidth_tbps" in cols else None,
        sram_bytes=cols["sram_mib"] * MIB if "sram_mib" in cols else None,
    )
