"""Suites: named workload mixes with weights (``workloads/suites/*.yaml``), plus ``all`` = every
library architecture at its default scenario, weight 1 each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dse.errors import DseError
from dse.workloads.library import available, workloads_dir
from dse.yamlio import is_file, load_yaml


def suites_dir() -> Path:
    return workloads_dir() / "suites"


def list_suites() -> list[str]:
    return sorted(["all", *(p.stem for p in suites_dir().glob("*.yaml"))])


def load_suite(name: str) -> list[dict[str, Any]]:
    """Entries ``{name, weight, **scenario}`` of a suite."""
    if name == "all":
        return [{"name": n, "weight": 1.0} for n in available()]
    path = suites_dir() / f"{name}.yaml"
    if not is_file(path):
        raise DseError(f"unknown suite {name!r}; accepted: {', '.join(list_suites())}")
    data = load_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("workloads"), list) or not data["workloads"]:
        raise DseError("accepted: a mapping with name, description, source and a non-empty workloads list",
                       file=str(path))
    entries = []
    for i, e in enumerate(data["workloads"]):
        if not isinstance(e, dict) or "name" not in e:
            raise DseError(f"entry {i} needs a name", file=str(path), field=f"workloads.{i}")
        entries.append({"weight": 1.0, **e})
    return entries
