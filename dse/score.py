"""Mix score, objectives and constraints of a design batch.

Score of design ``d`` on a mix (``../shared/DESIGN.md``): the weighted geometric mean over
workloads ``w`` of throughput relative to the base design::

    score_d = exp( sum_w weight_w * ln(T_base,w / T_d,w) )       (weights sum to 1)

so 1.10 means 10 % faster than the base on this mix (Fleming & Wallace, CACM 1986, on why the
geometric mean is the right average of normalised performance).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

Objective = Literal["score", "score_per_mm2"]


def mix_score(times: np.ndarray, base_times: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """[D] weighted geometric-mean speedup of ``times`` [D, W] over ``base_times`` [W]."""
    return np.exp(np.log(base_times[None, :] / times) @ weights)


@dataclass(frozen=True)
class Scored:
    """Everything the search records per design: ``[D]`` arrays."""

    score: np.ndarray
    objective: np.ndarray
    area_mm2: np.ndarray
    constraint: np.ndarray  # <= 0 feasible (optuna's convention)
    reason: list[str]

    @property
    def feasible(self) -> np.ndarray:
        return self.constraint <= 0


def objective_value(score: np.ndarray, area_mm2: np.ndarray, base_area_mm2: float, kind: Objective) -> np.ndarray:
    """``score``, or ``score_per_mm2`` = score / (area / base area) (perf per area relative to base)."""
    if kind == "score":
        return score
    return score / (area_mm2 / base_area_mm2)


def constraints(area_mm2: np.ndarray, budget_mm2: float | None, reticle_mm2: float) -> tuple[np.ndarray, list[str]]:
    """Constraint value (<= 0 feasible) and a reason per design: area budget and reticle limit."""
    limit = reticle_mm2 if budget_mm2 is None else min(budget_mm2, reticle_mm2)
    c = area_mm2 - limit
    name = "reticle limit" if budget_mm2 is None or reticle_mm2 < budget_mm2 else "area budget"
    reason = ["" if v <= 0 else f"area {a:.0f} mm2 > {name} {limit:.0f} mm2" for v, a in zip(c, area_mm2, strict=True)]
    return c, reason
