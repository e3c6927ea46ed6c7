"""dse sweep: the full grid, chunked, with numbers that equal the search's own scoring."""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dse
from dse.cli import main
from dse.config import load_study
from dse.grid import axes_for, binding_ceiling, run_sweep
from dse.search.space import designs_from_params
from dse.study import prepare, score_designs
from tests.conftest import PLOTTED_STUDY, SMALL_STUDY, write_config


def test_sweep_writes_grid_and_heatmaps(tmp_path: Path, capsys) -> None:
    cfg = write_config(tmp_path, PLOTTED_STUDY)
    assert main(["sweep", str(cfg), "--points", "6", "--sram-points", "2", "--chunk", "7", "--out", str(tmp_path)]) == 0
    folder = tmp_path / "tiny-sweep"
    grid = pd.read_csv(folder / "sweep.csv")
    assert len(grid) == 6 * 6 * 2
    assert (folder / "sweep_sram0.png").is_file() and (folder / "sweep_sram1.png").is_file()
    ok = grid[grid["feasible"]]
    assert (ok["area_mm2"] <= 750).all()
    bad = grid[~grid["feasible"]]  # over the budget, or more HBM stacks than the die edge and package hold
    over = bad["area_mm2"] > 750
    edge = bad["infeasible_reason"].str.contains("package:|shoreline:", regex=True)
    assert (over | edge).all() and edge.any()
    assert (bad.loc[over, "infeasible_reason"].str.contains("area")).all()
    out = capsys.readouterr().out
    assert "best feasible" in out
    assert f"; {len(ok)} of {len(grid)} designs within the limits" in out  # the 36 points x 2 SRAMs
    # its timing reads as a time at any size (a small grid said '0.00 s'), and one mix is not 'mix(es)'
    assert re.search(r"designs x \d+ workloads \(1 mix\) in [\d.]+ m?s", out), out
    # a grid row's score equals scoring that design directly
    c, d = load_study(cfg)
    ctx = prepare(c, d)
    row = grid.iloc[17]
    one = designs_from_params(ctx.base, [{k: row[k] for k in ("peak_tflops", "dram_bandwidth_tbps", "sram_mib")}])
    sc, _ = score_designs(ctx, one)
    assert sc.score[0] == pytest.approx(row["score"], rel=1e-9)
    assert sc.area_mm2[0] == pytest.approx(row["area_mm2"], rel=1e-9)


def test_chunking_does_not_change_results(tmp_path: Path) -> None:
    c, d = load_study(write_config(tmp_path, SMALL_STUDY))
    ctx = prepare(c, d)
    axes = axes_for(c, ctx, 5, 2)
    a = run_sweep(ctx, axes, chunk=3).grid
    b = run_sweep(ctx, axes, chunk=4096).grid
    np.testing.assert_allclose(a["score"], b["score"], rtol=1e-12)


def test_too_large_a_grid_is_refused(tmp_path: Path, capsys) -> None:
    cfg = write_config(tmp_path, SMALL_STUDY)
    assert main(["sweep", str(cfg), "--points", "2000", "--sram-points", "2", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "8,000,000 designs" in err and "--points" in err


TWO_MIXES = {k: v for k, v in PLOTTED_STUDY.items() if k != "workloads"} | {
    "name": "two",
    "mixes": {
        "vision": [{"name": "resnet50", "batch": 8}, {"name": "mobilenet-v2", "batch": 8}],
        "llm": [{"name": "llama2-7b", "phase": "decode", "batch": 1, "context": 512, "weight": 2},
                {"name": "llama2-7b", "phase": "prefill", "batch": 1, "seq": 256}],
    },
}


def _binding_by_predict(ctx, design) -> tuple[str, float]:
    """The ceiling with the largest score-weighted share of the workloads' times, from dse.predict per workload."""
    shares: dict[str, float] = {}
    for wl, w in zip(ctx.mix.workloads, ctx.mix.weights, strict=True):
        for bound, share in dse.predict(wl, design).time_by_bound().items():
            shares[bound] = shares.get(bound, 0.0) + w * share
    best = max(shares, key=shares.get)
    return best, shares[best]


def test_sweep_per_mix_writes_one_grid_with_a_mix_column_and_faceted_heatmaps(tmp_path: Path, capsys) -> None:
    cfg = write_config(tmp_path, TWO_MIXES)
    assert main(["sweep", str(cfg), "--points", "5", "--sram-points", "2", "--chunk", "9", "--out", str(tmp_path)]) == 0
    folder = tmp_path / "two-sweep"
    grid = pd.read_csv(folder / "sweep.csv", keep_default_na=False)
    assert list(grid["mix"].unique()) == ["vision", "llm"] and len(grid) == 2 * 5 * 5 * 2
    assert {"binding", "binding_time_share"} <= set(grid.columns)
    assert set(grid["binding"]) <= {"compute", "array", "local", "global", "hbm", "overhead"}
    out = capsys.readouterr().out
    assert "vision: best feasible" in out and "llm: best feasible" in out
    for m in ("vision", "llm"):  # each mix's own count of designs within the limits, of its 50
        k = int(grid.loc[grid["mix"] == m, "feasible"].astype(str).eq("True").sum())
        assert f"{m}: best feasible" in out and f"; {k} of 50 designs within the limits" in out
    for k in (0, 1):
        assert (folder / f"sweep_sram{k}.png").is_file() and (folder / f"sweep_sram{k}.svg").is_file()
    c, d = load_study(cfg)
    for mix in ("vision", "llm"):
        ctx = prepare(c.for_mix(mix), d, f"mixes.{mix}")
        g = grid[grid["mix"] == mix].reset_index(drop=True)
        for i in (3, 31):
            row = g.iloc[i]
            one = designs_from_params(ctx.base, [{k: row[k] for k in ("peak_tflops", "dram_bandwidth_tbps", "sram_mib")}])
            sc, _ = score_designs(ctx, one)
            assert sc.score[0] == pytest.approx(row["score"], rel=1e-9)
            bound, share = _binding_by_predict(ctx, one)
            assert row["binding"] == bound and row["binding_time_share"] == pytest.approx(share, rel=1e-9)
        best = g[g["feasible"]].sort_values("score").iloc[-1]
        assert f"| {mix} | {best['peak_tflops']:.4g} |" in (folder / "summary.md").read_text()
    page = (folder / "report.html").read_text()
    assert page.count("<img") == 2 and page.count("<table>") == 2


def test_binding_ceiling_does_not_depend_on_the_sub_batch_size(tmp_path: Path) -> None:
    c, d = load_study(write_config(tmp_path, SMALL_STUDY))
    ctx = prepare(c, d)
    designs = designs_from_params(ctx.base, {"peak_tflops": np.geomspace(32, 2048, 7),
                                             "dram_bandwidth_tbps": np.geomspace(4, 0.2, 7)})
    from dse.predict import mix_times_bounds

    a = binding_ceiling(ctx, designs, by=mix_times_bounds(designs, ctx.mix, arrays=ctx.arrays, chunk=1)[1])
    b = binding_ceiling(ctx, designs)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_allclose(a[1], b[1], rtol=1e-12)
    assert len(set(a[0])) == 2  # compute-bound at the high-bandwidth end, memory-bound at the other


def test_a_knob_not_searched_gives_a_one_column_grid_and_its_heatmaps(tmp_path: Path, capsys) -> None:
    space = {k: v for k, v in SMALL_STUDY["search"]["space"].items() if k != "dram_bandwidth_tbps"}
    cfg = write_config(tmp_path, {**PLOTTED_STUDY, "search": {**SMALL_STUDY["search"], "space": space}})
    assert main(["sweep", str(cfg), "--points", "3", "--out", str(tmp_path / "o"), "--quiet"]) == 0, \
        capsys.readouterr().err
    grid = pd.read_csv(next((tmp_path / "o").glob("*/sweep.csv")))
    assert len(grid) == 3 and grid["dram_bandwidth_tbps"].nunique() == 1
    assert list((tmp_path / "o").glob("*/*.png"))


# --------------------------------------------------------------------------- streamed sweeps
def _sorted(g: pd.DataFrame) -> pd.DataFrame:
    return g.sort_values(["mix", "peak_tflops", "dram_bandwidth_tbps", "sram_mib"], kind="stable").reset_index(drop=True)


def test_grid_blocks_rebuild_the_meshgrid_order() -> None:
    from dse.grid import block_params

    axes = {"peak_tflops": np.array([1.0, 2, 3]), "dram_bandwidth_tbps": np.array([4.0, 5]),
            "sram_mib": np.array([6.0, 7, 8, 9])}
    P, B, S = np.meshgrid(*axes.values(), indexing="ij")
    got = block_params(axes, 5, 19)
    assert np.array_equal(got["peak_tflops"], P.ravel()[5:19]) and np.array_equal(got["sram_mib"], S.ravel()[5:19])
    assert np.array_equal(got["dram_bandwidth_tbps"], B.ravel()[5:19])


def test_streamed_sweep_writes_the_same_rows_as_the_in_memory_grid(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    from dse.grid import stream_sweep

    c, d = load_study(write_config(tmp_path, SMALL_STUDY))
    ctx = prepare(c, d)
    axes = axes_for(c, ctx, 7, 3)
    ref = run_sweep(ctx, axes, chunk=50).grid
    s = stream_sweep({"workloads": ctx}, axes, tmp_path / "p", chunk=13, block=40)
    assert len(list((tmp_path / "p").glob("part-*.parquet"))) == 4 and not list((tmp_path / "p").glob(".*"))
    got = pd.read_parquet(tmp_path / "p")
    pd.testing.assert_frame_equal(_sorted(got), _sorted(ref), check_dtype=False)
    ok = ref[ref["feasible"]]
    assert s["rows"] == len(ref) and s["mixes"]["workloads"]["feasible"] == len(ok)
    # chunks of 13 and 50 designs sum the same per-op times in another BLAS order: equal to rounding
    assert s["mixes"]["workloads"]["best"]["score"] == pytest.approx(ok["score"].max(), rel=1e-12)
    assert s["mixes"]["workloads"]["binding"] == ref["binding"].value_counts().to_dict()


def test_cli_sweep_on_dask_writes_parquet_and_a_summary(tmp_path: Path, capsys) -> None:
    pytest.importorskip("distributed")
    pytest.importorskip("pyarrow")
    cfg = write_config(tmp_path, PLOTTED_STUDY)
    assert main(["sweep", str(cfg), "--points", "5", "--engine", "dask", "--workers", "1", "--chunk", "9",
                 "--out", str(tmp_path), "--quiet"]) == 0
    folder = tmp_path / "tiny-sweep"
    grid = pd.read_parquet(folder / "sweep.parquet")
    assert len(grid) == 25 and (folder / "sweep_sram0.png").is_file() and "best feasible" in capsys.readouterr().out
    assert "Best feasible design per mix" in (folder / "summary.md").read_text()


def test_a_scheduler_address_that_names_no_scheduler_is_one_line(tmp_path: Path, capsys) -> None:
    """``--scheduler notaurl`` (no port) was dask's traceback; it is one line naming ``--scheduler``, exit 2."""
    pytest.importorskip("distributed")
    pytest.importorskip("pyarrow")
    cfg = write_config(tmp_path, PLOTTED_STUDY)
    assert main(["sweep", str(cfg), "--points", "3", "--engine", "dask", "--scheduler", "notaurl",
                 "--out", str(tmp_path), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --scheduler: got 'notaurl'"), err


def test_a_missing_scale_extra_is_one_line_naming_it() -> None:
    from dse.grid import need

    with pytest.raises(dse.DseError, match=r"needs no_such_module_dse.*accepted: pip install -e '\.\[scale\]'"):
        need("no_such_module_dse.parquet", "a streamed sweep")


def test_heatmaps_are_rasterized_inside_the_svg(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    from dse.report.plots import _save

    fig, ax = plt.subplots()
    ax.pcolormesh(np.random.default_rng(0).random((200, 200)))
    ax.set_xlabel("peak (TFLOP/s)")
    _save(fig, tmp_path / "h.png")
    svg = (tmp_path / "h.svg").read_text()
    assert "<image" in svg and "peak" in svg  # the mesh is one image; labels stay text
    assert (tmp_path / "h.svg").stat().st_size < 1_000_000


def test_the_sram_axis_shows_the_knee_where_the_weights_fit(tmp_path: Path) -> None:
    """Issue 30: GPT-2 decode at batch 1 (247 MB of weights) on npu-7nm copies differing only in global SRAM: the
    step falls once the weights fit (512 MiB <= 0.75 x 8 MiB) and more SRAM never makes it slower."""
    data = {"name": "knee", "base": "npu-7nm",
            "workloads": [{"name": "gpt2", "phase": "decode", "batch": 1, "context": 1024}],
            "search": {"n_trials": 8, "batch_size": 4, "space": {"sram_mib": {"low": 8, "high": 512}}},
            "output": {"plots": False}}
    c, d = load_study(write_config(tmp_path, data))
    ctx = prepare(c, d)
    axes = axes_for(c, ctx, 1, 2)
    axes["sram_mib"] = np.array([8.0, 16, 32, 64, 128, 192, 224, 240, 256, 280, 300, 384, 512])
    grid = run_sweep(ctx, axes).grid
    assert len(grid) == axes["sram_mib"].size and (grid["sram_mib"].to_numpy() == axes["sram_mib"]).all()
    time = ctx.base_times[0] / grid["score"].to_numpy()  # one workload: score = base time / time
    assert time[-1] <= 0.75 * time[0]
    assert (np.diff(time) <= 1e-12 * time[:-1]).all()
    weights = np.searchsorted(axes["sram_mib"], 247.1e6 / 2**20)  # the first size that holds the weights (240)
    assert time[weights] <= 0.75 * time[0] and time[weights - 1] > 1.001 * time[weights]
    whole = np.searchsorted(axes["sram_mib"], (247.1e6 + 37.7e6) / 2**20)  # weights and KV cache (280): flat above
    assert time[whole - 1] > 1.001 * time[whole] and np.allclose(time[whole:], time[-1], rtol=1e-9)


def test_resume_rescores_only_the_missing_blocks_and_refuses_a_changed_sweep(tmp_path: Path, capsys) -> None:
    """--resume of a streamed sweep: part files removed (or cut off mid-write, a stale temporary file) are
    scored again and the dataset equals the uninterrupted one; the kept parts are not rewritten. A changed
    grid, search space or input file is refused in one line; --resume of a CSV sweep is refused."""
    pytest.importorskip("pyarrow")
    cfg = write_config(tmp_path, SMALL_STUDY)
    args = ["sweep", str(cfg), "--out", str(tmp_path / "r"), "--format", "parquet", "--points", "6",
            "--sram-points", "2", "--block", "10", "--no-plots", "--quiet"]
    assert main(args) == 0
    data = tmp_path / "r" / "tiny-sweep" / "sweep.parquet"
    whole = _sorted(pd.read_parquet(data))
    parts = sorted(data.glob("part-*.parquet"))
    assert len(parts) == 8
    for p in parts[2:5]:
        p.unlink()
    (data / ".part-000002.parquet.x1.tmp.parquet").write_bytes(b"cut off")
    kept = {p.name: p.stat().st_mtime_ns for p in parts[:2] + parts[5:]}
    capsys.readouterr()
    assert main([a for a in args if a != "--quiet"] + ["--resume"]) == 0
    assert "3 of its 8 blocks scored now, 5 kept from before" in capsys.readouterr().out
    assert {k: (data / k).stat().st_mtime_ns for k in kept} == kept
    assert sorted(p.name for p in data.iterdir()) == [p.name for p in parts]
    pd.testing.assert_frame_equal(_sorted(pd.read_parquet(data)), whole)
    assert not (tmp_path / "r" / "tiny-sweep-2").exists()
    for bad, field, what in ((["--points", "7"], "--points", "the grid changed since the sweep began (72 -> 98"),
                             (["--block", "11"], "--block", "the block size changed since the sweep began (10 -> 11")):
        capsys.readouterr()
        assert main([*args, *bad, "--resume"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"sweep.json: {field}: {what}" in err[0], err
    changed = {**SMALL_STUDY, "workloads": SMALL_STUDY["workloads"][:1]}
    write_config(tmp_path, changed)
    assert main([*args, "--resume"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "changed since the sweep began" in err[0], err
    assert main([a for a in args if a not in ("--format", "parquet")] + ["--resume"]) == 2
    assert "--resume: got --resume with --format csv" in capsys.readouterr().err


@pytest.mark.parametrize(("key", "value"), [("split", {"total_area_mm2": 500}),
                                            ("params", [{"field": "compute.clock_ghz", "low": 0.5, "high": 2.0}])])
def test_a_sweep_refuses_a_space_it_cannot_grid(tmp_path, capsys, key: str, value) -> None:
    # a split-only space swept one design (the base) and a searched param stayed at its base value, both exit 0
    space = {} if key == "split" else dict(SMALL_STUDY["search"]["space"])
    cfg = write_config(tmp_path, {**SMALL_STUDY, "search": {**SMALL_STUDY["search"], "space": {**space, key: value}}})
    assert main(["sweep", str(cfg), "--points", "3", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    got = "a split" if key == "split" else "compute.clock_ghz"  # the value, not the field's name again
    assert err.startswith(f"error: {cfg}: search.space.{key}: got {got}; accepted: a space of peak_tflops")
    assert err.count("\n") == 1


def test_sweep_heatmaps_draw_the_power_budget(tmp_path: Path) -> None:
    """A config's power budget is a line on the sweep's panels where it crosses the grid (the study heatmap drew it,
    the sweep's did not), named in the figure's title."""
    import copy

    data = copy.deepcopy(PLOTTED_STUDY)
    cfg = write_config(tmp_path, data)
    assert main(["sweep", str(cfg), "--points", "6", "--sram-points", "1", "--out", str(tmp_path / "a"),
                 "--quiet"]) == 0
    grid = pd.read_csv(tmp_path / "a" / "tiny-sweep" / "sweep.csv")
    budget = float(grid["power_w"].median())  # inside the grid's range: the line crosses it
    data["search"]["power_budget_w"] = round(budget, 1)
    cfg = write_config(tmp_path, data)
    assert main(["sweep", str(cfg), "--points", "6", "--sram-points", "1", "--out", str(tmp_path / "b"),
                 "--quiet"]) == 0
    svg = (tmp_path / "b" / "tiny-sweep" / "sweep_sram0.svg").read_text()
    assert 'id="budget-power_w' in svg and f"power budget {round(budget, 1):.0f} W" in svg


def test_the_mix_line_names_stacks_only_where_the_main_memory_is_bought_in_them() -> None:
    """An edge NPU's LPDDR (kind ddr without a channel figure) is bought in no stacks: its line read '(0 stacks)'."""
    from dse.cli import _sweep_mix_line

    best = pd.Series({"peak_tflops_built": 63.0, "dram_bandwidth_tbps_built": 0.2, "dram_stacks": 0.0,
                      "sram_mib_built": 4.0, "score": 2.6, "area_mm2": 59.0, "ridge_flop_per_byte": 317.4,
                      "binding": "dram", "binding_time_share": 0.68})
    line = _sweep_mix_line("edge", best, 576, 576)
    assert "0.20 TB/s, 4 MiB (as built)" in line and "stacks" not in line
    assert "0.20 TB/s (4 stacks), 4 MiB" in _sweep_mix_line("hbm", best.replace(0.0, 4.0), 1, 2)
