"""Monte Carlo robustness of a comparison and the variance-based sensitivity behind its tornado chart."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dse.comparison import compare
from dse.config import Candidate, load_study
from dse.cost.area import area, inventory, price
from dse.robustness import first_order_indices, node_ranges, sampled_node
from dse.study import prepare
from tests.conftest import PLOTTED_STUDY, SMALL_STUDY, write_config


def test_first_order_indices_find_the_input_that_matters() -> None:
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 1, (2000, 3))
    s = first_order_indices(x, x[:, 0] + 0.05 * rng.normal(size=2000))
    assert s[0] > 0.9 and (s[1:] < 0.03).all()
    s = first_order_indices(x, x[:, 0] + x[:, 1])  # equal variance: half each (analytic Sobol index 0.5)
    assert s[0] == pytest.approx(0.5, abs=0.06) and s[1] == pytest.approx(0.5, abs=0.06) and s[2] < 0.03


def test_the_noise_floor_holds_what_an_input_without_effect_reaches() -> None:
    """At 32 samples 16 bins gave an area coefficient S1 0.45 on a score it cannot move: bins follow sqrt(S), and an
    index under the noise floor (2 sd of a no-effect input) is flagged, over many seeds about 1 time in 40 above it."""
    from dse.robustness import default_bins, noise_floor

    assert (default_bins(32), default_bins(256), default_bins(10_000), default_bins(2)) == (5, 16, 16, 2)
    rng = np.random.default_rng(7)
    for samples in (32, 256):
        bins, floor = default_bins(samples), noise_floor(samples, default_bins(samples))
        above = [first_order_indices(rng.uniform(0, 1, (samples, 1)), rng.normal(size=samples), bins)[0] > floor
                 for _ in range(400)]
        assert np.mean(above) < 0.08, (samples, np.mean(above))
        x = rng.uniform(0, 1, (samples, 1))
        assert first_order_indices(x, x[:, 0] + 0.3 * rng.normal(size=samples), bins)[0] > floor  # a real effect


def test_sampled_node_prices_like_the_node_at_its_values() -> None:
    import dse

    d = dse.DesignBatch.from_hardware(dse.hardware("npu-7nm"))
    ar = area(d)
    ranges = node_ranges(ar.node)
    assert "dram_phy_mm2_per_stack" in ranges and "scratchpad_mm2_per_mib" in ranges
    inv = inventory(d, ar.node)
    same = price(inv, sampled_node(ar.node, {k: np.full(4, getattr(ar.node, k).value) for k in ranges}))
    assert np.allclose(np.sum([np.broadcast_to(v, (4,)) for v in same.values()], axis=0), ar.total[0])
    lo = price(inv, sampled_node(ar.node, {k: np.array([r[0]]) for k, r in ranges.items()}))
    hi = price(inv, sampled_node(ar.node, {k: np.array([r[1]]) for k, r in ranges.items()}))
    assert sum(float(np.sum(v)) for v in lo.values()) < sum(float(np.sum(v)) for v in hi.values())


def test_monte_carlo_is_seeded_and_more_bandwidth_always_wins_on_a_decode_mix(tmp_path: Path) -> None:
    c, d = load_study(write_config(tmp_path, SMALL_STUDY))
    ctx = prepare(c, d)
    cmp = compare(ctx, ["1:1", "1:4"], samples=128, seed=7)
    again = compare(ctx, ["1:1", "1:4"], samples=128, seed=7)
    pd.testing.assert_frame_equal(cmp.designs_table, again.designs_table)
    t = cmp.designs_table.set_index("candidate")
    assert t.loc["1:4", "p_beats_first"] == 1.0  # 4x the bandwidth at the same compute is never slower
    assert np.isnan(t.loc["1:1", "p_beats_first"])
    for n in ("1:1", "1:4"):
        assert t.loc[n, "objective_p10"] <= t.loc[n, "objective_p50"] <= t.loc[n, "objective_p90"]
    # the score moves with the sampled efficiencies: the nominal lies inside the spread of the base-relative score
    assert t.loc["1:4", "objective_p10"] < t.loc["1:4", "objective_p90"]
    sens = cmp.robust.sensitivity
    top = sens[sens["candidate"] == "1:4"].iloc[0]
    # the decode-heavy mix is bound by memory bandwidth: a memory level's efficiency decides (at 1:4 the HBM
    # outruns the 4 TB/s global SRAM the weights stream through, and part of resnet50's weights stay in it)
    levels = {f"{lv.name} efficiency scale" for lv in ctx.base_hw.memory}
    assert top["input"] in levels
    assert ((sens["first_order_index"] >= 0) & (sens["first_order_index"] <= 1)).all()
    other = compare(ctx, ["1:1", "1:4"], samples=128, seed=8).designs_table.set_index("candidate")
    assert other.loc["1:4", "objective_p50"] != t.loc["1:4", "objective_p50"]  # another seed, other draws


def test_compare_writes_robustness_outputs_and_a_memo(tmp_path: Path, capsys) -> None:
    from dse.cli import main

    cfg = write_config(tmp_path, PLOTTED_STUDY)
    assert main(["compare", str(cfg), "--ratios", "1:1,2:1", "--samples", "64", "--out", str(tmp_path),
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "P(beats 1:1)" in out
    folder = tmp_path / "tiny-compare"
    cands = pd.read_csv(folder / "candidates.csv")
    assert {"p_beats_first", "objective_p10", "objective_p90"} <= set(cands.columns)
    assert len(pd.read_csv(folder / "mc_samples.csv")) == 64
    assert (folder / "tornado.png").is_file() and (folder / "robustness.csv").is_file()
    md = (folder / "summary.md").read_text()
    assert md.index("## Decision memo") < md.index("## Candidates")
    assert "Recommendation: keep 1:1" in md  # half the bandwidth at the same compute cannot win on score
    assert "P(2:1 beats 1:1 on score) = 0%" in md
    assert main(["compare", str(cfg), "--samples", "-1", "--out", str(tmp_path)]) == 2
    assert "--samples: got -1" in capsys.readouterr().err


def test_a_cost_objective_samples_the_dram_and_interposer_prices_and_a_score_one_does_not(tmp_path: Path) -> None:
    """score_per_usd between npu-7nm on 4 HBM2E stacks and on 4 HBM3 stacks (2x the bandwidth, 1.5x the GB): the HBM
    price per GB (7-18 USD) and the interposer's (node ranges) join the draws, each sample's cost is the nominal one
    with those parts rescaled (a draw at the nominal prices gives the nominal cost), and the HBM price decides more of
    cost-per-score than any efficiency (with the interposer's wide 0.03-1 USD/mm2 range first: a common cost that
    dilutes HBM3's extra GB). With objective score the draws are the ones a score study always made."""
    from dse.cost.cost import unit_cost
    from dse.hardware.templates import load_node
    from dse.robustness import COSTED, cost_ranges, sampled_costs

    cands = [Candidate(name="hbm2e", ratio="1:1"),
             Candidate(name="hbm3", fields={"memory.hbm.generation": "hbm3"})]
    data = {**SMALL_STUDY, "search": {**SMALL_STUDY["search"], "objective": "score_per_usd"}}
    c, d = load_study(write_config(tmp_path, data))
    ctx = prepare(c, d)
    node = load_node("7nm")
    assert set(cost_ranges(node, "score_per_usd")) == set(COSTED) and cost_ranges(node, "score") == {}
    cmp = compare(ctx, cands, samples=256, seed=3)
    s = cmp.robust.samples
    assert {"dram_usd_per_gb", "interposer_usd_per_mm2"} <= set(s.columns)
    assert s["dram_usd_per_gb"].between(7.0, 18.0).all()
    hbm3 = cmp.designs[1]
    nominal = {k: np.array([getattr(node, k).value]) for k in COSTED}
    parts = unit_cost(hbm3, area(hbm3)).parts
    assert sampled_costs(hbm3, node, nominal)[0] == pytest.approx(sum(float(v[0]) for v in parts.values()))
    sens = cmp.robust.sensitivity.set_index("input")
    top2 = set(sens["first_order_index"].sort_values(ascending=False).index[:2])
    assert top2 == set(COSTED) and sens.loc[list(COSTED), "above_noise"].all()
    t = cmp.designs_table.set_index("candidate")
    assert 0.0 < t.loc["hbm3", "p_beats_first"] <= 1.0
    plain = load_study(write_config(tmp_path, SMALL_STUDY, "plain.yaml"))
    r = compare(prepare(*plain), ["1:1", "1:2"], samples=64, seed=3).robust
    assert not {"dram_usd_per_gb", "interposer_usd_per_mm2"} & set(r.inputs)
