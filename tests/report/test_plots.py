"""dse.report.plots: every numeric axis of every figure carries a label with its unit (Agg backend).

Figures are captured before they are written (``_save`` patched), so the Axes objects themselves are
inspected: a label must hold a unit in parentheses, e.g. "peak compute (TFLOP/s)" or "share (fraction)".
Axes whose ticks are names (bars per design or workload) need no unit.
"""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib
import matplotlib.category
import matplotlib.ticker
import numpy as np
import pandas as pd
import pytest

import dse
from dse.hardware.designs import DesignBatch
from dse.predict.intensity import op_intensity
from dse.report import plots
from dse.report.write import OBJECTIVE_LABELS
from dse.workloads.mix import Mix

NPU = dse.hardware("npu-7nm")
DESIGN = DesignBatch.from_hardware(NPU)
UNIT = re.compile(r"\([^)]*\S[^)]*\)")


@pytest.fixture
def figures(monkeypatch) -> list:
    """Figures the plot functions make, kept open instead of written."""
    made: list = []

    def keep(fig, path: Path) -> Path:
        made.append(fig)
        return path

    monkeypatch.setattr(plots, "_save", keep)
    yield made
    for fig in made:
        matplotlib.pyplot.close(fig)


def _categorical(axis) -> bool:
    """Ticks that name things (designs, workloads, families) rather than numbers."""
    fmt = axis.get_major_formatter()
    if isinstance(fmt, matplotlib.category.StrCategoryFormatter):
        return True
    if isinstance(fmt, matplotlib.ticker.FixedFormatter | matplotlib.ticker.FuncFormatter):
        locs = axis.get_ticklocs()
        return any(re.search(r"[A-Za-z]", str(fmt(v, i))) for i, v in enumerate(locs))
    return False


def _missing_units(fig) -> list[str]:
    """'title x|y: label' for each visible numeric axis whose label shows no unit."""
    bad = []
    for ax in fig.axes:
        for side, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            if not axis.get_visible() or len(axis.get_ticklocs()) == 0:
                continue
            if _categorical(axis):
                continue  # the tick names are the labels
            label = axis.get_label_text()
            if not UNIT.search(label):
                bad.append(f"{ax.get_title() or ax.get_label()} {side}: {label!r}")
    return bad


def _ops() -> pd.DataFrame:
    tables = []
    for name, wl in (("resnet50", dse.workload("resnet50", batch=4)),
                     ("llama2-7b", dse.workload("llama2-7b", phase="decode", batch=1, context=256))):
        tables.append(dse.predict(wl, NPU).ops.assign(workload=name, mix_weight=0.5))
    return pd.concat(tables, ignore_index=True)


def test_the_checker_catches_an_axis_without_a_unit(figures) -> None:
    fig, ax = matplotlib.pyplot.subplots()
    ax.plot([1, 2], [3, 4])
    ax.set_xlabel("peak compute (TFLOP/s)")
    ax.set_ylabel("speed")
    assert [m.split(" ", 1)[1] for m in _missing_units(fig)] == ["y: 'speed'"]
    ax.set_ylabel("speed (token/s)")
    assert _missing_units(fig) == []
    matplotlib.pyplot.close(fig)


def test_roofline_histogram_and_rooflines_label_units(figures, tmp_path: Path) -> None:
    ops = _ops()
    plots.roofline_chart(ops, DESIGN, tmp_path / "r.png", "roofline")
    plots.ai_histogram(ops, {"base": float(DESIGN.ridge[0])}, tmp_path / "h.png", "ai", band=(4, 16))
    big = DESIGN.with_knobs(peak_flops=np.array([550e12]))
    plots.rooflines([DESIGN, big], ["base", "big"], ops, tmp_path / "rl.png", "candidates")
    assert len(figures) == 3
    for fig in figures:
        assert _missing_units(fig) == []
    roof = figures[0].axes[0]
    assert roof.get_xscale() == "log" and roof.get_yscale() == "log"
    assert roof.get_ylabel() == "achieved throughput (TFLOP/s)"


def test_heatmaps_bars_cost_and_pareto_label_units(figures, tmp_path: Path) -> None:
    P, B = np.geomspace(64, 1024, 5), np.geomspace(0.4, 4, 4)
    score = np.outer(np.log(B + 1), np.log(P))
    plots.score_heatmap(P, B, score, np.outer(B * 50, P / 4), 400.0, (256, 1.6), (275, 1.64), tmp_path / "s.png", "s")
    plots.stacked_bars({"base": {"matrix": 100.0, "sram": 50.0}, "best": {"matrix": 120.0, "sram": 80.0}},
                       tmp_path / "b.png", "area", "area (mm²)")
    a = np.linspace(100, 900, 20)
    plots.cost_vs_area(a, a * 0.5, np.exp(-a / 800), {"base": (500, 250.0)}, 858.0, tmp_path / "c.png", "cost")
    pts = pd.DataFrame({"objective_score": [1.0, 1.2, 0.8], "objective_area_mm2": [400, 600, 300],
                        "feasible": [True, True, False]})
    plots.pareto_chart(pts, pts[pts["feasible"]], "objective_area_mm2", "objective_score", OBJECTIVE_LABELS,
                       tmp_path / "p.png", "pareto")
    for fig in figures:
        assert _missing_units(fig) == []
    colorbar = [ax for ax in figures[0].axes if ax.get_ylabel().startswith("mix score")]
    assert colorbar, "the heatmap's colour bar names the score and its unit"


def test_host_kernels_validation_and_sensitivity_label_units(figures, tmp_path: Path) -> None:
    host = pd.DataFrame({"operator": ["gemm", "copy"], "ai_flop_per_byte": [100.0, 0.1], "flops": [2e9, 1e6],
                         "measured_s": [0.02, 0.001], "predicted_s": [0.018, 0.0011]})
    plots.host_roofline(host, NPU, tmp_path / "h.png", "host")
    k = pd.DataFrame({"status": ["ok", "ok"], "ai_flop_per_byte": [3.0, 300.0], "achieved_tflops": [4.0, 200.0],
                      "region": ["memory-bound", "compute-bound"]})
    plots.kernels_roofline(k, NPU, 275.0, tmp_path / "k.png", "kernels")
    cov = pd.DataFrame({"metric": ["time_s", "tflops"], "measured": [0.01, 200.0], "predicted": [0.011, 180.0]})
    plots.validation_scatter(cov, {"time_s": "seconds", "tflops": "TFLOP/s"}, tmp_path / "v.png", "val", (-20, 10))
    curve = pd.DataFrame({"ridge_flop_per_byte": [50.0, 100.0, 200.0], "best_score": [0.9, 1.1, 1.0]})
    plots.sensitivity_chart({"llm": curve}, {"llm": (100.0, 1.1)}, 168.0, tmp_path / "m.png", "ratio")
    for fig in figures:
        assert _missing_units(fig) == []


def test_sweep_speedup_and_whatif_label_units(figures, tmp_path: Path) -> None:
    P, B = np.geomspace(64, 1024, 4), np.geomspace(0.4, 4, 3)
    pp, bb = np.meshgrid(P, B, indexing="ij")
    g = pd.DataFrame({"score": (pp * bb).ravel() / 100, "score_per_mm2": (pp * bb).ravel() / 1e4,
                      "area_mm2": (pp + 100 * bb).ravel(), "feasible": (pp < 800).ravel(),
                      "binding": np.where(pp / bb > 200, "hbm", "compute").ravel()})
    best = {"m": pd.Series({"peak_tflops": 256.0, "dram_bandwidth_tbps": 1.6, "sram_mib": 32.0})}
    plots.sweep_heatmaps({"m": g}, {"peak_tflops": P, "dram_bandwidth_tbps": B}, 500.0, best, (275.0, 1.64),
                         tmp_path / "sw.png", "sweep", sram_mib=32.0, base_sram_mib=32.0)
    table = pd.DataFrame({"workload": [f"w{i}" for i in range(4)], "family": ["cnn", "cnn", "llm", "llm"],
                          "speedup_b_vs_a": [1.1, 0.9, 1.3, 1.2]})
    plots.speedup_bars(table, ["a", "b"], tmp_path / "sp.png", "speedup")
    plots.speedup_bars(table, ["a", "b"], tmp_path / "sp2.png", "speedup by family", max_bars=2)
    wi = pd.DataFrame({"ai_flop_per_byte": [10.0, 40.0], "achieved_tflops": [15.0, 60.0], "dtype": ["bf16", "fp8"],
                       "transform": ["baseline", "fp8"], "time_ms": [2.0, 0.5], "binding": ["hbm", "hbm"]})
    plots.whatif_roofline(wi, DESIGN, tmp_path / "wi.png", "whatif")
    assert len(figures[0].axes) >= 4  # four panels (plus colour bars)
    for fig in figures:
        assert _missing_units(fig) == []


def test_a_whatif_stage_with_no_dram_traffic_is_drawn_at_the_right_edge(tmp_path: Path) -> None:
    """A what-if stage that keeps every tensor on chip (a huge sram_mib stage: DRAM bytes 0, AI infinite) raised
    StopIteration inside matplotlib drawing the arrow to it (fuzz corpus, seed 18000); it is now a marker at the
    plot's right edge, the file is written and every arrow is finite."""
    wi = pd.DataFrame({"ai_flop_per_byte": [10.0, np.inf, 40.0], "achieved_tflops": [15.0, 200.0, 60.0],
                       "dtype": ["bf16"] * 3, "transform": ["baseline", "sram_mib 1e8", "keeps step"],
                       "time_ms": [2.0, 0.2, 0.5], "binding": ["hbm", "compute", "hbm"]})
    path = plots.whatif_roofline(wi, DESIGN, tmp_path / "wi.png", "whatif")
    assert path.is_file() and path.stat().st_size > 1000


def test_a_sweep_with_one_bandwidth_value_still_draws_its_cells(figures, tmp_path: Path) -> None:
    """A sweep that does not search the bandwidth (one value) drew four empty panels (shading='nearest' on a single
    value); the cells now have log-midpoint edges (``plots.log_edges``), and the axis names the chip's own main
    memory when given (an all-SRAM chip has no DRAM)."""
    import matplotlib.collections

    assert np.allclose(plots.log_edges(np.array([2.0])), [1.6, 2.5])
    e = plots.log_edges(np.array([1.0, 4.0, 16.0]))
    assert np.allclose(e, [0.5, 2.0, 8.0, 32.0]) and (np.diff(e) > 0).all()
    P, B = np.geomspace(64, 1024, 4), np.array([18.43])
    g = pd.DataFrame({"score": P / 100, "score_per_mm2": P / 1e4, "area_mm2": P + 100, "feasible": P < 800,
                      "binding": ["compute"] * 4})
    best = {"m": pd.Series({"peak_tflops": 256.0, "dram_bandwidth_tbps": 18.43, "sram_mib": 220.0})}
    label = "main memory 'sram' (sram) bandwidth (TB/s)"
    plots.sweep_heatmaps({"m": g}, {"peak_tflops": P, "dram_bandwidth_tbps": B}, None, best, (737.0, 18.43),
                         tmp_path / "one.png", "one bandwidth", sram_mib=220.0, base_sram_mib=220.0,
                         axis_labels=("peak compute (TFLOP/s)", label))
    fig = figures[0]
    panels = [ax for ax in fig.axes if ax.get_xlabel() == "peak compute (TFLOP/s)"]  # not the colour bars
    meshes = [c for ax in panels for c in ax.collections if isinstance(c, matplotlib.collections.QuadMesh)]
    assert len(panels) == 4 and len(meshes) == 4 and all(m.get_array().size == 4 for m in meshes)
    assert all(ax.get_ylabel() == label for ax in panels)


def test_ai_distribution_labels_units(figures, tmp_path: Path) -> None:
    mix = Mix.of([dse.workload("resnet50"), dse.workload("bert-base")])
    df = op_intensity(mix, DESIGN)
    plots.ai_distribution(df, "hbm", "share_flops", {"base": float(DESIGN.ridge[0])}, tmp_path / "d.png", "dist")
    assert _missing_units(figures[0]) == []


def test_save_writes_png_and_svg_atomically_and_closes_the_figure(tmp_path: Path) -> None:
    fig, ax = matplotlib.pyplot.subplots(figsize=(2, 2))
    ax.plot([1, 2], [1, 2])
    out = plots._save(fig, tmp_path / "f.png")
    assert out == tmp_path / "f.png"
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "f.svg").read_text().lstrip().startswith("<?xml")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.png", "f.svg"]  # no temporary left
    assert not matplotlib.pyplot.fignum_exists(fig.number)


def test_score_heatmap_hatches_the_infeasible_cells(figures, tmp_path: Path) -> None:
    """Cells that break a limit are hatched (as the sweep figure does) and named in the legend; none when all fit."""
    P, B = np.geomspace(64, 1024, 5), np.geomspace(0.4, 4, 4)
    score = np.outer(np.log(B + 1), np.log(P))
    feasible = np.ones((4, 5), dtype=bool)
    feasible[-1, -2:] = False
    args = (P, B, score, np.outer(B * 50, P / 4), None, (256, 1.6), (275, 1.64), tmp_path / "s.png", "s")
    plots.score_heatmap(*args, feasible=feasible)
    plots.score_heatmap(*args, feasible=np.ones((4, 5), dtype=bool))
    hatched, clean = (fig.axes[0] for fig in figures[-2:])

    def hatches(ax) -> list:
        return [c for c in ax.collections if any(h for h in (getattr(c, "hatches", None) or [c.get_hatch()]))]

    assert hatches(hatched) and not hatches(clean)
    assert "infeasible (a limit broken)" in [t.get_text() for t in hatched.get_legend().get_texts()]


def test_the_roofline_has_a_panel_per_level_with_operators_at_their_achieved_throughput(figures, tmp_path) -> None:
    """One intensity per panel (FLOP per byte of that level's traffic, on its axis), every operator at its
    achieved TFLOP/s (not on the roof), and the vector and launch-overhead roofs drawn."""
    ops = _ops()
    plots.roofline_chart(ops, DESIGN, tmp_path / "r.png", "roofline")
    levels = plots.roofline_levels(ops, DESIGN)
    axes = figures[0].axes
    assert len(axes) == len(levels) >= 2
    busy = ops[ops["flops"] > 0]
    for ax, lv in zip(axes, levels, strict=True):
        assert ax.get_xlabel() == f"arithmetic intensity at {lv} (FLOP per byte of {lv} traffic)"
        sub = busy[busy[f"traffic_{lv}_bytes"] > 0]
        pts = np.concatenate([c.get_offsets() for c in ax.collections if len(c.get_offsets())])
        want = np.column_stack([sub["flops"] / sub[f"traffic_{lv}_bytes"], sub["achieved_flops"] / 1e12])
        assert sorted(map(tuple, np.round(pts, 9))) == sorted(map(tuple, np.round(want, 9)))
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert any(t.startswith("vector peak") for t in labels) and any("launch overhead" in t for t in labels)


def test_the_candidates_rooflines_place_operators_at_achieved_not_attainable(figures, tmp_path) -> None:
    ops = _ops()
    plots.rooflines([DESIGN], ["base"], ops, tmp_path / "rl.png", "candidates")
    ax = figures[0].axes[0]
    o = ops[(ops["flops"] > 0) & (ops["bytes_read"] + ops["bytes_written"] > 0)]
    y = np.concatenate([c.get_offsets()[:, 1] for c in ax.collections])
    assert sorted(np.round(y, 9)) == sorted(np.round(o["achieved_flops"].to_numpy() / 1e12, 9))
    assert (o["achieved_flops"] < o["roof_flops"] * (1 - 1e-9)).any()  # some operator below its roof: not on it
    assert "compulsory byte" in ax.get_xlabel()


def test_roofs_are_drawn_at_the_mix_dtypes_peaks() -> None:
    """An int8 mix's operators sit under the int8 roof (twice bf16's on npu-7nm); the chart drew only the reference
    dtype's, so they plotted above their roof. The FLOP-heaviest matrix dtype comes first (the solid roof)."""
    import dse
    from dse.hardware.designs import DesignBatch
    from dse.report.plots import matrix_dtype_peaks

    d = DesignBatch.from_hardware(dse.hardware("npu-7nm"))
    int8 = dse.predict(dse.workload("resnet50", batch=1, dtype="int8"), "npu-7nm").ops
    bf16 = dse.predict(dse.workload("resnet50", batch=1, dtype="bf16"), "npu-7nm").ops
    assert list(matrix_dtype_peaks(int8, d)) == ["int8"]
    assert matrix_dtype_peaks(int8, d)["int8"] == 2 * matrix_dtype_peaks(bf16, d)["bf16"]
    both = pd.concat([int8.assign(flops=int8["flops"] * 3), bf16])
    assert list(matrix_dtype_peaks(both, d)) == ["int8", "bf16"]


def test_an_overhead_ceiling_far_above_the_peak_is_not_drawn(figures, tmp_path) -> None:
    """At 1 ns a launch the median operator's overhead ceiling sits decades above the peak, where no operator can be:
    drawn, it stretched the axis and squeezed every operator into its bottom."""
    import dataclasses

    fast = dataclasses.replace(DESIGN, overhead_s=np.array([1e-9]))
    plots.roofline_chart(_ops(), fast, tmp_path / "r.png", "roofline")
    for ax in figures[0].axes:
        assert not any("launch overhead" in t.get_text() for t in ax.get_legend().get_texts())


def test_the_sweep_star_says_what_its_cell_asked_and_what_was_built(figures, tmp_path: Path) -> None:
    """The best design is starred in its grid cell (1.4 TB/s asked) while the summary gives the design built there
    (1.64 TB/s: whole stacks); the legend says both where they differ."""
    P, B = np.geomspace(64, 1024, 4), np.geomspace(0.4, 4, 3)
    pp, bb = np.meshgrid(P, B, indexing="ij")
    g = pd.DataFrame({"score": (pp * bb).ravel() / 100, "score_per_mm2": (pp * bb).ravel() / 1e4,
                      "area_mm2": (pp + 100 * bb).ravel(), "feasible": (pp < 800).ravel(),
                      "binding": np.where(pp / bb > 200, "hbm", "compute").ravel()})
    best = {"m": pd.Series({"peak_tflops": 256.0, "dram_bandwidth_tbps": 1.4, "dram_bandwidth_tbps_built": 1.6384,
                            "sram_mib": 32.0})}
    plots.sweep_heatmaps({"m": g}, {"peak_tflops": P, "dram_bandwidth_tbps": B}, 500.0, best, (275.0, 1.64),
                         tmp_path / "sw.png", "sweep", sram_mib=32.0, base_sram_mib=32.0)
    labels = [t.get_text() for t in figures[0].legends[0].get_texts()]
    assert "best feasible (cell asked 1.4 TB/s, built 1.64)" in labels, labels


def test_stacked_bars_leave_room_for_their_totals(figures, tmp_path: Path) -> None:
    """The total over each bar sat on the axes' top edge and ran into the title."""
    plots.stacked_bars({"base": {"matrix": 300.0, "sram": 200.0}, "best": {"matrix": 350.0, "sram": 232.5}},
                       tmp_path / "a.png", "area", "area (mm²)")
    ax = figures[0].axes[0]
    assert ax.get_ylim()[1] >= 582.5 * 1.1


def test_every_infeasible_cell_is_hatched_whole_and_no_feasible_one(figures, tmp_path: Path) -> None:
    """The hatch was a contour of the feasibility mask at the cell centres: an edge column of infeasible designs (the
    reticle's) and a single infeasible cell came out unhatched. Now one hatched rectangle per infeasible cell."""
    P, B = np.geomspace(64, 1024, 5), np.geomspace(0.4, 4, 4)
    pp, bb = np.meshgrid(P, B, indexing="ij")
    feasible = (pp < 1000).ravel() & ~((pp == P[1]) & (bb == B[2])).ravel()  # the last column and one lone cell
    g = pd.DataFrame({"score": (pp * bb).ravel() / 100, "score_per_mm2": (pp * bb).ravel() / 1e4,
                      "area_mm2": (pp + 100 * bb).ravel(), "feasible": feasible, "binding": "compute"})
    best = {"m": pd.Series({"peak_tflops": 256.0, "dram_bandwidth_tbps": 1.6, "sram_mib": 32.0})}
    plots.sweep_heatmaps({"m": g}, {"peak_tflops": P, "dram_bandwidth_tbps": B}, None, best, (275.0, 1.64),
                         tmp_path / "sw.png", "sweep", sram_mib=32.0, base_sram_mib=32.0)
    cells = [c for c in figures[0].axes[0].collections if c.get_gid() == "infeasible-cells"]
    assert len(cells) == 1 and len(cells[0].get_paths()) == int((~feasible).sum()) == len(B) + 1
