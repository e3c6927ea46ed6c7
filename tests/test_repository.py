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


def _anchors(markdown: str) -> set[str]:
    """GitHub's anchor for every heading of a markdown text: lower case, punctuation dropped, spaces to hyphens."""
    import re

    out = set()
    fenced = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"^#{1,6} (.+?)\s*$", line)):
            out.add(re.sub(r"[^\w\- ]", "", m[1].lower()).replace(" ", "-"))
    return out


def test_the_readme_is_short() -> None:
    """Issue 34: the README is what dse is, set-up, a short tour and where the docs are; the rest lives in docs/."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, len(lines)


def test_every_doc_the_readme_and_the_docs_link_exists() -> None:
    """Every docs/ file the README names (a markdown link or a plain ``docs/NAME.md``), and every relative link
    between docs/*.md files, points at a file that exists, and an ``#anchor`` at one of that file's headings."""
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"\b(docs/[\w./-]+?\.md)(#[\w-]+)?\b", readme))
    named |= {(t, a) for t, a in re.findall(r"\]\((docs/[^)#\s]+)(#[\w-]+)?\)", readme)}
    assert {t for t, _ in named} >= {"docs/user_guide.md", "docs/validation.md"}, named
    links = [("README.md", target, anchor) for target, anchor in named]
    for doc in (ROOT / "docs").glob("*.md"):
        for target, anchor in re.findall(r"\]\(([^)#\s:]*)(#[\w-]+)?\)", doc.read_text(encoding="utf-8")):
            links.append((f"docs/{doc.name}", f"docs/{target}" if target else f"docs/{doc.name}", anchor))
    broken = []
    for source, target, anchor in links:
        path = ROOT / target
        if not path.exists():
            broken.append(f"{source}: {target} does not exist")
        elif anchor and anchor[1:] not in _anchors(path.read_text(encoding="utf-8")):
            broken.append(f"{source}: {target}{anchor}: no such heading")
    assert broken == []
    listed = set(re.findall(r"^- \[(docs/[\w.-]+\.md)\]", readme, flags=re.M))
    assert {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")} <= listed, \
        "list every docs/*.md in the README's 'Where the docs are'"


def test_the_readme_study_lines_are_what_the_default_study_prints(tmp_path, capsys) -> None:
    """The README's tour quotes ``python -m dse.run configs/npu.yaml``: its score, best-design and workload lines are
    the ones the default study prints today (its score had kept 1.6625x when a model change made it 1.6623x)."""
    from dse.cli import main

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("$ python -m dse.run configs/npu.yaml\n", 1)[1].split("```", 1)[0]
    shown = [" ".join(line.split()) for line in block.splitlines() if line.strip() and "..." not in line
             and not line.strip().startswith("results:")]
    assert len(shown) >= 4
    assert main(["run", str(ROOT / "configs" / "npu.yaml"), "--out", str(tmp_path), "--quiet", "--no-plots"]) == 0
    printed = {" ".join(line.split()) for line in capsys.readouterr().out.splitlines()}
    assert [line for line in shown if line not in printed] == []
