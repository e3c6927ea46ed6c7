"""Safe YAML in, atomic files out.

The loader is ``yaml.SafeLoader`` (never constructs Python objects, never executes code) with these
additions: a mapping that repeats a key is an error instead of silently keeping the last value; the
file must be UTF-8 text of at most ``MAX_BYTES``; and the document, with every alias expanded, may
hold at most ``MAX_NODES`` nodes nested at most ``MAX_DEPTH`` deep (an alias bomb or a 2,000-deep
nesting is one line, not a hang or a traceback).
Writers go through a temporary file in the same folder and ``os.replace``, so a reader never sees
half a file and a crash never leaves one behind.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

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


MAX_BYTES = 64 * 1024 * 1024


def is_file(path: str | Path) -> bool:
    """``Path.is_file`` that answers False instead of raising for a name the OS refuses to look up
    (too long, a NUL byte): such a name is then reported as not found, on one line."""
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False
MAX_NODES = 2_000_000
MAX_DEPTH = 64


def _expanded_size(root: yaml.Node) -> tuple[int, int]:
    """(nodes, depth) of the document with every alias expanded, without expanding it: the size of a
    node shared by aliases is computed once (memoised by identity), iteratively (no recursion)."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in size:
            continue
        kids: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            kids = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            kids = [n for pair in node.value for n in pair]
        if done or not kids:
            size[id(node)] = 1 + sum(size[id(k)] for k in kids)
            depth[id(node)] = 1 + max((depth[id(k)] for k in kids), default=0)
            if size[id(node)] > MAX_NODES or depth[id(node)] > MAX_DEPTH:
                return size[id(node)], depth[id(node)]
            continue
        if len(stack) > 4 * MAX_NODES:
            return MAX_NODES + 1, 0
        stack.append((node, True))
        stack.extend((k, False) for k in kids if id(k) not in size)
    return size[id(root)], depth[id(root)]


def read_text(path: Path, what: str, max_bytes: int, encoding: str = "utf-8") -> str:
    """The text of an input file, refused in one line when it is missing, larger than ``max_bytes``, not
    UTF-8 or binary (a NUL byte); ``what`` names the expected file in the message (e.g. "a YAML file")."""
    if not is_file(path):
        raise DseError(f"file not found; accepted: {what}", file=str(path)[:300])
    size = path.stat().st_size
    if size > max_bytes:
        raise DseError(f"got {size:,} bytes; accepted: {what} of at most {max_bytes:,} bytes", file=str(path))
    try:
        text = path.read_bytes().decode(encoding)
    except UnicodeDecodeError as exc:
        raise DseError(f"byte {exc.start} is not UTF-8; accepted: {what} (UTF-8 text)", file=str(path)) from None
    if "\x00" in text:
        raise DseError(f"got a NUL byte (a binary file?); accepted: {what} (UTF-8 text)", file=str(path))
    return text


def load_yaml(path: str | Path) -> Any:
    """Load one YAML file safely; errors name the file and line."""
    path = Path(path)
    text = read_text(path, "a YAML file", MAX_BYTES)
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        nodes, depth = _expanded_size(node)
        if nodes > MAX_NODES or depth > MAX_DEPTH:
            got = (f"nested more than {MAX_DEPTH} levels deep" if depth > MAX_DEPTH else
                   f"more than {MAX_NODES:,} nodes once its aliases are expanded")
            raise DseError(f"got a document {got}; accepted: at most {MAX_NODES:,} nodes, {MAX_DEPTH} levels",
                           file=str(path))
        return loader.construct_document(node)
    except RecursionError:
        raise DseError(f"nested too deeply to read; accepted: at most {MAX_DEPTH} levels", file=str(path)) from None
    except DseError as exc:
        raise DseError(exc.message, file=str(path)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark else ""
        raise DseError(f"{where}not valid YAML ({getattr(exc, 'problem', exc)})", file=str(path)) from None
    finally:
        loader.dispose()


T = TypeVar("T")


def load_spec(spec: Any, cls: type[T], from_mapping: Callable[..., T], load_named: Callable[[str], T]) -> T:
    """How a template or a system is named: ``spec`` passed through when it is already a ``cls``, built by
    ``from_mapping`` from a mapping, read from a YAML path (a ``.yaml``/``.yml`` suffix or an existing file; errors
    then name the file), else looked up by name with ``load_named``."""
    if isinstance(spec, cls):
        return spec
    if isinstance(spec, Mapping):
        return from_mapping(spec)
    if not isinstance(spec, str | Path) or not str(spec):  # 3, None, a list: one line, not a TypeError
        kind = cls.__name__.lower()
        raise DseError(f"got {spec!r} ({type(spec).__name__}); accepted: a {kind} name, a YAML path, a mapping or a "
                       f"{cls.__name__}", field=kind)
    path = Path(spec)
    if path.suffix in (".yaml", ".yml") or is_file(path):
        return from_mapping(load_yaml(path), file=str(path))
    return load_named(str(spec))


MAX_CSV_BYTES = 64 * 1024 * 1024


def load_csv(path: str | Path, what: str, required: tuple[str, ...] = ()) -> Any:
    """A CSV as a DataFrame of strings (empty cells ``""``, short rows padded), checked like a YAML
    file: at most ``MAX_CSV_BYTES``, UTF-8 text without NUL bytes, a header naming ``required``
    columns, at least one data row. ``what`` names the expected file in the message (e.g. "a
    measurements CSV")."""
    import io

    import pandas as pd

    path = Path(path)
    text = read_text(path, what, MAX_CSV_BYTES, encoding="utf-8-sig")
    if not text.strip():
        raise DseError(f"got an empty file; accepted: {what} with a header row and data rows", file=str(path))
    try:
        df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DseError(f"not a readable CSV ({first}); accepted: {what}", file=str(path)) from None
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise DseError(f"missing column(s) {missing}; accepted: {what} with columns {', '.join(required)}",
                       file=str(path))
    if df.empty:
        raise DseError(f"got a header and no rows; accepted: {what} with at least one data row", file=str(path))
    return df.fillna("")


def _write_error(exc: OSError, path: Path) -> DseError:
    return DseError(f"cannot write ({exc.strerror or type(exc).__name__}); accepted: a writable folder with free "
                    "space", file=str(path)[:300])


def make_dir(path: str | Path) -> Path:
    """``mkdir -p``; a folder that cannot be made (a file in the way, read-only, disk full) is one line."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _write_error(exc, path) from None
    return path


def atomic_write(path: str | Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp_path)`` then rename ``tmp_path`` onto ``path`` (same folder, atomic on POSIX).
    The temporary file is removed on any failure; a disk that is full or a folder that cannot be
    written is a one-line :class:`DseError` naming the file."""
    path = Path(path)
    make_dir(path.parent)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp" + path.suffix, dir=path.parent)
    except OSError as exc:
        raise _write_error(exc, path) from None
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise _write_error(exc, path) from None
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
