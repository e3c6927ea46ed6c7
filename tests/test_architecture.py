"""Architecture rules checked on the source: no function in dse/ is longer than 100 lines (long
builders are split into block builders, issue 19)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dse"
MAX_LINES = 100


def long_functions(root: Path = PACKAGE, limit: int = MAX_LINES) -> list[str]:
    """``path:line name (N lines)`` of every function or method over ``limit`` lines
    (``end_lineno - lineno + 1``, decorators not counted)."""
    out = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = node.end_lineno - node.lineno + 1
                if n > limit:
                    out.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} ({n} lines)")
    return out


def test_no_function_in_dse_exceeds_100_lines() -> None:
    assert long_functions() == []


def test_the_check_finds_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"        x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "m.py").write_text(f"def short():\n    pass\n\n\nclass C:\n    def long(self):\n{body}\n")
    found = long_functions(tmp_path)
    assert len(found) == 1 and found[0].endswith(f"long ({MAX_LINES + 1} lines)")
    with pytest.raises(AssertionError):
        assert long_functions(tmp_path) == []


#: the knob's unit conversions and label, spelled by hand (they belong to ``dse.hardware.fields``: knob_args,
#: knob_values, Knob.label)
HAND_SPELLED = re.compile(r"\.dram_bandwidth(\[\w*\])?\s*/\s*(1e12|TERA)\b|\[\"dram_bandwidth_tbps\"\]\s*\*\s*(1e12|TERA)\b"
                          r"|\"DRAM bandwidth \(TB/s\)\"")


def hand_spelled_knob(root: Path = PACKAGE) -> list[str]:
    """``path:line`` of every hand-written TB/s <-> byte/s conversion or label of ``dram_bandwidth_tbps`` outside
    ``dse/hardware/fields.py`` (the walk from config to heatmap converts once each way, labels once)."""
    out = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).as_posix() == "hardware/fields.py":
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if HAND_SPELLED.search(line):
                out.append(f"{path.relative_to(root.parent)}:{i}")
    return out


def test_the_dram_bandwidth_knob_is_converted_and_labelled_only_by_its_record(tmp_path: Path) -> None:
    assert hand_spelled_knob() == []
    (tmp_path / "dse").mkdir()
    (tmp_path / "dse" / "m.py").write_text("x = d.dram_bandwidth / 1e12\ny = 'ok'\nz = d.dram_bandwidth[i] / TERA\n")
    assert hand_spelled_knob(tmp_path / "dse") == ["dse/m.py:1", "dse/m.py:3"]
