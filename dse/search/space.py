"""Search space: config ranges -> optuna distributions, and trial parameters -> a DesignBatch.

Three shorthand knobs (``peak_tflops``, ``dram_bandwidth_tbps``, ``sram_mib``), any other hardware
field through ``params`` (see :meth:`DesignBatch.with_field`), or a budget ``split`` whose weights
share a fixed die area between MAC arrays, SRAM and DRAM PHYs.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import optuna

from dse.config import Space
from dse.cost.area import area, level_mm2_per_mib, level_stacks
from dse.hardware.designs import DesignBatch
from dse.hardware.fields import KNOB_SI as KNOB_SI  # knob name -> factor from the config unit to SI
from dse.hardware.fields import knob_args, knob_values
from dse.units import MIB

SPLIT = ("split_compute", "split_sram", "split_dram")


def distributions(space: Space) -> dict[str, optuna.distributions.BaseDistribution]:
    F = optuna.distributions.FloatDistribution
    out: dict[str, optuna.distributions.BaseDistribution] = {
        k: F(r.low, r.high, log=r.log) for k, r in space.knobs().items()}
    if space.split:
        for name, r in zip(SPLIT, (space.split.compute, space.split.sram, space.split.dram), strict=True):
            out[name] = F(r.low, r.high, log=r.log)
    for p in space.params:
        if p.choices is not None:
            out[p.field] = optuna.distributions.CategoricalDistribution(p.choices)
        elif p.type == "int":
            out[p.field] = optuna.distributions.IntDistribution(int(p.low), int(p.high), log=p.log)
        else:
            out[p.field] = F(p.low, p.high, log=p.log)
    return out


def grid(space: Space, points: int) -> dict[str, list]:
    """Grid values per searched parameter: ``points`` values over each range (geometric for log),
    the listed choices for categorical ones."""
    out: dict[str, list] = {}
    for name, dist in distributions(space).items():
        if isinstance(dist, optuna.distributions.CategoricalDistribution):
            out[name] = list(dist.choices)
            continue
        lo, hi = dist.low, dist.high
        vals = np.geomspace(lo, hi, points) if dist.log else np.linspace(lo, hi, points)
        if isinstance(dist, optuna.distributions.IntDistribution):
            out[name] = sorted({int(round(v)) for v in vals})
        else:
            out[name] = [float(v) for v in vals]
    return out


def knob_range(space: Space, base: DesignBatch, knob: str) -> tuple[float, float]:
    """(low, high) of a knob in config units: its searched range, else 0.25x..4x design 0's value."""
    r = getattr(space, knob)
    if r:
        return r.low, r.high
    v = base_knobs(base)[knob]
    return v / 4, v * 4


def base_knobs(base: DesignBatch) -> dict[str, float]:
    """Design 0's knob values in config units (``dse.hardware.fields.knob_values``)."""
    return {name: float(v[0]) for name, v in knob_values(base).items()}


def split_designs(batch: DesignBatch, cols: Mapping[str, np.ndarray], total_mm2: float) -> DesignBatch:
    """Share ``total_mm2`` (less the parts the split does not size) between MAC arrays, outermost
    SRAM and DRAM stacks in proportion to the ``split_*`` weights."""
    w = np.stack([np.asarray(cols[k], dtype=float) for k in SPLIT], axis=1)
    f = w / w.sum(axis=1, keepdims=True)
    ar = area(batch)
    node = ar.node
    sized = ("matrix", "sram", "dram_phy", "dram_controller")
    other = np.sum([v for k, v in ar.parts.items() if k not in sized], axis=0)
    avail = np.maximum(total_mm2 - other, 0.0)
    peak = batch.peak_flops * (f[:, 0] * avail) / ar.parts["matrix"]
    per_mib = level_mm2_per_mib(batch, node, batch.sram_level)
    sram_area_other = ar.parts["sram"] - batch.capacity[:, batch.sram_level] / MIB * per_mib
    sram_mib = np.maximum((f[:, 1] * avail - sram_area_other) / per_mib, 1.0)
    per_stack_mm2 = node.dram_phy_mm2_per_stack.value + node.dram_controller_mm2_per_stack.value
    stacks = np.maximum(np.floor(f[:, 2] * avail / per_stack_mm2), 1.0)
    per_stack_bw = batch.dram_bandwidth / np.maximum(level_stacks(batch, batch.offchip_index), 1.0)
    return batch.with_knobs(peak_flops=peak, dram_bandwidth=stacks * per_stack_bw, sram_bytes=sram_mib * MIB)


def whole_stacks(batch: DesignBatch) -> DesignBatch:
    """DRAM bandwidth rounded up to whole stacks (``stack_bandwidth_gbps`` of the main memory level): a
    design buys stacks, so it gets all of the bandwidth it pays PHYs for; at least one stack."""
    level = batch.base.offchip_level
    if level.spec.area != "dram_phy" or level.stack_bandwidth_gbps is None:
        return batch
    stacks = np.maximum(level_stacks(batch, batch.offchip_index), 1.0)
    return batch.with_knobs(dram_bandwidth=stacks * level.stack_bandwidth_gbps * 1e9)


def designs_from_params(base: DesignBatch, params: list[Mapping[str, float]] | Mapping[str, np.ndarray],
                        space: Space | None = None) -> DesignBatch:
    """A batch with one design per parameter set (anything a set does not give keeps the base value).
    A searched DRAM bandwidth is rounded up to whole stacks (:func:`whole_stacks`)."""
    if isinstance(params, Mapping):
        cols = {k: np.asarray(v) for k, v in params.items()}
        n = len(next(iter(cols.values())))
    else:
        n = len(params)
        names = {k for p in params for k in p}
        cols = {k: np.array([p[k] for p in params]) for k in names}
    batch = base.take(np.zeros(n, dtype=int)) if base.n == 1 else base  # n copies of the base (one gather per array)
    batch = batch.with_knobs(**knob_args(cols))
    if batch.base.offchip_level.spec.knob in cols:  # the main memory's knob: bought as whole stacks
        batch = whole_stacks(batch)
    for name, values in cols.items():
        if name in KNOB_SI or name in SPLIT:
            continue
        batch = batch.with_field(name, values.astype(float))
    if all(k in cols for k in SPLIT):
        if space is None or space.split is None:
            raise ValueError("split weights given without a split search space")
        batch = split_designs(batch, cols, space.split.total_area_mm2)
    return batch
