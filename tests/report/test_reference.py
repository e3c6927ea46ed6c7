"""docs/reference.md: generated from the schemas (the committed file is what the code generates) and complete
(every key of every shipped config, template, system, node, model, engine and calibration file is in it)."""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from dse.config import StudyConfig
from dse.cost.dies import Die
from dse.hardware.schema import Hardware, Node
from dse.hardware.system import System
from dse.report import reference as ref
from dse.units import UNIT_SUFFIXES, unit_of
from dse.workloads.families import FAMILIES
from dse.workloads.library import ModelDescription
from dse.workloads.serving import Engine

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "reference.md"


def test_the_committed_reference_is_what_the_schemas_generate() -> None:
    assert DOC.read_text(encoding="utf-8") == ref.reference(), (
        "docs/reference.md is stale: run python -m dse.report.reference docs/reference.md")


def _documented() -> dict[str, set[str]]:
    """Per block heading of docs/reference.md, the field names of its table."""
    out: dict[str, set[str]] = {}
    block = None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("### "):
            block = line[4:].strip()
            out[block] = set()
        elif line.startswith("## "):  # a new section (a root's, or the DRAM parts table): no block's rows
            block = None
        m = re.match(r"\| `([^`]+)` \|", line)
        if m and block:
            out[block].add(m.group(1))
    return out


def _candidates(annotation: Any) -> list[type[BaseModel]]:
    return ref._models_in(annotation)


def _pick(models: list[type[BaseModel]], item: dict) -> type[BaseModel] | None:
    """The model of a union a mapping is (the CNN layers: the one whose ``op`` literal matches)."""
    fits = [m for m in models if set(item) <= set(m.model_fields)]
    for m in fits:
        op = m.model_fields.get("op")
        if op is None or item.get("op") in typing.get_args(op.annotation):
            return m
    return fits[0] if fits else None


def _walk(model: type[BaseModel], data: Any, seen: set[tuple[str, str]]) -> None:
    """Record (block, key) for every key of ``data`` read by ``model`` and, inside it, by every nested block."""
    if not isinstance(data, dict):
        return
    for key, value in data.items():
        info = model.model_fields.get(key)
        if info is None:
            continue
        seen.add((model.__name__, key))
        if model is ModelDescription and key == "arch":
            _walk(FAMILIES[data["family"]].arch, value, seen)
            continue
        subs = _candidates(info.annotation)
        if not subs:
            continue
        items = value if isinstance(value, list) else list(value.values()) if (
            isinstance(value, dict) and typing.get_origin(_strip(info.annotation)) is dict) else [value]
        for item in items:
            for one in (item if isinstance(item, list) else [item]):
                if isinstance(one, dict) and (m := _pick(subs, one)) is not None:
                    _walk(m, one, seen)


def _strip(annotation: Any) -> Any:
    """``X | None`` -> ``X``."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    return args[0] if typing.get_origin(annotation) in (typing.Union, type(int | None)) and len(args) == 1 else annotation


SHIPPED: list[tuple[str, type[BaseModel]]] = [
    ("configs/*.yaml", StudyConfig), ("experiments/*.yaml", StudyConfig), ("hw_templates/*.yaml", Hardware),
    ("hw_templates/systems/*.yaml", System), ("hw_templates/nodes/*.yaml", Node), ("workloads/*.yaml", ModelDescription),
    ("workloads/engines/*.yaml", Engine),
]


def test_every_key_of_every_shipped_file_is_in_the_reference() -> None:
    seen: set[tuple[str, str]] = set()
    files = 0
    for pattern, model in SHIPPED:
        for f in sorted(ROOT.glob(pattern)):
            data = yaml.safe_load(f.read_text(encoding="utf-8"))
            if model is StudyConfig and not (isinstance(data, dict) and "search" in data):
                continue  # not a study (a what-if file or a helper)
            _walk(model, data, seen)
            files += 1
    dies = yaml.safe_load((ROOT / "hw_templates/calibration/area_dies.yaml").read_text(encoding="utf-8"))
    for d in dies["dies"] if isinstance(dies, dict) else dies:
        _walk(Die, d, seen)
    assert files > 150 and len(seen) > 300
    documented = _documented()
    missing = sorted(f"{b}.{k}" for b, k in seen if k not in documented.get(b, set()))
    assert not missing, missing
    # the template fields the newcomer found nowhere in docs/ are there now
    hw = {k for b, k in seen if b in ("Hardware", "Compute", "ComputeUnit", "MemoryLevel", "Network", "Package")}
    assert {"register_kib_per_core", "reuse_group", "stack_capacity_gb", "aspect_ratio", "graph_kernel_us"} <= hw


def test_every_block_and_field_reachable_from_a_root_has_a_row() -> None:
    documented = _documented()
    for name, block in ref.blocks().items():
        assert {f.alias or n for n, f in block.model.model_fields.items()} == documented[name], name  # YAML keys


def test_type_default_limit_and_unit_texts() -> None:
    from dse.hardware.schema import ComputeUnit, MemoryLevel

    rows = {line.split("|")[1].strip(): line for line in ref.block_table(MemoryLevel)[2:]}
    assert "| number or null | — | > 0, <= " in rows["`capacity_mib`"] and "| MiB |" in rows["`capacity_mib`"]
    assert "`cache` \\| `scratchpad`" in rows["`organization`"] and "| `cache` |" in rows["`organization`"]
    unit_rows = {line.split("|")[1].strip(): line for line in ref.block_table(ComputeUnit)[2:]}
    assert "mapping of `fp64` | `fp32`".replace("|", "\\|") in unit_rows["`peak_tflops`"]
    assert "| required |" in unit_rows["`peak_tflops`"] and "| TFLOP/s |" in unit_rows["`peak_tflops`"]
    assert ref.type_text(list[tuple[int, int]]) == "list of [integer, integer]"
    assert unit_of("launch_overhead_us") == "µs" and unit_of("register_kib_per_core") == "KiB per core"
    assert unit_of("links") == "" and all(s.startswith("_") for s in UNIT_SUFFIXES)


def test_two_schema_classes_with_one_name_are_refused(monkeypatch) -> None:
    class Hardware(BaseModel):  # a second class named like the template's root
        x: int = 1

    class Other(BaseModel):
        inner: Hardware

    roots = ref.roots()
    monkeypatch.setattr(ref, "roots", lambda: (*roots, ref.Root("x", "x", Other)))
    with pytest.raises(ValueError, match="two schema classes named Hardware"):
        ref.blocks()


def test_main_writes_the_file(tmp_path: Path) -> None:
    assert ref.main([str(tmp_path / "r.md")]) == 0
    assert (tmp_path / "r.md").read_text(encoding="utf-8") == ref.reference()


def test_a_field_borrows_a_description_only_from_one_of_its_name_and_type() -> None:
    # Hardware.compute read "Weight of the MAC arrays", a GEMM row's count "Identical dies of this kind in the package"
    from dse.report.reference import blocks, descriptions, type_text

    found = blocks()
    described = descriptions(found)
    for block in found.values():
        for field, info in block.model.model_fields.items():
            key = (field, type_text(info.annotation))
            if not info.description and key in described:
                lender = found[described[key][1]].model.model_fields[field]
                assert type_text(lender.annotation) == key[1] and field not in ("name", "count", "kind", "compute")


def test_the_dram_parts_table_lists_every_part_with_its_stack_figures() -> None:
    from dse.hardware.dram_parts import GENERATIONS

    text = DOC.read_text(encoding="utf-8").split("## DRAM parts", 1)[1]
    rows = {m.group(1): line for line in text.splitlines() if (m := re.match(r"\| `([^`]+)` \|", line))}
    assert list(rows) == [g.name for g in GENERATIONS]
    assert "| 2048 | 36 | 2048 | 1.56 |" in rows["hbm4"] and "| 128 | 2 | 32 | 1 |" in rows["gddr7"]
