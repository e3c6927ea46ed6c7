"""The one renderer: a :class:`dse.document.Document` -> CSV tables, figures (PNG + SVG), summary.md and a
self-contained report.html in a results folder (every file atomic)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dse.document import Document, Figure
from dse.report.html import write_report
from dse.report.summary import _md_table
from dse.yamlio import atomic_write, write_text


def markdown(doc: Document) -> str:
    """summary.md: the body's text as is, each DataFrame as a pipe table (``_md_table``, 4 significant digits)."""
    return "".join(part if isinstance(part, str) else _md_table(part) for part in doc.body)


def draw(fig: Figure, folder: Path) -> Path:
    """``dse.report.plots.<fig.plot>(*fig.data, folder / fig.file, fig.title, **fig.options)``."""
    from dse.report import plots

    fn = getattr(plots, fig.plot, None)
    if fn is None or fig.plot.startswith("_") or not callable(fn):
        raise ValueError(f"figure {fig.file}: got plot {fig.plot!r}; accepted: a function of dse.report.plots")
    return fn(*fig.data, folder / fig.file, fig.title, **fig.options)


def write_table(frame: pd.DataFrame, path: Path, blank_infinite: bool = False) -> Path:
    """``frame`` as CSV without its index (atomic); with ``blank_infinite`` infinities become empty cells."""
    if blank_infinite:
        num = frame.select_dtypes(include="number")
        if len(num.columns) and np.isinf(num.to_numpy(dtype=float)).any():
            frame = frame.copy()
            frame[num.columns] = num.replace([np.inf, -np.inf], np.nan)
    return atomic_write(path, lambda p: frame.to_csv(p, index=False))


def render(doc: Document, folder: Path | str) -> str:
    """Write ``doc`` into ``folder`` (created): its tables, its figures, and, when it has a body, summary.md and
    report.html (the summary, each figure embedded, the config); returns the summary's Markdown."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for t in doc.tables:
        write_table(t.frame, folder / t.file, t.blank_infinite)
    for f in doc.figures:
        draw(f, folder)
    md = markdown(doc)
    if doc.body:  # a Document without a body is files only (no summary.md, no report.html)
        write_text(folder / "summary.md", md)
        if doc.html:
            write_report(folder, doc.title, md, [f.file for f in doc.figures], doc.config_text)
    return md
