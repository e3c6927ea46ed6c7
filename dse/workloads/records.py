"""Named data records of the workloads layer: one YAML file a record, ``workloads/<kind>/NAME.yaml`` (serving
engines, training frameworks), validated by a strict model; a record's ``name`` must be its file's name."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from dse.errors import DseError, from_validation_error
from dse.units import repo_root

R = TypeVar("R", bound=BaseModel)


def records_dir(kind: str) -> Path:
    """``workloads/<kind>/`` of the data root (``dse.units.repo_root``)."""
    return repo_root() / "workloads" / kind


def record_names(kind: str) -> list[str]:
    """The shipped record names of ``kind``, sorted."""
    return sorted(p.stem for p in records_dir(kind).glob("*.yaml"))


def load_record(kind: str, name: str, model: type[R], field: str) -> R:
    """The record ``workloads/<kind>/NAME.yaml`` as ``model``; an unknown name is one ``DseError`` naming the
    scenario ``field`` that gave it and the shipped names, a bad file one naming the file and its field."""
    from dse.yamlio import is_file, load_yaml

    path = records_dir(kind) / f"{name}.yaml"
    if "/" in name or not is_file(path):
        raise DseError(f"got {name!r}; accepted: {', '.join(record_names(kind)) or 'none shipped'}", field=field)
    try:
        rec = model.model_validate(load_yaml(path))
    except ValidationError as exc:
        raise from_validation_error(exc, file=str(path), model=model) from None
    if getattr(rec, "name", name) != name:
        raise DseError(f"got {rec.name!r}; accepted: the file's own name {name!r} (a record is found by its file "
                       "name)", file=str(path), field="name")
    return rec
