"""Fit a network level's collective coefficients to measured collectives (nccl-tests runs).

A scale-up level's all-reduce time under a chunked protocol is ``(S_bus + n_1/2) / (B eta) + alpha`` at the sizes
tensor parallelism uses (``dse.predict.network.coefficients``): ``eta`` the level's ``efficiency`` and ``n_1/2`` its
``pipeline_fill_mib`` (Hockney's r_inf and n_1/2). :func:`fit_level` finds the two that minimise the root mean square
of ``log(predicted / measured)`` over a chip's all-reduce rows of ``validation/measurements.csv`` (one collective
each, ``all_reduce:BYTES`` over 8 chips), the way the shipped ``dgx-a100`` and ``dgx-h100`` levels were set; those
rows carry ``fitted_into`` and ``tests/validate/test_collectives.py`` holds the shipped values to this fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import minimize

from dse.hardware.system import System, load_system
from dse.hardware.templates import load_hardware
from dse.predict import network as net
from dse.units import MIB


@dataclass(frozen=True)
class LevelFit:
    """What :func:`fit_level` found for one level: its efficiency and pipeline fill, and the rms log error."""

    efficiency: float
    pipeline_fill_mib: float
    rms_log_error: float


def _time_rows(rows: pd.DataFrame, chip: str) -> pd.DataFrame:
    """``chip``'s ``all_reduce:BYTES`` time rows."""
    return rows[(rows["hardware"] == chip) & rows["workload"].str.startswith("all_reduce:")
                & (rows["metric"] == "time_s")]


def all_reduce_rows(rows: pd.DataFrame, chip: str) -> list[tuple[float, int, float]]:
    """(bytes, ranks, measured seconds) of every ``all_reduce:BYTES`` time row of ``chip``."""
    sel = _time_rows(rows, chip)
    return [(float(w.split(":", 1)[1]), int(n), float(v))
            for w, n, v in zip(sel["workload"], sel["n_chips"], sel["value"], strict=True)]


def predicted(system: System, chip: str, efficiency: float, fill_mib: float,
              cases: list[tuple[float, int, float]]) -> np.ndarray:
    """Seconds of each all-reduce of ``cases`` on ``system`` with its first level at ``efficiency`` and
    ``fill_mib``: the fastest protocol, as the predictor takes it, plus the chip's launch overhead, which
    ``dse.predict`` charges the collective's operator (so the fit matches what ``dse validate`` compares)."""
    hw = load_hardware(chip)
    launch = hw.compute.launch_overhead_us * 1e-6
    out = []
    for S, n, _ in cases:
        sysm = system.resized(n)
        lv0 = sysm.network[0].model_copy(update={"efficiency": efficiency, "pipeline_fill_mib": fill_mib})
        sysm = sysm.model_copy(update={"network": [lv0, *sysm.network[1:]]})
        links, bw, eff, _ = sysm.level_arrays(hw)
        b = np.asarray(bw) * np.asarray(eff)
        out.append(net.best_variant("all_reduce", S, n, 1, sysm.network, b, b * np.asarray(links))[2] + launch)
    return np.asarray(out)


def leave_one_out(system: str, chip: str, rows: pd.DataFrame) -> np.ndarray:
    """[rows] percent time error of each of ``chip``'s all-reduce rows predicted by the level fitted without it."""
    sysm = load_system(system)
    out = []
    for row_id in _time_rows(rows, chip)["id"]:
        [case] = all_reduce_rows(rows[rows["id"] == row_id], chip)
        fit = fit_level(system, chip, rows[rows["id"] != row_id])
        out.append((predicted(sysm, chip, fit.efficiency, fit.pipeline_fill_mib, [case])[0] / case[2] - 1.0) * 100)
    return np.asarray(out)


def fit_level(system: str, chip: str, rows: pd.DataFrame) -> LevelFit:
    """The (efficiency, pipeline_fill_mib) of ``system``'s first level that minimise the rms of log(predicted /
    measured) over ``chip``'s all-reduce rows (Nelder-Mead on log parameters from the level's shipped values)."""
    sysm = load_system(system)
    cases = all_reduce_rows(rows, chip)
    if not cases:
        raise ValueError(f"no all_reduce rows of {chip}")
    measured = np.array([t for *_, t in cases])

    def cost(x: np.ndarray) -> float:
        eff, fill = math.exp(x[0]), math.exp(x[1]) - 1.0
        if not 0 < eff <= 1 or fill < 0:
            return math.inf
        return float(np.sqrt(np.mean(np.log(predicted(sysm, chip, eff, fill, cases) / measured) ** 2)))

    lv = sysm.network[0]
    x0 = np.array([math.log(lv.efficiency), math.log(1.0 + lv.pipeline_fill_mib)])
    res = minimize(cost, x0, method="Nelder-Mead", options={"xatol": 1e-4, "fatol": 1e-6, "maxiter": 400})
    return LevelFit(math.exp(res.x[0]), math.exp(res.x[1]) - 1.0, float(res.fun))


__all__ = ["MIB", "LevelFit", "all_reduce_rows", "fit_level", "leave_one_out", "predicted"]
