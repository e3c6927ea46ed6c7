from pathlib import Path

import pandas as pd
import pytest

from dse.document import Document, Figure, Table
from dse.report.render import draw, markdown, render

FRAME = pd.DataFrame({"candidate": ["a", "b"], "area_mm2": [412.5, 398.25]})


def doc(**kw) -> Document:
    parts = {"a": {"cores": 300.0, "sram": 112.5}, "b": {"cores": 280.0, "sram": 118.25}}
    fig = Figure("area.png", "stacked_bars", (parts,), "test: die area by component", {"ylabel": "area (mm²)"})
    return Document("dse test", ("# Test\n\n", FRAME, "\n\nFiles: `t.csv`\n"), (Table("t.csv", FRAME),), (fig,), **kw)


def test_markdown_renders_frames_as_pipe_tables_in_place() -> None:
    md = markdown(doc())
    assert md.startswith("# Test\n\n| candidate | area_mm2 |\n|---|---|\n| a | 412.5 |\n| b | 398.2 |")
    assert md.endswith("\n\nFiles: `t.csv`\n")


def test_render_writes_tables_figures_summary_and_html(tmp_path: Path) -> None:
    d = doc(config_text="name: <tiny>\n")
    md = render(d, tmp_path / "out")
    out = tmp_path / "out"
    assert d.files == ["t.csv", "area.png"]
    pd.testing.assert_frame_equal(pd.read_csv(out / "t.csv"), FRAME)
    assert (out / "area.png").stat().st_size > 1000 and (out / "area.svg").is_file()
    assert (out / "summary.md").read_text() == md
    html = (out / "report.html").read_text()
    assert "<title>dse test</title>" in html and html.count("data:image/png;base64,") == 1
    assert "<td>398.2</td>" in html and "name: &lt;tiny&gt;" in html
    assert sorted(p.name for p in out.iterdir()) == ["area.png", "area.svg", "report.html", "summary.md", "t.csv"]


@pytest.mark.parametrize("plot", ["no_such_plot", "_save", "TERA"])
def test_a_figure_must_name_a_public_plot_function(tmp_path: Path, plot: str) -> None:
    with pytest.raises(ValueError, match=f"got plot '{plot}'"):
        draw(Figure("x.png", plot, (), "t"), tmp_path)
    assert not (tmp_path / "x.png").exists()


def test_feature_documents_render_what_the_features_computed(tmp_path: Path) -> None:
    from dse.hardware.templates import load_hardware
    from dse.whatif_stages import load_whatif, run_whatif, whatif_document
    from tests.conftest import write_config
    from tests.test_whatif import WHATIF_FILE

    spec, name, hw = load_whatif(write_config(tmp_path, WHATIF_FILE, "whatif.yaml"))
    res = run_whatif(spec, hw)
    d = whatif_document(res, name)
    assert d.files == ["whatif.csv", "whatif.png"] and d.tables[0].frame is res.table
    assert load_hardware("npu-7nm").name == res.hardware.name
    md = render(d, tmp_path / "w")
    assert "| stage | transform | FLOPs |" in md and (tmp_path / "w" / "whatif.png").is_file()


def test_a_streamed_sweep_document_lists_its_parquet_and_writes_no_csv(tmp_path: Path) -> None:
    from dse.grid import BEST_COLUMNS, sweep_document

    best = {"m": pd.Series({c: 1.0 for c in BEST_COLUMNS} | {"mix": "m", "binding": "hbm"})}
    d = sweep_document("t", "sweep t: 4 designs", best, {"m": {"hbm": 3, "array": 1}}, None, csv=False,
                       written=("sweep.parquet",))
    assert d.tables == () and d.figures == ()
    md = render(d, tmp_path)
    assert "| m | 0.25 | 0.75 |" in md or "| m | 0.75 | 0.25 |" in md
    assert md.endswith("- `sweep.parquet`\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "summary.md"]


def test_a_document_without_a_body_writes_only_its_files(tmp_path: Path) -> None:
    d = Document("files only", (), (Table("t.csv", FRAME),))
    assert render(d, tmp_path) == ""
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"]


def test_html_false_writes_the_summary_without_report_html(tmp_path: Path) -> None:
    render(Document("no html", ("# x\n",), html=False), tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["summary.md"]
