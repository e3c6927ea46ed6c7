"""Multi-chip systems: a chip template plus a hierarchy of network levels (``hw_templates/systems/``).

A system is ``prod(level.size)`` chips. Level 0 is the scale-up network inside a node (NVSwitch, a
board ring, a torus); each further level joins blocks of the level below (nodes over InfiniBand).
Chips are numbered inner level first, so chips ``0..size_0-1`` share level 0.

Bandwidth fields are GB/s (1e9 byte/s) per link; ``bandwidth_direction`` says whether the number is
per direction or the sum of both directions (datasheets quote NVLink "600 GB/s" as the
bidirectional total of 12 links x 25 GB/s per direction). Internally every bandwidth is byte/s per
direction.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from dse.errors import DseError, did_you_mean, from_validation_error
from dse.hardware.collectives import LEVEL_ALGORITHMS, LIBRARIES, algorithm_topologies
from dse.hardware.schema import Hardware
from dse.limits import MAX_CORES
from dse.strict import Strict
from dse.units import repo_root
from dse.yamlio import is_file, load_spec, load_yaml


class NetworkLevel(Strict):
    """One level of the network hierarchy, as seen by one chip."""

    name: str = Field(min_length=1)
    size: int = Field(gt=0, description="Ranks joined at this level (chips per node at level 0, nodes above)")
    topology: Literal["switch", "ring", "torus", "fully_connected"] = Field(
        description="switch (full bisection), ring, torus (dims), or fully_connected: every pair of the level's chips "
        "joined by its own links (links_per_chip / (size - 1) per peer), so a group of n uses (n-1)/(size-1) of them")
    dims: list[int] | None = Field(None, description="Torus dimensions (product = size), e.g. [4, 4, 4]")
    box_size: int | None = Field(
        None, gt=0, le=MAX_CORES, description="fully_connected only: the chips whose all-to-all links a chip's "
        "links_per_chip are spread over (links_per_chip / (box_size - 1) per peer; default size). A system resized "
        "below a box keeps it: two cards of an 8-card HLS-Gaudi box talk over the 3 ports they share, not all 21")
    wrap_min_dim: int | None = Field(
        None, gt=1, le=MAX_CORES, description="Torus only: a dimension of a slice has wraparound links only when it "
        "spans at least this many chips; shorter ones are lines, whose rings run one way per link (half the "
        "bandwidth of a wrapped dimension's bidirectional ring). TPU v5e/v6e: 16 (only a full pod axis wraps); TPU "
        "v4/v5p: 4. Default: every dimension wraps")
    slice_axes: Literal["any", "power_of_two", "power_of_two_or_multiple_of_4"] = Field(
        "any", description="Torus only: the axis lengths a slice of fewer chips than the pod may have (each axis); "
        "the slice is the most balanced one that keeps to it. TPU v5e/v6e: power_of_two (2x2, 2x4, 4x4, 4x8, 8x8, "
        "8x16, 16x16); TPU v4/v5p: power_of_two_or_multiple_of_4 (2x2x1 .. 2x4x4 below 64 chips, then axes in "
        "multiples of 4: 4x4x4, 4x4x12, ...; Google Cloud TPU docs, each version's Configurations). Default: any "
        "whole lengths")
    links_per_chip: int | None = Field(None, gt=0, description="Links per chip at this level (level 0 default: "
                                                                 "the chip's network.links)")
    link_bandwidth_gbps: float | None = Field(None, gt=0, description="GB/s per link (level 0 default: the chip's)")
    bandwidth_direction: Literal["per_direction", "bidirectional"] = Field(
        "per_direction", description="Whether link_bandwidth_gbps is per direction or both directions summed")
    latency_us: float = Field(ge=0, description="Per-step latency alpha, microseconds (of the Simple protocol; "
                                                "LL/LL128 scale it: dse.hardware.collectives.PROTOCOLS)")
    efficiency: float = Field(gt=0, le=1, description="Achievable fraction of link bandwidth")
    pipeline_fill_mib: float = Field(
        0.0, ge=0, le=1e6, description="MiB a collective under a chunked protocol (NCCL/RCCL LL128 and Simple, NVLS) "
        "must move before its chunk pipeline runs full: each such collective takes that many bytes more at the "
        "chip's bandwidth of this level (Hockney's n_1/2; dse.predict.network.coefficients). LL, which writes each "
        "line with its own flag, pays none. 0: none")
    in_network_reduction: bool = Field(False, description="The switch reduces (SHARP / NVLS)")
    algorithm: Literal[LEVEL_ALGORITHMS] = Field(  # type: ignore[valid-type]
        "ring", description="All-reduce algorithm (dse.hardware.collectives.TABLE): ring or tree on any topology (a "
        "torus runs its default, dimension by dimension, for either); multi_axis on a torus: a collective over several "
        "axes runs on all of them at once (XLA on a TPU slice)")
    collective_library: Literal[LIBRARIES] = Field(  # type: ignore[valid-type]
        "nccl", description="Collective library whose wire protocols the level runs (NCCL's LL, LL128, Simple; "
                            "RCCL's LL, Simple; the Neuron runtime's one: dse.hardware.collectives.PROTOCOLS)")
    source: str = Field(min_length=3)

    @model_validator(mode="after")
    def _dims(self) -> NetworkLevel:
        if self.topology == "torus":
            if not self.dims:
                raise ValueError("a torus level needs dims, e.g. [4, 4, 4]")
            if math.prod(self.dims) != self.size:
                raise ValueError(f"torus dims {self.dims} multiply to {math.prod(self.dims)}, not size {self.size}")
        elif self.dims:
            raise ValueError(f"dims apply to a torus only (topology is {self.topology})")
        if self.box_size is not None and (self.topology != "fully_connected" or self.box_size < self.size):
            raise ValueError(f"@box_size@got {self.box_size} on a {self.topology} of size {self.size}; accepted: a "
                             "fully_connected level only, at least its size")
        if self.wrap_min_dim is not None and self.topology != "torus":
            raise ValueError(f"@wrap_min_dim@got {self.wrap_min_dim} on a {self.topology}; accepted: a torus level only")
        if self.in_network_reduction and self.topology != "switch":
            raise ValueError("in_network_reduction needs a switch topology")
        if not _runs_on(self.algorithm, self.topology):
            ok = ", ".join(repr(a) for a in LEVEL_ALGORITHMS if _runs_on(a, self.topology))
            raise ValueError(f"@algorithm@got {self.algorithm!r} on a {self.topology}; accepted: {ok}")
        return self

    @property
    def latency_s(self) -> float:
        """Per-step latency alpha, seconds (``latency_us`` x 1e-6)."""
        return self.latency_us * 1e-6

    def per_direction(self, gbps: float) -> float:
        """byte/s per direction from the field's GB/s."""
        return gbps * 1e9 / (2.0 if self.bandwidth_direction == "bidirectional" else 1.0)


def _runs_on(algorithm: str, topology: str) -> bool:
    """Whether a level of this topology can run the all-reduce ``algorithm`` (its rows' topologies)."""
    return bool({"*", topology} & set(algorithm_topologies(algorithm)))


class System(Strict):
    """A chip replicated over a network hierarchy."""

    name: str = Field(min_length=1)
    description: str = ""
    chip: str = Field(description="Hardware template name or YAML path")
    network: list[NetworkLevel] = Field(min_length=1)
    source: str = Field(min_length=3)

    @model_validator(mode="after")
    def _outer_levels(self) -> System:
        for i, lv in enumerate(self.network[1:], start=1):
            if lv.links_per_chip is None or lv.link_bandwidth_gbps is None:
                raise ValueError(f"network level {i} ({lv.name}) needs links_per_chip and link_bandwidth_gbps")
        names = [lv.name for lv in self.network]
        if len(set(names)) != len(names):
            raise ValueError(f"network level names must be unique, got {names}")
        return self

    @property
    def chips(self) -> int:
        return math.prod(lv.size for lv in self.network)

    @property
    def sizes(self) -> list[int]:
        return [lv.size for lv in self.network]

    def resized(self, chips: int) -> System:
        """The same system with ``chips`` chips: fewer than a node shrinks level 0 (a switch or ring to that
        size), a torus level takes its most balanced slice (:func:`slice_dims`) of ``chips`` / the ranks of the levels
        inside it (none for a TPU pod; a TPU7x chip's two devices), more scales the outermost level; a one-level
        torus takes any slice that fits the pod."""
        if chips == self.chips:
            return self
        if chips <= 0:
            raise DseError(f"got chips={chips}; accepted: a positive integer", field="chips")
        levels = [lv.model_copy() for lv in self.network]
        inner = math.prod(lv.size for lv in levels[:-1])
        lv0 = levels[0]
        t = next((i for i, lv in enumerate(levels) if lv.topology == "torus"), None)
        below = math.prod(lv.size for lv in levels[:t]) if t is not None else 1  # ranks inside one torus node
        if chips % inner == 0 and len(levels) > 1:
            levels[-1] = levels[-1].model_copy(update={"size": chips // inner})
        elif t is not None and chips % below == 0 and (t == len(levels) - 1 or chips <= below * levels[t].size):
            levels = levels[:t] + ([self._torus_slice(levels[t], chips // below, below)] if chips > below else [])
        elif (chips <= lv0.size and lv0.size % chips == 0) or len(levels) == 1:  # a switch or ring resized
            box = {"box_size": lv0.box_size or lv0.size} if lv0.topology == "fully_connected" and chips < lv0.size else {}
            levels = [lv0.model_copy(update={"size": chips, **box})]
        else:
            raise DseError(f"{chips} chips do not match the topology of {self.name} (levels {self.sizes}); "
                           f"accepted: a divisor of {levels[0].size} or a multiple of {inner}", field="chips")
        return self.model_copy(update={"network": levels})

    def _torus_slice(self, lv: NetworkLevel, nodes: int, below: int) -> NetworkLevel:
        """Torus level ``lv`` cut to its most balanced slice of ``nodes`` (:func:`slice_dims`), ``below`` ranks per
        node (the levels inside it: a TPU7x chip's two devices), or one line saying which counts slice it."""
        dims = slice_dims(lv.dims or [lv.size], nodes, lv.slice_axes)
        if dims is None:
            pod = lv.dims or [lv.size]
            rule = "" if lv.slice_axes == "any" else f", each axis {lv.slice_axes.replace('_', ' ')}"
            eg = ", ".join(str(n * below) for n in published_counts(pod, lv.slice_axes))
            per = f" ({below} per torus node)" if below > 1 else ""
            raise DseError(f"got {nodes * below} chips, which make no slice of the torus {lv.dims} of {self.name}; "
                           f"accepted: a count of at most {lv.size * below} chips{per} that factors into {len(pod)} "
                           f"dimensions within {'x'.join(map(str, pod))}{rule} (e.g. {eg})", field="chips")
        return lv.model_copy(update={"size": nodes, "dims": dims})

    def level_arrays(self, hw: Hardware) -> tuple[list[float], list[float], list[float], list[bool]]:
        """Per level: links per chip, byte/s per link per direction, efficiency, linked to the chip's SerDes."""
        links, bw, eff, chip_linked = [], [], [], []
        for i, lv in enumerate(self.network):
            use_chip = i == 0 and (lv.links_per_chip is None or lv.link_bandwidth_gbps is None)
            if use_chip and hw.network is None:
                raise DseError(f"network level {lv.name} takes its links from the chip, but {hw.name} has no "
                               "network block; accepted: links_per_chip and link_bandwidth_gbps on the level",
                               field=f"network.{lv.name}")
            n_links = lv.links_per_chip if lv.links_per_chip is not None else hw.network.links  # type: ignore[union-attr]
            gb = lv.per_direction(lv.link_bandwidth_gbps) if lv.link_bandwidth_gbps is not None else \
                hw.network.link_bandwidth_gbps * 1e9  # type: ignore[union-attr]
            links.append(float(n_links))
            bw.append(gb)
            eff.append(lv.efficiency)
            chip_linked.append(i == 0 and lv.links_per_chip is None)
        return links, bw, eff, chip_linked


def systems_dir() -> Path:
    return repo_root() / "hw_templates" / "systems"


def list_systems() -> list[str]:
    return sorted(p.stem for p in systems_dir().glob("*.yaml"))


def system_from_mapping(data: Any, *, file: str | None = None) -> System:
    if not isinstance(data, Mapping):
        raise DseError(f"got {type(data).__name__}; accepted: a mapping (system template)", file=file)
    try:
        sysm = System.model_validate(dict(data))
    except ValidationError as exc:
        raise from_validation_error(exc, file=file, model=System) from None
    from dse.hardware.templates import load_hardware

    beside = Path(file).parent / sysm.chip if file and sysm.chip.endswith((".yaml", ".yml")) else None
    if beside is not None and not Path(sysm.chip).is_absolute() and beside.is_file():
        sysm = sysm.model_copy(update={"chip": str(beside)})  # a chip file beside the system file (a study's results)
    load_hardware(sysm.chip)  # the chip must exist
    return sysm


@lru_cache(maxsize=32)
def _load_named(name: str) -> System:
    path = systems_dir() / f"{name}.yaml"
    if not is_file(path):
        raise DseError(f"unknown system {name!r}{did_you_mean(name, list_systems())}; accepted: "
                       f"{', '.join(list_systems())} or a YAML path")
    return system_from_mapping(load_yaml(path), file=str(path))


def load_system(spec: str | Path | Mapping[str, Any] | System) -> System:
    """A system by name (``dgx-h100``), YAML path, mapping, or passed through."""
    return load_spec(spec, System, system_from_mapping, _load_named)


def is_system(name: str) -> bool:
    """Whether ``name`` names a shipped system template, or is the path of a system file (a mapping with ``chip``
    and ``network``, where a chip template has ``compute``)."""
    if is_file(systems_dir() / f"{name}.yaml"):
        return True
    if not str(name).endswith((".yaml", ".yml")) or not is_file(Path(name)):
        return False
    try:
        data = load_yaml(Path(name))
    except DseError:
        return False
    return isinstance(data, dict) and "chip" in data and "compute" not in data


def axis_allowed(k: int, rule: str, chips: int) -> bool:
    """Whether a slice axis of ``k`` chips keeps to ``rule`` (:attr:`NetworkLevel.slice_axes`) in a slice of
    ``chips``: ``power_of_two_or_multiple_of_4`` is powers of two below a 4x4x4 cube (64 chips: 2x2x1 .. 2x4x4) and
    multiples of 4 from it (4x4x4, 4x4x12, ...)."""
    pow2 = k & (k - 1) == 0
    if rule == "power_of_two_or_multiple_of_4":
        return pow2 if chips < 64 else k % 4 == 0
    return rule == "any" or pow2


def slice_dims(pod: list[int], chips: int, rule: str = "any") -> list[int] | None:
    """The most balanced torus slice of ``chips`` chips inside a pod of dimensions ``pod`` (each slice dimension at
    most the pod's, their product ``chips``, the smallest largest-to-smallest ratio; dimensions of 1 dropped), or
    None. TPU slices are near-cubic: v5p 2x2x1, 2x2x2, 2x4x4, 4x4x4, 4x4x8, 4x8x8, 8x8x8, ..., 16x16x24; v5e and v6e
    2x2, 2x4, 4x4, 4x8, 8x8, 8x16, 16x16 (Google Cloud TPU docs, v5p / v5e / v6e "Configurations"). Only slices of
    whole 4x4x4 cubes wrap around in every dimension (v5p docs); the torus model assumes wraparound throughout."""
    if chips == 1:
        return [1]
    divisors = [d for d in range(1, chips + 1) if chips % d == 0]
    best: tuple | None = None
    for combo in itertools.product(divisors, repeat=len(pod)):
        if math.prod(combo) != chips or any(c > p for c, p in zip(combo, pod, strict=True)):
            continue
        if not all(axis_allowed(c, rule, chips) for c in combo):
            continue
        key = (max(combo) / min(combo), sorted(combo, reverse=True))
        if best is None or key < best[0]:
            best = (key, combo)
    return None if best is None else [c for c in best[1] if c > 1]


def published_counts(pod: list[int], rule: str = "any") -> list[int]:
    """Chip counts of the power-of-two slices of a pod (for an error message): 4, 8, 16, ... up to the pod."""
    out, n = [], 4
    while n <= math.prod(pod):
        if slice_dims(pod, n, rule) is not None:
            out.append(n)
        n *= 2
    return out[:8]


def default_system(hw: Hardware) -> System:
    """The shipped system built from this chip (``chip: <name>``), else a one-level switch from the
    chip's own network block (``network.links`` x ``link_bandwidth_gbps``)."""
    for name in list_systems():
        s = _load_named(name)
        if s.chip == hw.name:
            return s
    if hw.network is None:
        raise DseError(f"{hw.name} has no network block and no system template uses it; accepted: pass "
                       f"system= one of {', '.join(list_systems())}", field="system")
    return System(name=f"{hw.name}-switch", chip=hw.name, source=f"default: one switch level from {hw.name}'s links",
                  network=[NetworkLevel(name="links", size=8, topology="switch", latency_us=1.0, efficiency=0.8,
                                        collective_library=hw.network.collective_library,
                                        source="default (assumption): 1 us per step, 80 % of link bandwidth")])
