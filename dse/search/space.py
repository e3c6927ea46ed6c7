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
from dse.hardware.designs import DesignBatch, stack_bandwidth, stack_capacity_bytes
from dse.hardware.fields import BUILD_FIELDS, is_part_field, knob_args, knob_values, part_codes
from dse.hardware.fields import KNOB_SI as KNOB_SI  # knob name -> factor from the config unit to SI
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
    """Share ``total_mm2`` (less the parts the split does not size: NoC, SerDes, fixed) between cores, outermost SRAM
    and DRAM stacks (board-DRAM channels for a ``ddr`` main memory) in proportion to the ``split_*`` weights:
    ``cores = f_c A / A_core`` (a core is its MAC arrays, vector lanes and per-core SRAM), ``sram = f_s A / (mm2 per
    MiB)``, ``stacks = floor(f_d A / A_stack)``; then built by :meth:`DesignBatch.with_knobs` (whole cores, macros and
    stacks)."""
    w = np.stack([np.asarray(cols[k], dtype=float) for k in SPLIT], axis=1)
    f = w / w.sum(axis=1, keepdims=True)
    ar = area(batch)
    node = ar.node
    per_mib = level_mm2_per_mib(batch, node, batch.sram_level)
    sram_sized = batch.capacity[:, batch.sram_level] / MIB * per_mib
    core_mm2 = (ar.parts["matrix"] + ar.parts["vector"] + ar.parts["sram"] - sram_sized) / batch.cores
    sized = ("matrix", "vector", "sram", "dram_phy", "dram_controller")
    other = np.sum([v for k, v in ar.parts.items() if k not in sized], axis=0)
    avail = np.maximum(total_mm2 - other, 0.0)
    peak = batch.core_peak_flops * (f[:, 0] * avail) / core_mm2
    sram_mib = np.maximum(f[:, 1] * avail / per_mib, 1.0)
    per_stack_mm2 = (node.ddr_phy_mm2_per_channel.value if batch.base.offchip_level.spec.area == "ddr_phy"
                     else (node.dram_phy_mm2_per_stack.value + node.dram_controller_mm2_per_stack.value)
                     * batch.dram_io_factor)  # an HBM4 stack's 2048-bit PHY is two 1024-bit ones
    stacks = np.maximum(np.floor(f[:, 2] * avail / per_stack_mm2), 1.0)
    per_stack_bw = batch.dram_bandwidth / np.maximum(level_stacks(batch, batch.offchip_index), 1.0)
    return batch.with_knobs(peak_flops=peak, dram_bandwidth=stacks * per_stack_bw, sram_bytes=sram_mib * MIB)


def designs_from_params(base: DesignBatch, params: list[Mapping[str, float]] | Mapping[str, np.ndarray],
                        space: Space | None = None) -> DesignBatch:
    """A batch with one design per parameter set (anything a set does not give keeps the base value).

    The build fields (``dse.hardware.fields.BUILD_FIELDS``: cores, array, clock) and the main memory's DRAM part
    (``memory.<main>.generation``) apply first, then the three knobs are realized as buildable designs at them
    (:meth:`DesignBatch.with_knobs`: whole cores, whole DRAM stacks of the part, whole SRAM macros), then every other
    field, then a budget split."""
    if isinstance(params, Mapping):
        cols = {k: np.asarray(v) for k, v in params.items()}
        n = len(next(iter(cols.values())))
    else:
        n = len(params)
        names = {k for p in params for k in p}
        cols = {k: np.array([p[k] for p in params]) for k in names}
    batch = base.take(np.zeros(n, dtype=int)) if base.n == 1 else base  # n copies of the base (one gather per array)
    for name in BUILD_FIELDS:
        if name in cols:
            batch = batch.with_field(name, cols[name].astype(float))
    parts = [name for name in cols if is_part_field(name)]
    for name in parts:  # the DRAM part before the knobs: dram_bandwidth_tbps buys whole stacks of it
        batch = batch.with_field(name, part_codes(cols[name]))
    batch = batch.with_knobs(**knob_args(cols))
    for name, values in cols.items():
        if name in KNOB_SI or name in SPLIT or name in BUILD_FIELDS or name in parts:
            continue
        batch = batch.with_field(name, values.astype(float))
    if all(k in cols for k in SPLIT):
        if space is None or space.split is None:
            raise ValueError("split weights given without a split search space")
        batch = split_designs(batch, cols, space.split.total_area_mm2)
    return batch


def max_offchip_capacity(space: Space, base: DesignBatch, node_max_stacks: float) -> tuple[float, str]:
    """The most main-memory bytes any design of ``space`` can have, and how it is built (for the error naming a
    workload that can never fit, before any trial runs):

    * a searched ``memory.<main>.capacity_mib``: its upper bound (the largest of its choices);
    * else, for a level bought in stacks (``stack_bandwidth_gbps``) whose bandwidth is searched (the knob, a split or
      ``memory.<main>.bandwidth_tbps``): ``min(ceil(BW_high / stack BW), package limit) x stack capacity``, the
      package limit being ``package.max_dram_stacks`` or ``node_max_stacks``;
    * else, on a chip without a DRAM level (its main memory is the outermost SRAM, the level ``sram_mib`` sizes):
      the upper bound of a searched ``sram_mib``;
    * else the base design's capacity."""
    hw = base.base
    level = hw.offchip_level
    name = level.name
    for p in space.params:
        if p.field == f"memory.{name}.capacity_mib":
            high = max(p.choices) if p.choices is not None else p.high
            return float(high) * MIB, f"the upper bound of memory.{name}.capacity_mib"
    if space.sram_mib is not None and base.sram_level == base.offchip_index:
        return float(space.sram_mib.high) * MIB, "the upper bound of sram_mib"
    per, per_gb = stack_bandwidth(hw), stack_capacity_bytes(hw)
    for p in space.params:  # a searched DRAM part: its slowest stack (the most stacks) of its largest capacity
        if p.field == f"memory.{name}.generation" and per is not None:
            probe = base.take(np.zeros(len(p.choices), dtype=int)).with_part(part_codes(p.choices))
            per, per_gb = float(probe.main_stack_bps().min()), float(probe.main_stack_bytes().max())
    limit = float(hw.package.max_dram_stacks) if hw.package and hw.package.max_dram_stacks else float(node_max_stacks)
    high_bw = None
    if space.dram_bandwidth_tbps is not None:
        high_bw = space.dram_bandwidth_tbps.high * KNOB_SI["dram_bandwidth_tbps"]
    for p in space.params:
        if p.field == f"memory.{name}.bandwidth_tbps":
            high_bw = float(max(p.choices) if p.choices is not None else p.high) * 1e12
    if per is not None and (high_bw is not None or space.split is not None):
        stacks = limit if high_bw is None else min(max(np.ceil(high_bw / per - 1e-9), 1.0), limit)
        cap = stacks * per_gb
        return cap, f"{stacks:.0f} {name} stacks x {per_gb / 1e9:.4g} GB (package limit {limit:.0f})"
    return float(base.offchip_capacity[0]), f"the base design's {name} (not searched)"
