"""report.html renders offline: every figure embedded, every table, the config."""

from html.parser import HTMLParser
from pathlib import Path

from dse.report.html import markdown_to_html
from dse.report.write import write_results
from dse.study import run_study
from tests.conftest import SMALL_STUDY, write_config


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.imgs: list[dict] = []
        self.tables = 0
        self.pre = 0

    def handle_starttag(self, tag, attrs):  # noqa: ANN001
        if tag == "img":
            self.imgs.append(dict(attrs))
        elif tag == "table":
            self.tables += 1
        elif tag == "pre":
            self.pre += 1


def test_markdown_subset() -> None:
    out = markdown_to_html("# T\n\n- a **b**\n\n| x | y |\n|---|---|\n| 1 | 2 |\n")
    assert "<h1>T</h1>" in out and "<li>a <b>b</b></li>" in out and "<td>1</td><td>2</td>" in out


def test_study_report_embeds_every_figure_and_table(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, {**SMALL_STUDY, "output": {"plots": True, "heatmap_points": 5}})
    r = run_study(cfg, out=tmp_path / "r", progress=False, n_trials=8)
    write_results(r, plots_on=True)
    page = (r.folder / "report.html").read_text()
    p = _Collect()
    p.feed(page)
    pngs = sorted(f.name for f in r.folder.glob("*.png"))
    assert sorted(i["alt"] for i in p.imgs) == pngs
    assert all(i["src"].startswith("data:image/png;base64,") and len(i["src"]) > 1000 for i in p.imgs)
    md_tables = (r.folder / "summary.md").read_text().count("\n|---")
    assert p.tables == md_tables >= 3 and p.pre == 1 and "tiny" in page
    assert all((r.folder / f).with_suffix(".svg").is_file() for f in pngs)


def test_wide_tables_scroll_inside_the_page_with_their_first_column_kept(tmp_path) -> None:
    from dse.report.html import markdown_to_html

    md = "| candidate | " + " | ".join(f"col{i}" for i in range(40)) + " |\n|" + "---|" * 41 + "\n| a |" + " 1 |" * 40
    html = markdown_to_html(md)
    assert html.count('<div class="tw"><table>') == html.count("<table>") == 1
    from dse.report.html import STYLE

    assert ".tw{overflow-x:auto" in STYLE and "position:sticky" in STYLE
