"""The fastest parallelism plan that fits: every candidate plan of a workload on a system, predicted in one call.

Architects compare chips each at its best plan (Calculon, Isaev et al. SC 2023, searches tensor, pipeline and data
parallelism, micro-batching, recomputation and optimizer sharding per system; GenZ does the same), so a plan given by
hand can make the better chip lose. :func:`best_plan` enumerates the plans of ``chips`` chips (:func:`candidates`):
tensor parallel degrees that divide the chips and fit one node (Megatron keeps TP inside the NVLink domain, Narayanan
et al. SC 2021, Sec. 3.3: "tensor model parallelism ... within a multi-GPU server"), pipeline stages that divide the
rest, the remainder as data parallelism, micro-batch counts that divide a replica's batch, ZeRO stages 0-3 where there
is data parallelism (with ZeRO 3 also hybrid sharding: a shard group within a node, replicated across nodes),
recomputation none / minimal / selective / full, sequence parallelism on and off with TP (it saves activation memory,
but on a switch that reduces in the network, NVLS on NVSwitch, an all-reduce crosses the links once where its
reduce-scatter and all-gather cross them twice: on 32 H100 the LLaMA-2-70B TP collectives take 1.0 s with SP and 0.52
s without), and expert parallelism for MoE models. Each candidate is one chip's operator table (``dse.workload(...,
plan=...)``); all of them are predicted at once on the system's chip (``dse.predict.mix_times``: vectorized passes
over the candidates' operators, ``dse.predict.CANDIDATE_CHUNK`` candidates each), and the fastest whose per-chip
footprint fits the chip's main memory wins. Fixed fields (``tp=8``, ``zero=1``, ...) narrow the grid.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dse.errors import DseError
from dse.hardware.designs import DesignBatch
from dse.hardware.system import System, load_system
from dse.limits import MAX_CHIPS
from dse.predict import Prediction, candidate_mixes, mix_times, predict
from dse.predict.network import placed
from dse.workloads.library import Workload, workload
from dse.workloads.parallel import Plan
from dse.workloads.plans import RECOMPUTE, candidates, expand


@dataclass(frozen=True)
class PlanSearch:
    """What :func:`best_plan` found."""

    best: Plan | None  # the fastest plan that fits (None: none fits)
    prediction: Prediction | None  # the best plan predicted (per-operator table, fits, ...)
    table: pd.DataFrame  # one row per candidate: plan fields, label, time_s, memory_gb, fits, error; fastest first
    seconds: float  # wall time of the search
    capacity_gb: float  # main memory of one chip, GB (a plan fits when its per-chip footprint is within it)

    def __repr__(self) -> str:
        if self.best is None:
            return f"PlanSearch(no plan fits; {len(self.table)} candidates)"
        return (f"PlanSearch(best {self.best.label()}: {self.prediction.time_s:.4g} s per step; "
                f"{int(self.table['fits'].sum())} of {len(self.table)} candidates fit)")


def _resolve(system: str | System | Any, chips: int) -> tuple[System, Any]:
    """(the system resized to ``chips``, its chip's template). A chip template (a name or a YAML path) is its own
    chip on its shipped system: the file's numbers, never the shipped template its name matches (a copy of npu-7nm
    with twice the cores planned as the stock npu-7nm, and a best_design.yaml not at all)."""
    from dse.hardware.templates import load_hardware

    if isinstance(system, System):
        return system.resized(chips), load_hardware(system.chip)
    from dse.hardware.system import default_system, is_system

    name = str(system)
    if is_system(name):
        sysm = load_system(name)
        return sysm.resized(chips), load_hardware(sysm.chip)
    chip = load_hardware(name)
    return default_system(chip).resized(chips), chip


def _label(kw: dict[str, Any], chips: int) -> str:
    """A candidate's plan label from its keywords ("" where they make no plan)."""
    try:
        return Plan(chips=chips, **kw).label()
    except (ValueError, TypeError):
        return ""


def best_plan(wl: Workload | str, system: str | System, chips: int, **fixed: Any) -> PlanSearch:
    """The fastest plan of ``wl`` (a single-chip workload, or a model name with its defaults) on ``chips`` chips
    of ``system`` (a system template such as ``dgx-h100``, or a chip template: its shipped system) whose per-chip
    memory fits, and the table of every candidate (:func:`candidates`, ``fixed`` fields held). One vectorized
    prediction of all candidates (``mix_times``), then one ``predict`` of the winner."""
    t0 = time.perf_counter()
    if isinstance(wl, str):
        wl = workload(wl)
    if wl.plan is not None and not wl.plan.trivial:
        raise DseError(f"{wl.label()} already has a plan; accepted: a single-chip workload", field="workload")
    if isinstance(chips, bool) or not isinstance(chips, int) or not 0 < chips <= MAX_CHIPS:
        raise DseError(f"got {chips!r}; accepted: a whole number of chips from 1 to {MAX_CHIPS} (dse.limits.MAX_CHIPS)",
                       field="chips")
    sysm, chip = _resolve(system, chips)
    per_node = sysm.network[0].size if sysm.network else chips
    keys = candidates(wl, chips, per_node, **fixed)
    wls, _, errors = expand(wl, keys)
    wls, errors = placed(wls, errors, sysm)
    if not wls:
        held = ", ".join(f"{k}={v}" for k, v in fixed.items())
        first = next((e for e in errors if e), f"no candidate with {held}" if held else "no candidate")
        first = first.split("; accepted:")[0]  # the candidate's own 'accepted' is about that candidate
        raise DseError(f"got no plan of {wl.label()} that builds on {chips} chips (the first: {first}); accepted: "
                       "another chip count or fewer fixed fields", field="best_plan")
    d = DesignBatch.from_hardware(chip).with_system(sysm)
    # in chunks of candidates (dse.predict.candidate_mixes: one mix of all of them grows as their square)
    times = np.concatenate([mix_times(d, m, arrays=a)[0] for m, a in candidate_mixes(wls)])
    cap = float(d.offchip_capacity[0])
    built = iter(range(len(wls)))
    rows = []
    for kw, err in zip(keys, errors, strict=True):
        if err:  # did not build or cannot be placed: no time, no footprint
            rows.append({**kw, "label": _label(kw, chips), "error": err, "time_s": np.nan, "memory_gb": np.nan,
                         "_w": -1})
            continue
        k = next(built)  # its index in wls
        plan = wls[k].plan  # micro-batches as built (a pipeline left unset takes as many as the batch allows)
        rows.append({**kw, "microbatches": plan.m if plan else 1, "label": plan.label() if plan else "1 chip",
                     "error": "", "time_s": float(times[k]), "memory_gb": wls[k].memory_bytes / 1e9, "_w": k})
    table = pd.DataFrame(rows)
    # the ZeRO-3 shard group: fsdp ranks (hybrid) or every data-parallel rank; unset without ZeRO 3
    hybrid = table["fsdp"] if "fsdp" in table else pd.Series(np.nan, index=table.index)
    table["fsdp"] = hybrid.fillna(table["dp"]).where(table["zero"] == 3).astype("Int64")
    table["microbatches"] = table["microbatches"].astype("Int64")  # counts (they read 2.0 in JSON)
    table["fits"] = (table["_w"] >= 0) & (table["memory_gb"] <= cap / 1e9)
    # fastest first; at equal time the simpler plan (no recomputation, a lower ZeRO stage), then the smaller footprint
    # (times within 1e-9 relative are one time: the same work summed in another order)
    table["_rc"] = table["recompute"].map({r: i for i, r in enumerate(RECOMPUTE)})
    table["_t"] = np.round(table["time_s"] / np.nanmin(table["time_s"]), 9)
    table = table.sort_values(["fits", "_t", "_rc", "zero", "memory_gb"], ascending=[False, True, True, True, True],
                              kind="stable").reset_index(drop=True)
    best = int(table["_w"].iloc[0])
    table = table.drop(columns=["_rc", "_t", "_w"])
    if not table["fits"].any():
        return PlanSearch(None, None, table, time.perf_counter() - t0, cap / 1e9)
    wl_best = wls[best]
    p = predict(wl_best, chip, system=sysm)
    # one chip: the workload as built carries no plan, and the best is the trivial one (not None, which means none fits)
    best_plan_ = (wl_best.plan or Plan()).model_copy(update={"chips": chips})  # chips set (it was None)
    return PlanSearch(best_plan_, p, table, time.perf_counter() - t0, cap / 1e9)


def no_fit_reason(search: PlanSearch) -> str:
    """One line for a search where no plan fits: the smallest footprint found and the capacity."""
    t = search.table.dropna(subset=["memory_gb"])
    if not len(t):
        return "no candidate could be built"
    row = t.loc[t["memory_gb"].idxmin()]
    return (f"the smallest footprint, {row['memory_gb']:.1f} GB per chip ({row['label']}, zero {int(row['zero'])}, "
            f"recompute {row['recompute']}), exceeds the chip's {search.capacity_gb:.1f} GB")
