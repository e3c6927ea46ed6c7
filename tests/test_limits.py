"""Physical limits (dse.limits, docs/limits.md): every model and hardware dimension has an upper bound, the doc
states each bound the schemas check, each bound is accepted and the next value refused, and every shipped model
and template lies within them."""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any

import annotated_types
import pytest
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from dse.hardware.schema import Hardware
from dse.hardware.templates import list_templates, load_hardware
from dse.workloads.families import FAMILIES
from dse.workloads.library import available, load_description
from dse.workloads.scenario import Scenario

DOC = Path(__file__).resolve().parents[1] / "docs" / "limits.md"
#: the blocks whose fields the doc covers: every family's arch (and the blocks inside), the scenario, the template
ROOTS: tuple[type[BaseModel], ...] = (*(f.arch for f in FAMILIES.values()), Scenario, Hardware)
#: numeric fields without an upper bound of their own, and why
UNBOUNDED = {
    "ComputeUnit.dtype_efficiency": "each entry in (0, 1] by the unit's validator",
}


def _models() -> dict[str, type[BaseModel]]:
    """Every pydantic block reachable from :data:`ROOTS`, by class name (names are unique)."""
    found: dict[str, type[BaseModel]] = {}

    def visit(tp: Any) -> None:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if tp.__name__ in found:
                assert found[tp.__name__] is tp, f"two blocks named {tp.__name__}"
                return
            found[tp.__name__] = tp
            for f in tp.model_fields.values():
                visit(f.annotation)
        elif typing.get_origin(tp) is not typing.Literal:
            for arg in typing.get_args(tp):
                visit(arg)

    for root in ROOTS:
        visit(root)
    return found


def _bound(metadata: list[Any]) -> tuple[str, float] | None:
    for m in metadata:
        if isinstance(m, annotated_types.Le):
            return "le", m.le
        if isinstance(m, annotated_types.Lt):
            return "lt", m.lt
    return None


def _inner_bound(annotation: Any) -> tuple[str, float] | None:
    """The bound of a list's, tuple's or mapping's entries (``list[Annotated[int, Field(le=...)]]``)."""
    if typing.get_origin(annotation) is typing.Literal:
        return None
    for arg in typing.get_args(annotation):
        if isinstance(arg, FieldInfo):
            b = _bound(arg.metadata)
        elif isinstance(arg, annotated_types.BaseMetadata):
            b = _bound([arg])
        else:
            b = _inner_bound(arg)
        if b is not None:
            return b
    return None


def field_bound(field: FieldInfo) -> tuple[str, float] | None:
    """A field's upper bound: its own ``le``/``lt``, else its entries'."""
    return _bound(field.metadata) or _inner_bound(field.annotation)


def _numeric(annotation: Any) -> bool:
    """Whether a field holds numbers (int or float, alone or in a list, tuple or mapping), not a block."""
    if annotation in (int, float):
        return True
    if typing.get_origin(annotation) is typing.Literal or (isinstance(annotation, type)
                                                           and issubclass(annotation, BaseModel)):
        return False
    return any(_numeric(a) for a in typing.get_args(annotation) if not isinstance(a, FieldInfo))


def bounded_fields() -> dict[str, tuple[str, float]]:
    """``Block.field`` -> (``le`` or ``lt``, bound) for every bounded field of the covered blocks."""
    out = {}
    for name, model in _models().items():
        for fname, f in model.model_fields.items():
            b = field_bound(f)
            if b is not None:
                out[f"{name}.{fname}"] = b
    return out


def documented() -> dict[str, tuple[str, float]]:
    """``Block.field`` -> (``le`` or ``lt``, bound) as docs/limits.md's tables state them."""
    out: dict[str, tuple[str, float]] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        m = re.match(r"(≤|<)\s*([0-9][0-9.e+]*)", cells[1])
        assert m, f"docs/limits.md: limit cell {cells[1]!r}; accepted: '≤ N' or '< N'"
        for name in re.findall(r"`([A-Za-z_]\w*\.\w+)`", cells[0]):
            assert name not in out, f"docs/limits.md lists {name} twice"
            out[name] = ("le" if m.group(1) == "≤" else "lt", float(m.group(2)))
    return out


BOUNDED = bounded_fields()


def test_the_doc_states_every_bounded_field_with_its_bound() -> None:
    doc, code = documented(), {k: (op, float(v)) for k, (op, v) in BOUNDED.items()}
    assert sorted(set(code) - set(doc)) == [], "bounded in the schemas, missing from docs/limits.md"
    assert sorted(set(doc) - set(code)) == [], "in docs/limits.md, not a bounded field"
    assert {k: v for k, v in doc.items() if code[k] != v} == {}, "docs/limits.md states another bound"


def test_every_numeric_field_has_an_upper_bound() -> None:
    unbounded = sorted(f"{name}.{fname}" for name, model in _models().items()
                       for fname, f in model.model_fields.items()
                       if _numeric(f.annotation) and field_bound(f) is None)
    assert unbounded == sorted(UNBOUNDED)


#: a valid mapping of each block the library and the templates do not hold one of
HAND_MADE: dict[str, dict[str, Any]] = {
    "GemmRow": {"op": "gemm", "name": "g", "M": 8, "N": 8, "K": 8},
    "ConvRow": {"op": "conv", "name": "c", "n": 1, "h": 8, "w": 8, "c_in": 3, "c_out": 8, "k": 3},
    "StreamRow": {"op": "stream", "name": "s", "elems": 8.0},
    "OpTableArch": {"ops": [{"op": "gemm", "name": "g", "M": 8, "N": 8, "K": 8}]},
    "Scenario": {},
}


def _instances() -> dict[str, dict[str, Any]]:
    """A valid mapping of every covered block: the first one met in the library or the shipped templates."""
    found: dict[str, dict[str, Any]] = dict(HAND_MADE)

    def visit(obj: Any) -> None:
        if isinstance(obj, BaseModel):
            found.setdefault(type(obj).__name__, obj.model_dump(mode="python", by_alias=True, exclude_none=True))
            for fname in type(obj).model_fields:
                visit(getattr(obj, fname))
        elif isinstance(obj, list | tuple):
            for x in obj:
                visit(x)
        elif isinstance(obj, dict):
            for x in obj.values():
                visit(x)

    for name in available():
        d = load_description(name)
        visit(FAMILIES[d.family].arch.model_validate(d.arch))
    for name in list_templates():
        visit(load_hardware(name))
    return found


INSTANCES = _instances()


def _value(model: type[BaseModel], fname: str, base: dict[str, Any], v: float) -> Any:
    """``v`` in the shape the field takes: a number, a list of as many as it needs at least (one; ConvRow.pads four),
    each entry of a mapping, a list of [v, v]."""
    field = model.model_fields[fname]
    text = repr(field.annotation)
    if "tuple[" in text:
        return [(v, v)]
    if "dict[" in text:
        return {k: v for k in base.get(fname) or {"bf16": 0}}
    if "list[" in text:
        n = next((m.min_length for m in field.metadata if getattr(m, "min_length", None)), 1)
        return [v] * n
    return v


def _errors_at(model: type[BaseModel], data: dict[str, Any], fname: str) -> list[str]:
    """The pydantic error types located at field ``fname`` (or inside it) when validating ``data``."""
    alias = model.model_fields[fname].alias or fname
    try:
        model.model_validate(data)
    except ValidationError as exc:
        return [e["type"] for e in exc.errors() if e["loc"] and e["loc"][0] == alias]
    return []


@pytest.mark.parametrize("key", sorted(BOUNDED))
def test_each_bound_is_accepted_and_the_next_value_refused(key: str) -> None:
    name, fname = key.split(".")
    model = _models()[name]
    assert name in INSTANCES, f"no valid {name} in the library or the templates: add one to HAND_MADE"
    base = INSTANCES[name]
    alias = model.model_fields[fname].alias or fname
    op, limit = BOUNDED[key]
    inside = limit if op == "le" else limit * (1 - 2**-20)
    outside = limit + 1 if op == "le" else limit
    assert _errors_at(model, {**base, alias: _value(model, fname, base, inside)}, fname) == []
    refused = _errors_at(model, {**base, alias: _value(model, fname, base, outside)}, fname)
    assert refused and set(refused) <= {"less_than_equal", "less_than"}, refused


def test_every_library_model_and_template_lies_within_the_limits() -> None:
    for name in available():  # each description's arch validates (load_description checks it)
        d = load_description(name)
        FAMILIES[d.family].arch.model_validate(d.arch)
    assert [load_hardware(n).name for n in list_templates()] == list_templates()


@pytest.mark.parametrize("knob", ["peak_tflops", "dram_bandwidth_tbps", "sram_mib"])
def test_a_search_knob_reaches_at_most_the_bound_of_the_field_it_sizes(tmp_path: Path, capsys, knob: str) -> None:
    """The fuzz corpus (seed 11600) ran a study with peak_tflops.high 1e308: its trials ran and writing their
    table raised a traceback. Each knob's range is now bounded by dse.limits.KNOB_MAX, one line naming it; a
    params range past its field's bound, whose check overflowed numpy on the way, says so in one line too."""
    import yaml

    from dse.cli import main
    from dse.limits import KNOB_MAX
    from tests.conftest import SMALL_STUDY

    data = {**SMALL_STUDY, "search": {**SMALL_STUDY["search"],
                                      "space": {knob: {"low": 1, "high": KNOB_MAX[knob] * 10}}}}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    assert main(["run", str(tmp_path / "s.yaml"), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {tmp_path / 's.yaml'}: search.space.{knob}.high: got "
                                               f"{KNOB_MAX[knob] * 10:g}; accepted: at most {KNOB_MAX[knob]:g} ")
    data["search"]["space"] = {"params": [{"field": "compute.clock_ghz", "low": 1, "high": 1e300}]}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(data))
    assert main(["run", str(tmp_path / "p.yaml"), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {tmp_path / 'p.yaml'}: search.space.params.0.high: got 1e+300")
