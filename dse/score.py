"""Mix score, objectives and constraints of a design batch.

Score of design ``d`` on a mix (``docs/design.md``): the weighted geometric mean over
workloads ``w`` of throughput relative to the base design::

    score_d = exp( sum_w weight_w * ln(T_base,w / T_d,w) )       (weights sum to 1)

so 1.10 means 10 % faster than the base on this mix (Fleming & Wallace, CACM 1986, on why the
geometric mean is the right average of normalised performance). The per-resource objectives divide
the score by the resource relative to the base (``score_per_mm2`` = score / (area / base area)),
so 1.0 means "as efficient as the base".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

Objective = Literal["score", "score_per_mm2", "score_per_usd", "score_per_w"]

#: objective -> the resource it divides by
PER = {"score_per_mm2": "area_mm2", "score_per_usd": "cost_usd", "score_per_w": "power_w"}


def mix_score(times: np.ndarray, base_times: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """[D] weighted geometric-mean speedup of ``times`` [D, W] over ``base_times`` [W]."""
    return np.exp(np.log(base_times[None, :] / times) @ weights)


@dataclass(frozen=True)
class Scored:
    """Everything the search records per design: ``[D]`` arrays, constraints by name (<= 0 feasible)."""

    score: np.ndarray
    objective: np.ndarray
    area_mm2: np.ndarray
    cost_usd: np.ndarray
    power_w: np.ndarray
    constraints: dict[str, np.ndarray]
    reason: list[str]

    @property
    def feasible(self) -> np.ndarray:
        if not self.constraints:
            return np.ones(self.score.shape, dtype=bool)
        return np.all([c <= 0 for c in self.constraints.values()], axis=0)

    @property
    def constraint(self) -> np.ndarray:
        """[D] the largest constraint value (<= 0 when every constraint holds)."""
        return np.max(list(self.constraints.values()), axis=0)


def objective_value(kind: Objective, score: np.ndarray, resources: dict[str, np.ndarray],
                    base: dict[str, float]) -> np.ndarray:
    """``score``, or score divided by a resource relative to the base design."""
    if kind == "score":
        return score
    key = PER[kind]
    return score / (resources[key] / base[key])


#: constraint name -> (resource key, label, unit)
LIMITS = {
    "reticle": ("area_mm2", "reticle limit", "mm2"),
    "area": ("area_mm2", "area budget", "mm2"),
    "cost": ("cost_usd", "cost budget", "USD"),
    "power": ("power_w", "power budget", "W"),
}


def constraints(resources: dict[str, np.ndarray], limits: dict[str, float]) -> tuple[dict[str, np.ndarray], list[str]]:
    """Constraint values (resource - limit, <= 0 feasible) for each named limit, and a reason per design."""
    values = {name: resources[LIMITS[name][0]] - lim for name, lim in limits.items()}
    n = len(next(iter(resources.values())))
    reasons = []
    for i in range(n):
        broken = [f"{LIMITS[k][0].split('_')[0]} {resources[LIMITS[k][0]][i]:.4g} {LIMITS[k][2]} > "
                  f"{LIMITS[k][1]} {lim:.4g} {LIMITS[k][2]}" for k, lim in limits.items() if values[k][i] > 0]
        reasons.append("; ".join(broken))
    return values, reasons


def capacity_constraint(designs, mix) -> tuple[np.ndarray, list[str]]:
    """[D] GB by which the most demanding workload's per-chip footprint (weights, KV cache, activations,
    gradients, optimizer state; ``dse.workloads.parallel``) exceeds the design's outermost memory
    (<= 0 fits), and the reason per design."""
    need = mix.memory_bytes  # [W]
    cap = designs.capacity[:, -1]  # [D] bytes
    worst = int(np.argmax(need)) if need.size else 0
    value = (need[worst] - cap) / 1e9 if need.size else np.full(designs.n, -np.inf)
    level = designs.level_names[-1]
    label = mix.workloads[worst].label() if need.size else ""
    reasons = [f"capacity: {label} needs {need[worst] / 1e9:.1f} GB per chip > {c / 1e9:.1f} GB {level}" if v > 0 else ""
               for v, c in zip(value, cap, strict=True)]
    return value, reasons
