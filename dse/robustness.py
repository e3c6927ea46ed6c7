"""How sure a comparison is: Monte Carlo over the model's uncertain inputs, and which inputs decide it.

Inputs sampled (uniform, seeded with ``numpy.random.default_rng(seed)``):

* every area coefficient of the process node that carries a sourced ``range`` (the spread between
  sources in ``hw_templates/nodes/*.yaml``) and that :func:`dse.cost.area.price` uses; each sample
  prices every candidate's inventory (area is linear in these coefficients, so all samples are priced
  in one vectorized call per candidate);
* each efficiency of the base template, scaled by ``1 + e`` with ``e`` uniform in the 10th..90th
  percentile of the out-of-sample time errors (``dse.validate.bands``) of the family that measures it:
  the matrix efficiency by single GEMMs (``gemm``), every memory level's efficiency by streaming copies
  (``copy``), the vector efficiency by all families (``all``); a time error ``e = t_pred / t_meas - 1``
  means the true rate is ``(1 + e)`` times the modelled one. Efficiencies are capped at 1. One draw
  applies to every candidate and to the base (they share the silicon's efficiencies).

* where the objective reads the unit cost (``score_per_usd``, ``cost_usd``), the cost coefficients that enter it
  linearly and carry a sourced range (:data:`COSTED`: the HBM price per GB, 7-18 USD, and the interposer price per
  mm^2); each sample rescales every candidate's (and the base's) DRAM and interposer cost by the drawn price over the
  nominal one (:func:`sampled_costs`). They are drawn after the inputs above, so a score-objective comparison draws
  exactly what it drew before.

Each sample re-predicts every candidate and the base design (the samples are rows of one design batch),
so a candidate's objective (``search.objective``) has a distribution: ``p_beats_first`` is the share of
samples in which it beats the first candidate's, ``objective_p10``/``objective_p90`` its percentiles.
Energy coefficients, and cost ones that enter the cost non-linearly (yield), are not sampled.

Sensitivity: the first-order variance-based (Sobol) index of each input for the decision quantity
``Y = log(objective_c / objective_first)`` is estimated from the same samples by the given-data
(binning) estimator ``S_i = Var(E[Y | X_i]) / Var(Y)``, ``E[Y | X_i]`` the mean of ``Y`` within
``bins`` equal-count bins of ``X_i`` (Plischke, Borgonovo & Smith, EJOR 226, 2013); no extra model runs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import SimpleNamespace

import numpy as np
import pandas as pd

from dse.cost.area import COMPONENTS, area, inventory, price
from dse.cost.cost import unit_cost
from dse.hardware.designs import DesignBatch
from dse.hardware.schema import Coefficient, Node
from dse.predict import mix_times
from dse.score import objective_value
from dse.study import Context, score_designs

#: node coefficients :func:`dse.cost.area.price` reads (sampled when they carry a range)
PRICED = ("matrix_mm2_per_tflops", "systolic_control_fraction", "vector_mm2_per_tflops", "scratchpad_mm2_per_mib",
          "cache_mm2_per_mib", "dram_phy_mm2_per_stack", "dram_controller_mm2_per_stack",
          "ddr_phy_mm2_per_channel", "serdes_mm2_per_link", "fixed_mm2")


#: node coefficients the unit cost is linear in (``dse.cost.cost.unit_cost``), by the cost part each prices; sampled
#: when the objective reads the cost and the coefficient carries a range
COSTED = {"dram_usd_per_gb": "dram", "interposer_usd_per_mm2": "interposer"}


def cost_ranges(node: Node, objective: str) -> dict[str, tuple[float, float]]:
    """The :data:`COSTED` coefficients with a sourced range, name -> (low, high), where ``objective`` reads the unit
    cost (``dse.score.OBJECTIVES``: ``per`` or ``resource`` ``cost_usd``); else none."""
    from dse.score import OBJECTIVES

    o = OBJECTIVES[objective]
    return ranged(node, tuple(COSTED)) if "cost_usd" in (o.per, o.resource) else {}


def sampled_costs(d: DesignBatch, node: Node, draws: dict[str, np.ndarray]) -> np.ndarray:
    """[S] unit cost of design 0 of ``d`` under each draw of the :data:`COSTED` prices: the nominal cost with each
    priced part scaled by drawn / nominal price (the part is that price times a quantity: GB, mm^2)."""
    parts = unit_cost(d, area(d)).parts
    total = sum(float(np.asarray(v)[0]) for v in parts.values())
    out = np.full(len(next(iter(draws.values()))) if draws else 1, total)
    for name, x in draws.items():
        part = float(np.asarray(parts[COSTED[name]])[0])
        out = out + part * (x / getattr(node, name).value - 1.0)
    return out


@dataclass(frozen=True)
class Robustness:
    samples: pd.DataFrame  # one row per sample: inputs, then objective/score/area per candidate
    table: pd.DataFrame  # per candidate: p_beats_first, objective p10/p50/p90, p_less_area
    sensitivity: pd.DataFrame  # per (candidate, input): first-order index, low/high-input Y means
    inputs: list[str]  # sampled input names (in ``samples``)


def ranged(node: Node, names: tuple[str, ...]) -> dict[str, tuple[float, float]]:
    """The coefficients ``names`` of ``node`` that carry a sourced range, name -> (low, high)."""
    out = {}
    for name in names:
        c = getattr(node, name)
        if isinstance(c, Coefficient) and c.range is not None and c.range[1] > c.range[0]:
            out[name] = (float(c.range[0]), float(c.range[1]))
    return out


def node_ranges(node: Node) -> dict[str, tuple[float, float]]:
    """Priced area coefficients that carry a sourced range, name -> (low, high)."""
    return ranged(node, PRICED)


def efficiency_bands() -> dict[str, tuple[float, float, str]]:
    """Design field -> (p10, p90) time error as fractions and the validation family behind it."""
    from dse.validate.bands import shipped_bands

    b = shipped_bands()
    return {"matrix_eff": (b["gemm"].p10_pct / 100, b["gemm"].p90_pct / 100, "gemm"),
            "vector_eff": (b["all"].p10_pct / 100, b["all"].p90_pct / 100, "all"),
            "bw_eff": (b["copy"].p10_pct / 100, b["copy"].p90_pct / 100, "copy")}


def sampled_node(node: Node, values: dict[str, np.ndarray]) -> SimpleNamespace:
    """``node`` with the coefficients in ``values`` replaced by ``[S]`` arrays (for :func:`price`)."""
    attrs = {name: getattr(node, name) for name in type(node).model_fields}
    attrs |= {k: SimpleNamespace(value=v) for k, v in values.items()}
    return SimpleNamespace(**attrs)


def first_order_indices(x: np.ndarray, y: np.ndarray, bins: int = 16) -> np.ndarray:
    """[K] given-data first-order indices of inputs ``x`` [S, K] for output ``y`` [S]:
    ``Var_b(mean(y | x_k in bin b)) / Var(y)`` over ``bins`` equal-count bins of each input, less the
    estimator's bias for an input without effect (bin means of pure noise: ``(bins - 1) / S``), so an
    input that does not move ``y`` scores about 0: ``S = max(0, (raw - c) / (1 - c))``, ``c = (bins - 1) / S``."""
    s, k = x.shape
    var = y.var()
    if not var > 0:
        return np.zeros(k)
    ranks = np.argsort(np.argsort(x, axis=0), axis=0)  # [S, K]
    b = np.minimum(ranks * bins // s, bins - 1)  # bin of each sample for each input
    out = np.empty(k)
    for j in range(k):  # K inputs (a handful), vectorized over samples
        cnt = np.bincount(b[:, j], minlength=bins)
        mean = np.bincount(b[:, j], weights=y, minlength=bins) / np.maximum(cnt, 1)
        out[j] = (cnt * (mean - y.mean()) ** 2).sum() / s / var
    c = (bins - 1) / s
    return np.maximum(0.0, (out - c) / (1 - c))


def default_bins(samples: int) -> int:
    """Bins of :func:`first_order_indices` for ``samples`` draws: about sqrt(S), 2 to 16 (16 bins of 32 samples hold
    2 each, and the indices were noise: an area coefficient 'decided' a score it cannot move, S1 0.45)."""
    return int(max(2, min(16, np.sqrt(samples))))


def noise_floor(samples: int, bins: int) -> float:
    """The first-order index an input without effect reaches 1 time in 40 (2 standard deviations): its bin-means
    variance share is chi-square with ``bins - 1`` degrees of freedom over ``S``, so sd ``sqrt(2 (bins - 1)) / S``,
    after :func:`first_order_indices`' bias correction ``/ (1 - c)``, ``c = (bins - 1) / S``."""
    c = (bins - 1) / samples
    return 2.0 * np.sqrt(2.0 * (bins - 1)) / samples / (1.0 - c)


def robustness(ctx: Context, names: list[str], designs: list[DesignBatch], samples: int = 256, seed: int = 0,
               bins: int | None = None) -> Robustness:
    """Monte Carlo of every candidate's objective, score and area (the module docstring). ``bins``: of the
    first-order indices (default :func:`default_bins`); an index at or below :func:`noise_floor` is flagged
    (``above_noise`` false in the sensitivity table) and no memo names it as deciding anything."""
    bins = bins or default_bins(samples)
    floor = noise_floor(samples, bins)
    rng = np.random.default_rng(seed)
    node = area(ctx.base).node
    ranges = node_ranges(node)
    X: dict[str, np.ndarray] = {k: rng.uniform(lo, hi, samples) for k, (lo, hi) in ranges.items()}
    bands = efficiency_bands()
    for f, (lo, hi, _) in bands.items():
        if f == "bw_eff":
            for lv in ctx.base.level_names:
                X[f"{lv} efficiency scale"] = rng.uniform(1 + lo, 1 + hi, samples)
        else:
            X[f"{f.removesuffix('_eff')} efficiency scale"] = rng.uniform(1 + lo, 1 + hi, samples)
    costed = cost_ranges(node, ctx.cfg.search.objective)  # drawn last: the streams above are unchanged
    X |= {k: rng.uniform(lo, hi, samples) for k, (lo, hi) in costed.items()}
    scale_m, scale_v = X["matrix efficiency scale"], X["vector efficiency scale"]
    scale_bw = np.stack([X[f"{lv} efficiency scale"] for lv in ctx.base.level_names], axis=1)  # [S, L]

    def perturbed(d: DesignBatch) -> DesignBatch:
        s = DesignBatch.stack([d] * samples)
        return replace(s, matrix_eff=np.minimum(s.matrix_eff * scale_m, 1.0),
                       vector_eff=np.minimum(s.vector_eff * scale_v, 1.0),
                       bw_eff=np.minimum(s.bw_eff * scale_bw, 1.0))

    pnode = sampled_node(node, {k: X[k] for k in ranges})
    batch = DesignBatch.stack([perturbed(d) for d in [ctx.base, *designs]])
    times = mix_times(batch, ctx.mix, arrays=ctx.arrays).reshape(len(designs) + 1, samples, -1)  # [C+1, S, W]
    w = ctx.mix.weights

    def area_of(d: DesignBatch) -> np.ndarray:
        parts = price(inventory(d, node), pnode)
        return np.sum([np.broadcast_to(parts[c], (samples,)) for c in COMPONENTS], axis=0)

    base_area = area_of(ctx.base)
    base_cost = sampled_costs(ctx.base, node, {k: X[k] for k in costed}) if costed else None
    kind = ctx.cfg.search.objective
    out = pd.DataFrame(X)
    objs = {}
    for k, (n, d) in enumerate(zip(names, designs, strict=True)):
        score = np.exp(np.log(times[0] / times[k + 1]) @ w)  # vs the base under the same draw
        a = area_of(d)
        nominal, _ = score_designs(ctx, d)  # power is not sampled, cost where the objective reads it
        cost = (sampled_costs(d, node, {k: X[k] for k in costed}) if costed
                else np.full(samples, nominal.cost_usd[0]))
        res = {"area_mm2": a, "cost_usd": cost, "power_w": np.full(samples, nominal.power_w[0])}
        base = {**ctx.base_resources, "area_mm2": base_area}
        if costed:
            base["cost_usd"] = base_cost
        obj = objective_value(kind, score, res, base)
        objs[n] = obj
        out[f"score_{n}"], out[f"area_mm2_{n}"], out[f"objective_{n}"] = score, a, obj
    first = names[0]
    rows, sens = [], []
    inputs = list(X)
    xs = np.stack([X[i] for i in inputs], axis=1)
    for n in names:
        o = objs[n]
        rows.append({"candidate": n, "p_beats_first": np.nan if n == first else float(np.mean(o > objs[first])),
                     "objective_p10": float(np.nanpercentile(o, 10)), "objective_p50": float(np.nanpercentile(o, 50)),
                     "objective_p90": float(np.nanpercentile(o, 90)),
                     "p_less_area_than_first": np.nan if n == first else float(np.mean(out[f"area_mm2_{n}"]
                                                                                       < out[f"area_mm2_{first}"]))})
        if n == first:
            continue
        y = np.log(o / objs[first])
        s1 = first_order_indices(xs, y, bins)
        lo_q, hi_q = np.percentile(xs, 25, axis=0), np.percentile(xs, 75, axis=0)
        for j, i in enumerate(inputs):
            sens.append({"candidate": n, "input": i, "first_order_index": float(s1[j]),
                         "above_noise": bool(s1[j] > floor), "noise_floor": floor,
                         "change_pct_at_low_input": float((np.exp(y[xs[:, j] <= lo_q[j]].mean()) - 1) * 100),
                         "change_pct_at_high_input": float((np.exp(y[xs[:, j] >= hi_q[j]].mean()) - 1) * 100),
                         "input_low": float(xs[:, j].min()), "input_high": float(xs[:, j].max())})
    sens_df = pd.DataFrame(sens)
    if len(sens_df):
        sens_df = sens_df.sort_values(["candidate", "first_order_index"], ascending=[True, False], kind="stable")
    return Robustness(out, pd.DataFrame(rows), sens_df, inputs)
