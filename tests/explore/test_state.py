"""dse.explore.state and dse.explore.figures: what the explorer shows, without a browser."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from dse.errors import DseError
from dse.explore import figures, state
from dse.hardware.templates import load_hardware
from dse.search.space import designs_from_params
from dse.study import load_context, score_designs
from tests.conftest import SMALL_STUDY, write_config


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    path = write_config(tmp_path_factory.mktemp("ex"), SMALL_STUDY)
    return load_context(path)[1]


@pytest.fixture(scope="module")
def specs(ctx):
    return state.knob_specs(ctx)


def test_knobs_are_the_search_space_plus_the_ratio(ctx, specs):
    names = [s.name for s in specs]
    assert names == ["peak_tflops", "dram_bandwidth_tbps", "sram_mib", state.RATIO]
    peak = specs[0]
    assert (peak.low, peak.high) == (64, 1024) and "TFLOP/s" in peak.label
    assert specs[-1].base == pytest.approx(1.0)  # the base is ratio 1:1 of itself


def test_base_values_score_one(ctx, specs):
    v = state.evaluate(ctx, specs, {})
    assert v.score == pytest.approx(1.0)
    assert v.workloads["speedup_x"].to_numpy() == pytest.approx(1.0)


def test_view_matches_the_study_scorer(ctx, specs):
    """The explorer's score, area and feasibility are the study's for the same parameters (one design rule)."""
    vals = {"peak_tflops": 600.0, "dram_bandwidth_tbps": 2.5, "sram_mib": 100.0}
    v = state.evaluate(ctx, specs, vals)
    sc, _ = score_designs(ctx, designs_from_params(ctx.base, {k: np.array([x]) for k, x in vals.items()}))
    assert v.score == pytest.approx(float(sc.score[0]))
    assert v.summary["area_mm2"] == pytest.approx(float(sc.area_mm2[0]))
    assert v.feasible == bool(sc.feasible[0])
    assert v.built["cores"] == int(v.built["cores"])  # built as whole cores
    assert v.built["dram_stacks"] == int(v.built["dram_stacks"])
    assert sum(v.breakdown["area_mm2"].values()) == pytest.approx(v.summary["area_mm2"], rel=1e-6)
    assert sum(v.ceilings.values()) == pytest.approx(1.0, rel=1e-6)


def test_more_compute_changes_the_score(ctx, specs):
    low = state.evaluate(ctx, specs, {"peak_tflops": 100.0}).score
    high = state.evaluate(ctx, specs, {"peak_tflops": 1000.0}).score
    assert high > low


def test_the_view_says_what_stays_on_chip_and_more_sram_keeps_more_of_the_weights(ctx, specs):
    """The on-chip table follows the SRAM knob: SMALL_STUDY's llama2-7b decode keeps under 1 % of its 13 GB of weights
    in 16 MiB, and names the size that keeps them; resnet50 b8 keeps a larger share of its weights at 64 MiB."""
    small = state.evaluate(ctx, specs, {"sram_mib": 16.0})
    large = state.evaluate(ctx, specs, {"sram_mib": 64.0})
    assert small.residency_level.startswith("resident level: global SRAM 16 MiB")
    assert list(small.residency["workload"]) == list(small.workloads["workload"])
    w = "weights on chip (%)"
    assert large.residency.loc[0, w] > small.residency.loc[0, w]  # resnet50
    assert 0 < small.residency.loc[1, w] < 1 and "weights fit from 12," in small.residency.loc[1, "next"]


def test_ratio_round_trip(ctx):
    bw = state.bandwidth_at_ratio(400.0, 2.0, ctx)
    assert state.ratio_of({"peak_tflops": 400.0, "dram_bandwidth_tbps": bw}, ctx) == pytest.approx(2.0)
    # 1:2 is twice the base's bandwidth per FLOP
    base = state.ratio_of({"peak_tflops": 400.0, "dram_bandwidth_tbps": state.bandwidth_at_ratio(400.0, 1.0, ctx)}, ctx)
    assert bw == pytest.approx(2 * state.bandwidth_at_ratio(400.0, base, ctx))


@pytest.mark.parametrize("value", [5000.0, -1, "abc", math.inf, None])
def test_out_of_range_knob_is_one_line(ctx, specs, value):
    with pytest.raises(DseError) as e:
        state.evaluate(ctx, specs, {"peak_tflops": value})
    (line,) = e.value.lines()
    assert "knob peak_tflops" in line and "accepted: 64..1024" in line


def test_unknown_knob_refused(ctx, specs):
    with pytest.raises(DseError, match="accepted: peak_tflops"):
        state.evaluate(ctx, specs, {"peak": 100.0})


def test_heatmap_marks_infeasible_cells(ctx, specs):
    h = state.heatmap(ctx, {s.name: s.base for s in specs}, 6)
    assert h.score.shape == (6, 6) and h.feasible.shape == (6, 6)
    assert h.feasible.any() and not h.feasible.all()  # the 750 mm2 budget cuts the top corner off
    assert not h.feasible[-1, -1]


def test_template_yaml_is_a_loadable_template(ctx, specs):
    v = state.evaluate(ctx, specs, {"peak_tflops": 500.0})
    hw = load_hardware(yaml.safe_load(state.template_yaml(v, "saved")))
    sc, _ = score_designs(ctx, designs_from_params(ctx.base, {"peak_tflops": np.array([500.0])}))
    from dse.hardware.designs import DesignBatch
    from dse.predict import mix_times

    assert mix_times(DesignBatch.from_hardware(hw), ctx.mix)[0] == pytest.approx(
        mix_times(v.design, ctx.mix)[0], rel=1e-9)


def test_field_value_reads_levels_by_name(ctx):
    assert state.field_value(ctx.base_hw, "compute.clock_ghz") == ctx.base_hw.compute.clock_ghz
    assert state.field_value(ctx.base_hw, "memory.nonexistent.capacity_mib") is None


def test_figures_carry_units_and_operators(ctx, specs):
    v = state.evaluate(ctx, specs, {})
    roof = figures.roofline(v)
    assert "FLOP per byte" in roof["layout"]["xaxis"]["title"]["text"]
    assert "TFLOP/s" in roof["layout"]["yaxis"]["title"]["text"]
    dots = [t for t in roof["data"] if t["mode"] == "markers"]
    main = v.ops[f"ai_{v.roofs['main']}"]
    shown = int((np.isfinite(main) & (main > 0) & (v.ops["achieved_tflops"] > 0)).sum())
    assert sum(len(t["x"]) for t in dots) == shown > 0
    names = {row[0] for t in dots for row in t["customdata"]}
    assert names <= set(v.ops["name"])
    assert any("launch overhead roof" in t["name"] for t in roof["data"])
    assert any(t["name"].startswith("vector peak") for t in roof["data"])
    # every dot sits at or under its level's roof (achieved <= min(AI x B, P))
    bw, peak = v.roofs["levels"][v.roofs["main"]], v.roofs["peak_tflops"]
    for t in dots:
        x, y = np.array(t["x"]), np.array(t["y"])
        assert (y <= np.minimum(x * bw, peak) * (1 + 1e-6)).all()
    local = figures.roofline(v, "local")
    assert "at local" in local["layout"]["xaxis"]["title"]["text"]
    hist = figures.ai_histogram(v)
    assert sum(sum(t["y"]) for t in hist["data"]) == pytest.approx(1.0)
    assert len(hist["layout"]["shapes"]) == 2  # current and base ridges


def test_template_fields_and_choices_are_knobs(tmp_path):
    cfg = {**SMALL_STUDY, "search": {**SMALL_STUDY["search"], "space": {  # no knob: they set cores and the SRAM
        "params": [{"field": "compute.clock_ghz", "low": 0.8, "high": 2.0},
                   {"field": "memory.global.capacity_mib", "choices": [16, 32, 64]},
                   {"field": "compute.cores", "low": 8, "high": 64, "type": "int"}]}}}
    ctx = load_context(write_config(tmp_path, cfg))[1]
    specs = {s.name: s for s in state.knob_specs(ctx)}
    assert list(specs) == ["compute.clock_ghz", "memory.global.capacity_mib", "compute.cores"]
    assert state.RATIO not in specs  # bandwidth is not a knob here
    assert specs["compute.clock_ghz"].base == ctx.base_hw.compute.clock_ghz
    assert specs["memory.global.capacity_mib"].choices == (16, 32, 64)
    assert specs["compute.cores"].integer and specs["compute.cores"].base == ctx.base_hw.compute.cores
    v = state.evaluate(ctx, list(specs.values()), {"compute.clock_ghz": 2.0})
    assert v.built["clock_ghz"] == pytest.approx(2.0)
    with pytest.raises(DseError, match="accepted: 16, 32, 64"):
        state.evaluate(ctx, list(specs.values()), {"memory.global.capacity_mib": 48})
    with pytest.raises(DseError, match="whole numbers"):
        state.evaluate(ctx, list(specs.values()), {"compute.cores": 12.5})
    assert state.heatmap(ctx, {s: x.base for s, x in specs.items()}, 4) is None


def test_an_auto_plan_workload_shows_the_designs_own_plan(tmp_path):
    """With plan: auto the operator views come from the plan the shown design's time comes from."""
    cfg = {**SMALL_STUDY, "workloads": [{"name": "llama2-7b", "phase": "training", "batch": 8, "seq": 1024,
                                         "plan": "auto", "chips": 4}]}
    ctx = load_context(write_config(tmp_path, cfg))[1]
    specs = state.knob_specs(ctx)
    v = state.evaluate(ctx, specs, {"dram_bandwidth_tbps": 4.0})
    assert v.workloads["time_ms"].iloc[0] / 1e3 == pytest.approx(float(v.ops["time_s"].sum()), rel=1e-9)


@pytest.mark.parametrize("config", ["configs/npu.yaml", "experiments/npu_story.yaml", "experiments/npu_noc_and_clock.yaml"])
def test_the_shipped_configs_open_at_their_base_design(config):
    """At its first knob values the page shows the base itself, score 1: a field the template leaves automatic
    (``compute.noc.link_bytes``) starts at the width the base is built with (it started mid-range, 0.879x), and a
    template's DRAM is whole stacks (npu-decode-7nm was 1.75 stacks: the page built 2, 2.458 TB/s, 1.078x)."""
    ctx = load_context(config)[1]
    specs = state.knob_specs(ctx)
    v = state.evaluate(ctx, specs, {})
    assert v.score == pytest.approx(1.0)
    assert v.built["dram_bandwidth_tbps_built"] == pytest.approx(float(ctx.base.dram_bandwidth[0]) / 1e12)
    for s in specs:
        assert "(" in s.label, s.label  # every knob says its unit


def test_a_searched_dram_part_is_a_dropdown_of_part_names(tmp_path):
    """memory.hbm.generation in the space: a knob of part codes shown by name, the base on npu-7nm's own HBM2E; a
    design on HBM4 is built of HBM4 stacks (the bandwidth knob buys whole ones of it)."""
    from dse.hardware.fields import part_codes

    space = {**SMALL_STUDY["search"]["space"], "params": [
        {"field": "memory.hbm.generation", "choices": ["hbm2e", "hbm3", "hbm4"]}]}
    ctx = load_context(write_config(tmp_path, {**SMALL_STUDY, "search": {**SMALL_STUDY["search"], "space": space}}))[1]
    specs = {s.name: s for s in state.knob_specs(ctx)}
    part = specs["memory.hbm.generation"]
    assert part.choice_labels == ("hbm2e", "hbm3", "hbm4")
    assert part.choices == tuple(part_codes(["hbm2e", "hbm3", "hbm4"])) and part.base == part.choices[0]
    v = state.evaluate(ctx, list(specs.values()), {"memory.hbm.generation": part.choices[2], "dram_bandwidth_tbps": 3.0})
    assert v.built["dram_stacks"] == 2 and v.built["dram_bandwidth_tbps_built"] == pytest.approx(4.096)
