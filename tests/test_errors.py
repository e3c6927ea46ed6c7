"""dse.errors: one error type, printed as one line ``FILE: FIELD: got X; accepted: Y``."""

from __future__ import annotations

import copy

import pytest
from pydantic import ValidationError

import dse
from dse.errors import DseError, _model_at, _short, from_validation_error
from dse.hardware.schema import Hardware, MemoryLevel
from dse.hardware.system import System

BASE = dse.hardware("npu-7nm").model_dump(mode="python", exclude_none=True)


def _convert(data: dict, *, file: str | None = "f.yaml", prefix: str = "", model=Hardware) -> DseError:
    with pytest.raises(ValidationError) as ei:
        model.model_validate(data)
    return from_validation_error(ei.value, file=file, model=model, prefix=prefix)


def test_message_joins_file_field_and_text_and_keeps_the_parts() -> None:
    e = DseError("got -5; accepted: a number > 0", file="configs/npu.yaml", field="search.space.peak_tflops.low")
    assert str(e) == "configs/npu.yaml: search.space.peak_tflops.low: got -5; accepted: a number > 0"
    assert (e.file, e.field, e.message) == ("configs/npu.yaml", "search.space.peak_tflops.low",
                                            "got -5; accepted: a number > 0")
    assert str(DseError("boom")) == "boom" and str(DseError("boom", field="x")) == "x: boom"


def test_several_errors_are_one_line_each_and_one_line_with_a_count_where_one_is_kept() -> None:
    from dse.errors import DseMultiError

    a = DseError("got 'nan'; accepted: a finite number > 0", file="m.csv", field="line 3 (x).value")
    b = DseError("got 5 fields; accepted: 12 fields", file="m.csv", field="line 4")
    many = DseMultiError([a, b])
    assert many.lines() == ["m.csv: line 3 (x).value: got 'nan'; accepted: a finite number > 0",
                            "m.csv: line 4: got 5 fields; accepted: 12 fields"]
    assert str(many) == "m.csv: line 3 (x).value: got 'nan'; accepted: a finite number > 0 (and 1 more bad field)"
    assert isinstance(many, DseError) and a.lines() == [str(a)] and DseMultiError([a]).lines() == [str(a)]
    with pytest.raises(ValueError):
        DseMultiError([])


def test_long_values_are_shortened_to_sixty_characters() -> None:
    assert _short("x" * 10) == repr("x" * 10)
    s = _short("y" * 200)
    assert len(s) == 60 and s.endswith("...")


def test_unknown_key_inside_a_list_lists_the_keys_of_the_owning_block() -> None:
    data = copy.deepcopy(BASE)
    data["memory"][1]["latency_ns"] = 5
    e = _convert(data)
    assert e.field == "memory.1.latency_ns"
    assert e.message == "unknown key; accepted: one of " + ", ".join(sorted(MemoryLevel.model_fields))
    assert _model_at(Hardware, ("memory", 1, "latency_ns")) is MemoryLevel
    assert _model_at(Hardware, ("nope", "x")) is None


def test_several_errors_report_the_first_and_count_the_rest_with_a_prefix() -> None:
    data = copy.deepcopy(BASE)
    data["compute"]["cores"] = 0
    data["compute"]["clock_ghz"] = -1
    data["memory"][0]["efficiency"] = 2
    e = _convert(data, prefix="hardware")
    assert str(e) == ("f.yaml: hardware.compute.cores: got 0; accepted: a number > 0 (and 2 more bad fields: "
                      "hardware.compute.clock_ghz, hardware.memory.0.efficiency)")


def test_a_misspelled_key_is_reported_before_the_field_it_leaves_missing() -> None:
    # clock_gHz for clock_ghz: the report named 'compute.clock_ghz: missing', not the typo
    data = copy.deepcopy(BASE)
    data["compute"]["clock_gHz"] = data["compute"].pop("clock_ghz")
    e = _convert(data)
    assert e.field == "compute.clock_gHz"
    assert e.message.startswith("unknown key (did you mean 'clock_ghz' or 'energy_clock_ghz'?); accepted: one of ")
    assert e.message.endswith("(and 1 more bad field: compute.clock_ghz missing)")


def test_the_preferred_field_is_reported_before_others_it_pushed_past_their_limits() -> None:
    data = copy.deepcopy(BASE)
    data["compute"]["cores"] = 0
    data["memory"][0]["efficiency"] = 2
    with pytest.raises(ValidationError) as ei:
        Hardware.model_validate(data)
    e = from_validation_error(ei.value, file="f.yaml", model=Hardware, prefer="memory.0.efficiency")
    assert str(e) == "f.yaml: memory.0.efficiency: got 2; accepted: a number <= 1.0 (and 1 more bad field: compute.cores)"


def test_a_validator_naming_its_field_moves_the_location_to_it() -> None:
    data = copy.deepcopy(BASE)
    data["memory"][2]["bandwidth_gbps"] = False
    e = _convert(data, file=None)
    assert str(e) == "memory.2.bandwidth_gbps: got False; accepted: a number, not true/false"


@pytest.mark.parametrize(("mutate", "expected"), [
    (lambda d: d.pop("source"), "source: missing; this field is required"),
    (lambda d: d.__setitem__("reference_dtype", "fp6"),
     "reference_dtype: got 'fp6'; accepted: one of 'fp64', 'fp32', 'tf32', 'fp16', 'bf16', 'fp8', 'int8', 'int4', "
     "'bfp8', 'bfp4', 'mxfp8', 'mxfp4' or 'nvfp4'"),
    (lambda d: d["compute"].__setitem__("clock_ghz", float("inf")), "compute.clock_ghz: got inf; accepted: a finite number"),
    (lambda d: d["compute"].__setitem__("launch_overhead_us", -1.0),
     "compute.launch_overhead_us: got -1.0; accepted: a number >= 0.0"),
    (lambda d: d.__setitem__("memory", []), "memory: got []; accepted: at least 1 item"),
])
def test_each_pydantic_error_kind_gets_its_accepted_text(mutate, expected: str) -> None:
    data = copy.deepcopy(BASE)
    mutate(data)
    assert str(_convert(data)) == f"f.yaml: {expected}"


def test_a_whole_block_rule_on_a_system_names_the_block() -> None:
    data = {"name": "s", "chip": "npu-7nm", "source": "test",
            "network": [{"name": "a", "size": 8, "topology": "ring", "latency_us": 1, "efficiency": 0.8,
                         "source": "test", "in_network_reduction": True}]}
    e = _convert(data, model=System)
    assert e.field == "network.0" and e.message.endswith("; in_network_reduction needs a switch topology")
    assert "\n" not in str(e)


def test_an_unknown_name_suggests_the_closest_ones_before_the_list() -> None:
    import dse
    from dse.errors import DseError, did_you_mean

    # closest first (difflib's ratio: h200 0.75, h100-sxm 0.67, a100-80gb under 0.6)
    assert did_you_mean("h100", ["a100-80gb", "h100-sxm", "h200"]) == " (did you mean 'h200' or 'h100-sxm'?)"
    assert did_you_mean("zzz", ["a100-80gb", "h100-sxm"]) == ""
    for call, hint in ((lambda: dse.hardware("h100"), "'h100-sxm'"), (lambda: dse.workload("llama-7b"), "'llama2-7b'")):
        with pytest.raises(DseError) as err:
            call()
        text = str(err.value)
        assert "(did you mean " in text and hint in text and text.index("did you mean") < text.index("accepted:")
        assert "\n" not in text

def test_an_unknown_key_suggests_the_key_that_holds_it_and_names_the_fields_left_out() -> None:
    """A template written from scratch with ``node:`` and ``rows:`` met a list of 12-17 keys to search and a count of
    'more bad fields' that did not say they were missing."""
    from dse.errors import did_you_mean

    assert did_you_mean("node", ["name", "process_node", "reference_dtype"]) == " (did you mean 'process_node'?)"
    assert did_you_mean("cols", ["array_cols", "array_rows"]) == " (did you mean 'array_cols'?)"
    # a key made of a real one and another word: the real one too, and a key the file leaves missing leads
    assert did_you_mean("ffn_hidden", ["ffn", "hidden", "heads"], first=["ffn"]) == " (did you mean 'ffn' or 'hidden'?)"
    data = copy.deepcopy(BASE)
    data["node"] = data.pop("process_node")
    data["compute"]["matrix"]["rows"] = data["compute"]["matrix"].pop("array_rows")
    e = _convert(data)
    assert e.message.startswith("unknown key (did you mean ")
    assert "process_node missing" in e.message and "(and 2 more bad fields" in e.message
    hint = e.message.split(";")[0]
    assert ("'process_node'" in hint) if e.field == "node" else ("'array_rows'" in hint)



def test_an_empty_yaml_and_a_plan_a_model_cannot_take_say_so_plainly(tmp_path, capsys) -> None:
    """An empty YAML said 'got NoneType'; a tp that does not divide the heads named the model twice
    ('workload llama2-7b: llama2-7b: ...'); a recorded nvidia-smi file's bad line did not name the file."""
    from dse.cli import main

    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    for argv, expect in ((["run", str(empty)], f"error: {empty}: got an empty file; accepted: a mapping with keys"),
                         (["predict", "llama2-7b", str(empty)], f"error: {empty}: got an empty file; accepted: a mapping"),
                         (["predict", "llama2-7b", "a100-80gb", "--chips", "3"],
                          "error: workload llama2-7b: got tp = 3 (32 attention heads are not divisible by it")):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(expect), err
    smi = tmp_path / "smi.txt"
    smi.write_text("x\n")
    assert main(["gpu", "--from-file", str(smi), "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {smi}: line 1: 1 fields; accepted:")


def test_a_list_too_short_says_how_many_items_it_takes(tmp_path, capsys) -> None:
    """'objectives: [score]' printed pydantic's 'List should have at least 2 items after validation, not 1'."""
    from dse.config import StudyConfig

    data = {"name": "x", "base": "npu-7nm", "workloads": [{"name": "resnet50"}],
            "search": {"objectives": ["score"], "space": {"peak_tflops": {"low": 64, "high": 1024}}}}
    e = _convert(data, model=StudyConfig)
    assert str(e) == "f.yaml: search.objectives: got ['score']; accepted: at least 2 items"


def _model_file(tmp_path, arch: dict, defaults: dict, name: str = "mine", family: str = "cnn"):
    import yaml

    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "family": family, "source": "a test", "arch": arch,
                                    "defaults": defaults}))
    return path


def test_model_file_errors_name_the_file_and_the_field(tmp_path, capsys) -> None:
    """A CNN layer's unknown key lists that layer's keys (it said 'no such key': the path names the layer's tag,
    not a field), with a field's YAML key (Pool's ``global``, not ``global_``); a bad value in the file's own
    ``defaults`` names the file (it named 'workload NAME'); a transformer's divisibility rule names its field (it
    printed the whole arch); an ONNX or JSON model file says how to import it (it was a YAML parse error)."""
    from dse.cli import main

    cnn = {"input": {"height": 32, "width": 32, "channels": 3},
           "layers": [{"op": "conv", "out": 8, "k": 3, "strid": 2}, {"op": "avgpool", "global_": True}]}
    path = _model_file(tmp_path, cnn, {"phase": "forward", "dtype": "bf16"})
    assert main(["predict", str(path), "h100-sxm"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {path}: arch.layers.0.conv.strid: unknown key (did you mean 'stride'?); accepted: "
                          "one of act, bn, groups, "
                          "k, op, out, pad, stride")  # then '(and 1 more bad field)': the pool's
    cnn["layers"][0].pop("strid")
    assert main(["predict", str(_model_file(tmp_path, cnn, {"dtype": "bf16"}, "pool")), "h100-sxm"]) == 2
    err = capsys.readouterr().err
    assert "avgpool.global_: unknown key (did you mean 'global'?); accepted: one of global, k, op, pad, stride" in err
    cnn["layers"][1] = {"op": "avgpool", "global": True}
    bad = _model_file(tmp_path, cnn, {"dtype": "bf17"}, "dflt")
    assert main(["predict", str(bad), "h100-sxm"]) == 2
    assert capsys.readouterr().err.startswith(f"error: {bad}: defaults.dtype: got 'bf17'; accepted:")
    tx = {"kind": "decoder", "layers": 2, "hidden": 256, "heads": 8, "kv_heads": 3, "ffn": 512, "vocab": 100,
          "activation": "swiglu", "norm": "rmsnorm", "position": "rope", "head": "lm"}
    assert main(["predict", str(_model_file(tmp_path, tx, {}, "tx", "transformer")), "h100-sxm"]) == 2
    assert "arch.kv_heads: got 3 with heads 8; accepted: a divisor of heads (1, 2, 4, 8)" in capsys.readouterr().err
    onnx = tmp_path / "m.onnx"
    onnx.write_bytes(b"\x08\x07\x12\x00")
    assert main(["predict", str(onnx), "h100-sxm"]) == 2
    assert f"import it first: dse workloads import {onnx}" in capsys.readouterr().err


def test_a_base_path_that_names_no_file_is_the_configs_error(tmp_path, capsys) -> None:
    """``base: nosuch.yaml`` printed 'error: nosuch.yaml: base: file not found' as if the template were the file
    at fault; the config is, and the line says where the path was looked for."""
    import copy

    from dse.cli import main
    from tests.conftest import SMALL_STUDY, write_config

    data = copy.deepcopy(SMALL_STUDY)
    data["base"] = "nosuch.yaml"
    cfg = write_config(tmp_path, data)
    assert main(["run", str(cfg), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {cfg}: base: got 'nosuch.yaml': no file at {tmp_path / 'nosuch.yaml'}"), err
