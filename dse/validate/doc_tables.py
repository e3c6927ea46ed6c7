"""Rewrite the NPU tables of ``docs/npu_validation.md`` from ``dse validate``'s own results.

``python -m dse.validate.doc_tables docs/npu_validation.md`` reruns the suite over the shipped measurements and
replaces, in place, the Markdown table under each of the two headings below with the figures
``dse.validate.bands.template_table`` (NPU chip x family: rows, out-of-sample rows, median and max |time error|) and
``dse.validate.ratios.pair_table`` (chip pairs with an NPU first: pairs, median and max |ratio error|, median signed
ratio error) compute; the prose around them is left alone. ``tests/validate/test_suite.py`` checks the file against
the same functions, so a table this writes is one the test accepts.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pandas as pd

from dse.validate.bands import template_table
from dse.validate.ratios import chip_pairs, pair_table
from dse.validate.suite import load_measurements, run_suite

FAMILY_HEADING = "## Error per chip and family"
PAIR_HEADING = "## Cross-chip speedups"


def _pct(v: float) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.1f} %"


def family_rows(results: pd.DataFrame, chip_order: list[str] | None = None) -> list[str]:
    """The chip x family table of the NPU rows, as Markdown lines (header included): chips in ``chip_order`` (then
    any other by name), families by name."""
    t = template_table(results[results["style"] == "npu"])
    t = t[t["family"] != "all"]
    order = {c: i for i, c in enumerate(chip_order or [])}
    t = t.assign(_c=t["hardware"].map(lambda c: (order.get(c, len(order)), c))).sort_values(["_c", "family"])
    out = ["| chip | family | rows | out of sample | median | max |", "|---|---|---|---|---|---|"]
    for _, r in t.iterrows():
        out.append(f"| {r['hardware']} | {r['family']} | {int(r['rows'])} | {int(r['out_of_sample'])} | "
                   f"{_pct(float(r['median_abs_time_error_pct']))} | {_pct(float(r['max_abs_time_error_pct']))} |")
    return out


def pair_rows(results: pd.DataFrame) -> list[str]:
    """The chip-pair table (pairs whose first chip is an NPU), as Markdown lines (header included)."""
    p = pair_table(chip_pairs(results))
    npu = set(results.loc[results["style"] == "npu", "hardware"])
    p = p[p["chip_a"].isin(npu)]
    out = ["| chip a | chip b | pairs | median abs ratio error | max abs ratio error | median ratio error |",
           "|---|---|---|---|---|---|"]
    for _, r in p.iterrows():
        out.append(f"| {r['chip_a']} | {r['chip_b']} | {int(r['pairs'])} | {r['median_abs_ratio_error_pct']:.1f} % | "
                   f"{r['max_abs_ratio_error_pct']:.1f} % | {r['median_ratio_error_pct']:.1f} % |")
    return out


def replace_table(lines: list[str], heading: str, table: list[str]) -> list[str]:
    """``lines`` with the first Markdown table after the line starting with ``heading`` replaced by ``table``
    (a ``ValueError`` when the heading or its table is missing)."""
    start = next((i for i, ln in enumerate(lines) if ln.startswith(heading)), None)
    if start is None:
        raise ValueError(f"no line starting with {heading!r}")
    first = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("|")), None)
    if first is None:
        raise ValueError(f"no table after {heading!r}")
    end = first
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return lines[:first] + table + lines[end:]


def _chips_shown(lines: list[str]) -> list[str]:
    """The chips of the family table already in ``lines``, in their order (the rewrite keeps it)."""
    start = next((i for i, ln in enumerate(lines) if ln.startswith(FAMILY_HEADING)), len(lines))
    chips: list[str] = []
    for ln in lines[start + 1:]:
        if ln.startswith("## "):
            break
        cells = [c.strip() for c in ln.strip("|").split("|")]
        if ln.startswith("|") and len(cells) == 6 and cells[0] not in ("chip", "---") and cells[0] not in chips:
            chips.append(cells[0])
    return chips


def rewrite(path: Path, results: pd.DataFrame | None = None) -> None:
    """Replace both tables of ``path`` (results: ``run_suite`` over the shipped measurements unless given)."""
    res = run_suite(load_measurements()) if results is None else results
    lines = path.read_text().splitlines()
    lines = replace_table(lines, FAMILY_HEADING, family_rows(res, _chips_shown(lines)))
    lines = replace_table(lines, PAIR_HEADING, pair_rows(res))
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(path)


if __name__ == "__main__":  # pragma: no cover - a maintenance command
    rewrite(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/npu_validation.md"))
