"""Bad input: one line naming file, field, value and what is accepted; exit 2; no traceback."""

import copy
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dse.cli import main
from tests.conftest import SMALL_STUDY, write_config

ROOT = Path(__file__).resolve().parents[1]


def _bad(**patch) -> dict:
    data = copy.deepcopy(SMALL_STUDY)
    for path, value in patch.items():
        node = data
        keys = path.split("__")
        for k in keys[:-1]:
            node = node[int(k)] if k.isdigit() else node[k]
        node[keys[-1]] = value
    return data


@pytest.mark.parametrize(
    ("patch", "expect"),
    [
        ({"search__samplr": "tpe"}, ["search.samplr", "unknown key", "sampler", "n_trials"]),
        ({"search__space__dram_bandwidth_tbps": {"low": -1, "high": 2}},
         ["search.space.dram_bandwidth_tbps.low", "-1", "> 0"]),
        ({"search__space__peak_tflops": {"low": 500, "high": 100}}, ["peak_tflops",
                                                                              "got low 500, high 100; accepted: low below"]),
        ({"base": "npu-3nm"}, ["base", "npu-3nm", "npu-7nm"]),
        ({"workloads__1__name": "llama-9b"}, ["workloads.1", "llama-9b", "library models (dse workloads list)"]),
        ({"workloads__0__dtype": "fp12"}, ["workloads.0.dtype", "fp12", "bf16"]),
        ({"search__sampler": "bayes"}, ["search.sampler", "bayes", "tpe"]),
        ({"workloads__0__serving_engine": "vllm-v0-sync"}, ["workloads.0", "serving_engine", "does not use"]),
        ({"workloads__1__phase": "prefill"}, ["workloads.1.context", "512", "phase prefill", "decode"]),
        ({"workloads__1__phase": "serving", "workloads__1__input_len": 128, "workloads__1__output_len": 16,
          "workloads__1__context": None, "workloads__1__serving_engine": "vllm-v1"},
         ["workloads.1.serving_engine", "vllm-v1", "vllm-v0-sync"]),
        ({"search__space": {}}, ["search.space", "search space is empty", "params"]),
    ],
)
def test_bad_config_gives_one_line(tmp_path: Path, capsys, patch: dict, expect: list[str]) -> None:
    cfg = write_config(tmp_path, _bad(**patch))
    rc = main(["run", str(cfg), "--out", str(tmp_path / "r"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("error: ") and err.count("\n") == 1, err
    for piece in expect:
        assert piece in err, (piece, err)
    assert str(cfg) in err


def test_missing_config_file(tmp_path: Path, capsys) -> None:
    rc = main(["run", str(tmp_path / "nope.yaml")])
    err = capsys.readouterr().err
    assert rc == 2 and "nope.yaml" in err and "file not found" in err


def test_duplicate_key_in_config(tmp_path: Path, capsys) -> None:
    cfg = tmp_path / "dup.yaml"
    cfg.write_text("name: a\nname: b\n")
    assert main(["run", str(cfg)]) == 2
    assert "duplicate key 'name'" in capsys.readouterr().err


def test_module_entry_exits_2_without_traceback_and_debug_shows_it(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, _bad(search__samplr="tpe"))
    r = subprocess.run([sys.executable, "-m", "dse.run", str(cfg)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1
    r = subprocess.run([sys.executable, "-m", "dse.run", str(cfg), "--debug"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode != 0 and "Traceback" in r.stderr


def test_other_subcommands(capsys) -> None:
    assert main(["hardware"]) == 0
    assert "a100-80gb" in capsys.readouterr().out
    assert main(["predict", "llama2-7b", "a100-80gb", "--context", "1024"]) == 0
    assert "ms per step" in capsys.readouterr().out
    assert main(["predict", "llama2-7b", "a100-20gb"]) == 2  # no such template
    assert main(["area"]) == 0
    out = capsys.readouterr().out
    assert "leave-one-out" in out and "gc200" in out and "unit_cost_usd" in out and "v100-sxm" in out


@pytest.mark.parametrize(("patch", "needle"), [
    (lambda d: d["search"].update(seed=-1), "search.seed: got -1; accepted: a number >= 0"),
    (lambda d: d["workloads"][0].update(batch=2**62), "workloads.0.batch: got 4611686018427387904; accepted: a number <="),
    (lambda d: d["workloads"].__setitem__(0, {"name": "copy:0"}), "accepted: copy:N with 0 < N"),
    (lambda d: d["search"]["space"].update(params=[{"field": "network.links", "low": 0.2, "high": 0.9, "type": "int"}]),
     "search.space.params.0.low: got 0.2..0.9; accepted: whole numbers for type: int"),
])
def test_out_of_range_inputs_are_one_line_before_anything_runs(tmp_path, capsys, patch, needle) -> None:
    import copy

    from tests.conftest import SMALL_STUDY, write_config

    data = copy.deepcopy(SMALL_STUDY)
    patch(data)
    cfg = write_config(tmp_path, data)
    assert main(["run", str(cfg), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_impossible_ratio_and_oversized_sweep_are_one_line(tmp_path, capsys) -> None:
    from tests.conftest import SMALL_STUDY, write_config

    cfg = write_config(tmp_path, SMALL_STUDY)
    assert main(["compare", str(cfg), "--ratios", "1:inf,1:1", "--out", str(tmp_path)]) == 2
    assert "--ratios: got '1:inf'; accepted: a ratio of positive finite numbers" in capsys.readouterr().err
    assert main(["sweep", str(cfg), "--points", "100000", "--out", str(tmp_path)]) == 2
    assert "--points: got 100000 x 100000" in capsys.readouterr().err


def test_a_searched_field_with_tiny_values_still_writes_its_best_design(tmp_path) -> None:
    import copy

    import dse
    from tests.conftest import SMALL_STUDY, write_config

    data = copy.deepcopy(SMALL_STUDY)
    data["search"]["space"]["params"] = [{"field": "compute.register_kib_per_core", "low": 1e-6, "high": 2e-6}]
    cfg = write_config(tmp_path, data)
    assert main(["run", str(cfg), "--out", str(tmp_path)]) == 0
    hw = dse.hardware(tmp_path / "tiny" / "best_design.yaml")
    assert 1e-6 <= hw.compute.register_kib_per_core <= 2e-6


def test_python_m_dse_and_version(capsys) -> None:
    import subprocess
    import sys

    for argv in ([sys.executable, "-m", "dse", "--version"], [sys.executable, "-m", "dse.run", "--version"]):
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        assert out.startswith("dse ") and out.strip() != "dse"
    with pytest.raises(SystemExit) as ei:
        main(["--version"])
    assert ei.value.code == 0 and capsys.readouterr().out.startswith("dse ")


def test_calibrate_writes_under_results_not_into_the_templates(tmp_path, monkeypatch) -> None:
    from dse.hardware.templates import templates_dir

    before = sorted(p.name for p in templates_dir().glob("*.yaml"))
    monkeypatch.chdir(tmp_path)
    assert main(["calibrate", "a100-80gb", "--no-loo"]) == 0
    assert (tmp_path / "results" / "calibrate" / "a100-80gb-calibrated.yaml").is_file()
    assert sorted(p.name for p in templates_dir().glob("*.yaml")) == before


def test_compare_sweep_and_whatif_write_where_the_config_says(tmp_path, monkeypatch) -> None:
    import copy

    from tests.conftest import SMALL_STUDY, write_config

    data = copy.deepcopy(SMALL_STUDY)
    data["output"] = {"dir": str(tmp_path / "mine"), "plots": False}
    data["whatif"] = {"workload": {"name": "resnet50", "batch": 8}, "stages": ["fuse_elementwise"]}
    cfg = write_config(tmp_path, data)
    monkeypatch.chdir(tmp_path)
    assert main(["compare", str(cfg), "--ratios", "1:2,1:1"]) == 0
    assert main(["sweep", str(cfg), "--points", "3", "--sram-points", "1"]) == 0
    assert main(["whatif", str(cfg)]) == 0
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["tiny-compare", "tiny-sweep", "tiny-whatif"]
    assert not (tmp_path / "results").exists()


def test_predict_takes_the_quantization_flags_and_labels_show_them(capsys) -> None:
    assert main(["predict", "llama2-7b", "a100-80gb", "--phase", "decode", "--weight-dtype", "int4",
                 "--weight-group", "128", "--kv-dtype", "fp8", "--execution", "eager"]) == 0
    out = capsys.readouterr().out
    assert "llama2-7b[decode b1 ctx1024 bf16 w:int4/g128 kv:fp8 eager]" in out


def test_predict_shows_bound_via_only_where_a_network_or_die_link_holds_a_level_down(tmp_path, capsys) -> None:
    import yaml

    import dse

    data = dse.hardware("b200").model_dump(mode="json", exclude_none=True)
    data["name"] = "b200-slow-link"
    data["package"]["dies"][0]["d2d_bandwidth_tbps"] = 2.0
    path = tmp_path / "b200-slow.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert main(["predict", "llama3-8b", str(path)]) == 0
    out = capsys.readouterr().out
    assert "bound_via" in out and re.search(r"layer\.ffn_up .* hbm +d2d ", out)
    assert main(["predict", "llama3-8b", "b200"]) == 0
    assert "bound_via" not in capsys.readouterr().out


def test_predict_serving_and_training_flags(capsys) -> None:
    assert main(["predict", "llama2-7b", "a100-80gb", "--phase", "serving", "--batch", "8", "--input-len", "256",
                 "--output-len", "64", "--chunk", "128"]) == 0
    out = capsys.readouterr().out
    assert "llama2-7b[serving b8 in256 out64 chunk128 bf16]" in out and "output tokens/s, TTFT" in out
    assert main(["predict", "gpt3-175b", "a100-80gb", "--phase", "training", "--batch", "64", "--seq", "2048",
                 "--chips", "64", "--tp", "8", "--pp", "8", "--microbatches", "64", "--interleave", "3",
                 "--recompute", "full", "--dropout", "0.1"]) == 0
    assert "tp8 pp8 mb64 v3 rc:full" in capsys.readouterr().out  # the label shows every field set
    assert main(["predict", "gpt3-175b", "a100-80gb", "--phase", "training", "--batch", "64", "--seq", "2048",
                 "--chips", "64", "--tp", "8", "--pp", "8", "--microbatches", "64", "--interleave", "5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "plan.interleave: got 5; accepted: a divisor of the 12 layers per stage" in err[0]


def test_predict_attention_flags(capsys) -> None:
    def ms(*flags: str) -> float:
        assert main(["predict", "attention:4x32x4096x4096x128", "a100-80gb", *flags]) == 0
        line = [x for x in capsys.readouterr().out.splitlines() if " ms per step" in x][0]
        return float(line.split(": ")[1].split(" ms")[0])

    full, causal = ms(), ms("--causal")
    assert 0.5 * full < causal < 0.62 * full  # about half the pairs, whole diagonal blocks and a longer tail
    assert ms("--causal", "--kv-heads", "8") <= causal  # fewer K/V bytes, the same work
    assert ms("--attention-kernel", "whole_row") != full
    # a decode-shaped GQA kernel: a CTA per query head fills fewer MAC-array rows than a grouped tile
    assert main(["predict", "attention:64x32x1x2048x128", "h100-sxm", "--kv-heads", "8", "--attention-gqa",
                 "per_head"]) == 0
    out = capsys.readouterr().out
    assert "gqa:per_head" in out
    per_head = float([x for x in out.splitlines() if " ms per step" in x][0].split(": ")[1].split(" ms")[0])
    assert main(["predict", "attention:64x32x1x2048x128", "h100-sxm", "--kv-heads", "8"]) == 0
    grouped = float([x for x in capsys.readouterr().out.splitlines() if " ms per step" in x][0].split(": ")[1]
                    .split(" ms")[0])
    assert per_head > grouped
    # a flag a workload does not use is one line naming it
    assert main(["predict", "llama2-7b", "a100-80gb", "--causal"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "llama2-7b does not use causal" in err[0]
    assert main(["predict", "llama2-7b", "h100-sxm", "--phase", "prefill", "--dtype", "fp8",
                 "--attention-dtype", "fp16", "--activation-dtype", "fp16", "--attention-kernel", "flash"]) == 0
    assert "llama2-7b[prefill b1 s1024 fp8 attn:fp16 act:fp16 flash]" in capsys.readouterr().out  # the label says so
    assert main(["predict", "attention:1x8x512x512x64", "a100-80gb", "--causal"]) == 0
    assert "attention:1x8x512x512x64[forward b1 fp16 causal]" in capsys.readouterr().out
    assert main(["predict", "gemm:8192x8192x256", "h100-sxm", "--dtype", "fp8", "--gemm-kernel", "one_tile"]) == 0
    assert "gemm:8192x8192x256[forward b1 fp8 gemm:one_tile]" in capsys.readouterr().out


def test_hardware_and_area_take_template_paths(capsys) -> None:
    from dse.hardware.templates import templates_dir

    path = str(templates_dir() / "npu-7nm.yaml")
    assert main(["hardware", path, "h200"]) == 0
    out = capsys.readouterr().out
    assert "npu-7nm" in out and "h200" in out and "a100-80gb" not in out
    assert main(["area", path]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split()[0] == path and not out[2].strip()  # a template given as a file is named by its path


def test_area_lists_the_enabled_and_the_spare_cores_as_numbers(capsys) -> None:
    import json

    assert main(["area", "h100-sxm", "npu-7nm", "--format", "json"]) == 0
    rows = {r["template"]: r for r in json.loads(capsys.readouterr().out)["templates"]}
    assert (rows["h100-sxm"]["cores"], rows["h100-sxm"]["spare_cores"]) == (132, 12)  # GH100's 144 SMs
    assert (rows["npu-7nm"]["cores"], rows["npu-7nm"]["spare_cores"]) == (24, 0)
    assert rows["h100-sxm"]["yield_pct"] == pytest.approx(75.5, abs=0.1)
    # the registers on the die, spares included, priced inside matrix_mm2: 144 x 256 KiB and 24 x 64 KiB
    assert (rows["h100-sxm"]["registers_mib"], rows["npu-7nm"]["registers_mib"]) == (36.0, 1.5)


def test_batch_checks_every_config_before_running_any(tmp_path, capsys) -> None:
    import copy

    from tests.conftest import SMALL_STUDY, write_config

    good = write_config(tmp_path, SMALL_STUDY, "good.yaml")
    typo = copy.deepcopy(SMALL_STUDY)
    typo["name"] = "typo"
    typo["workloads"] = [{"name": "resnet-50"}]
    bad = write_config(tmp_path, typo, "bad.yaml")
    assert main(["batch", str(good), str(bad), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[0].startswith("error: ") and "resnet-50" in err.splitlines()[0]
    import pandas as pd

    table = pd.read_csv(next((tmp_path / "out").glob("batch-*/batch.csv")))
    assert list(table["status"]) == ["ok", "error"]


@pytest.mark.parametrize("argv", [["hardware", "h200"], ["area", "npu-7nm"], ["workloads"],
                                  ["predict", "resnet50", "a100-80gb", "--batch", "4"]])
def test_format_json_prints_parseable_json(capsys, argv) -> None:
    import json

    assert main([*argv, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data
    if argv[0] == "predict":
        assert data["time_s"] > 0 and data["ops"] and data["band"]["measured_s"][0] <= data["band"]["measured_s"][1]
    if argv[0] == "area":
        assert {d["die"] for d in data["dies"]} >= {"gc200", "dojo-d1"} and data["templates"][0]["template"] == "npu-7nm"


def test_status_lines_go_to_a_terminal_only_and_quiet_silences_them(monkeypatch, capsys) -> None:
    import argparse

    from dse import cli

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    cli.status(argparse.Namespace(quiet=False), "writing tables")
    cli.status(argparse.Namespace(quiet=True), "hidden")
    assert capsys.readouterr().err == "... writing tables\n"
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    cli.status(argparse.Namespace(quiet=False), "piped")
    assert capsys.readouterr().err == ""


def test_predict_reads_a_copy_out_as_bandwidth_and_a_gemm_as_tflops(capsys) -> None:
    """A copy has no FLOPs: its summary line gives the bytes it moves per second, at about the template's HBM
    rate (a100-80gb: 2039 GB/s x 0.834); a GEMM keeps its TFLOP/s and shows its output dtype."""
    assert main(["predict", "copy:1000000000", "a100-80gb", "--dtype", "bf16"]) == 0
    line = [x for x in capsys.readouterr().out.splitlines() if " ms per step" in x][0]
    gbps = float(line.split("step, ")[1].split(" GB/s")[0])
    assert "TFLOP/s" not in line and 1650 < gbps <= 2039 * 0.834
    assert main(["predict", "gemm:4096x4096x4096", "h100-sxm", "--dtype", "fp8", "--activation-dtype", "fp16"]) == 0
    line = [x for x in capsys.readouterr().out.splitlines() if " ms per step" in x][0]
    assert "[forward b1 fp8 act:fp16]" in line and "TFLOP/s achieved per chip" in line


def test_predict_takes_input_quant_and_refuses_it_without_wider_activations(capsys) -> None:
    argv = ["predict", "llama2-7b", "h100-sxm", "--phase", "prefill", "--seq", "64", "--dtype", "fp8"]
    assert main([*argv, "--activation-dtype", "bf16", "--input-quant", "kernel"]) == 0
    out = capsys.readouterr().out
    assert "quant:kernel" in out and ".quantize" in out
    assert main([*argv, "--input-quant", "kernel"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error:") and "input_quant: got 'kernel'" in err


def test_predict_residency_flag_keeps_tensors_on_chip_or_not(capsys) -> None:
    """``--residency none`` sends every tensor through the HBM: GPT-2's decode step on npu-7nm is slower than with the
    default (part of its weights and all its activations stay in the 32 MiB global SRAM)."""
    import re

    times = {}
    for policy in ("auto", "none"):
        assert main(["predict", "gpt2", "npu-7nm", "--phase", "decode", "--residency", policy]) == 0
        times[policy] = float(re.search(r"([\d.]+) ms per step", capsys.readouterr().out)[1])
    assert times["none"] > times["auto"] * 1.05


def test_predict_says_what_stays_on_chip_and_the_sram_that_keeps_the_next_tensor(capsys) -> None:
    """An 'on chip:' line (and ``on_chip`` in JSON) words what summary.md says of a study's best design: GPT-2's
    decode on npu-7nm keeps every activation and part of its weights in the 32 MiB global SRAM, and names the size
    that keeps them all; an all-SRAM chip keeps everything; tt-n150's per-core L1 keeps no tensor between operators,
    and the line says why."""
    import json

    args = ["predict", "gpt2", "npu-7nm", "--phase", "decode"]
    assert main(args) == 0
    line = capsys.readouterr().out.splitlines()[-1]
    assert line.startswith("on chip: global SRAM 32 MiB: activations of 100 % of operators; ") and \
        "of the weights (" in line and "Weights fit from " in line, line
    assert main([*args, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)["on_chip"]
    assert doc["level"] == "global SRAM 32 MiB" and doc["activations_pct"] == 100 and 0 < doc["weights_pct"] < 100
    assert doc["next_kind"] == "weights" and f"Weights fit from {doc['next_mib']:,.3f}".rstrip("0").rstrip(".") in line
    assert main(["predict", "resnet50", "groq-tsp"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("on chip: every tensor (no DRAM level")
    assert main(["predict", "resnet50", "tt-n150"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == \
        "on chip: nothing between operators (l1's 72 copies keep only tiles)"


def test_predict_without_a_system_says_which_one_it_assumed(capsys) -> None:
    """Issue 31: a TPU runs on its shipped pod, sliced to the chips (v5e: 8 chips = a 2x4 slice); a chip with no
    shipped system is said to run on one switch over its own links."""
    assert main(["predict", "llama2-7b", "tpu-v5e", "--phase", "training", "--batch", "8", "--seq", "512",
                 "--chips", "8", "--tp", "8"]) == 0
    out = capsys.readouterr().out
    assert "system: assumed tpu-v5e-pod, the system tpu-v5e ships in (ici torus of 8 (2x4 slice))" in out
    assert main(["predict", "llama2-7b", "mi300x", "--phase", "decode", "--context", "128", "--chips", "2",
                 "--tp", "2"]) == 0
    assert "system: no system ships for mi300x: assumed mi300x-switch" in capsys.readouterr().out
    assert main(["predict", "llama2-7b", "inferentia2", "--phase", "decode", "--context", "128", "--chips", "12",
                 "--tp", "12", "--tp-per-chip", "2", "--pad-heads"]) == 0
    out = capsys.readouterr().out
    assert "system: assumed inf2-48xlarge, the system inferentia2 ships in (neuronlink-v2 ring of 12)" in out
    assert "tp12 x2/chip padheads" in out
    assert main(["predict", "llama2-7b", "tpu-v5e", "--phase", "decode", "--context", "128", "--chips", "4",
                 "--tp", "4", "--system", "tpu-v5e-pod"]) == 0
    out = capsys.readouterr().out
    assert "system: assumed" not in out and "built for" not in out
    # a chip run in a system built for another chip is a what-if, said as such
    assert main(["predict", "llama2-7b", "tpu-v5e", "--phase", "decode", "--context", "128", "--chips", "8",
                 "--tp", "8", "--system", "hls-gaudi2"]) == 0
    assert ("system: hls-gaudi2 is built for gaudi2; here it carries tpu-v5e (a what-if: tpu-v5e's peaks and memory, "
            "hls-gaudi2's links)") in capsys.readouterr().out


def test_predict_has_a_flag_for_every_scenario_and_plan_field(capsys) -> None:
    """Issue 31: CLI parity with the API: every Scenario and Plan field is a dse predict flag, and the flags
    reach the workload (the overlap switches into the plan label, fusion into the scenario)."""
    from dse.cli import build_parser
    from dse.workloads.parallel import Plan
    from dse.workloads.scenario import Scenario

    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    dests = {a.dest for a in sub.choices["predict"]._actions}
    assert [f for f in [*Scenario.model_fields, *Plan.model_fields] if f not in dests] == []
    import json

    import dse

    assert main(["predict", "llama2-7b", "a100-80gb", "--phase", "training", "--batch", "8", "--seq", "512",
                 "--chips", "16", "--tp", "8", "--dp", "2", "--overlap", "tp,dp", "--fuse-elementwise",
                 "--fused-attention", "off", "--bucket-mb", "50", "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["workload"] == "llama2-7b[training b8 s512 bf16 tp8 dp2 bucket50MB overlap:tp+]"
    assert sum(got["time_share_by_bound"].values()) == pytest.approx(1.0)  # shares of time_s, named as such
    wl = dse.workload("llama2-7b", phase="training", batch=8, seq=512, fuse_elementwise=True, fused_attention=False,
                      plan={"chips": 16, "tp": 8, "dp": 2, "bucket_mb": 50, "overlap": {"tp": True, "dp": True}})
    assert got["time_s"] == pytest.approx(dse.predict(wl, "a100-80gb").time_s, rel=1e-12)
    assert main(["predict", "llama2-7b", "a100-80gb", "--chips", "2", "--overlap", "tp,xx"]) == 2
    assert ("--overlap: got 'xx'; accepted: a comma list of tp, pp, dp, ep, each optionally =FRACTION (0..1), or none"
            in capsys.readouterr().err)


def test_predict_takes_weight_roles_and_kv_blocks(capsys) -> None:
    """CLI parity with the scenario: --weight-dtypes role=dtype,... and --kv-block; a bad item is one line."""
    assert main(["predict", "llama3-8b", "tt-n150", "--phase", "decode", "--batch", "32", "--context", "128",
                 "--weight-dtype", "bfp8", "--weight-dtypes", "ffn_up=bfp4", "--kv-dtype", "bfp8"]) == 0
    out = capsys.readouterr().out
    assert "w:bfp8 ffn_up:bfp4 kv:bfp8" in out and "unpacker" in out
    assert main(["predict", "llama3-8b", "gaudi3", "--phase", "serving", "--batch", "64", "--input-len", "128",
                 "--output-len", "128", "--kv-block", "128"]) == 0
    assert "kvblock128" in capsys.readouterr().out
    assert main(["predict", "llama3-8b", "tt-n150", "--phase", "decode", "--weight-dtypes", "ffn_up:bfp4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "weight_dtypes" in err[0] and "accepted: role=dtype items" in err[0]


@pytest.mark.parametrize(("argv", "flag", "value"), [
    (["workloads", "list", "--batch", "32"], "--batch", "32"),
    (["workloads", "show", "llama2-7b", "--hardware", "h100-sxm"], "--hardware", "h100-sxm"),
    (["workloads", "list", "--quiet"], "--quiet", "True"),
])
def test_a_workloads_option_its_action_does_not_read_is_one_line(capsys, argv: list, flag: str, value: str) -> None:
    # before, dse workloads list --batch 32 printed the library at the models' defaults without a word
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {flag}: got {value} with {argv[1]}; accepted: only with ") and err.count("\n") == 1


def test_output_plots_false_draws_no_figure_in_run_and_sweep(tmp_path) -> None:
    # the config's output.plots was read by nothing: run, compare and sweep drew every chart (only --no-plots worked)
    from tests.conftest import PLOTTED_STUDY

    quiet = write_config(tmp_path, {**SMALL_STUDY, "search": {**SMALL_STUDY["search"], "n_trials": 4}}, "q.yaml")
    assert main(["run", str(quiet), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    assert main(["sweep", str(quiet), "--points", "3", "--out", str(tmp_path / "sweep"), "--quiet"]) == 0
    assert (tmp_path / "run" / "tiny" / "summary.md").is_file() and not list((tmp_path / "run").rglob("*.png"))
    assert (tmp_path / "sweep" / "tiny-sweep" / "sweep.csv").is_file() and not list((tmp_path / "sweep").rglob("*.png"))
    drawn = write_config(tmp_path, PLOTTED_STUDY, "p.yaml")
    assert main(["sweep", str(drawn), "--points", "3", "--out", str(tmp_path / "s2"), "--quiet"]) == 0
    assert list((tmp_path / "s2").rglob("*.png"))


@pytest.mark.parametrize("argv", [
    ["workloads", "ai"], ["whatif", "--workload", "resnet50", "--stages", "winograd"],
    ["kernels", "KERNELS", "--hardware", "a100-80gb"],
])
def test_an_output_folder_that_is_a_file_is_one_line(tmp_path, capsys, argv) -> None:
    """``--out`` naming an existing file: one line saying a file is in the way, exit 2 (it was a FileExistsError or
    NotADirectoryError traceback in validate, host, workloads ai, compare, sweep, whatif and kernels)."""
    blocker = tmp_path / "afile"
    blocker.write_text("not a folder")
    kernels = tmp_path / "k.csv"
    kernels.write_text("name,flops,bytes,seconds\ngemm,2e12,3e9,0.01\n")
    argv = [str(kernels) if a == "KERNELS" else a for a in argv]
    assert main([*argv, "--out", str(blocker)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    err = [ln for ln in lines if ln.strip() and "expanding workloads" not in ln]  # without the progress bar
    assert len(err) == 1 and err[0].startswith("error: ") and "cannot write" in err[0] and "in the way" in err[0]
    assert blocker.read_text() == "not a folder"


def test_an_unknown_kernel_dtype_is_one_line(tmp_path, capsys) -> None:
    """``dse kernels --dtype foo`` was a KeyError traceback."""
    kernels = tmp_path / "k.csv"
    kernels.write_text("name,flops,bytes,seconds\ngemm,2e12,3e9,0.01\n")
    assert main(["kernels", str(kernels), "--hardware", "a100-80gb", "--dtype", "foo", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [err[0]] and err[0].startswith("error: --dtype: got 'foo'; accepted: one of int4, int8, fp8")


def test_an_unknown_explore_mix_is_one_line(capsys) -> None:
    """``dse explore --mix foo`` on a config without mixes was a ValueError whose 'accepted:' listed nothing (the
    explorer needs the explore extra: without Dash it says so first, so the test skips there, fails under CI)."""
    from tests.conftest import need

    need("dash", "explore")
    config = Path(__file__).resolve().parents[1] / "configs" / "npu.yaml"
    assert main(["explore", str(config), "--mix", "foo", "--check"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--mix: got 'foo'; accepted: a mix the config names (none:" in err[0]


def test_a_parquet_sweep_without_pyarrow_is_one_line_and_makes_no_folder(tmp_path, capsys, monkeypatch) -> None:
    """Without the scale extra a parquet sweep made its folder, wrote sweep.json, then blamed --engine and said the
    blocks written were kept; now it says what to install before anything is made."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyarrow" else real(name, *a))
    config = Path(__file__).resolve().parents[1] / "configs" / "npu.yaml"
    assert main(["sweep", str(config), "--points", "2", "--format", "parquet", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --format: got parquet, and pyarrow is not installed")
    assert not (tmp_path / "o").exists()


def test_workloads_show_prints_bytes_and_params_with_decimal_prefixes(capsys) -> None:
    """DeepSeek-V3 printed '7.392e+04 MB' and '6.71e+05 M params'; a decimal prefix reads '73.92 GB', '671 G params'."""
    from dse.cli import _scaled

    assert [_scaled(7.392e10, "B"), _scaled(6.71e11), _scaled(2.5e5, "B"), _scaled(12.0, "B")] == [
        "73.92 GB", "671 G", "250 kB", "12 B"]
    assert main(["workloads", "show", "deepseek-v3"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "GFLOP, 73.92 GB, AI" in first and "671 G params" in first and "e+0" not in first.split(";")[0]


def test_hardware_yaml_prints_a_template_a_user_can_start_from(tmp_path, capsys) -> None:
    """A pip user had no way to see a shipped template's file (it sits inside site-packages): --yaml prints it,
    comments and sources included, and the printed file loads as a template."""
    assert main(["hardware", "npu-7nm", "--yaml"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("# npu-7nm: ") and "\nname: npu-7nm\n" in text and "source:" in text
    path = tmp_path / "mine.yaml"
    path.write_text(text.replace("\nname: npu-7nm\n", "\nname: mine\n"))
    import dse

    assert dse.hardware(str(path)).peak_flops == dse.hardware("npu-7nm").peak_flops
    assert main(["hardware", "--yaml"]) == 2
    assert capsys.readouterr().err.startswith("error: --yaml: got --yaml without a template")


def test_workloads_show_takes_a_serving_scenario_and_hardware_says_each_peaks_dtype(capsys) -> None:
    """'dse workloads show llama3-8b --phase serving' needed --input-len/--output-len that show did not take; the
    hardware table's peak column mixed bf16, int8 (groq-tsp), fp8 (tt-p150) and fp16 (tt-n150, v100) unlabelled."""
    assert main(["workloads", "show", "llama3-8b", "--phase", "serving", "--batch", "32", "--input-len", "1024",
                 "--output-len", "256"]) == 0
    assert capsys.readouterr().out.startswith("llama3-8b[serving b32 in1024 out256 bf16]: ")
    assert main(["hardware", "groq-tsp", "tt-p150", "a100-80gb"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["template", "node", "dtype"]
    assert [ln.split()[2] for ln in lines[1:4]] == ["int8", "fp8", "bf16"]


def test_a_config_named_as_in_a_checkout_is_found_in_the_installed_package(tmp_path, monkeypatch) -> None:
    """From another folder of a plain pip install, 'dse compare configs/npu.yaml' said 'file not found': the package
    carries its configs (dse/_data/); a file of that name here still wins."""
    from dse.cli import packaged_config
    from dse.units import repo_root

    monkeypatch.chdir(tmp_path)
    shipped = str(repo_root() / "configs" / "npu.yaml")
    assert packaged_config("configs/npu.yaml") == shipped and packaged_config("npu") == shipped
    assert packaged_config("experiments/npu_story.yaml") == str(repo_root() / "experiments" / "npu_story.yaml")
    assert packaged_config("nothere.yaml") == "nothere.yaml"
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "npu.yaml").write_text("name: mine\n")
    assert packaged_config("configs/npu.yaml") == "configs/npu.yaml"


def test_a_prediction_that_does_not_fit_carries_no_band(capsys) -> None:
    """Llama-3-8B decode on the 230 MB Groq TSP printed a band around a time that streams 16 GB of weights it cannot
    hold ('the measured step would be 3.57 .. 5.35 ms')."""
    assert main(["predict", "llama3-8b", "groq-tsp", "--phase", "decode", "--context", "1024"]) == 0
    out = capsys.readouterr().out
    assert "error band: none: the workload does not fit" in out and "would be" not in out and "DOES NOT FIT" in out


def test_predict_prints_the_energy_a_study_prices(capsys) -> None:
    """A study's per-workload power could not be checked from the command line: dse predict prints the step's energy
    and average power from the same model (dse.cost.power.mix_energy at the printed time)."""
    import json

    import numpy as np

    import dse
    from dse.cost.power import mix_energy
    from dse.hardware.designs import DesignBatch
    from dse.workloads.mix import Mix

    assert main(["predict", "llama2-7b", "a100-80gb", "--phase", "decode", "--context", "1024", "--format",
                 "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    wl = dse.workload("llama2-7b", phase="decode", context=1024)
    e = mix_energy(DesignBatch.from_hardware(dse.hardware("a100-80gb")), Mix.of([wl]),
                   times=np.array([[got["time_s"]]]))
    assert got["average_power_w"] == pytest.approx(float(e.power_w[0, 0]), rel=1e-9)
    assert got["energy_j_per_chip"] == pytest.approx(got["average_power_w"] * got["time_s"], rel=1e-9)
    assert 100 < got["average_power_w"] < 400  # an A100 streaming weights at batch 1, under its 400 W
    assert main(["predict", "llama2-7b", "a100-80gb", "--phase", "decode", "--context", "1024"]) == 0
    assert "\nenergy: " in capsys.readouterr().out


def test_predict_json_carries_what_the_table_prints(capsys) -> None:
    """``--format json`` has the table's operator columns under the table's unit-bearing names, the memory parts and
    capacity of its last line, the serving metrics, and a multi-chip run's system, chips, network and bubble time
    (it had renamed ``flop`` to ``flops`` and left the rest out)."""
    import json

    args = ["predict", "llama2-7b", "h100-sxm", "--phase", "serving", "--batch", "8", "--input-len", "256",
            "--output-len", "32", "--chips", "2", "--tp", "2"]
    assert main([*args, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert main(args) == 0
    text = capsys.readouterr().out
    header = text.splitlines()[0].split()
    assert set(header) <= set(doc["ops"][0])
    assert doc["system"] == "dgx-h100" and doc["chips"] == 2 and doc["network_s"] > 0
    assert f"{doc['serving']['tokens_per_s']:.1f} output tokens/s" in text
    assert f"TTFT {doc['serving']['ttft_s'] * 1e3:.2f} ms" in text
    parts = ", ".join(f"{k} {v:.2f}" for k, v in doc["memory_gb_by_part"].items() if v)
    assert f"({parts}) of {doc['capacity_gb_per_chip']:.1f} GB" in text


@pytest.mark.parametrize(("cmd", "says"), [("run", "completed trials are saved in the study storage"),
                                           ("sweep", "a streamed sweep (--format parquet) keeps the blocks"),
                                           ("predict", "nothing was written")])
def test_ctrl_c_says_what_the_command_kept(monkeypatch, capsys, cmd: str, says: str) -> None:
    """Ctrl-C printed 'completed trials are saved in the study storage' for every command (a sweep has no trials,
    a prediction no storage); each says what it keeps, exit 130."""
    import dse.cli as cli

    def interrupted(_args):
        raise KeyboardInterrupt

    args = {"run": ["run", "configs/npu.yaml"], "sweep": ["sweep", "configs/npu.yaml"],
            "predict": ["predict", "llama2-7b", "h100-sxm"]}[cmd]
    monkeypatch.setitem(cli.COMMANDS, cmd, interrupted)
    assert cli.main(args) == 130
    assert f"interrupted: {says}" in capsys.readouterr().err


def test_predict_says_when_a_dtype_runs_in_another_mode(capsys) -> None:
    """bf16 on a V100 runs in its fp16 mode: said in a note, not silent."""
    assert main(["predict", "llama2-7b", "v100-sxm", "--phase", "prefill", "--dtype", "bf16"]) == 0
    out = capsys.readouterr().out
    assert "note: v100-sxm's matrix unit has no bf16 mode: its bf16 operators run in its fp16 mode" in out
    assert main(["predict", "llama2-7b", "h100-sxm", "--phase", "prefill", "--dtype", "bf16"]) == 0
    assert "note:" not in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "line"), [
    (["predict", "llama3-8b", "h100-sxm", "--grad-dtype", "fp64"],
     "error: dse predict: --grad-dtype: got 'fp64'; accepted: auto, fp32, bf16, fp16"),
    (["predict", "llama3-8b", "h100-sxm", "--batch", "x"], "error: dse predict: --batch: got 'x'; accepted: an integer"),
    (["predict", "llama3-8b", "h100-sxm", "--bucket-mb", "x"],
     "error: dse predict: --bucket-mb: got 'x'; accepted: a number"),
    (["plan", "llama3-8b", "dgx-h100"], "error: dse plan: --chips: got nothing; accepted: a value (required)"),
    (["predict", "llama3-8b", "h100-sxm", "--frob", "3"], "error: dse: got --frob 3; accepted: the flags -h lists"),
])
def test_a_bad_flag_is_one_line_in_the_project_form(argv: list[str], line: str, capsys) -> None:
    """argparse's own messages ('argument --x: invalid choice: ... (choose from ...)') become the project's
    'FIELD: got X; accepted: Y' line, exit 2."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [line]


def test_a_template_file_is_named_by_its_path_in_predict_and_yaml_takes_no_json(tmp_path: Path, capsys) -> None:
    """Edited copies of a template keep its name:, so dse predict said 'on npu-7nm' for each of them while dse hardware
    named their paths; --yaml --format json printed YAML without a word; the JSON dies count was a string."""
    import json

    assert main(["hardware", "npu-7nm", "--yaml"]) == 0
    path = tmp_path / "mine.yaml"
    path.write_text(capsys.readouterr().out)
    assert main(["predict", "llama3-8b", str(path), "--phase", "decode"]) == 0
    assert f"on {path} (npu-7nm):" in capsys.readouterr().out
    assert main(["hardware", "npu-7nm", "--yaml", "--format", "json"]) == 2
    assert capsys.readouterr().err.strip() == ("error: --format: got json with --yaml; accepted: --yaml alone (each "
                                               "template's YAML file) or --format json without it")
    assert main(["hardware", "mi300x", "npu-7nm", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [d["dies"] for d in rows] == [{"xcd": 8, "iod": 4}, {"die": 1}]
    # the on-chip SRAM column: npu-7nm's 12 MiB of per-core scratchpads and its 32 MiB global level
    assert rows[1]["sram_mib"] == 44.0
    # and what it keeps between operators: npu-7nm's global SRAM keeps tensors across steps; a TPU's VMEM keeps tiles
    assert main(["hardware", "npu-7nm", "groq-tsp", "tpu-v6e", "gaudi2"]) == 0
    header, npu, groq, tpu, gaudi = capsys.readouterr().out.splitlines()[:5]
    assert "ridge FLOP/B  SRAM MiB keeps  area mm2" in header and " 44.0 steps " in npu and " 220.0 all " in groq
    assert " 128.0 tiles " in tpu and " 48.0 step " in gaudi
    assert main(["hardware", "tpu-v6e", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["sram_keeps"] == "tiles"


@pytest.mark.parametrize(("change", "line"), [
    (lambda d: (d.pop("workloads"), d.__setitem__("mixes", {"a": []})), "mixes.a: got []; accepted: a list of at "
                                                                        "least 1 workload"),
    (lambda d: d["workloads"][0].__setitem__("path", "m.yaml"), "workloads.0.path: got name and path; accepted: "
                                                                "exactly one of name"),
])
def test_config_errors_name_the_field_got_and_accepted(tmp_path: Path, capsys, change, line: str) -> None:
    """An empty mix dumped the whole config and named no field; a workload with both name and path said 'give exactly
    one of' with no accepted."""
    data = copy.deepcopy(SMALL_STUDY)
    change(data)
    cfg = write_config(tmp_path, data)
    assert main(["run", str(cfg), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {cfg}: ") and line in err and "\n" not in err, err


def test_workloads_show_gives_an_moe_its_active_parameters(capsys) -> None:
    """Mixtral showed only its 46.7 G parameters; a token runs 12.9 G of them (Jiang et al. 2024: 12.9 B active)."""
    assert main(["workloads", "show", "mixtral-8x7b"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "46.7 G params (12.88 G active per token: 2 of 8 routed experts)" in first


def test_workloads_list_prints_plain_numbers(capsys) -> None:
    """DeepSeek-V3 read 'params_m 6.71e+05, mbyte 7.392e+04'; large values print as grouped whole numbers."""
    assert main(["workloads", "list"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.split()[:1] == ["deepseek-v3"])
    assert "671,026" in row and "e+0" not in row


def test_hardware_lists_each_templates_main_memory_as_bought(capsys) -> None:
    """The DRAM column: whole stacks (or channels) and the part the template names (its kind where it names none)."""
    import json

    assert main(["hardware", "b200", "tt-n150", "groq-tsp", "trainium1"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:5]}
    assert "8 x hbm3e" in rows["b200"] and "6 x gddr6" in rows["tt-n150"]
    assert "  -  " in rows["groq-tsp"] and "2 x dram" in rows["trainium1"]
    assert main(["hardware", "h200", "groq-tsp", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(d["dram_part"], d["dram_stacks"]) for d in data] == [("hbm3e", 6), (None, 0)]


def test_predict_on_another_dram_part(capsys) -> None:
    """--dram-part hbm3: npu-7nm's 4 stacks as HBM3 (96 GB, 3.277 TB/s): a bandwidth-bound decode step runs about
    2x faster, the memory check reads the part's capacity; a part of another kind is one line."""
    assert main(["predict", "llama2-7b", "npu-7nm", "--phase", "decode"]) == 0
    base = capsys.readouterr().out
    assert main(["predict", "llama2-7b", "npu-7nm", "--phase", "decode", "--dram-part", "hbm3"]) == 0
    out = capsys.readouterr().out
    t0, t1 = (float(re.search(r"on npu-7nm: ([\d.]+) ms per step", o).group(1)) for o in (base, out))
    assert t0 / t1 == pytest.approx(2.0, rel=0.1) and "of 96.0 GB: fits" in out
    assert main(["predict", "llama2-7b", "npu-7nm", "--dram-part", "gddr7"]) == 2
    assert capsys.readouterr().err.strip() == "error: --dram-part: got 'gddr7'; accepted: hbm2, hbm2e, hbm3, hbm3e, hbm4"
    assert main(["predict", "llama2-7b", "npu-7nm", "--dram-part", "hbm9"]) == 2  # was 'accepted: ' and nothing
    assert capsys.readouterr().err.strip() == ("error: --dram-part: got 'hbm9'; accepted: one of hbm2, hbm2e, hbm3, "
                                               "hbm3e, hbm4 (a part of the main memory's kind, dram)")


def test_a_part_swap_on_a_level_without_stack_figures_says_what_is_missing(tmp_path, capsys) -> None:
    """Board DRAM written without ``stack_bandwidth_gbps`` has no channel count to keep: --dram-part and a searched
    part said 'accepted: a ... level with stack_bandwidth_gbps' without saying which level lacked what."""
    import yaml

    import dse

    data = dse.hardware("tt-n150").model_dump(mode="python", exclude_none=True)
    data["memory"][-1].pop("stack_bandwidth_gbps")
    data["memory"][-1].pop("stack_capacity_gb", None)
    data["memory"][-1].pop("generation")  # a part named gives its rated channel (GDDR6: 64 GB/s): LPDDR names none
    (tmp_path / "chip.yaml").write_text(yaml.safe_dump(data))
    assert main(["predict", "resnet50", str(tmp_path / "chip.yaml"), "--dram-part", "gddr7"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --dram-part: got 'gddr7' (level 'gddr6' is not bought in stacks of a part: its "
                          "template gives no stack_bandwidth_gbps") and err.count("\n") == 0


def test_area_on_another_dram_part(capsys) -> None:
    """dse area npu-7nm --dram-part hbm4: the same 4 stacks, each a 2048-bit HBM4 PHY and controller (2x their area);
    without a template the flag is one line."""
    import json

    assert main(["area", "npu-7nm", "--format", "json"]) == 0
    base = json.loads(capsys.readouterr().out)["templates"][0]
    assert main(["area", "npu-7nm", "--dram-part", "hbm4", "--format", "json"]) == 0
    hbm4 = json.loads(capsys.readouterr().out)["templates"][0]
    for part in ("dram_phy_mm2", "dram_controller_mm2"):
        assert hbm4[part] == pytest.approx(2 * base[part])
    assert hbm4["unit_cost_usd"] > base["unit_cost_usd"]
    assert main(["area", "--dram-part", "hbm4"]) == 2
    assert "error: --dram-part: got --dram-part hbm4 without a template" in capsys.readouterr().err


def test_a_study_whose_every_trial_breaks_a_limit_names_its_config(tmp_path: Path, capsys) -> None:
    """dse run's 'no feasible design found' line named no file where dse batch's did (fuzz seed 11600)."""
    data = copy.deepcopy(SMALL_STUDY)
    data["search"]["area_budget_mm2"] = 45.0  # no design of npu-7nm of 64 TFLOP/s or more is 45 mm2
    cfg = write_config(tmp_path, data)
    assert main(["run", str(cfg), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {cfg}: no feasible design found"), err
    assert (tmp_path / "tiny" / "study.db").is_file()  # the trials it ran are kept


def test_predict_says_which_field_would_keep_activations_on_a_per_core_sram_chip(tmp_path: Path, capsys) -> None:
    """An edge NPU whose only SRAM is per core is bound by its DRAM through activations a compiler could keep on
    chip: dse predict names the field (keeps) and the what-if stage; a decode step bound by its weights, and a GPU,
    get no such line."""
    import json

    import yaml

    from tests.hardware.edge_npu import EDGE_NPU

    path = tmp_path / "edge.yaml"
    path.write_text(yaml.safe_dump(EDGE_NPU, sort_keys=False))
    assert main(["predict", "mobilenet-v2", str(path), "--batch", "1", "--dtype", "int8"]) == 0
    notes = [x for x in capsys.readouterr().out.splitlines() if x.startswith("note:")]
    assert len(notes) == 1 and "no on-chip level keeps a tensor between operators: local's 16 per-core copies" in notes[0]
    assert "keeps=step" in notes[0]
    assert main(["predict", "mobilenet-v2", str(path), "--batch", "1", "--dtype", "int8", "--format", "json"]) == 0
    assert ["note: " + n for n in json.loads(capsys.readouterr().out)["notes"]] == notes  # the same line in JSON
    kept = {**EDGE_NPU, "memory": [{**EDGE_NPU["memory"][0], "keeps": "step"}, EDGE_NPU["memory"][1]]}
    path.write_text(yaml.safe_dump(kept, sort_keys=False))
    assert main(["predict", "mobilenet-v2", str(path), "--batch", "1", "--dtype", "int8"]) == 0
    assert "note:" not in capsys.readouterr().out
    for argv in (["llama2-7b", "tt-n150", "--phase", "decode"], ["llama2-7b", "a100-80gb", "--phase", "decode"]):
        assert main(["predict", *argv]) == 0
        assert "keeps a tensor" not in capsys.readouterr().out


def test_predict_on_several_chips_is_one_row_each_with_its_speedup_over_the_first(capsys) -> None:
    """The first question about a chip is how it compares: `dse predict MODEL A B` gives one row per chip, each the
    prediction `dse predict MODEL A` makes alone, with time, speedup over the first, energy, memory and error band."""
    import json

    import dse

    args = ["predict", "llama2-7b", "h100-sxm", "gaudi3", "tpu-v6e", "--batch", "8"]
    assert main([*args, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    chips = {c["hardware"]: c for c in doc["chips"]}
    assert list(chips) == ["h100-sxm", "gaudi3", "tpu-v6e"] and doc["workload"] == "llama2-7b[decode b8 ctx1024 bf16]"
    wl = dse.workload("llama2-7b", batch=8)
    alone = {c: dse.predict(wl, c).time_s for c in chips}
    from dse.validate.bands import speedup_band

    for c, row in chips.items():
        assert row["time_s"] == alone[c]
        if c != "h100-sxm":  # the measured speedup's range: s / (1 + p90) .. s / (1 + p10) of the pair's band
            band = speedup_band("h100-sxm", c)
            s = row["speedup_vs_first"]
            assert (row["speedup_measured_lo"], row["speedup_measured_hi"]) == pytest.approx(
                (s / (1 + band.p90_pct / 100), s / (1 + band.p10_pct / 100)), rel=1e-12)
        assert row["speedup_vs_first"] == pytest.approx(alone["h100-sxm"] / alone[c], rel=1e-12)
        assert row["fits"] and row["binding"] == "hbm" and 0 < row["binding_share_pct"] <= 100
    assert main(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["chip", "time_ms", "per"] and [ln.split()[0] for ln in out[1:4]] == list(chips)
    assert out[1].split()[2] == "1"  # the first chip's own speedup (after chip and time)
    # a chip that cannot hold the model says so in its row; a bad name is one line, exit 2
    assert main(["predict", "llama2-70b", "h200", "tpu-v5e", "--batch", "1"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert "DOES NOT FIT" in rows[2] and "DOES NOT FIT" not in rows[1] and rows[2].rstrip().endswith("none")
    assert main(["predict", "llama2-7b", "h100-sxm", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "unknown hardware template 'nope'" in err and err.count("\n") == 1
