from pathlib import Path

import pytest

from dse.errors import DseError
from dse.yamlio import load_yaml, write_text


def test_duplicate_key_is_an_error_naming_file_key_and_lines(tmp_path: Path) -> None:
    p = tmp_path / "dup.yaml"
    p.write_text("a: 1\nb:\n  c: 2\n  c: 3\n")
    with pytest.raises(DseError) as ei:
        load_yaml(p)
    msg = str(ei.value)
    assert str(p) in msg and "'c'" in msg and "line 4" in msg and "line 3" in msg


def test_loader_never_constructs_python_objects(tmp_path: Path) -> None:
    p = tmp_path / "evil.yaml"
    p.write_text("x: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(DseError, match="not valid YAML"):
        load_yaml(p)


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(DseError, match="file not found"):
        load_yaml(tmp_path / "nope.yaml")


def test_atomic_write_replaces_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    write_text(target, "first")
    write_text(target, "second")
    assert target.read_text() == "second"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_atomic_write_failure_keeps_the_old_file(tmp_path: Path) -> None:
    from dse.yamlio import atomic_write

    target = tmp_path / "keep.txt"
    write_text(target, "old")

    def boom(p: Path) -> None:
        p.write_text("partial")
        raise RuntimeError("crash mid-write")

    with pytest.raises(RuntimeError):
        atomic_write(target, boom)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


@pytest.mark.parametrize(("patch", "needle"), [
    ({"name": ".."}, "name: got '..'; accepted: a string matching"),
    ({"name": "."}, "name: got '.'; accepted: a string matching"),
    ({"name": "x" * 65}, "accepted: a string matching"),
    ({"search": {"n_trials": True}}, "search.n_trials: got True; accepted: a number, not true/false"),
    ({"workloads": [{"name": "resnet50", "weight": float("inf")}]}, "workloads.0.weight: got inf; accepted: a finite"),
    ({"workloads": [{"name": "resnet50", "weight": float("nan")}]}, "workloads.0.weight: got nan; accepted: a finite"),
])
def test_names_that_leave_their_folder_bools_as_numbers_and_non_finite_floats_are_one_line(tmp_path, patch, needle) -> None:
    import copy

    import yaml

    from dse.config import load_study
    from dse.errors import DseError
    from tests.conftest import SMALL_STUDY

    data = copy.deepcopy(SMALL_STUDY)
    for k, v in patch.items():
        if isinstance(v, dict):
            data[k].update(v)
        else:
            data[k] = v
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(DseError) as ei:
        load_study(path)
    assert needle in str(ei.value) and "\n" not in str(ei.value)
    assert list(tmp_path.iterdir()) == [path]  # nothing written


def test_alias_bombs_deep_nesting_and_binary_files_are_one_line(tmp_path) -> None:
    levels = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    prev = "a"
    for c in "bcdefghij":  # 9^10 strings once expanded
        levels.append(f"{c}: &{c} [" + ", ".join([f"*{prev}"] * 9) + "]")
        prev = c
    cases = {"bomb.yaml": "\n".join(levels) + "\n", "deep.yaml": "[" * 3000 + "]" * 3000 + "\n"}
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "bin.yaml").write_bytes(b"\xff\xfe\x00name: x\n")
    needles = {"bomb.yaml": "once its aliases are expanded", "deep.yaml": "nested too deeply",
               "bin.yaml": "not UTF-8"}
    for name, needle in needles.items():
        with pytest.raises(DseError) as ei:  # without the guard the bomb expands to 3.5e9 strings
            load_yaml(tmp_path / name)
        assert needle in str(ei.value) and name in str(ei.value) and "\n" not in str(ei.value)
    small = tmp_path / "alias.yaml"
    small.write_text("x: &x {a: 1}\ny: *x\n")
    assert load_yaml(small) == {"x": {"a": 1}, "y": {"a": 1}}  # ordinary aliases still work


def test_load_spec_passes_through_builds_reads_and_looks_up(tmp_path: Path) -> None:
    """The four ways a template or system is named: an object, a mapping, a YAML path (the file reaches the
    builder), a name."""
    from dse.yamlio import load_spec

    calls: list[tuple[dict, str | None]] = []

    def build(data, file=None):
        calls.append((dict(data), file))
        return frozenset(data.items())

    def named(name: str):
        return frozenset({("name", name)})

    given = frozenset({("a", 1)})
    assert load_spec(given, frozenset, build, named) is given and not calls
    assert load_spec({"a": 2}, frozenset, build, named) == frozenset({("a", 2)}) and calls[-1] == ({"a": 2}, None)
    path = tmp_path / "x.yaml"
    path.write_text("a: 3\n")
    assert load_spec(str(path), frozenset, build, named) == frozenset({("a", 3)})
    assert calls[-1] == ({"a": 3}, str(path))
    assert load_spec("h100-sxm", frozenset, build, named) == frozenset({("name", "h100-sxm")})
    assert len(calls) == 2
