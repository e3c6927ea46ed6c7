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


@dataclass(frozen=True)
class ObjectiveSpec:
    """One objective the search can optimise: its direction, its plot/table label (with unit), and what
    it is made of: the mix score itself, the score divided by a resource relative to the base design
    (``per``), or a resource on its own (``resource``, minimised)."""

    name: str
    direction: Literal["maximize", "minimize"]
    label: str
    per: str | None = None
    resource: str | None = None


#: The objectives registry: adding an objective is one record here (config validation, the optuna
#: direction, trial-table labels and the value all come from it).
OBJECTIVES: dict[str, ObjectiveSpec] = {o.name: o for o in (
    ObjectiveSpec("score", "maximize", "mix score (x vs base)"),
    ObjectiveSpec("score_per_mm2", "maximize", "score per mm² (x vs base)", per="area_mm2"),
    ObjectiveSpec("score_per_usd", "maximize", "score per USD (x vs base)", per="cost_usd"),
    ObjectiveSpec("score_per_w", "maximize", "score per W (x vs base)", per="power_w"),
    ObjectiveSpec("area_mm2", "minimize", "die area (mm²)", resource="area_mm2"),
    ObjectiveSpec("cost_usd", "minimize", "unit cost (USD)", resource="cost_usd"),
    ObjectiveSpec("power_w", "minimize", "peak average power (W)", resource="power_w"),
)}

#: objectives a single-objective study may use (the score and the score per resource)
SCORE_OBJECTIVES: tuple[str, ...] = tuple(n for n, o in OBJECTIVES.items() if o.resource is None)


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
    power_density_w_per_mm2: np.ndarray | None = None  # power_w over the package's silicon footprint

    @property
    def feasible(self) -> np.ndarray:
        if not self.constraints:
            return np.ones(self.score.shape, dtype=bool)
        return np.all([c <= 0 for c in self.constraints.values()], axis=0)

    @property
    def constraint(self) -> np.ndarray:
        """[D] the largest constraint value (<= 0 when every constraint holds)."""
        return np.max(list(self.constraints.values()), axis=0)


def objective_value(name: str, score: np.ndarray, resources: dict[str, np.ndarray],
                    base: dict[str, float]) -> np.ndarray:
    """[D] value of objective ``name`` (``OBJECTIVES``): the score, the score divided by a resource
    relative to the base design (``score / (r / r_base)``), or the resource itself."""
    o = OBJECTIVES[name]
    if o.resource is not None:
        return resources[o.resource]
    if o.per is None:
        return score
    return score / (resources[o.per] / base[o.per])


#: constraint name -> (resource key, label, unit)
LIMITS = {
    "reticle": ("largest_die_mm2", "reticle limit", "mm2"),  # each die of a multi-die package
    "area": ("area_mm2", "area budget", "mm2"),
    "cost": ("cost_usd", "cost budget", "USD"),
    "power": ("power_w", "power budget", "W"),
    "power_density": ("power_density_w_per_mm2", "power-density budget", "W/mm2"),
}


#: how a constraint's reason names its resource (default: the key's first word, ``area``, ``cost``, ``power``); the
#: reticle limits each die, so its reason names the largest die, not the package's area
RESOURCE_WORD = {"largest_die_mm2": "largest die", "power_density_w_per_mm2": "power density"}


def word(resource: str) -> str:
    """The word a constraint's reason names ``resource`` by."""
    return RESOURCE_WORD.get(resource, resource.split("_")[0])


def constraints(resources: dict[str, np.ndarray], limits: dict[str, float]) -> tuple[dict[str, np.ndarray], list[str]]:
    """Constraint values (resource - limit, <= 0 feasible) for each named limit, and a reason per design."""
    values = {name: resources[LIMITS[name][0]] - lim for name, lim in limits.items()}
    n = len(next(iter(resources.values())))
    reasons = [""] * n
    if not values:
        return values, reasons
    for i in np.flatnonzero(np.any([v > 0 for v in values.values()], axis=0)):  # strings only where one breaks
        broken = []
        for k, lim in limits.items():
            if values[k][i] > 0:
                got, limit = over_text(float(resources[LIMITS[k][0]][i]), float(lim))
                broken.append(f"{word(LIMITS[k][0])} {got} {LIMITS[k][2]} > {LIMITS[k][1]} {limit} {LIMITS[k][2]}")
        reasons[i] = "; ".join(broken)
    return values, reasons


def over_text(value: float, limit: float) -> tuple[str, str]:
    """``value`` and ``limit`` (value > limit) to 4 significant figures, or as many more as it takes for the two to
    read differently (``473.1 > 473.1`` read as a false comparison: ``473.08 > 473.08`` needs 6, ``473.0812 >
    473.08``)."""
    for digits in range(4, 16):
        got, lim = f"{value:.{digits}g}", f"{limit:.{digits}g}"
        if got != lim:
            return got, lim
    return got, lim


def gb_text(n_bytes: float) -> str:
    """Bytes as decimal GB to 3 significant figures, whole GB from 100 (``0.268``, ``1.07``, ``16,400``)."""
    gb = n_bytes / 1e9
    return f"{gb:,.0f}" if gb >= 100 else f"{gb:.3g}"


def capacity_constraint(designs, mix) -> tuple[np.ndarray, list[str]]:
    """[D] GB by which the most demanding workload's per-chip footprint (weights, KV cache, activations,
    gradients, optimizer state; ``dse.workloads.parallel``) exceeds the design's main memory
    (<= 0 fits), and the reason per design."""
    need = mix.memory_bytes  # [W]
    cap = designs.offchip_capacity  # [D] bytes
    worst = int(np.argmax(need)) if need.size else 0
    value = (need[worst] - cap) / 1e9 if need.size else np.full(designs.n, -np.inf)
    level = designs.offchip_name
    label = mix.workloads[worst].label() if need.size else ""
    reasons = [""] * designs.n
    over = np.flatnonzero(value > 0)  # strings only for the designs that do not fit
    for i, c in zip(over.tolist(), cap[over].tolist(), strict=True):
        reasons[i] = f"capacity: {label} needs {gb_text(need[worst])} GB per chip > {gb_text(c)} GB {level}"
    return value, reasons
