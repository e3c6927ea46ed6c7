"""The repository stands alone: nothing points outside it."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("dse", "docs", "workloads", "hw_templates", "configs", "experiments", "benchmarks", "validation", "tests")


def test_no_file_points_to_a_folder_outside_the_repository() -> None:
    needle = "../" + "shared"  # spelled in two parts so this file does not match itself
    offenders = []
    for path in [ROOT / "README.md", *(p for f in FOLDERS for p in (ROOT / f).rglob("*") if p.is_file())]:
        if path.suffix in (".py", ".md", ".yaml", ".yml", ".csv", ".toml", ".txt") and needle in path.read_text(
                encoding="utf-8", errors="replace"):
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_the_reference_figures_the_project_cites_are_in_docs() -> None:
    for name in ("hardware.csv", "area_cost.csv", "model_flops.csv", "measured_calibration.csv", "README.md"):
        assert (ROOT / "docs" / "reference" / name).is_file(), name
    assert (ROOT / "docs" / "design.md").is_file()
