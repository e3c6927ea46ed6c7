"""Public dies the area model is fitted and checked on, with leave-one-out errors.

``hw_templates/calibration/area_dies.yaml`` lists dies with a published area: GPU dies by their template, NPU-style
dies by what they instantiate (matrix peaks and clock, cores, scratchpad and cache MiB, DRAM stacks,
links), each figure with its source. Two coefficients of the systolic/scratchpad model are fitted
at the reference node (7 nm) and carried to a die's node by sourced scaling::

    A_i = known_i + theta_pe x PEs_i x (1 + control) x s_logic(i) + theta_sp x scratchpad_MiB_i x s_sram(i)
    s_logic(i) = logic_density(7 nm) / logic_density(node_i)      (ttm-cas density table)
    s_sram(i)  = bitcell(node_i) / bitcell(7 nm)                   (published 6T HD bitcell areas)

``known_i`` prices everything else with the node's coefficients (caches, vector units, PHYs, SerDes,
fixed). theta minimises the squared relative error over the calibration dies (non-negative least
squares). A die's leave-one-out error refits theta without it; dies marked ``holdout`` are never in
any fit. GPU dies keep their per-node tensor-core coefficient (``matrix_mm2_per_tflops``); their
leave-one-out replaces the coefficient of the die's own node, when that die set it, by the other GPU
dies' coefficients carried over by logic density (geometric mean).
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field, ValidationError
from scipy.optimize import nnls

from dse.cost.area import COMPONENTS, Inventory, pe_ratio, price
from dse.errors import DseError, from_validation_error
from dse.hardware.designs import DesignBatch
from dse.hardware.schema import Node
from dse.hardware.templates import load_hardware, load_node, templates_dir
from dse.strict import Strict
from dse.units import Dtype
from dse.yamlio import load_yaml

REFERENCE_NODE = "7nm"
#: fitted coefficient -> (node field, scaling kind)
FITTED = {"pe": ("systolic_pe_um2", "logic"), "scratchpad": ("scratchpad_mm2_per_mib", "sram")}


class Die(Strict):
    """One public die: published area and what it instantiates (a GPU die names its template)."""

    name: str = Field(min_length=1)
    role: Literal["calibration", "holdout"] = Field(description="holdout dies are never in a fit")
    die_area_mm2: float = Field(gt=0)
    node: str | None = Field(None, description="node file; a template die takes its template's")
    template: str | None = Field(None, description="GPU dies: the hardware template that describes them")
    peak_tflops: dict[Dtype, float] = Field(default_factory=dict, description="dense matrix peaks, all cores")
    clock_ghz: float | None = Field(None, gt=0, description="the clock of the peaks (GHz): MACs = peak / (2 x clock)")
    vector_fp32_tflops: float = Field(0.0, ge=0)
    scratchpad_mib: float = Field(0.0, ge=0)
    cache_mib: float = Field(0.0, ge=0)
    dram_stacks: float = Field(0.0, ge=0, description="HBM stacks (or GDDR/LPDDR PHYs counted as stack equivalents)")
    serdes_links: float = Field(0.0, ge=0, description="chip-to-chip links in NVLink3-link equivalents "
                                "(25 GB/s per direction each)")
    ddr_channels: float = Field(0.0, ge=0, description="32-bit GDDR/LPDDR channels")
    whole_die: bool = Field(True, description="false for a repeated tile (no fixed die-level area)")
    sets_node_coefficient: bool = Field(False, description="GPU dies: this die's own area set its node's "
                                        "matrix_mm2_per_tflops (its leave-one-out takes the other GPU dies')")
    source: str = Field(min_length=3)


def dies_file() -> str:
    return str(templates_dir() / "calibration" / "area_dies.yaml")


@lru_cache(maxsize=1)
def load_dies() -> tuple[Die, ...]:
    """The dies of ``hw_templates/calibration/area_dies.yaml``, validated."""
    path = dies_file()
    data = load_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("dies"), list):
        raise DseError("got no 'dies' list; accepted: dies: [ {name, role, die_area_mm2, ...} ]", file=path)
    out = []
    for i, entry in enumerate(data["dies"]):
        try:
            out.append(Die.model_validate(entry))
        except ValidationError as exc:
            raise from_validation_error(exc, file=path, model=Die, prefix=f"dies.{i}") from None
    return tuple(out)


def die_node(die: Die) -> Node:
    return load_node(load_hardware(die.template).process_node if die.template else str(die.node))


def die_inventory(die: Die, node: Node) -> Inventory:
    """What ``die`` instantiates, as a one-row :class:`Inventory`."""
    from dse.cost.area import inventory

    if die.template:
        return inventory(DesignBatch.from_hardware(load_hardware(die.template)), node)
    clock = float(die.clock_ghz or node.calibration_clock_ghz.value)
    pes = max(v * 1e12 / (2 * clock * 1e9) * pe_ratio(node, dt) for dt, v in die.peak_tflops.items())
    one = np.ones(1)
    return Inventory(
        simt_tflops=0 * one, systolic_pes=pes * one,
        vector_tflops=die.vector_fp32_tflops * node.calibration_clock_ghz.value / clock * one,
        scratchpad_mib=die.scratchpad_mib * one, cache_mib=die.cache_mib * one,
        noc_crosspoint_bits=0 * one, noc_buffer_bits=0 * one,
        dram_stacks=die.dram_stacks * one, serdes_links=die.serdes_links * one, ddr_channels=die.ddr_channels * one,
        fixed_blocks=float(die.whole_die) * one)


def scale(node: Node, kind: str, ref: Node) -> float:
    """Factor that carries a reference-node coefficient to ``node`` (logic density or bitcell area)."""
    if kind == "logic":
        return ref.logic_density_mtr_per_mm2.value / node.logic_density_mtr_per_mm2.value
    return node.sram_bitcell_um2.value / ref.sram_bitcell_um2.value


def columns(inv: Inventory, node: Node, ref: Node) -> np.ndarray:
    """[2] mm^2 of the die per unit of each fitted coefficient (bf16 PE in um^2, scratchpad in mm^2/MiB)."""
    return np.array([float(inv.systolic_pes[0]) * 1e-6 * (1.0 + node.systolic_control_fraction.value)
                     * scale(node, "logic", ref),
                     float(inv.scratchpad_mib[0]) * scale(node, "sram", ref)])


def known_mm2(inv: Inventory, node: Node, simt_coeff: float | None = None) -> float:
    """mm^2 of everything the fit does not set (optionally with another tensor-core coefficient)."""
    parts = price(replace(inv, systolic_pes=0 * inv.systolic_pes, scratchpad_mib=0 * inv.scratchpad_mib), node)
    total = float(sum(parts[c][0] for c in COMPONENTS))
    if simt_coeff is not None:
        total += float(inv.simt_tflops[0]) * (simt_coeff - node.matrix_mm2_per_tflops.value)
    return total


def fit(rows: list[tuple[np.ndarray, float, float]]) -> np.ndarray:
    """theta >= 0 minimising sum ((known + x.theta - A) / A)^2 over ``rows`` of (x, known, A)."""
    x = np.array([r[0] / r[2] for r in rows])
    y = np.array([(r[2] - r[1]) / r[2] for r in rows])
    used = np.abs(x).sum(axis=0) > 0
    theta = np.zeros(x.shape[1])
    if used.any():
        theta[used] = nnls(x[:, used], y)[0]
    return theta


def die_data(ref: Node) -> list[tuple[Die, Node, Inventory, np.ndarray, float]]:
    """Per die: the die, its node, its inventory, its fit columns and its known (unfitted) mm^2."""
    out = []
    for die in load_dies():
        node = die_node(die)
        inv = die_inventory(die, node)
        out.append((die, node, inv, columns(inv, node, ref), known_mm2(inv, node)))
    return out


def fit_rows(data: list, leave_out: str | None = None) -> list[tuple[np.ndarray, float, float]]:
    """(columns, known, published) of the NPU calibration dies of ``data``, without ``leave_out``."""
    return [(x, k, d.die_area_mm2) for d, _, _, x, k in data
            if d.role == "calibration" and not d.template and d.name != leave_out]


def fitted_reference() -> dict[str, float]:
    """The fitted coefficients at the reference node, on every calibration die."""
    theta = fit(fit_rows(die_data(load_node(REFERENCE_NODE))))
    return dict(zip(FITTED, theta.tolist(), strict=True))


def node_value(node: Node, key: str, ref_value: float, ref: Node) -> float:
    """A reference-node fitted value carried to ``node``."""
    return ref_value * scale(node, FITTED[key][1], ref)


def carry_simt(value: float, src: Node, dst: Node) -> float:
    """A tensor-core coefficient of node ``src`` carried to node ``dst``, per MAC.

    The coefficient is mm^2 per TFLOP/s at the node's calibration clock f (``dse.cost.area``), i.e.
    mm^2 per MAC / (2 f); a MAC shrinks with logic density D, so
    c_dst = c_src x (D_src / D_dst) x (f_src / f_dst)."""
    return (value * src.logic_density_mtr_per_mm2.value / dst.logic_density_mtr_per_mm2.value
            * src.calibration_clock_ghz.value / dst.calibration_clock_ghz.value)


def simt_loo(die: Die, node: Node) -> float:
    """Tensor-core coefficient for ``die``: geometric mean of the other GPU dies' coefficients carried
    to its node (:func:`carry_simt`)."""
    vals = [carry_simt(die_node(other).matrix_mm2_per_tflops.value, die_node(other), node)
            for other in load_dies()
            if other.template and other.name != die.name and other.role == "calibration"]
    return float(np.exp(np.mean(np.log(vals)))) if vals else node.matrix_mm2_per_tflops.value


def calibration_table() -> pd.DataFrame:
    """Per die: published area, the model's area with the shipped node coefficients (``model_mm2``),
    the all-calibration fit (``fitted_mm2``) and the leave-one-out prediction, with % errors."""
    data = die_data(load_node(REFERENCE_NODE))
    theta = fit(fit_rows(data))
    rows = []
    for die, node, inv, x, known in data:
        shipped = float(sum(price(inv, node)[c][0] for c in COMPONENTS))
        fitted = known + float(x @ theta)
        if die.template:
            loo = known_mm2(inv, node, simt_loo(die, node)) if die.sets_node_coefficient else fitted
            kind = "gpu (tensor cores per TFLOP/s, registers per MiB)"
        elif die.role == "calibration":
            loo = known + float(x @ fit(fit_rows(data, leave_out=die.name)))
            kind = "npu (systolic PEs, scratchpad)"
        else:
            loo = fitted
            kind = "npu (systolic PEs, scratchpad)"
        a = die.die_area_mm2
        rows.append({"die": die.name, "node": node.name, "role": die.role, "model": kind,
                     "published_mm2": a, "model_mm2": shipped, "fitted_mm2": fitted, "loo_mm2": loo,
                     "model_err_pct": (shipped / a - 1) * 100, "fitted_err_pct": (fitted / a - 1) * 100,
                     "loo_err_pct": (loo / a - 1) * 100})
    return pd.DataFrame(rows)

