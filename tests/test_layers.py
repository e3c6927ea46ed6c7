"""The layer walls of ``dse/`` (docs/architecture.md, "Layers"): no import runs back up a layer, no cycles.

Every ``import`` / ``from ... import`` in every module counts, lazy ones inside functions and
``TYPE_CHECKING`` blocks included (found with ``ast``, not by importing). A module may import its own
layer or any layer below; the few known upward imports are listed in ``ALLOWED`` with the reason, and
the list may only shrink (an entry no longer needed fails too).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "dse"

#: bottom to top; a module's layer is the first entry whose name is the module or a package above it
LAYERS: list[tuple[str, ...]] = [
    ("dse.units", "dse.errors", "dse.yamlio", "dse._version", "dse.strict", "dse.document", "dse.limits"),  # base
    ("dse.hardware",),  # templates, designs, systems, collectives, energy
    ("dse.workloads",),  # operator tables, plans, mixes (no design)
    ("dse.predict",),  # roofline, traffic, network, power cap; operator intensity on a design
    ("dse.validate",),  # the predictor against measurements; error bands
    ("dse.cost",),  # area, cost, power
    ("dse.score",),  # speedup score, objectives, constraints
    ("dse.config", "dse.search.samplers"),  # the study file (accepted values come from score / workloads /
    # the sampler registry, which imports nothing of dse)
    ("dse.search",),  # space, storage, optuna driver
    ("dse.study", "dse.inputs"),  # one study: context, scorer, results folder and the input files it copies
    ("dse.sensitivity", "dse.grid", "dse.comparison", "dse.whatif_stages", "dse.robustness", "dse.plan_search"),  # features
    ("dse.report", "dse.explore"),  # renderer, plots, study report; the browser explorer
    ("dse.batch", "dse.api", "dse"),  # public API (``dse`` is the package's __init__)
    ("dse.cli", "dse.run", "dse.__main__"),  # entry points
]

#: (importer, imported) upward imports still present, each with the reason it stays for now
ALLOWED: dict[tuple[str, str], str] = {}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def imports(path: Path, name: str) -> set[str]:
    """Every ``dse`` module name the file imports (``from a import b``: ``a.b`` when that is a module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{a.name}" for a in node.names)
    return {t for t in found if t == "dse" or t.startswith("dse.")}


def resolve(target: str, known: set[str]) -> str | None:
    """The module a dotted import name refers to (the longest known prefix)."""
    parts = target.split(".")
    for k in range(len(parts), 0, -1):
        if ".".join(parts[:k]) in known:
            return ".".join(parts[:k])
    return None


def layer_of(module: str) -> int:
    best, found = -1, None
    for i, names in enumerate(LAYERS):
        for n in names:
            if (module == n or module.startswith(n + ".")) and len(n) > best:
                best, found = len(n), i
    if found is None:
        raise KeyError(module)
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    g: dict[str, set[str]] = {}
    for name, path in mods.items():
        targets = {resolve(t, known) for t in imports(path, name)}
        g[name] = {t for t in targets if t and t != name}
    return g


def test_every_module_has_a_layer() -> None:
    missing = []
    for m in modules():
        try:
            layer_of(m)
        except KeyError:
            missing.append(m)
    assert not missing, f"add these modules to LAYERS (and docs/architecture.md): {missing}"


def test_no_import_runs_up_a_layer() -> None:
    upward = sorted((src, dst) for src, dsts in graph().items() for dst in dsts
                    if layer_of(dst) > layer_of(src) and (src, dst) not in ALLOWED)
    assert not upward, "\n".join(f"{s} (layer {layer_of(s)}) imports {d} (layer {layer_of(d)})" for s, d in upward)


def test_allowed_exceptions_are_still_needed() -> None:
    g = graph()
    stale = [edge for edge in ALLOWED if edge[1] not in g.get(edge[0], set())]
    assert not stale, f"remove from ALLOWED (the import is gone): {stale}"
    assert all(layer_of(d) > layer_of(s) for s, d in ALLOWED), "ALLOWED lists only upward imports"


def find_cycle(g: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``g`` (depth-first, colours), or None."""
    colour: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        colour[n] = 1
        stack.append(n)
        for m in sorted(g.get(n, ())):
            if colour.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in colour and (c := visit(m)):
                return c
        colour[n] = 2
        stack.pop()
        return None

    for n in sorted(g):
        if n not in colour and (c := visit(n)):
            return c
    return None


def test_no_import_cycles() -> None:
    g = {s: {d for d in ds if (s, d) not in ALLOWED} for s, ds in graph().items()}
    cycle = find_cycle(g)
    assert cycle is None, " -> ".join(cycle or [])


def test_the_checks_see_lazy_imports_and_catch_an_upward_one(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from dse.report.plots import finish\n    import dse.study\n    from . import x\n")
    got = imports(f, "dse.workloads.m")
    assert {"dse.report.plots", "dse.study", "dse.workloads.x"} <= got
    assert layer_of("dse.report.plots") > layer_of("dse.workloads.m")
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def documented_layers() -> list[tuple[str, ...]]:
    """The numbered list under "## Layers" in docs/architecture.md: the backticked names before any "(".
    """
    import re

    doc = (ROOT.parent / "docs" / "architecture.md").read_text()
    section = doc.split("## Layers", 1)[1].split("\n## ", 1)[0]
    return [tuple(re.findall(r"`([\w.]+)`", line.split("(", 1)[0]))
            for line in section.splitlines() if re.match(r"\d+\. ", line)]


def test_the_documented_layers_are_the_checked_ones() -> None:
    assert documented_layers() == LAYERS
