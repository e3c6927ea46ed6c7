import numpy as np
import pytest

from dse.score import Scored, constraints, gb_text, mix_score, objective_value


def test_base_scores_one_and_uniform_speedup_scores_the_speedup() -> None:
    base = np.array([2.0, 5.0, 1e-3])
    w = np.array([0.5, 0.25, 0.25])
    times = np.stack([base, base / 2, base * np.array([1.0, 0.25, 1.0])])
    s = mix_score(times, base, w)
    assert s[0] == pytest.approx(1.0)
    assert s[1] == pytest.approx(2.0)
    assert s[2] == pytest.approx(4.0**0.25)  # geometric mean: only the 0.25-weighted workload got 4x


def test_per_resource_objectives_are_relative_to_the_base() -> None:
    s = np.array([1.0, 2.0])
    res = {"area_mm2": np.array([500.0, 1000.0]), "cost_usd": np.array([100.0, 400.0]),
           "power_w": np.array([300.0, 300.0])}
    base = {"area_mm2": 500.0, "cost_usd": 100.0, "power_w": 150.0}
    assert list(objective_value("score", s, res, base)) == [1.0, 2.0]
    assert list(objective_value("score_per_mm2", s, res, base)) == [1.0, 1.0]
    assert list(objective_value("score_per_usd", s, res, base)) == [1.0, 0.5]
    assert list(objective_value("score_per_w", s, res, base)) == [0.5, 1.0]


def test_constraints_name_every_broken_limit() -> None:
    res = {"area_mm2": np.array([700.0, 800.0, 900.0]), "cost_usd": np.array([10.0, 10.0, 99.0]),
           "power_w": np.array([1.0, 1.0, 1.0])}
    res["largest_die_mm2"] = res["area_mm2"]  # one die each: the reticle limits the whole
    cons, reason = constraints(res, {"reticle": 858.0, "area": 750.0, "cost": 50.0})
    sc = Scored(score=np.ones(3), objective=np.ones(3), area_mm2=res["area_mm2"], cost_usd=res["cost_usd"],
                power_w=res["power_w"], constraints=cons, reason=reason)
    assert list(sc.feasible) == [True, False, False]
    assert reason[0] == ""
    assert "area budget 750" in reason[1] and "reticle" not in reason[1]
    assert "reticle limit 858" in reason[2] and "cost budget 50" in reason[2]
    assert reason[2].startswith("largest die 900 mm2 > reticle limit 858 mm2")  # the reticle limits each die
    assert sc.constraint[0] <= 0 < sc.constraint[1]


def test_a_power_density_limit_names_the_heat_flux_in_its_unit() -> None:
    res = {"power_density_w_per_mm2": np.array([0.45, 0.91])}
    cons, reason = constraints(res, {"power_density": 0.8})
    assert cons["power_density"].tolist() == pytest.approx([-0.35, 0.11])
    assert reason == ["", "power density 0.91 W/mm2 > power-density budget 0.8 W/mm2"]


def test_every_registered_objective_is_accepted_directed_labelled_and_valued() -> None:
    """The registry is the one list: config accepts each name, the value is computed, the label has a unit."""
    from dse.config import Search
    from dse.score import OBJECTIVES, SCORE_OBJECTIVES, objective_value

    space = {"peak_tflops": {"low": 10, "high": 100}}
    res = {"area_mm2": np.array([200.0]), "cost_usd": np.array([50.0]), "power_w": np.array([100.0])}
    base = {"area_mm2": 100.0, "cost_usd": 50.0, "power_w": 50.0}
    for name, spec in OBJECTIVES.items():
        Search(objectives=["score", name] if name != "score" else ["score", "area_mm2"], space=space)
        if name in SCORE_OBJECTIVES:
            Search(objective=name, space=space)
        v = objective_value(name, np.array([1.5]), res, base)
        expected = {"score": 1.5, "score_per_mm2": 0.75, "score_per_usd": 1.5, "score_per_w": 0.75,
                    "area_mm2": 200.0, "cost_usd": 50.0, "power_w": 100.0}[name]
        assert v[0] == pytest.approx(expected)
        assert spec.direction == ("minimize" if spec.resource else "maximize")
        assert "(" in spec.label and ")" in spec.label


def test_reasons_are_formatted_only_for_infeasible_designs_as_a_per_design_join(small_config) -> None:
    """score_designs formats strings only where a limit breaks; each equals the plain per-design join."""
    from dse.cost.area import area, shoreline
    from dse.score import LIMITS, capacity_constraint, word
    from dse.search.space import designs_from_params
    from dse.study import load_context, resources, score_designs

    _, ctx = load_context(str(small_config))
    rng = np.random.default_rng(1)
    n = 300
    d = designs_from_params(ctx.base, {"peak_tflops": rng.uniform(16, 4096, n),
                                       "dram_bandwidth_tbps": rng.uniform(0.2, 16, n),
                                       "sram_mib": rng.uniform(4, 1024, n)})
    sc, times = score_designs(ctx, d)
    res = resources(d, ctx.mix, times, ctx.arrays)
    cap, _ = capacity_constraint(d, ctx.mix)
    sh = shoreline(d, area(d))
    label = ctx.mix.workloads[int(np.argmax(ctx.mix.memory_bytes))].label()
    worst = float(np.max(ctx.mix.memory_bytes))
    expected = []
    for i in range(n):
        parts = [f"{word(LIMITS[k][0])} {res[LIMITS[k][0]][i]:.4g} {LIMITS[k][2]} > {LIMITS[k][1]} {lim:.4g} "
                 f"{LIMITS[k][2]}" for k, lim in ctx.limits.items() if res[LIMITS[k][0]][i] - lim > 0]
        why = "; ".join(parts)
        fit = (f"capacity: {label} needs {gb_text(worst)} GB per chip > {gb_text(d.capacity[i, -1])} GB "
               f"{d.level_names[-1]}") if cap[i] > 0 else ""
        expected.append("; ".join(x for x in (why, fit, sh.reasons()[i]) if x))
    assert sc.reason == expected
    assert 0 < sum(bool(r) for r in sc.reason) < n  # both kinds present
    assert [not r for r in sc.reason] == list(sc.feasible)


def test_a_broken_budget_reads_as_a_true_comparison() -> None:
    # a design 0.0012 mm2 over a 473.08 mm2 budget printed "473.1 mm2 > area budget 473.1 mm2"
    import numpy as np

    from dse.score import constraints, over_text

    assert over_text(473.0812, 473.08) == ("473.081", "473.08")
    assert over_text(500.0, 400.0) == ("500", "400")
    _, reasons = constraints({"area_mm2": np.array([473.0812, 400.0])}, {"area": 473.08})
    assert reasons == ["area 473.081 mm2 > area budget 473.08 mm2", ""]
