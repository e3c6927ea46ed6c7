"""The files a study config resolves to, read once: hashed into ``metadata.json`` and copied into the results folder.

A results folder is self-contained (issue 28): ``inputs/`` holds a copy of every input file, the config as
written (``inputs/config/``), and ``config.yaml`` is the config with every path rewritten to point at those copies
(relative to the folder, so it may be moved) and its output folder set so that ``python -m dse.run
RESULTS/config.yaml`` from any working folder writes a new study beside ``RESULTS``:

- named by path in the config (``base``, ``system``, ``workloads.N.path``, a ``workloads.N.name`` that is a path,
  ``whatif.hardware``): copied, and the config points at the copy;
- named by name (a shipped or ``$DSE_PATH`` template or system, a ``$DSE_PATH`` or imported model, the chip of
  a ``system:`` when there is no ``base:``, the template's process node): copied as a record only; a rerun
  resolves the name again, and its ``metadata.json`` tells whether the file is still the same. Shipped models and
  suites are named, not copied (the dse version covers them).

Every input of the search (all but ``whatif.hardware``) is hashed (sha256 of its bytes) into ``meta["inputs"]``
(:func:`study_inputs`), which ``--resume`` compares (:func:`dse.search.optimize.changed_input`).
"""

from __future__ import annotations

import copy
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dse._version import __version__
from dse.errors import DseError
from dse.hardware.system import load_system, systems_dir
from dse.hardware.templates import node_file, template_file
from dse.workloads.library import SINGLE_OPS, description_path, is_path, workloads_dir
from dse.yamlio import atomic_write, is_file, load_yaml, write_text

#: the folder of the copies inside a results folder (the top folder of a study with several mixes)
INPUTS_DIR = "inputs"


@dataclass(frozen=True)
class InputFile:
    """One file a study config names or resolves to, with the bytes read from it."""

    label: str  # the config field that names it (base, system, workloads.0.path, process_node) or "config"
    file: Path  # where it was read from
    data: bytes
    copy: str  # where its copy lies under inputs/, e.g. "base/chip.yaml"
    keys: tuple[str | int, ...] | None = None  # where the config names it by path (rewritten to the copy)
    search: bool = True  # an input of the search (hashed); whatif.hardware is copied only

    @property
    def sha256(self) -> str:
        """The hex sha256 of the file's bytes (what ``metadata.json`` records and ``--resume`` compares)."""
        return hashlib.sha256(self.data).hexdigest()


@dataclass(frozen=True)
class Snapshot:
    """The config file, its parsed YAML and every file it resolves to (:func:`snapshot`)."""

    config: Path
    raw: dict[str, Any]
    files: tuple[InputFile, ...]


def spec_file(spec: str, cfg_dir: Path, named: Callable[[str], Path]) -> tuple[Path, bool]:
    """The file a template or system ``spec`` of a config resolves to, the way :func:`dse.study.resolve_base` and
    ``resolve_system`` read it (a ``.yaml``/``.yml`` path relative to the config's folder ``cfg_dir``, an existing
    file, else a name looked up by ``named``), and whether the config names it by path."""
    if spec.endswith((".yaml", ".yml")):
        return (Path(spec) if Path(spec).is_absolute() else cfg_dir / spec), True
    if is_file(spec):  # dse.yamlio.load_spec reads an existing file by path (relative to the working folder)
        return Path(spec), True
    return named(spec), False


def _workload_file(entry: dict[str, Any], cfg_dir: Path) -> tuple[Path, str] | None:
    """(file, key naming it) of one workload entry of a config when that file is a user model: a ``path`` (relative
    to the config's folder), a ``name`` that is a path, or a name found in ``$DSE_PATH`` or the imported models;
    None for shipped models, single operators and suites."""
    if entry.get("path") is not None:
        path = Path(str(entry["path"])).expanduser()
        return (path if path.is_absolute() else cfg_dir / path), "path"
    name = entry.get("name")
    if not isinstance(name, str) or name.startswith(SINGLE_OPS):
        return None
    path = description_path(name)
    if is_path(name):
        return path, "name"
    return (path, "") if is_file(path) and path.parent != workloads_dir() else None


def _entries(raw: dict[str, Any]) -> list[tuple[str, tuple[str | int, ...], dict[str, Any]]]:
    """(label prefix, keys, entry) of every workload entry of a config: ``workloads.N`` and ``mixes.MIX.N``."""
    out = [(f"workloads.{i}", ("workloads", i), e) for i, e in enumerate(raw.get("workloads") or [])]
    for mix, entries in (raw.get("mixes") or {}).items():
        out += [(f"mixes.{mix}.{i}", ("mixes", mix, i), e) for i, e in enumerate(entries)]
    return [x for x in out if isinstance(x[2], dict)]


def _copy_name(kind: str, file: Path, data: bytes, taken: dict[str, bytes]) -> str:
    """A free place ``KIND/NAME`` under inputs/ for ``file`` (a ``.yaml`` suffix added when it has none, so the
    config names the copy as a path; ``KIND/2/NAME`` and on when another file of that name came first)."""
    name = file.name if file.suffix in (".yaml", ".yml") else f"{file.name}.yaml"
    for k in range(1, 10_000):
        where = f"{kind}/{name}" if k == 1 else f"{kind}/{k}/{name}"
        if taken.setdefault(where, data) == data:
            return where
    raise AssertionError("unreachable: 10,000 input files of one name")


def snapshot(config: str | Path, process_node: str) -> Snapshot:
    """Read the (validated) study config ``config`` and every file it resolves to once: the config, the base
    template (or the system's chip when there is no ``base:``), the system, the user model files of every mix,
    ``whatif.hardware`` and the base template's process node ``process_node``."""
    config = Path(config)
    cfg_dir = config.parent
    raw = load_yaml(config)
    taken: dict[str, bytes] = {}
    files: list[InputFile] = []

    def add(label: str, kind: str, file: Path, keys: tuple[str | int, ...] | None = None, search: bool = True) -> None:
        if not search and not is_file(file):  # not read by the search (whatif.hardware): its own command says so
            return
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise DseError(f"cannot read {file} ({exc.strerror or type(exc).__name__}); accepted: a readable file",
                           file=str(config), field=label) from None
        files.append(InputFile(label, file, data, _copy_name(kind, file, data, taken), keys, search))

    add("config", "config", config)
    if raw.get("base") is not None:
        path, by_path = spec_file(str(raw["base"]), cfg_dir, template_file)
        add("base", "base", path, ("base",) if by_path else None)
    if raw.get("system") is not None:
        path, by_path = spec_file(str(raw["system"]), cfg_dir, lambda n: systems_dir() / f"{n}.yaml")
        add("system", "system", path, ("system",) if by_path else None)
        if raw.get("base") is None:  # the base is the system's chip (named relative to the working folder)
            chip = load_system(path).chip
            add("system.chip", "base", Path(chip) if chip.endswith((".yaml", ".yml")) or is_file(chip)
                else template_file(chip))
    for label, keys, entry in _entries(raw):
        found = _workload_file(entry, cfg_dir)
        if found is not None:
            path, key = found
            add(f"{label}.{key or 'name'}", "models", path, (*keys, key) if key else None)
    whatif = raw.get("whatif")
    if isinstance(whatif, dict) and isinstance(whatif.get("hardware"), str):
        path, by_path = spec_file(whatif["hardware"], cfg_dir, template_file)
        add("whatif.hardware", "whatif", path, ("whatif", "hardware") if by_path else None, search=False)
    add("process_node", "nodes", node_file(process_node))
    return Snapshot(config, raw, tuple(files))


def _rel(path: Path, start: Path) -> str:
    """``path`` relative to ``start`` (both resolved), with ``/`` separators."""
    return Path(os.path.relpath(path.resolve(), start.resolve())).as_posix()


def study_inputs(snap: Snapshot, folder: Path, top: Path) -> dict[str, Any]:
    """``meta["inputs"]`` of the study whose results go to ``folder`` (``top``: the folder holding ``inputs/``,
    the same one unless the study is one mix of several): the dse version and, per input of the search, the file
    it was read from, its copy (relative to ``folder``) and the sha256 of its bytes. Each mix of a config with
    several records every mix's models, so resuming the first one already refuses a change in any."""
    out: dict[str, Any] = {"dse_version": __version__}
    for f in snap.files:
        if not f.search:
            continue
        out[f.label] = {"file": str(f.file), "copy": _rel(top / INPUTS_DIR / f.copy, folder), "sha256": f.sha256}
    return out


def rewritten_config(snap: Snapshot, folder: Path, top: Path) -> str:
    """The text of ``folder/config.yaml``: the config with every file it names by path pointing at its copy (a
    workload ``name`` that is a path becomes a ``path``), relative to ``folder``; a relative ``output.dir`` becomes
    ``top``'s parent relative to ``folder`` with ``relative_to: config`` (a rerun from any working folder writes
    a new study beside ``top``), an absolute one is kept."""
    data = copy.deepcopy(snap.raw)
    for f in snap.files:
        if f.keys is None:
            continue
        parent: Any = data
        for k in f.keys[:-1]:
            parent = parent[k]
        where = _rel(top / INPUTS_DIR / f.copy, folder)
        if f.keys[-1] == "name":  # a model named by a path relative to the working folder: a path of the copy
            items = list(parent.items())
            parent.clear()
            parent.update((("path", where) if k == "name" else (k, v)) for k, v in items)
        else:
            parent[f.keys[-1]] = where
    output = dict(data.get("output") or {})
    if not Path(str(output.get("dir", "results"))).expanduser().is_absolute():
        output.update(dir=_rel(top.parent, folder), relative_to="config")
    data["output"] = output
    copies = _rel(top / INPUTS_DIR, folder)
    head = (f"# {snap.config.name} as run by dse {__version__}: file paths point at the copies in {copies}/ (the "
            f"config as written: {copies}/{snap.files[0].copy});\n"
            "# a rerun (python -m dse.run THIS_FILE) writes a new study beside this results folder.\n")
    return head + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False)


def write_inputs(snap: Snapshot, folder: Path, top: Path) -> None:
    """Copy every input file into ``top/inputs/`` (atomically; a copy already there with the same bytes is kept),
    then write ``folder/config.yaml`` (:func:`rewritten_config`)."""
    for f in snap.files:
        dest = top / INPUTS_DIR / f.copy
        if not (is_file(dest) and dest.read_bytes() == f.data):
            atomic_write(dest, lambda p, data=f.data: p.write_bytes(data))
    write_text(folder / "config.yaml", rewritten_config(snap, folder, top))
