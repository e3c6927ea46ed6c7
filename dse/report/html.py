"""A self-contained ``report.html`` from a run's summary.md, figures and config (readable offline:
figures are embedded as base64 PNG, no external assets)."""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

from dse.yamlio import write_text

STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3}td:first-child{text-align:left}
.tw{overflow-x:auto;max-width:100%}.tw td:first-child,.tw th:first-child{position:sticky;left:0;background:#fff}
.tw th:first-child{background:#f3f3f3}img{max-width:100%;border:1px solid #eee;margin:0.5em 0}
pre{background:#f7f7f7;padding:1em;overflow-x:auto;font-size:12px}code{background:#f3f3f3;padding:0 3px}"""


def _inline(text: str) -> str:
    t = html.escape(text)
    t = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", t)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", t)


def markdown_to_html(md: str) -> str:
    """The small Markdown subset summary.md uses: headings, bullets, pipe tables, paragraphs."""
    out: list[str] = []
    lines = md.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            out.append(f"<h{level}>{_inline(line.lstrip('#').strip())}</h{level}>")
        elif line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                if not re.fullmatch(r"\|(?:-+\|)+", lines[i].replace(" ", "")):
                    rows.append([c.strip() for c in lines[i].strip("|").split("|")])
                i += 1
            head, body = rows[0], rows[1:]
            out.append('<div class="tw"><table><tr>' + "".join(f"<th>{_inline(c)}</th>" for c in head) + "</tr>"
                       + "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>" for r in body)
                       + "</table></div>")
            continue
        elif line.startswith("- "):
            items = []
            while i < len(lines) and lines[i].startswith("- "):
                items.append(f"<li>{_inline(lines[i][2:])}</li>")
                i += 1
            out.append("<ul>" + "".join(items) + "</ul>")
            continue
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
        i += 1
    return "\n".join(out)


def write_report(folder: Path, title: str, summary_md: str, figures: list[str], config_text: str | None = None) -> Path:
    """report.html in ``folder``: the summary, every figure embedded, and the config."""
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
             f"<style>{STYLE}</style></head><body>", markdown_to_html(summary_md), "<h2>Figures</h2>"]
    for name in figures:
        data = base64.b64encode((folder / name).read_bytes()).decode()
        parts.append(f"<figure><img alt='{html.escape(name)}' src='data:image/png;base64,{data}'>"
                     f"<figcaption>{html.escape(name)}</figcaption></figure>")
    if config_text is not None:
        parts.append(f"<h2>Config</h2><pre>{html.escape(config_text)}</pre>")
    parts.append("</body></html>")
    return write_text(folder / "report.html", "\n".join(parts))
