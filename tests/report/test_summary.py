"""summary.md and the console: bound warnings, the SRAM explanation and the die edge."""

import copy
from pathlib import Path

import numpy as np
import pandas as pd

import dse
import dse.cost.power
from dse.cli import main
from dse.config import Param, Range, Space
from dse.report.summary import _count_of, bound_warnings, choice_lines, infeasible_line, tiles_only_warnings
from tests.conftest import SMALL_STUDY, write_config


def test_bound_warnings_name_the_knob_and_the_bound() -> None:
    space = Space(peak_tflops=Range(low=64, high=1024), sram_mib=Range(low=8, high=256, log=False),
                  params=[Param(field="compute.clock_ghz", low=0.8, high=2.0),
                          Param(field="network.links", choices=[4, 8])])
    lines = bound_warnings(space, {"peak_tflops": 1020.0, "sram_mib": 8.5, "compute.clock_ghz": 1.3,
                                   "network.links": 4})
    assert len(lines) == 2
    assert lines[0].startswith("best peak_tflops = 1020 sits on its upper bound 1024") and "high: 2048" in lines[0]
    assert lines[1].startswith("best sram_mib = 8.5 sits on its lower bound 8") and "low: 4" in lines[1]
    assert bound_warnings(space, {"peak_tflops": 300.0, "sram_mib": 100.0}) == []


def test_choice_lines_give_each_choices_best_feasible_objective_best_first() -> None:
    space = Space(params=[Param(field="memory.hbm.generation", choices=["hbm3", "hbm4", "hbm2e"]),
                          Param(field="compute.clock_ghz", low=0.8, high=2.0)])
    trials = pd.DataFrame({"state": ["COMPLETE"] * 5 + ["FAIL"],
                           "memory.hbm.generation": ["hbm3", "hbm3", "hbm4", "hbm2e", "hbm4", "hbm2e"],
                           "compute.clock_ghz": [1.0] * 6, "objective_score": [1.2, 1.5, 1.4, 2.0, 9.0, 3.0],
                           "feasible": [True, True, True, False, False, True]})
    (line,) = choice_lines(space, trials, "score")
    assert line.startswith("- `memory.hbm.generation`, best feasible `score` per choice")
    assert "hbm3 1.5 (2 of 2), hbm4 1.4 (1 of 2), hbm2e none feasible (0 of 1)" in line  # the FAIL trial not counted
    assert choice_lines(space, None, "score") == []


def test_a_searched_sram_level_that_keeps_only_tiles_is_named() -> None:
    """A study that sizes TPU v6e's VMEM (keeps: tiles, the template's sourced choice) saw a flat score and nothing
    said why: the line names the level and the field that lets a larger one keep tensors. npu-7nm's global SRAM keeps
    tensors (no line); tt-n150's per-core L1 keeps tiles unless it says keeps; Gaudi 3's per-DCORE cache only tiles."""
    from dse.hardware.designs import DesignBatch

    def lines(name: str, space: Space) -> list[str]:
        return tiles_only_warnings(space, DesignBatch.from_hardware(dse.hardware(name)))

    sram = Space(sram_mib=Range(low=8, high=256))
    (tpu,) = lines("tpu-v6e", sram)
    assert tpu.startswith("searched SRAM level vmem: it keeps only tiles") and "keeps: step" in tpu
    assert lines("npu-7nm", sram) == []
    assert lines("npu-7nm", Space(params=[Param(field="memory.local.capacity_mib", low=4, high=32)]))[0].startswith(
        "searched SRAM level local: its 24 per-core copies keep only tiles")
    (tt,) = lines("tt-n150", Space(params=[Param(field="memory.l1.capacity_mib", low=54, high=216)]))
    assert "its 72 per-core copies keep only tiles" in tt
    (g3,) = lines("gaudi3", sram)
    assert "per-core cache (4 copies)" in g3 and "keeps: step" not in g3  # keeps step on a per-core cache is refused
    assert lines("tpu-v6e", Space(peak_tflops=Range(low=400, high=1200))) == []  # SRAM not searched


def test_counts_are_singular_for_one() -> None:
    assert _count_of(1.0, "board-DRAM channel") == "1 board-DRAM channel"
    assert _count_of(6.0, "HBM stack") == "6 HBM stacks" and _count_of(0.0, "HBM stack") == "0 HBM stacks"


def test_the_console_says_how_many_trials_broke_which_limit() -> None:
    """A study whose best is the base (score 1.0000x) over a space mostly past the package's 8 HBM stacks read as
    if the search had found nothing better: the console now says how many trials broke which limit."""
    trials = pd.DataFrame({"state": ["COMPLETE"] * 4 + ["FAIL"], "feasible": [True, False, False, False, False],
                           "infeasible_reason": ["", "package: 12 DRAM stacks > 8 the die's long edges and package hold",
                                                 "largest die 971.5 mm2 > reticle limit 858 mm2; package: 9 DRAM stacks",
                                                 "area 800 mm2 > area budget 750 mm2", ""]})
    assert infeasible_line(trials) == "infeasible: 3 of 4 trials broke a limit (package 2, reticle 1, area 1)"
    assert infeasible_line(trials.iloc[:1]) == "" and infeasible_line(None) == ""


def test_study_on_a_bound_says_so_and_explains_its_sram(tmp_path: Path, capsys) -> None:
    data = copy.deepcopy(SMALL_STUDY)
    # a grid over compute and SRAM with the base bandwidth: more compute always helps, so the best sits on 300
    # (a die of 6-9 cores, 64-100 TFLOP/s, is too small to hold the base's 4 HBM stacks on its edges)
    data["search"].update({"sampler": "grid", "grid_points": 4, "n_trials": 16})
    data["search"]["space"] = {"peak_tflops": {"low": 200, "high": 300}, "sram_mib": {"low": 8, "high": 64}}
    cfg = write_config(tmp_path, data)
    assert main(["run", str(cfg), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "warning: best peak_tflops" in out and "upper bound 300" in out
    assert "infeasible:" not in out  # every trial within its limits: no line
    md = (tmp_path / "tiny" / "summary.md").read_text()
    assert "**Bound:** best peak_tflops" in md
    assert "is a **scratchpad** at 0.619 mm²/MiB (7nm)" in md
    assert "With it halved" in md and "With it doubled" in md and "put into whole cores" in md
    assert "HBM stacks of at most 6" in md or "HBM stacks of at most" in md
    assert "\n\n\n" not in md  # a config without a description, a study without a system: no empty lines for them
    assert "| nan |" not in md and "| area: d2d (mm²) | 0 | 0 | 0 |" in md  # a part neither design has: 0 %, not nan


def test_searched_bandwidth_is_built_as_whole_stacks(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, SMALL_STUDY)
    assert main(["run", str(cfg), "--out", str(tmp_path)]) == 0
    trials = pd.read_csv(tmp_path / "tiny" / "trials.csv")
    built = trials["dram_bandwidth_tbps_built"] / 0.4096  # HBM2e stacks of 409.6 GB/s
    assert ((built - built.round()).abs() < 1e-9).all()
    assert (trials["dram_stacks"] == built.round()).all()
    assert trials["cores"].dtype.kind == trials["dram_stacks"].dtype.kind == "i"  # counts as counts ('27', not '27.0')
    assert (trials["dram_bandwidth_tbps_built"] >= trials["dram_bandwidth_tbps"] - 1e-12).all()
    # every infeasible trial carries its reason, and the summary counts them by limit
    bad = trials[~trials["feasible"] & (trials["state"] == "COMPLETE")]
    assert (bad["infeasible_reason"].fillna("").str.len() > 0).all()
    md = (tmp_path / "tiny" / "summary.md").read_text()
    built = next(x for x in md.splitlines() if x.startswith("- Built as "))
    best = trials[trials["feasible"]].sort_values("score").iloc[-1]
    assert f"{best['cores']:.0f} cores x 64x64 MACs" in built and f"{best['dram_stacks']:.0f} x 409.6 GB/s" in built
    net = next(x for x in md.splitlines() if x.startswith("- On-chip network: "))
    assert "mesh" in net and "(sized for the traffic)" in net and "of `global` it carries" in net
    table = {r.split(" | ")[0].strip("| "): r.split(" | ")[1:3] for r in md.splitlines() if r.startswith("| ")}
    assert table["cores"] == ["24", f"{best['cores']:.4g}"] and table["clock (GHz)"][0] == "1.4"
    assert table["on-chip network link width (bytes)"][0] == "120"  # npu-7nm's 24 ports carrying 4 TB/s (local)
    assert table["memory 'hbm': capacity (GB)"][0] == "64"  # DRAM in GB as it is sold (it read 6.104e+04 MiB)
    assert "memory 'global': capacity (MiB)" in table  # SRAM in MiB
    stress = dse.cost.power.stress_power(dse.DesignBatch.from_hardware(dse.hardware("npu-7nm")))[0]
    assert table["power with every unit at its peak at once (W)"][0] == f"{stress:.4g}"
    line = next(x for x in md.splitlines() if x.startswith("- Infeasible trials by limit: "))
    if len(bad):
        assert "none" not in line
    for kind in ("package", "shoreline"):
        n = bad["infeasible_reason"].str.contains(f"{kind}:").sum()
        assert (f"{kind} {n}" in line) if n else (kind not in line)


def test_the_network_line_says_when_a_given_link_width_binds() -> None:
    import numpy as np

    from dse.report.summary import build_lines

    base = dse.DesignBatch.from_hardware(dse.hardware("npu-7nm"))
    narrow = base.with_field("compute.noc.link_bytes", np.array([16.0]))  # 24 ports x 16 B x 1.4 GHz: 0.538 of 4 TB/s
    wide = base.with_field("compute.noc.link_bytes", np.array([256.0]))
    assert "it binds" in build_lines(narrow)[1] and "16-byte links: 0.538 TB/s" in build_lines(narrow)[1]
    assert "it binds" not in build_lines(wide)[1] and "(sized for the traffic)" not in build_lines(wide)[1]
    assert "(sized for the traffic)" in build_lines(base)[1]


def test_a_band_every_workload_shares_is_said_once_under_the_table() -> None:
    from dse.report.summary import band_table_lines

    wl = pd.DataFrame({"workload": ["a", "b"], "best_band_ms": ["1-2", "3-4"],
                       "band_from": ["no validation rows for this chip (x)", "no validation rows for this chip (x)"]})
    lines = band_table_lines(wl)
    assert "band_from" not in lines[0] and "| 1-2 |" in lines[0]
    assert lines[-1].startswith("Error bands (`best_band_ms`): no validation rows for this chip (x). ")
    # what the band is, said under the table: a band above the prediction (fast-running rows) is not an error
    assert "where the measured time would fall" in lines[-1] and "it lies above `best_ms`" in lines[-1]
    mixed = wl.assign(band_from=["h100-sxm/gemm", "h100-sxm/decode"])
    out = band_table_lines(mixed)
    assert "| h100-sxm/gemm |" in out[0] and "where the measured time would fall" in out[-1]


def test_the_sram_halved_variant_buys_only_the_whole_cores_its_freed_area_holds() -> None:
    """Halving the searched SRAM frees some mm2; the third variant spends it on whole cores (peaks are whole cores),
    so it is never larger than the design it came from and its peak factor is a whole number of cores (it asked for
    +12.5 % peak, was built with a whole extra core and more area, and reported +12.5 %)."""
    import numpy as np

    from dse.cost.area import area
    from dse.study import load_context, sram_variants

    ctx = load_context("configs/npu.yaml")[1]
    for cores in (24.0, 48.0):
        best = ctx.base.with_field("compute.cores", np.array([cores]))
        ar = area(best)
        v = sram_variants(ctx, best, ar)
        extra = v.grow * cores - cores
        assert abs(extra - round(extra)) < 1e-6
        assert float(v.scored.area_mm2[2]) <= float(ar.total[0]) + 1e-6


def test_the_summary_prices_the_best_die_with_spare_cores() -> None:
    """npu-7nm as the best design: 0, 1, 2 and 4 spare cores, each with its yield and cost per good die; the
    cheapest is named with its saving against the design as built (0 spares), and the numbers are unit_cost's."""
    import dse
    from dse.cost.area import area
    from dse.cost.cost import unit_cost
    from dse.hardware.designs import DesignBatch
    from dse.report.summary import spare_core_lines

    best = DesignBatch.from_hardware(dse.hardware("npu-7nm"))
    (line,) = spare_core_lines(best)
    one = best.with_field("compute.spare_cores", np.array([1.0]))
    c0, c1 = unit_cost(best, area(best)), unit_cost(one, area(one))
    assert f"0: {c0.yield_[0] * 100:.0f} % / {c0.parts['die'][0]:.0f} USD" in line
    assert f"1: {c1.yield_[0] * 100:.0f} % / {c1.parts['die'][0]:.0f} USD" in line
    assert "1 spare core would cut the cost per good die by 13.7 %" in line, line


def test_a_board_dram_study_counts_the_channels_its_area_prices(tmp_path: Path) -> None:
    """An edge NPU's LPDDR (kind ddr, no channel figure: its bandwidth is one channel) read '0 board-DRAM channels'
    in summary.md: the line counted HBM stacks. It now counts the channels dse.cost.area prices."""
    import yaml

    from tests.hardware.edge_npu import EDGE_NPU

    (tmp_path / "edge.yaml").write_text(yaml.safe_dump(EDGE_NPU, sort_keys=False))
    data = copy.deepcopy(SMALL_STUDY)
    data["base"] = "edge.yaml"
    data["workloads"] = [{"name": "mobilenet-v2", "batch": 1, "dtype": "int8"}]
    data["search"].update({"sampler": "grid", "grid_points": 2, "n_trials": 4, "area_budget_mm2": 200})
    data["search"]["space"] = {"dram_bandwidth_tbps": {"low": 0.05, "high": 0.2}, "peak_tflops": {"low": 16,
                                                                                                  "high": 64}}
    cfg = write_config(tmp_path, data)
    assert main(["run", str(cfg), "--out", str(tmp_path)]) == 0
    md = (tmp_path / "tiny" / "summary.md").read_text()
    trials = pd.read_csv(tmp_path / "tiny" / "trials.csv")
    best = trials[trials["rank"] == 1].iloc[0]
    (line,) = [x for x in md.splitlines() if "board-DRAM channels" in x]
    n = int(line.split("main memory `dram` is ")[1].split()[0])
    assert n == int(np.ceil(best["dram_bandwidth_tbps_built"] / 0.068 - 1e-9)) >= 1, line  # channels of 68 GB/s
