"""dse.workloads.suites: shipped suites load with weights; ``all`` is every library model; bad suites name the file."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import dse
from dse.errors import DseError
from dse.workloads import suites
from dse.workloads.library import available


def test_shipped_suites_list_and_load_with_default_weight_one() -> None:
    names = suites.list_suites()
    assert {"all", "edge-vision", "llm-serving", "mlperf-inference", "training"} <= set(names)
    edge = suites.load_suite("edge-vision")
    assert edge[0] == {"weight": 1.0, "name": "mobilenet-v2", "batch": 1, "dtype": "int8"}
    assert all(e["name"] in available() for e in edge)


@pytest.mark.parametrize("name", ["edge-vision", "llm-serving", "llm-2025", "mlperf-inference", "training"])
def test_every_entry_of_a_shipped_suite_builds(name: str) -> None:
    for e in suites.load_suite(name):
        spec = {k: v for k, v in e.items() if k not in ("name", "weight")}
        assert e["weight"] > 0
        assert dse.workload(e["name"], **spec).flops > 0


def test_all_is_every_library_model_once() -> None:
    entries = suites.load_suite("all")
    assert [e["name"] for e in entries] == available()
    assert {e["weight"] for e in entries} == {1.0}


def test_unknown_and_malformed_suites_are_one_line_errors(monkeypatch, tmp_path: Path) -> None:
    with pytest.raises(DseError, match="unknown suite 'nope'; accepted: all, edge-vision"):
        suites.load_suite("nope")
    monkeypatch.setattr(suites, "suites_dir", lambda: tmp_path)
    (tmp_path / "empty.yaml").write_text(yaml.safe_dump({"name": "empty", "workloads": []}))
    with pytest.raises(DseError, match=r"empty.yaml: accepted: a mapping with name, description, source and a non-empty"):
        suites.load_suite("empty")
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump({"name": "bad", "workloads": [{"batch": 2}]}))
    with pytest.raises(DseError) as ei:
        suites.load_suite("bad")
    assert str(ei.value) == f"{tmp_path / 'bad.yaml'}: workloads.0: entry 0 needs a name"


def test_the_2025_suite_puts_two_fifths_of_its_flops_at_4_to_16_flop_per_byte() -> None:
    """The user guide's figure: 40 % of llm-2025's FLOPs (compulsory bytes, at mix weight) fall at 4-16 FLOP/byte,
    its median 16: long-context batched decode of GQA and MoE models (`dse workloads ai llm-2025`)."""
    from dse.workloads.intensity import compulsory_intensity, summary
    from dse.workloads.mix import Mix

    es = suites.load_suite("llm-2025")
    wls = [dse.workload(e["name"], **{k: v for k, v in e.items() if k not in ("name", "weight")}) for e in es]
    st = summary(compulsory_intensity(Mix.of(wls, [e["weight"] for e in es])))
    assert round(st["share_4_16"], 2) == 0.40 and round(st["p50"]) == 16
