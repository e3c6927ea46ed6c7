"""Safe YAML in, atomic files out.

The loader is ``yaml.SafeLoader`` (never constructs Python objects, never executes code) with one
addition: a mapping that repeats a key is an error instead of silently keeping the last value.
Writers go through a temporary file in the same folder and ``os.replace``, so a reader never sees
half a file and a crash never leaves one behind.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from dse.errors import DseError

_UMASK = os.umask(0)
os.umask(_UMASK)


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate mapping keys."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    loader.flatten_mapping(node)
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise DseError(
                f"duplicate key {key!r} (line {key_node.start_mark.line + 1}, first at line {seen[key]}); "
                "accepted: each key once per mapping"
            )
        seen[key] = key_node.start_mark.line + 1
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_yaml(path: str | Path) -> Any:
    """Load one YAML file safely; errors name the file and line."""
    path = Path(path)
    if not path.is_file():
        raise DseError("file not found; accepted: an existing YAML file", file=str(path))
    try:
        with path.open(encoding="utf-8") as fh:
            return yaml.load(fh, Loader=_StrictLoader)  # noqa: S506 - _StrictLoader is a SafeLoader
    except DseError as exc:
        raise DseError(exc.message, file=str(path)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark else ""
        raise DseError(f"{where}not valid YAML ({getattr(exc, 'problem', exc)})", file=str(path)) from None


def atomic_write(path: str | Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp_path)`` then rename ``tmp_path`` onto ``path`` (same folder, atomic on POSIX)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp" + path.suffix, dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` atomically."""
    return atomic_write(path, lambda p: p.write_text(text, encoding="utf-8"))


def write_yaml(path: str | Path, data: Any) -> Path:
    """Write ``data`` as block-style YAML atomically (key order kept)."""
    return write_text(path, yaml.safe_dump(data, sort_keys=False, default_flow_style=False))
