"""What ``dse validate`` writes, as a :class:`dse.document.Document` (files only: no summary): the suite's
results (validation.csv), the error per family (families.csv), per template and family (templates.csv) and,
when a row is covered, the predicted vs measured scatter (validation.png, with the out-of-sample p10..p90 error band)."""

from __future__ import annotations

import pandas as pd

from dse.document import Document, Figure, Table
from dse.validate.bands import family_table, template_table
from dse.validate.ratios import chip_pairs, pair_table
from dse.validate.suite import scatter_inputs


def validation_document(results: pd.DataFrame) -> Document:
    """validation.csv, families.csv and the scatter of ``results`` (``dse.validate.suite.run_suite``)."""
    figures = ()
    if (results["status"] == "covered").any():
        covered, metrics, band = scatter_inputs(results)
        figures = (Figure("validation.png", "validation_scatter", (covered, metrics),
                          "predicted vs measured (validation/measurements.csv)", {"band": band}),)
    tables = (Table("validation.csv", results), Table("families.csv", family_table(results)),
              Table("templates.csv", template_table(results)),
              Table("chip_pairs.csv", chip_pairs(results)), Table("chip_pair_errors.csv", pair_table(chip_pairs(results))))
    return Document("dse validate", (), tables, figures)
