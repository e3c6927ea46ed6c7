import pandas as pd

from dse.validate.bands import family_table
from dse.validate.outputs import validation_document

ROWS = pd.DataFrame({"id": ["a", "b", "c"], "family": ["gemm", "gemm", "decode"], "metric": ["time_s"] * 3,
                     "measured": [1.0, 2.0, 3.0], "predicted": [1.1, 1.8, None], "error_pct": [10.0, -10.0, None],
                     "time_error_pct": [10.0, -10.0, None], "status": ["covered", "covered", "not covered"],
                     "fitted_into": ["", "", ""], "reason": ["", "", "no template"],
                     "hardware": ["a100-80gb", "h100-sxm", "a100-80gb"]})


def test_validation_document_is_the_results_the_families_and_the_scatter() -> None:
    d = validation_document(ROWS)
    assert d.body == () and d.files == ["validation.csv", "families.csv", "templates.csv", "chip_pairs.csv",
                                        "chip_pair_errors.csv", "validation.png"]
    assert d.tables[0].frame is ROWS
    pd.testing.assert_frame_equal(d.tables[1].frame, family_table(ROWS))
    fig = d.figures[0]
    assert fig.plot == "validation_scatter" and len(fig.data[0]) == 2  # covered rows only
    assert fig.options["band"] == (-8.0, 8.0)  # p10..p90 of the out-of-sample errors -10, +10


def test_no_covered_row_means_no_scatter() -> None:
    d = validation_document(ROWS.assign(status="not covered"))
    assert d.figures == () and [t.file for t in d.tables] == ["validation.csv", "families.csv", "templates.csv",
                                                              "chip_pairs.csv", "chip_pair_errors.csv"]
