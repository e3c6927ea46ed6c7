"""The family registry: every family is one record, the accepted values come from it, and a family
registered by one record (here a toy, via monkeypatch) is built from a YAML description."""

import pytest
from pydantic import Field

from dse.errors import DseError
from dse.strict import Strict
from dse.workloads import families, library, ops


class ToyArch(Strict):
    width: int = Field(gt=0)


def toy_build(arch: ToyArch, sc, name: str):
    """One [batch, width] x [width, width] product."""
    rows = [ops.gemm("toy.fc", sc.batch, arch.width, arch.width, dtype=sc.dtype)]
    return rows, {"phase": sc.phase, "batch": sc.batch, "params": arch.width**2}


TOY = families.Family("toy", ToyArch, toy_build, families.COMMON | {"seq"})


@pytest.fixture
def toy(monkeypatch, tmp_path):
    monkeypatch.setitem(families.FAMILIES, "toy", TOY)
    path = tmp_path / "toy-net.yaml"
    path.write_text("name: toy-net\nfamily: toy\nsource: a toy for the registry test\n"
                    "arch: {width: 64}\ndefaults: {phase: forward, batch: 2, dtype: bf16}\n")
    yield str(path)
    library.load_description.cache_clear()


def test_a_registered_family_builds_from_yaml(toy: str) -> None:
    wl = library.workload(toy, batch=4)
    assert wl.name == "toy-net" and list(wl.ops["name"]) == ["toy.fc"]
    assert wl.flops == pytest.approx(2 * 4 * 64 * 64)
    assert library.ARCH_MODELS["toy"] is ToyArch and library.BUILDERS["toy"] is toy_build
    assert library.accepted_keywords(library.load_description(toy)) == set(families.COMMON | {"seq"})
    assert library.workload(toy, phase="inference").scenario["phase"] == "forward"  # not a language model


def test_a_registered_family_is_checked_by_its_record(toy: str) -> None:
    with pytest.raises(DseError, match="toy-net does not use context; accepted: .*seq"):
        library.workload(toy, context=8)
    with pytest.raises(DseError, match="supports data parallelism only"):
        library.workload(toy, plan={"tp": 2})
    assert library.workload(toy, batch=4, plan={"dp": 2}).chips == 2


def test_the_accepted_families_come_from_the_registry(monkeypatch, tmp_path) -> None:
    path = tmp_path / "odd.yaml"
    path.write_text("name: odd\nfamily: nope\nsource: a bad family\narch: {}\n")
    with pytest.raises(DseError, match="family: got 'nope'; accepted: one of 'transformer', .* or 'optable'$"):
        library.load_description(str(path))
    monkeypatch.setitem(families.FAMILIES, "toy", TOY)
    library.load_description.cache_clear()
    with pytest.raises(DseError, match="or 'toy'$"):
        library.load_description(str(path))
    library.load_description.cache_clear()


def test_every_library_model_names_a_record() -> None:
    used = {library.load_description(n).family for n in library.available()}
    assert used <= set(families.FAMILIES)
    assert {"transformer", "cnn", "recsys"} <= used
    with pytest.raises(ValueError, match="accepted: one of"):
        families.family("nope")


@pytest.mark.parametrize("name,lm", [("llama2-7b", True), ("bert-base", False)])
def test_inference_means_prefill_for_language_models(name: str, lm: bool) -> None:
    phase = library.workload(name, phase="inference").scenario["phase"]
    assert phase == ("prefill" if lm else "forward")
