"""dse whatif: staged transforms, numbers equal dse.predict on the transformed workload, arrows per stage."""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dse
from dse.cli import main
from dse.config import WhatIf
from dse.units import MIB
from dse.whatif_stages import WINOGRAD_F2X2_3X3, run_whatif, winograd_rows
from tests.conftest import SMALL_STUDY, write_config

PREFILL = {"name": "llama2-7b", "phase": "prefill", "batch": 1, "seq": 128}
WHATIF_FILE = {
    "name": "prefill",
    "hardware": "npu-7nm",
    "workload": PREFILL,
    "stages": ["fuse_elementwise", "flash_attention", {"weight_dtype": "int8"}, {"sram_mib": 128, "label": "big SRAM"},
               "winograd"],
}


def test_whatif_file_end_to_end(tmp_path: Path, capsys) -> None:
    cfg = write_config(tmp_path, WHATIF_FILE, "whatif.yaml")
    assert main(["whatif", str(cfg), "--out", str(tmp_path)]) == 0
    folder = tmp_path / "prefill-whatif"
    t = pd.read_csv(folder / "whatif.csv", keep_default_na=False)
    assert list(t["transform"]) == ["as given (attention and elementwise ops unfused)", "fuse_elementwise",
                                    "flash_attention", "weight_dtype int8", "big SRAM", "winograd"]
    # a memory-bound prefill: fusion and flash attention never make it slower
    assert t.loc[0, "binding"] == "hbm"
    assert t.loc[1, "time_ms"] <= t.loc[0, "time_ms"] and t.loc[2, "time_ms"] <= t.loc[1, "time_ms"]
    assert t.loc[2, "time_ms"] < t.loc[0, "time_ms"]
    # every stage equals dse.predict on the workload and design built by hand
    hw = dse.DesignBatch.from_hardware(dse.hardware("npu-7nm"))
    scen = [dict(fused_attention=False, fuse_elementwise=False), dict(fused_attention=False, fuse_elementwise=True),
            dict(fused_attention=True, fuse_elementwise=True),
            dict(fused_attention=True, fuse_elementwise=True, weight_dtype="int8")]
    scen += [scen[-1], scen[-1]]
    for k, sc in enumerate(scen):
        d = hw.with_knobs(sram_bytes=np.array([128 * MIB])) if k >= 4 else hw
        p = dse.predict(dse.workload(**PREFILL, **sc), d)
        o = p.ops
        flops = float((o["flops"] * o["count"]).sum())
        dram = float((o["traffic_hbm_bytes"] * o["count"]).sum())
        row = t.iloc[k]
        assert row["time_ms"] == pytest.approx(p.time_s * 1e3, rel=1e-12)
        assert row["flops"] == pytest.approx(flops, rel=1e-12) and row["dram_bytes"] == pytest.approx(dram, rel=1e-12)
        assert row["ai_flop_per_byte"] == pytest.approx(flops / dram, rel=1e-12)
        assert row["achieved_tflops"] == pytest.approx(flops / p.time_s / 1e12, rel=1e-12)
        assert row["dram_bw_utilization"] == pytest.approx(dram / p.time_s / d.dram_bandwidth[0], rel=1e-12)
        assert row["binding"] == p.time_by_bound().idxmax()
        assert row["speedup_vs_stage0"] == pytest.approx(t.loc[0, "time_ms"] / row["time_ms"], rel=1e-12)
    assert "no 3x3 stride-1 convolution" in t.loc[5, "note"] and t.loc[5, "time_ms"] == t.loc[4, "time_ms"]
    # the roofline: one arrow per stage transition, in the SVG
    svg = (folder / "whatif.svg").read_text()
    assert sorted(int(x) for x in re.findall(r'id="whatif-arrow-(\d+)"', svg)) == list(range(1, 6))
    page = (folder / "report.html").read_text()
    assert page.count("<img") == 1 and page.count("<table>") == 1 and "whatif.png" in page
    assert "big SRAM" in capsys.readouterr().out


def test_winograd_divides_3x3_stride1_conv_flops_only() -> None:
    spec = WhatIf(workload={"name": "resnet50", "batch": 8}, stages=["winograd"])
    res = run_whatif(spec, dse.hardware("npu-7nm"))
    ops = dse.workload("resnet50", batch=8, fuse_elementwise=False).ops
    rows = winograd_rows(ops)
    names = ops.loc[rows, "name"]
    assert rows.sum() >= 4 and names.str.contains("conv3x3").all()
    assert not ops.loc[~rows, "name"].str.contains(r"bottleneck1\.conv3x3").any()  # strided 3x3s stay direct
    saved = float((ops.loc[rows, "flops"] * ops.loc[rows, "count"]).sum()) * (1 - 1 / WINOGRAD_F2X2_3X3)
    t = res.table
    assert t.loc[0, "flops"] - t.loc[1, "flops"] == pytest.approx(saved, rel=1e-12)
    assert t.loc[1, "dram_bytes"] == pytest.approx(t.loc[0, "dram_bytes"], rel=1e-12)
    assert t.loc[1, "time_ms"] <= t.loc[0, "time_ms"]


def test_operators_and_transforms_that_do_not_apply() -> None:
    hw = dse.hardware("npu-7nm")
    att = run_whatif(WhatIf(operator={"kind": "attention", "heads": 32, "q_len": 2048, "head_dim": 128},
                            stages=["fuse_elementwise", "flash_attention", {"kv_dtype": "int8"}]), hw).table
    assert att.loc[2, "dram_bytes"] < att.loc[1, "dram_bytes"] < att.loc[0, "dram_bytes"]
    assert att.loc[3, "dram_bytes"] < att.loc[2, "dram_bytes"]
    # 8192 x 8192 weights: 64 MiB in int8, past npu-7nm's 32 MiB global SRAM, so they stream from the HBM
    gemv = run_whatif(WhatIf(operator={"kind": "gemm", "M": 1, "N": 8192, "K": 8192},
                             stages=[{"weight_dtype": "int8"}, "flash_attention"]), hw).table
    assert gemv.loc[1, "time_ms"] < gemv.loc[0, "time_ms"] and gemv.loc[1, "binding"] == "hbm"
    assert "flash_attention does not apply to gemm" in gemv.loc[2, "note"]
    conv = run_whatif(WhatIf(operator={"kind": "conv", "batch": 8, "resolution": 56, "c_in": 64, "c_out": 64},
                             stages=["winograd"]), hw).table
    assert conv.loc[0, "flops"] / conv.loc[1, "flops"] == pytest.approx(2.25)
    cnn = run_whatif(WhatIf(workload={"name": "resnet50"}, stages=["flash_attention", "fuse_elementwise",
                                                                  "fuse_elementwise"]), hw).table
    assert "flash_attention does not apply to resnet50" in cnn.loc[1, "note"]
    assert "already in force" in cnn.loc[3, "note"] and cnn.loc[3, "time_ms"] == cnn.loc[2, "time_ms"]


def test_whatif_section_of_a_study_config_uses_the_base(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, {**SMALL_STUDY, "whatif": {"workload": {"name": "gpt2", "phase": "decode",
                                                                         "context": 512},
                                                            "stages": [{"dtype": "fp8"}]}})
    assert main(["whatif", str(cfg), "--out", str(tmp_path)]) == 0
    t = pd.read_csv(tmp_path / "tiny-whatif" / "whatif.csv")
    assert list(t["dtype"]) == ["bf16", "fp8"] and t.loc[1, "time_ms"] < t.loc[0, "time_ms"]


@pytest.mark.parametrize(("stage", "expect"), [
    ("fuse", "whatif.stages.1: got 'fuse', an unknown transform; accepted: fuse_elementwise, flash_attention"),
    ({"sram": 64}, "whatif.stages.1: got {'sram': 64} ('sram': an unknown transform); accepted:"),
    ({"dtype": "fp7"}, "whatif.stages.1: got {'dtype': 'fp7'} (dtype 'fp7'); accepted: dtype: fp64, fp32"),
    ("dtype", "got 'dtype', an unknown transform (give it a value: {dtype: ...})"),
    ({"sram_mib": -1}, "whatif.stages.1: got {'sram_mib': -1} (sram_mib -1); accepted: sram_mib: a number of MiB > 0"),
    ({"dram_part": "hbm9"}, "whatif.stages.1: got {'dram_part': 'hbm9'} (dram_part 'hbm9'); accepted: dram_part: hbm2"),
    ({"dram_part": "gddr7"}, "whatif.stages.1: dram_part gddr7: got gddr7 for a level of kind dram; accepted: hbm2"),
    ({"op_boundaries": "fused"}, "whatif.stages.1: got {'op_boundaries': 'fused'} (op_boundaries 'fused'); accepted: "
                                 "op_boundaries: overlapped (one compiled graph) or serial (a program per operator)"),
    ({"keeps": "all"}, "whatif.stages.1: got {'keeps': 'all'} (keeps 'all'); accepted: keeps: tiles (an operator's "
                       "tiles only), step"),
    ({"keeps": {"local": "all"}}, "whatif.stages.1: got {'keeps': {'local': 'all'}} (keeps {'local': 'all'}); "
                                  "accepted: keeps: tiles"),
    ({"keeps": {"hbm": "step"}}, "whatif.stages.1: keeps {'hbm': 'step'}: got level 'hbm'; accepted: an on-chip level "
                                 "of npu-7nm (local, global)"),
    ({"keeps": {"l9": "step"}}, "whatif.stages.1: keeps {'l9': 'step'}: got level 'l9'; accepted: an on-chip level of "
                                "npu-7nm"),
    ({"window": {"tokens": 0}}, "whatif.stages.1: got {'window': {'tokens': 0}} (window {'tokens': 0}); accepted: "
                                "window: none or {tokens: N > 0"),
    ({"window": {"tokens": 64, "global_every": 99}}, "whatif.stages.1: got 99 with 12 layers; accepted: 0 (every layer "
                                                     "local) or 1 to 12"),
])
def test_bad_stages_are_one_line_errors(tmp_path: Path, capsys, stage, expect: str) -> None:
    cfg = write_config(tmp_path, {**SMALL_STUDY, "whatif": {"workload": {"name": "gpt2"},
                                                            "stages": ["flash_attention", stage]}})
    assert main(["whatif", str(cfg), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {cfg}: ") and expect in err and err.count("\n") == 1


def test_whatif_from_the_command_line(tmp_path: Path, capsys) -> None:
    assert main(["whatif", "--workload", "gpt2", "--phase", "decode", "--context", "256", "--stages",
                 "weight_dtype=int8,sram_mib=64", "--out", str(tmp_path)]) == 0
    t = pd.read_csv(tmp_path / "gpt2-whatif" / "whatif.csv")
    # stage 0 starts unfused (it is not dse predict's default, so its label says so)
    assert list(t["transform"]) == ["as given (attention and elementwise ops unfused)", "weight_dtype int8", "sram_mib 64"]
    assert (tmp_path / "gpt2-whatif" / "whatif.png").is_file()
    # --no-plots as dse run, sweep and compare take it: the table and the report, no figure
    assert main(["whatif", "--workload", "gpt2", "--phase", "decode", "--context", "256", "--stages", "sram_mib=64",
                 "--out", str(tmp_path / "np"), "--no-plots"]) == 0
    assert (tmp_path / "np" / "gpt2-whatif" / "whatif.csv").is_file()
    assert not list((tmp_path / "np" / "gpt2-whatif").glob("*.png"))
    assert main(["whatif", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: CONFIG: got nothing; accepted: dse whatif CONFIG")
    assert main(["whatif", "--workload", "gpt2", "--out", str(tmp_path)]) == 2  # the stages left out
    assert capsys.readouterr().err.startswith("error: --stages: got '' with --workload gpt2; accepted: dse whatif CONFIG")
    cfg = write_config(tmp_path, SMALL_STUDY)
    assert main(["whatif", str(cfg), "--out", str(tmp_path)]) == 2
    assert "no whatif: section" in capsys.readouterr().err
    # written as dse predict is: MODEL HARDWARE positionally (the same table as --workload/--hardware)
    assert main(["whatif", "gpt2", "tpu-v5e", "--phase", "decode", "--context", "256", "--stages", "sram_mib=64",
                 "--out", str(tmp_path / "pos"), "--no-plots"]) == 0
    assert main(["whatif", "--workload", "gpt2", "--hardware", "tpu-v5e", "--phase", "decode", "--context", "256",
                 "--stages", "sram_mib=64", "--out", str(tmp_path / "flag"), "--no-plots"]) == 0
    pos, flag = (pd.read_csv(tmp_path / d / "gpt2-whatif" / "whatif.csv") for d in ("pos", "flag"))
    pd.testing.assert_frame_equal(pos, flag)
    assert main(["whatif", str(cfg), "tpu-v5e", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: HARDWARE: got 'tpu-v5e' after the file")
    assert main(["whatif", "gpt2", "--workload", "bert-base", "--stages", "sram_mib=64"]) == 2
    assert capsys.readouterr().err.startswith("error: MODEL: got 'gpt2' and --workload bert-base; accepted: one")


def test_a_whatif_of_a_model_file_by_path_runs_and_a_plan_is_refused(tmp_path: Path, capsys) -> None:
    # a path: workload raised a traceback (AttributeError); a plan was dropped without a word
    import yaml

    desc = yaml.safe_load((Path(__file__).parents[1] / "workloads" / "gpt2.yaml").read_text())
    desc["name"] = "mygpt"
    (tmp_path / "mygpt.yaml").write_text(yaml.safe_dump(desc))
    f = tmp_path / "wip.yaml"
    f.write_text(yaml.safe_dump({"name": "wip", "hardware": "npu-7nm", "stages": ["fuse_elementwise"],
                                 "workload": {"path": "mygpt.yaml", "phase": "prefill", "seq": 128}}))
    assert main(["whatif", str(f), "--out", str(tmp_path / "o")]) == 0
    assert (tmp_path / "o" / "wip-whatif" / "whatif.csv").is_file()
    f.write_text(yaml.safe_dump({"name": "wip", "hardware": "npu-7nm", "stages": ["fuse_elementwise"],
                                 "workload": {"name": "gpt2", "phase": "decode", "context": 64, "plan": {"tp": 2}}}))
    capsys.readouterr()
    assert main(["whatif", str(f), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {f}: workload.plan: got a plan; accepted: none") and err.count("\n") == 1


def test_the_readme_whatif_table_is_what_the_command_prints(capsys) -> None:
    """The README's tour shows ``dse whatif --workload llama2-7b ...``'s table; each of its rows is a row the
    command prints today (it had kept stage 1's figures from before a model change: 10.17 ms for 10.11)."""
    import re
    from pathlib import Path

    from dse.cli import main

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = readme.split("$ dse whatif --workload llama2-7b", 1)[1].split("```", 1)[0]
    args = block.splitlines()[0].split()
    shown = [" ".join(line.split()) for line in block.splitlines()[1:] if re.match(r"^\s+\d+\s", line)]
    assert len(shown) == 4
    import tempfile

    with tempfile.TemporaryDirectory() as out:
        assert main(["whatif", "--workload", "llama2-7b", *args, "--out", out]) == 0
    printed = {" ".join(line.split()) for line in capsys.readouterr().out.splitlines()}
    assert [r for r in shown if r not in printed] == []


def test_a_stage_that_changes_no_time_says_so() -> None:
    """A stage that applies but binds nowhere (the SRAM doubled again) left its note empty: it says so now."""
    from dse.hardware.templates import load_hardware
    from dse.whatif_stages import WhatIf, run_whatif

    spec = WhatIf.model_validate({"hardware": "npu-7nm",
                                  "workload": {"name": "llama2-7b", "phase": "decode"},
                                  "stages": [{"sram_mib": 64}, {"sram_mib": 64}]})
    t = run_whatif(spec, load_hardware("npu-7nm")).table
    assert t["note"].iloc[2].startswith("no operator's time changed (the global level already held")
    assert t["note"].iloc[0] == ""


def test_whatif_takes_a_model_yaml_path_on_the_command_line(tmp_path: Path) -> None:
    """--workload models/my-llm.yaml was refused: the path became the results folder's name, whose pattern a path
    breaks; dse predict takes the same path. The folder is named by the file's stem."""
    from dse.workloads.library import description_path

    path = tmp_path / "my-llm.yaml"
    path.write_text(description_path("llama3-8b").read_text().replace("name: llama3-8b", "name: my-llm"))
    assert main(["whatif", "--workload", str(path), "--phase", "decode", "--stages", "fuse_elementwise", "--out",
                 str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "my-llm-whatif" / "whatif.csv").is_file()


def test_a_dram_part_stage_rebuilds_the_main_memory_and_equals_predict_on_that_design(tmp_path: Path, capsys) -> None:
    """dram_part=hbm4: npu-7nm's 4 stacks become 4 HBM4 stacks (8.192 TB/s); the stage's time is dse.predict's on the
    design built by DesignBatch.with_field, and a bandwidth-bound decode step speeds up by the bandwidth ratio."""
    from dse.hardware.designs import DesignBatch

    assert main(["whatif", "--workload", "llama2-7b", "--phase", "decode", "--context", "1024", "--stages",
                 "dram_part=hbm3", "--out", str(tmp_path)]) == 0
    t = pd.read_csv(tmp_path / "llama2-7b-whatif" / "whatif.csv")
    d = DesignBatch.from_hardware(dse.hardware("npu-7nm")).with_field("memory.hbm.generation", ["hbm3"])
    wl = dse.workload("llama2-7b", phase="decode", context=1024, fused_attention=False, fuse_elementwise=False)
    assert t["time_ms"].iloc[1] == pytest.approx(dse.predict(wl, d).time_s * 1e3, rel=1e-9)
    assert t["time_ms"].iloc[0] / t["time_ms"].iloc[1] == pytest.approx(2.0, rel=0.1)  # 819.2 / 409.6 GB/s a stack


def test_a_window_stage_changes_the_model_and_equals_predict_on_that_model() -> None:
    from dse.workloads.library import variant

    hw = dse.hardware("h200")
    entry = {"name": "llama3.1-8b", "phase": "decode", "batch": 16, "context": 8192, "fused_attention": True}
    win = {"tokens": 1024, "global_every": 4}
    t = run_whatif(WhatIf(workload=entry, stages=[{"window": win}, {"window": win}, {"window": "none"}]), hw).table
    assert t.loc[1, "transform"] == "window 1024 sliding, every 4th layer global"
    scenario = {k: v for k, v in entry.items() if k != "name"}
    local = dse.predict(variant("llama3.1-8b", {"window": win}, **scenario), hw)
    assert t.loc[1, "time_ms"] == pytest.approx(local.time_s * 1e3, rel=1e-12)
    assert t.loc[1, "time_ms"] < 0.8 * t.loc[0, "time_ms"]  # 24 of 32 layers read 1024 keys, not 8192
    guide = (Path(__file__).parents[1] / "docs" / "user_guide.md").read_text().replace("\n", " ")
    assert f"{t.loc[0, 'time_ms']:.2f} ms per step with flash attention, takes {t.loc[1, 'time_ms']:.2f} ms" in guide
    assert local.workload.memory["kv_cache"] < 0.4 * dse.workload("llama3.1-8b", **scenario).memory["kv_cache"]
    assert "window already in force" in t.loc[2, "note"]
    assert t.loc[3, "time_ms"] == pytest.approx(t.loc[0, "time_ms"], rel=1e-12)  # none: every layer global again
    # Gemma 3 with every layer global: the user guide's 32.7 ms against 19.6 with its own windows
    g = run_whatif(WhatIf(workload={"name": "gemma3-27b", "phase": "decode", "batch": 4, "context": 32768,
                                    "fused_attention": True}, stages=[{"window": "none"}]), hw).table
    assert round(g.loc[0, "time_ms"], 1) == 19.6 and round(g.loc[1, "time_ms"], 1) == 32.7
    # a window does not apply to an encoder, a CNN or one operator: said in the note, the time kept
    for spec in ({"workload": {"name": "bert-base"}}, {"workload": {"name": "resnet50"}},
                 {"operator": {"kind": "gemm", "M": 1, "N": 4096, "K": 4096}}):
        r = run_whatif(WhatIf(**spec, stages=[{"window": win}]), dse.hardware("npu-7nm")).table
        assert r.loc[1, "note"].startswith("window does not apply: ") and r.loc[1, "time_ms"] == r.loc[0, "time_ms"]


def test_a_window_stage_from_the_command_line(tmp_path: Path, capsys) -> None:
    assert main(["whatif", "--workload", "llama3.1-8b", "--stages", "window=1024:4,window=none", "--hardware", "h200",
                 "--out", str(tmp_path)]) == 0
    t = pd.read_csv(tmp_path / "llama3.1-8b-whatif" / "whatif.csv")
    assert list(t["transform"])[1:] == ["window 1024 sliding, every 4th layer global", "window none"]
    assert t.loc[1, "time_ms"] < t.loc[0, "time_ms"] == pytest.approx(t.loc[2, "time_ms"])
    assert main(["whatif", "--workload", "llama3.1-8b", "--stages", "window=abc", "--out", str(tmp_path)]) == 2
    assert "accepted: window: none or {tokens: N > 0" in capsys.readouterr().err


def test_an_op_boundaries_stage_runs_the_model_as_one_graph_and_equals_predict_on_that_template(tmp_path: Path) -> None:
    """op_boundaries=overlapped on tt-n150 (tt-metal's program per operator, shipped serial): the GEMMs and
    convolutions no longer pay their own pipeline fill and drain; the stage's time is dse.predict's on the template
    with that field, faster than the serial stage, and a second such stage, or one on a GPU, says why nothing moved."""
    assert main(["whatif", "resnet50", "tt-n150", "--batch", "16", "--stages",
                 "fuse_elementwise,op_boundaries=overlapped,op_boundaries=overlapped", "--no-plots", "--out",
                 str(tmp_path)]) == 0
    t = pd.read_csv(tmp_path / "resnet50-whatif" / "whatif.csv")
    hw = dse.hardware("tt-n150")
    graph = hw.model_copy(update={"compute": hw.compute.model_copy(update={"op_boundaries": "overlapped"})})
    wl = dse.workload("resnet50", batch=16, fuse_elementwise=True)
    assert t["time_ms"].iloc[2] == pytest.approx(dse.predict(wl, graph).time_s * 1e3, rel=1e-9)
    assert t["time_ms"].iloc[1] == pytest.approx(dse.predict(wl, hw).time_s * 1e3, rel=1e-9)
    assert t["time_ms"].iloc[2] < 0.9 * t["time_ms"].iloc[1]
    assert (round(t["time_ms"].iloc[1], 2), round(t["time_ms"].iloc[2], 2)) == (5.45, 4.53)  # docs/user_guide.md
    assert t["note"].fillna("").tolist()[3] == "op_boundaries already in force"
    assert main(["whatif", "resnet50", "h100-sxm", "--stages", "op_boundaries=serial", "--no-plots", "--out",
                 str(tmp_path / "gpu")]) == 0
    note = pd.read_csv(tmp_path / "gpu" / "resnet50-whatif" / "whatif.csv")["note"].iloc[1]
    assert note.startswith("op_boundaries does not apply: h100-sxm's GEMMs stage no blocks in a scratchpad")


def test_a_keeps_stage_keeps_activations_in_per_core_scratchpads_and_equals_predict_on_that_template(
        tmp_path: Path) -> None:
    """keeps=step on tt-n150 (its 72 Tensix L1s keep only tiles as shipped, docs/residency.md): the stage's time is
    dse.predict's on the template whose l1 says keeps: step, faster; a second such stage says it is in force, and on
    Gaudi 3, whose SRAM is a cache with a copy per die quarter, the stage says why nothing moved."""
    assert main(["whatif", "resnet50", "tt-n150", "--batch", "16", "--stages",
                 "fuse_elementwise,keeps=step,keeps=step", "--no-plots", "--out", str(tmp_path)]) == 0
    t = pd.read_csv(tmp_path / "resnet50-whatif" / "whatif.csv")
    hw = dse.hardware("tt-n150")
    kept = hw.model_copy(update={"memory": [hw.memory[0].model_copy(update={"keeps": "step"}), *hw.memory[1:]]})
    wl = dse.workload("resnet50", batch=16, fuse_elementwise=True)
    assert t["time_ms"].iloc[2] == pytest.approx(dse.predict(wl, kept).time_s * 1e3, rel=1e-9)
    assert t["time_ms"].iloc[2] < 0.9 * t["time_ms"].iloc[1]
    assert (round(t["time_ms"].iloc[1], 2), round(t["time_ms"].iloc[2], 2)) == (5.45, 2.61)  # docs/user_guide.md
    assert t["note"].fillna("").tolist()[3] == "keeps already in force (l1 keeps step)"
    assert t["time_ms"].iloc[3] == t["time_ms"].iloc[2]
    import yaml

    named = tmp_path / "named.yaml"  # the same stage naming the level: {l1: step}
    named.write_text(yaml.safe_dump({"name": "named", "hardware": "tt-n150", "workload": {
        "name": "resnet50", "batch": 16, "fuse_elementwise": True}, "stages": [{"keeps": {"l1": "step"}}]}))
    assert main(["whatif", str(named), "--no-plots", "--out", str(tmp_path)]) == 0
    assert pd.read_csv(tmp_path / "named-whatif" / "whatif.csv")["time_ms"].iloc[1] == t["time_ms"].iloc[2]
    assert main(["whatif", "llama3-8b", "gaudi3", "--stages", "keeps=steps", "--no-plots", "--out",
                 str(tmp_path / "g3")]) == 0
    g3 = pd.read_csv(tmp_path / "g3" / "llama3-8b-whatif" / "whatif.csv")
    assert g3["note"].iloc[1].startswith("keeps does not apply: gaudi3's sram is a cache with a copy per core")
    assert g3["time_ms"].iloc[1] == g3["time_ms"].iloc[0]
