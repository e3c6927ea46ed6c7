"""The field reference, ``docs/reference.md``: every field of every input file, generated from the schemas.

Each input file kind (study config, what-if file, hardware template, system, process node, model description and
the arch block of each model family, scenario, plan, serving engine, area-calibration die) is a pydantic model
(:class:`dse.strict.Strict`). :func:`reference` walks each root model and every block nested in it and writes one
table per block: field, type, default, limits, unit and description, all read from the model itself (the unit from
the field name's suffix, :data:`dse.units.UNIT_SUFFIXES`), so the reference cannot drift from what is validated.
``python -m dse.report.reference docs/reference.md`` rewrites the file; ``tests/report/test_reference.py`` checks
that the committed file is what this module generates and that every key of every shipped file is in it.
"""

from __future__ import annotations

import sys
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from dse.units import unit_of


@dataclass(frozen=True)
class Root:
    """One kind of input file: its title, the files of that kind and the model that validates them."""

    title: str
    files: str
    model: type[BaseModel]


def roots() -> tuple[Root, ...]:
    """Every input file kind, in the order the reference lists them (one record per kind)."""
    from dse.config import StudyConfig, WhatIfFile
    from dse.cost.dies import Die
    from dse.hardware.schema import Hardware, Node
    from dse.hardware.system import System
    from dse.workloads.families import FAMILIES
    from dse.workloads.frameworks import Framework
    from dse.workloads.library import ModelDescription
    from dse.workloads.parallel import Plan
    from dse.workloads.scenario import Scenario
    from dse.workloads.serving import Engine

    fixed = (
        Root("Study config", "`configs/*.yaml`, `experiments/*.yaml`, your own study files", StudyConfig),
        Root("What-if file", "a file given to `dse whatif FILE`", WhatIfFile),
        Root("Hardware template", "`hw_templates/*.yaml` (or a template of your own)", Hardware),
        Root("System", "`hw_templates/systems/*.yaml`: chips on their network levels", System),
        Root("Process node", "`hw_templates/nodes/*.yaml`: sourced area, cost and power coefficients", Node),
        Root("Model description", "`workloads/*.yaml` (or `dse workloads import`)", ModelDescription),
        Root("Scenario", "how a model runs: the fields of a workload entry, of `dse predict` and `dse.workload`",
             Scenario),
        Root("Parallelism plan", "a workload entry's `plan:`, `dse predict --tp ..`, `dse.best_plan`", Plan),
        Root("Serving engine", "`workloads/engines/*.yaml`: host time per engine step", Engine),
        Root("Training framework", "`workloads/frameworks/*.yaml`: the scenario fields a framework's step sets",
             Framework),
        Root("Area-calibration die", "one entry of `hw_templates/calibration/area_dies.yaml`", Die),
    )
    archs = tuple(Root(f"Model arch: family `{name}`", f"the `arch:` block of a model description with "
                       f"`family: {name}`", fam.arch) for name, fam in FAMILIES.items())
    return fixed + archs


@dataclass
class Block:
    """One nested model found while walking a root: where it appears (dotted paths) and under which root."""

    model: type[BaseModel]
    root: str
    paths: list[str] = field(default_factory=list)


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models inside a field's type (``X``, ``list[X]``, ``X | None``, ``dict[str, X]``, unions)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for a in typing.get_args(annotation) for m in _models_in(a)]


def _suffix(annotation: Any) -> str:
    """What a path gains when it enters a nested block: ``[]`` for a list, ``.NAME`` for a mapping."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _suffix(typing.get_args(annotation)[0])
    if origin in (list, tuple):
        return "[]" + _suffix(typing.get_args(annotation)[0])
    if origin is dict:
        return ".NAME" + _suffix(typing.get_args(annotation)[1])
    if origin in (typing.Union, types.UnionType):
        parts = [_suffix(a) for a in typing.get_args(annotation) if a is not type(None) and _models_in(a)]
        return parts[0] if parts else ""
    return ""


def blocks() -> dict[str, Block]:
    """Every model reachable from :func:`roots`, by class name, each with the paths where it appears. A root
    model is listed under its own root; any other under the root where it is met first (with the blocks nested
    in it). Two different classes may not share a name."""
    out: dict[str, Block] = {}
    root_of = {r.model: r.title for r in roots()}

    def visit(model: type[BaseModel], root: str, path: str) -> None:
        seen = out.get(model.__name__)
        if seen is not None:
            if seen.model is not model:
                raise ValueError(f"two schema classes named {model.__name__}: {seen.model} and {model}")
            if path not in seen.paths:
                seen.paths.append(path)
            return
        block = out[model.__name__] = Block(model, root_of.get(model, root), [path])
        for name, info in model.model_fields.items():
            for sub in _models_in(info.annotation):
                visit(sub, block.root, f"{path}.{name}{_suffix(info.annotation)}".lstrip("."))

    for r in roots():
        visit(r.model, r.title, "")
    return out


#: field names that mean something else in every block (a study's name is not a die's): never described from another
GENERIC_FIELDS = frozenset({"name", "description", "source", "kind", "count", "params", "compute", "input", "act"})


def descriptions(found: dict[str, Block]) -> dict[tuple[str, str], tuple[str, str]]:
    """Per (field name, type in words), the first description any block gives it and that block's name: a field a
    block repeats without a description of its own (a workload entry's ``seq``) is described as where it is defined.
    Only a field of the same name and type borrows, and never one of :data:`GENERIC_FIELDS` (a row's ``count`` is not
    a package's count of dies; a GEMM row's ``name`` is not a study's)."""
    out: dict[tuple[str, str], tuple[str, str]] = {}
    for name, b in found.items():
        for f, info in b.model.model_fields.items():
            key = (f, type_text(info.annotation))
            if info.description and f not in GENERIC_FIELDS and key not in out:
                out[key] = (info.description, name)
    return out


def type_text(annotation: Any) -> str:
    """A field's type in words: ``number``, ``list of integer``, ``a | b``, a link to a nested block."""
    if annotation is type(None):
        return "null"
    if annotation is Any:
        return "any"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{annotation.__name__.lower()})"
    simple = {bool: "true/false", int: "integer", float: "number", str: "text"}
    if annotation in simple:
        return simple[annotation]
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return type_text(args[0])
    if origin is typing.Literal:
        return " | ".join(f"`{a}`" for a in _literals(annotation))
    if origin in (typing.Union, types.UnionType):
        parts = [type_text(a) for a in args if a is not type(None)]
        text = " or ".join(parts)
        return f"{text} or null" if type(None) in args else text
    if origin is list or (origin is tuple and len(args) == 2 and args[1] is Ellipsis):
        return f"list of {type_text(args[0])}"
    if origin is tuple:
        return "[" + ", ".join(type_text(a) for a in args) + "]"
    if origin is dict:
        return f"mapping of {type_text(args[0])} to {type_text(args[1])}"
    return getattr(annotation, "__name__", str(annotation))


def _literals(annotation: Any) -> list[Any]:
    """The values of a (possibly nested) Literal."""
    out: list[Any] = []
    for a in typing.get_args(annotation):
        out.extend(_literals(a) if typing.get_origin(a) is typing.Literal else [a])
    return out


def limits_text(info: FieldInfo) -> str:
    """A field's bounds (``> 0``, ``<= 1``, ``>= 1 items``, a pattern) from its pydantic metadata (annotated-types
    constraints, read by their attribute names)."""
    words = []
    for m in info.metadata:
        for attr, sign in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")):
            if getattr(m, attr, None) is not None:
                words.append(f"{sign} {_number(getattr(m, attr))}")
        for attr, sign in (("min_length", ">="), ("max_length", "<=")):
            if getattr(m, attr, None) is not None:
                words.append(f"{sign} {getattr(m, attr)} {'items' if _is_seq(info.annotation) else 'characters'}")
        pattern = getattr(m, "pattern", None)
        if isinstance(pattern, str):
            words.append(f"matches `{pattern}`")
    return ", ".join(words)


def _is_seq(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_is_seq(a) for a in typing.get_args(annotation))
    return origin in (list, tuple, dict)


def _number(v: Any) -> str:
    if isinstance(v, float) and (abs(v) >= 1e5 or (v and abs(v) < 1e-3)):
        return f"{v:.3g}"
    return f"{v:g}" if isinstance(v, float) else str(v)


def default_text(info: FieldInfo) -> str:
    """``required``, or the default value (a factory's value; none shown as a dash)."""
    if info.is_required():
        return "required"
    value = info.default_factory() if info.default_factory is not None else info.default  # type: ignore[call-arg]
    if value is PydanticUndefined or value is None:
        return "—"
    if isinstance(value, BaseModel):
        return "defaults"
    if isinstance(value, str):
        return f"`{value}`" if value else "`\"\"`"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float | int):
        return _number(value)
    return f"`{value!r}`"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _doc(model: type[BaseModel]) -> str:
    """The first paragraph of a model's docstring (not the one it inherits)."""
    doc = model.__dict__.get("__doc__") or ""
    return " ".join(doc.strip().split("\n\n")[0].split())


def block_table(model: type[BaseModel], described: dict[tuple[str, str], tuple[str, str]] | None = None) -> list[str]:
    """One markdown table: a row per field of ``model`` (a field without a description of its own takes the one
    ``described`` gives its name and type, :func:`descriptions`, saying where it comes from)."""
    lines = ["| field | type | default | limits | unit | description |", "|---|---|---|---|---|---|"]
    for name, info in model.model_fields.items():
        text = info.description or ""
        key = (name, type_text(info.annotation))
        if not text and described and key in described and described[key][1] != model.__name__:
            text, owner = described[key]
            text = f"{text} (as in [{owner}](#{owner.lower()}))"
        lines.append("| " + " | ".join(_cell(c) for c in (
            f"`{info.alias or name}`", type_text(info.annotation), default_text(info), limits_text(info), unit_of(name),
            text)) + " |")
    return lines


def reference() -> str:
    """The whole of ``docs/reference.md``."""
    found = blocks()
    described = descriptions(found)
    out = [
        "# Field reference",
        "",
        "Every field of every input file, generated from the schemas that validate them (`dse/report/reference.py`;",
        "rewrite with `python -m dse.report.reference docs/reference.md`, and `tests/report/test_reference.py` fails",
        "when this file and the code differ). Every block is strict: an unknown key, a non-finite number, true/false",
        "where a number is expected or an integer above 2^53 is one `error: FILE: FIELD: got X; accepted: Y` line.",
        "The unit is the one the field's name carries (`_tflops`: TFLOP/s, `_mib`: MiB, ..., see",
        "`dse.units.UNIT_SUFFIXES`); inside the code every quantity is SI. Physical limits and why: [limits.md](limits.md).",
        "",
    ]
    for r in roots():
        out += [f"## {r.title}", "", f"Files: {r.files}. Root block: [{r.model.__name__}](#{r.model.__name__.lower()}).",
                ""]
        for name, b in found.items():
            if b.root != r.title:
                continue
            where = ", ".join(["the file itself"] * ("" in b.paths) + [f"`{p}`" for p in b.paths if p])
            out += [f"### {name}", "", f"Where: {where}." + (f" {_doc(b.model)}" if _doc(b.model) else ""), ""]
            out += [*block_table(b.model, described), ""]
    out += dram_part_table()
    return "\n".join(out).rstrip() + "\n"


def dram_part_table() -> list[str]:
    """The DRAM parts a main-memory level names (``memory[].generation``) and a study searches
    (``memory.<main>.generation``), from ``dse.hardware.dram_parts.GENERATIONS``."""
    from dse.hardware.dram_parts import GENERATIONS

    out = ["## DRAM parts", "",
           "The values of `memory[].generation` and of a searched `memory.<main>.generation` "
           "(`dse/hardware/dram_parts.py`): the energy a byte of the part costs; for a part a study can search, one "
           "stack as a design buys it (rated bandwidth, capacity, interface width: PHY and controller area x bits / "
           "1024, price per GB over the node file's `dram_usd_per_gb`).", "",
           "| part | kind | energy (pJ/bit) | stack bandwidth (GB/s) | stack capacity (GB) | interface (bits) | "
           "price (x node) | source |", "|---|---|---|---|---|---|---|---|"]
    for g in GENERATIONS:
        st = g.stack
        cells = ["—"] * 4 if st is None else [f"{st.stack_gbps:g}", f"{st.stack_gb:g}", str(st.io_bits),
                                             f"{st.price_factor:g}"]
        src = g.source + ("" if st is None else f"; stack: {st.source}")
        out.append(f"| `{g.name}` | {g.kind} | {g.pj_per_bit:g} | " + " | ".join(cells) + f" | {_cell(src)} |")
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m dse.report.reference [FILE]``: write the reference to FILE (default: print it)."""
    argv = sys.argv[1:] if argv is None else argv
    text = reference()
    if argv:
        from dse.yamlio import write_text

        write_text(Path(argv[0]), text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
