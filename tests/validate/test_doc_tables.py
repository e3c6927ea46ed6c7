"""dse.validate.doc_tables: the NPU tables of docs/npu_validation.md rewritten from the suite's own results."""

from pathlib import Path

import pytest

from dse.validate.doc_tables import FAMILY_HEADING, PAIR_HEADING, replace_table, rewrite


def test_a_table_is_replaced_under_its_heading_and_the_prose_is_kept() -> None:
    lines = ["# t", f"{FAMILY_HEADING} (x)", "", "| a |", "|---|", "| 1 |", "", "prose", f"{PAIR_HEADING}", "",
             "| b |", "|---|", "| 2 |"]
    out = replace_table(lines, FAMILY_HEADING, ["| a |", "|---|", "| 9 |", "| 10 |"])
    assert out == ["# t", f"{FAMILY_HEADING} (x)", "", "| a |", "|---|", "| 9 |", "| 10 |", "", "prose",
                   f"{PAIR_HEADING}", "", "| b |", "|---|", "| 2 |"]
    with pytest.raises(ValueError, match="no line starting with"):
        replace_table(["no heading"], FAMILY_HEADING, [])


def test_rewriting_the_shipped_doc_changes_nothing(tmp_path: Path, shipped_results) -> None:
    """The shipped tables are the ones the rewrite produces (tests/validate/test_suite.py checks their figures)."""
    doc = Path(__file__).resolve().parents[2] / "docs" / "npu_validation.md"
    copy = tmp_path / "npu_validation.md"
    copy.write_text(doc.read_text())
    rewrite(copy, shipped_results.copy())
    assert copy.read_text() == doc.read_text()
