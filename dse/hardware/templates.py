"""Find, load and validate hardware templates and process nodes (validate first, then build)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from dse.errors import DseError, _short, did_you_mean, from_validation_error
from dse.hardware.schema import Hardware, Node
from dse.units import repo_root
from dse.yamlio import is_file, load_spec, load_yaml


def templates_dir() -> Path:
    return repo_root() / "hw_templates"


def list_templates() -> list[str]:
    """Names of the shipped hardware templates."""
    return sorted(p.stem for p in templates_dir().glob("*.yaml"))


def list_nodes() -> list[str]:
    return sorted(p.stem for p in (templates_dir() / "nodes").glob("*.yaml"))


def hardware_from_mapping(data: Any, *, file: str | None = None, prefix: str = "") -> Hardware:
    """Validate a mapping as a :class:`Hardware`; errors are one-line :class:`DseError`."""
    if not isinstance(data, Mapping):
        raise DseError(f"got {'an empty file' if data is None else type(data).__name__}; accepted: a mapping (hardware "
                       "template)", file=file)
    if "compute" not in data and ({"workloads", "mixes", "search"} & set(data) or "chip" in data):
        kind, use = (("a system file", f"its chip, {data['chip']}") if "chip" in data else
                     ("a study config", f"its base design, {data.get('base', 'npu-7nm')}"))
        raise DseError(f"got {kind}; accepted: a hardware template (compute:, memory:, ...), e.g. {use}", file=file)
    try:
        hw = Hardware.model_validate(dict(data))
    except ValidationError as exc:
        raise from_validation_error(exc, file=file, model=Hardware, prefix=prefix) from None
    pre = f"{prefix + '.' if prefix else ''}"
    load_node(hw.process_node, file=file, field=f"{pre}process_node")
    for i, die in enumerate(hw.die_groups):
        if die.node is not None:
            load_node(die.node, file=file, field=f"{pre}package.dies.{i}.node")
    return hw


def load_hardware(spec: str | Path | Mapping[str, Any] | Hardware) -> Hardware:
    """A template by name (``a100-80gb``), by YAML path, from a mapping, or passed through."""
    return load_spec(spec, Hardware, hardware_from_mapping, _load_named)


def _user_dirs() -> list[Path]:
    """``$DSE_PATH`` folders (``os.pathsep``-separated): a template there is found by name first."""
    import os

    return [Path(p).expanduser() for p in os.environ.get("DSE_PATH", "").split(os.pathsep) if p]


def template_file(name: str) -> Path:
    """The file a template name resolves to: ``NAME.yaml`` in the first ``$DSE_PATH`` folder that has it, else
    the shipped ``hw_templates/NAME.yaml`` (which need not exist)."""
    for d in _user_dirs():
        if is_file(d / f"{name}.yaml"):
            return d / f"{name}.yaml"
    return templates_dir() / f"{name}.yaml"


def _load_named(name: str) -> Hardware:
    path = template_file(name)
    if path != templates_dir() / f"{name}.yaml":
        return hardware_from_mapping(load_yaml(path), file=str(path))
    return _load_shipped(name)


@lru_cache(maxsize=64)
def _load_shipped(name: str) -> Hardware:
    path = templates_dir() / f"{name}.yaml"
    if not is_file(path):
        raise DseError(
            f"unknown hardware template {name!r}{did_you_mean(name, list_templates())}; accepted: "
            f"{', '.join(list_templates())} or a YAML path"
        )
    return hardware_from_mapping(load_yaml(path), file=str(path))


def node_file(name: str) -> Path:
    """The file of process node ``name``: ``hw_templates/nodes/<name>.yaml`` (which need not exist)."""
    return templates_dir() / "nodes" / f"{name}.yaml"


@lru_cache(maxsize=16)
def _load_node_cached(name: str) -> Node:
    path = node_file(name)
    data = load_yaml(path)
    try:
        return Node.model_validate(data)
    except ValidationError as exc:
        raise from_validation_error(exc, file=str(path), model=Node) from None


def load_node(name: str, *, file: str | None = None, field: str | None = "process_node") -> Node:
    """Process-node coefficients by name (``hw_templates/nodes/<name>.yaml``): one of :func:`list_nodes`, checked
    before any path is made of it (a name of 300 characters, or one with a ``/``, is no file to look for)."""
    if name not in list_nodes():
        raise DseError(f"got {_short(name)}; accepted: one of {', '.join(list_nodes())}", file=file, field=field)
    return _load_node_cached(name)
