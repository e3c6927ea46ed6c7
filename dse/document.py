"""A feature's report as data: what ``dse compare``, ``dse whatif``, ``dse sweep`` and a study computed,
once, for ``dse.report.render`` to write as CSV, Markdown and HTML.

A feature module builds a :class:`Document` and imports nothing from ``dse/report/`` (docs/architecture.md,
"Layers"); the entry point (CLI or API) passes it to the renderer. Tables carry their units in the column
names; a figure is a spec (which ``dse.report.plots`` function draws it, from which data), so the feature
needs no plotting library.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd


@dataclass(frozen=True)
class Table:
    """A table written as ``file`` (CSV, no index) in the results folder; with ``blank_infinite``
    infinities become empty cells."""

    file: str
    frame: pd.DataFrame
    blank_infinite: bool = False


@dataclass(frozen=True)
class Figure:
    """A figure the renderer draws as ``file`` (PNG, SVG next to it) by calling
    ``dse.report.plots.<plot>(*data, folder / file, title, **options)``."""

    file: str
    plot: str
    data: tuple[Any, ...]
    title: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Document:
    """One report: ``title`` (of report.html), ``body`` (summary.md: Markdown text and tables, in order; a
    DataFrame is rendered as a pipe table; empty: no summary.md and no report.html), the ``tables`` written
    as CSV, the ``figures`` drawn, and the config text shown at the end of report.html."""

    title: str
    body: tuple[str | pd.DataFrame, ...]
    tables: tuple[Table, ...] = ()
    figures: tuple[Figure, ...] = ()
    config_text: str | None = None
    html: bool = True  #: write report.html next to summary.md

    @property
    def files(self) -> list[str]:
        """The files the renderer writes besides summary.md and report.html (figures: PNG; SVG next to each)."""
        return [t.file for t in self.tables] + [f.file for f in self.figures]
