"""Collective algorithms as a table: one row per (collective, topology, algorithm) with its alpha-beta time.

Notation (as in ``dse.predict.network``): ``S`` bytes (an all-reduce's buffer, an all-gather's gathered
result, the bytes one rank sends in an all-to-all), ``n`` ranks on the level, ``b`` one link's
bandwidth per direction, ``B`` a rank's injection bandwidth per direction (links x ``b``), ``alpha`` the
per-step latency, ``dims`` the torus dimensions the group spans. Every time is linear in ``1/b``,
``1/B`` and ``alpha`` (the network code relies on it to reduce a collective to three coefficients).

How a level picks its row (``choose``): the level asks for an ``algorithm`` (``in_network`` when its
switch reduces); rows are tried in table order and the first whose collective matches, whose topology
is the level's or ``*``, and which is either a default (``requested=False``) or the algorithm asked for,
wins. Adding an algorithm is one ``Algorithm`` record in ``TABLE``; a requested all-reduce row on any
topology becomes an accepted ``algorithm`` of ``hw_templates/systems`` levels (``LEVEL_ALGORITHMS``).

Protocols (``PROTOCOLS``, one ``Protocol`` record each): how a GPU collective library moves the bytes
of one step. NCCL's LL (8-byte lines of 4 data + 4 flag bytes: lowest per-step latency, a quarter of the
bandwidth in its own tuning model), LL128 (120 data bytes per 128-byte line) and Simple (full bandwidth,
the highest per-step latency). A protocol scales a row's bandwidth terms by ``1/bandwidth_fraction`` and
its latency term by ``step_latency_scale`` and adds a fixed ``base_latency_us``; the predictor takes the
fastest (algorithm, protocol) pair per collective and message size, as NCCL's tuner does
(``dse.predict.network.coefficients``). Adding a protocol is one record in ``PROTOCOLS``.

Sources: Thakur, Rabenseifner & Gropp, IJHPCA 2005 (ring/tree alpha-beta costs); Patarasuk & Yuan
2009 (bandwidth-optimal ring all-reduce); Sanders, Speck & Traeff 2009 (pipelined double binary
trees, NCCL's tree); Klenk et al., ISCA 2020 / NVIDIA SHARP (in-network reduction); Jouppi et al.,
ISCA 2023 (TPU v4) and ASTRA-sim (Rashidi et al., ISPASS 2020) for dimension-by-dimension torus
collectives; jax-ml/scaling-book (sharding.md) for a torus collective over several axes at once (XLA on TPU).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

#: time(S, n, b, B, alpha, dims) -> seconds
TimeFn = Callable[[float, int, float, float, float, list[int]], float]

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "p2p")
TOPOLOGIES = ("switch", "ring", "torus", "fully_connected")


@dataclass(frozen=True)
class Algorithm:
    """One row of the table: which collective on which topology, the algorithm's name, its time."""

    collective: str
    topology: str
    name: str
    time: TimeFn
    formula: str
    source: str
    requested: bool = False


# ---------------------------------------------------------------------------------- textbook forms
def ring_all_reduce(S: float, n: int, B: float, alpha: float) -> float:
    """``2(n-1)/n * S/B + 2(n-1) alpha`` (reduce-scatter then all-gather around a ring)."""
    return 2 * (n - 1) / n * S / B + 2 * (n - 1) * alpha


def ring_all_gather(S: float, n: int, B: float, alpha: float) -> float:
    """``(n-1)/n * S/B + (n-1) alpha`` (also reduce-scatter); ``S`` is the gathered size."""
    return (n - 1) / n * S / B + (n - 1) * alpha


def tree_all_reduce(S: float, n: int, B: float, alpha: float) -> float:
    """``2 S/B + 2 ceil(log2 n) alpha``: pipelined reduce up and broadcast down a tree."""
    return 2 * S / B + 2 * math.ceil(math.log2(n)) * alpha if n > 1 else 0.0


def switch_reduction_all_reduce(S: float, n: int, B: float, alpha: float) -> float:
    """``S/B + 2 alpha``: the switch reduces (NVLink SHARP / InfiniBand SHARP)."""
    return S / B + 2 * alpha if n > 1 else 0.0


class Axis(int):
    """A torus dimension's length that knows whether the dimension wraps around (``wraps``; a plain int does).
    A slice's axis shorter than its pod's has no wraparound link: a line, whose ring runs one way per link."""

    wraps: bool = True

    def __new__(cls, k: int, wraps: bool = True) -> Axis:
        obj = super().__new__(cls, k)
        obj.wraps = wraps
        return obj


def torus_all_reduce(S: float, dims: list[int], b: float, alpha: float) -> float:
    """Dimension by dimension on a shrinking buffer: a bidirectional ring (``2b``) per wrapped dimension, a ring
    embedded in a line (``b``: each link carries it one way out and the other way back) per dimension without
    wraparound (jax-ml/scaling-book@0819a7d sharding.md: a TPU v5e axis without wraparound 'can't do a fully
    bidirectional AllGather')."""
    t, s = 0.0, S
    for k in dims:
        t += ring_all_reduce(s, k, 2 * b if getattr(k, "wraps", True) else b, alpha) if k > 1 else 0.0
        s /= k
    return t


def torus_multi_axis_all_reduce(S: float, dims: list[int], b: float, alpha: float) -> float:
    """All spanned axes at once: the buffer is split into one part per axis the group spans, each part reduced
    dimension by dimension (:func:`torus_all_reduce`) from a different starting axis (rotated orders, so in every
    phase the parts run on different axes' links); the time is the slowest part's. On ``m`` equal axes that is
    ``1/m`` of the bandwidth term of one dimension-by-dimension pass, the per-step latency unchanged: "when we
    gather over multiple axes ... this increases the available bandwidth by a factor of n_axes", T = V / (W_ICI
    n_axes) (jax-ml/scaling-book@0819a7d sharding.md, what XLA does on a TPU torus). Parts whose phases drift
    apart on unequal axes are taken not to contend for a link (optimistic there)."""
    axes = [k for k in dims if k > 1]
    if len(axes) < 2:
        return torus_all_reduce(S, dims, b, alpha)
    m = len(axes)
    return max(torus_all_reduce(S / m, axes[i:] + axes[:i], b, alpha) for i in range(m))


def point_to_point(S: float, B: float, alpha: float) -> float:
    """``S/B + alpha``."""
    return S / B + alpha


def all_to_all(S: float, n: int, inj_bw: float, bisection_bytes_per_s: float, alpha: float) -> float:
    """``max((n-1)/n S/B_inj, (n S/4) / bisection) + (n-1) alpha``: the larger of the injection and the
    bisection bound (``n S/4`` bytes cross the cut in each direction)."""
    return max((n - 1) / n * S / inj_bw, n * S / 4 / bisection_bytes_per_s) + (n - 1) * alpha


def _torus_all_to_all(S: float, n: int, b: float, B: float, a: float, dims: list[int]) -> float:
    # injection over the 2 links per spanned dimension; bisection 2b n / k_max
    return all_to_all(S, n, 2 * b * len(dims), 2 * b * n / max(dims), a)


def peer_share(n: int, dims: list[int]) -> float:
    """Fraction of a chip's links a group of ``n`` ranks uses on a fully connected level of ``dims[0]`` chips, each
    pair joined by its own links (``links / (size - 1)`` per peer): ``(n - 1) / (size - 1)``."""
    size = dims[0] if dims else n
    return (n - 1) / max(size - 1, 1)


def direct_collective(S: float, n: int, B: float, alpha: float, dims: list[int], steps: int) -> float:
    """``steps x ((n-1)/n S / B' + alpha)``, ``B' = B x`` :func:`peer_share`: every rank exchanges its share with all
    ``n - 1`` peers at once over their direct links (reduce-scatter or all-gather in one step; an all-reduce is
    both, ``steps = 2``), as HCCL runs on an HLS-Gaudi2 box whose 8 cards are all-to-all connected."""
    return steps * ((n - 1) / n * S / (B * peer_share(n, dims)) + alpha)


#: The table. Order matters: the first row matching (collective, topology, algorithm) is used.
TABLE: tuple[Algorithm, ...] = (
    Algorithm("p2p", "fully_connected", "direct", lambda S, n, b, B, a, d: point_to_point(S, B * peer_share(2, d), a),
              "S/(B/(size-1)) + alpha (one peer's direct links)", "alpha-beta"),
    Algorithm("all_reduce", "fully_connected", "direct",
              lambda S, n, b, B, a, d: direct_collective(S, n, B, a, d, 2),
              "2((n-1)/n S/B' + alpha), B' = B (n-1)/(size-1)", "alpha-beta; Habana HLS-Gaudi2 all-to-all links"),
    Algorithm("all_gather", "fully_connected", "direct", lambda S, n, b, B, a, d: direct_collective(S, n, B, a, d, 1),
              "(n-1)/n S/B' + alpha, B' = B (n-1)/(size-1)", "alpha-beta"),
    Algorithm("reduce_scatter", "fully_connected", "direct",
              lambda S, n, b, B, a, d: direct_collective(S, n, B, a, d, 1),
              "(n-1)/n S/B' + alpha, B' = B (n-1)/(size-1)", "alpha-beta"),
    Algorithm("all_to_all", "fully_connected", "direct", lambda S, n, b, B, a, d: direct_collective(S, n, B, a, d, 1),
              "(n-1)/n S/B' + alpha, B' = B (n-1)/(size-1)", "alpha-beta"),
    Algorithm("p2p", "ring", "direct", lambda S, n, b, B, a, d: point_to_point(S, B / 2, a),
              "S/(B/2) + alpha (a ring neighbour over half the chip's links)", "alpha-beta"),
    Algorithm("p2p", "torus", "direct", lambda S, n, b, B, a, d: point_to_point(S, b, a),
              "S/b + alpha (a torus neighbour over one link)", "alpha-beta"),
    Algorithm("p2p", "*", "direct", lambda S, n, b, B, a, d: point_to_point(S, B, a),
              "S/B + alpha", "alpha-beta"),
    Algorithm("all_reduce", "torus", "multi_axis", lambda S, n, b, B, a, d: torus_multi_axis_all_reduce(S, d, b, a),
              "max over parts p of the dimension row on S/m, axes rotated by p (m spanned axes)",
              "jax-ml/scaling-book sharding.md (AllGather over multiple axes)", requested=True),
    Algorithm("all_gather", "torus", "multi_axis",
              lambda S, n, b, B, a, d: torus_multi_axis_all_reduce(S, d, b, a) / 2,
              "half the multi-axis all-reduce", "jax-ml/scaling-book sharding.md", requested=True),
    Algorithm("reduce_scatter", "torus", "multi_axis",
              lambda S, n, b, B, a, d: torus_multi_axis_all_reduce(S, d, b, a) / 2,
              "half the multi-axis all-reduce", "jax-ml/scaling-book sharding.md", requested=True),
    Algorithm("all_reduce", "torus", "dimension", lambda S, n, b, B, a, d: torus_all_reduce(S, d, b, a),
              "sum_i 2(k_i-1)/k_i S_i/(2b) + 2(k_i-1) alpha, S_i = S/prod_{j<i} k_j",
              "Jouppi et al. ISCA 2023; ASTRA-sim"),
    Algorithm("all_gather", "torus", "dimension", lambda S, n, b, B, a, d: torus_all_reduce(S, d, b, a) / 2,
              "half the torus all-reduce", "Jouppi et al. ISCA 2023; ASTRA-sim"),
    Algorithm("reduce_scatter", "torus", "dimension", lambda S, n, b, B, a, d: torus_all_reduce(S, d, b, a) / 2,
              "half the torus all-reduce", "Jouppi et al. ISCA 2023; ASTRA-sim"),
    Algorithm("all_to_all", "torus", "bisection", _torus_all_to_all,
              "max((n-1)/n S/(2b dims), n S/4 / (2b n/k_max)) + (n-1) alpha", "bisection bound"),
    Algorithm("all_reduce", "switch", "in_network", lambda S, n, b, B, a, d: switch_reduction_all_reduce(S, n, B, a),
              "S/B + 2 alpha", "Klenk et al. ISCA 2020; NVIDIA SHARP", requested=True),
    Algorithm("all_reduce", "*", "tree", lambda S, n, b, B, a, d: tree_all_reduce(S, n, B, a),
              "2 S/B + 2 ceil(log2 n) alpha", "Sanders, Speck & Traeff 2009", requested=True),
    Algorithm("all_reduce", "*", "ring", lambda S, n, b, B, a, d: ring_all_reduce(S, n, B, a),
              "2(n-1)/n S/B + 2(n-1) alpha", "Patarasuk & Yuan 2009; Thakur et al. 2005"),
    Algorithm("all_gather", "*", "ring", lambda S, n, b, B, a, d: ring_all_gather(S, n, B, a),
              "(n-1)/n S/B + (n-1) alpha", "Thakur et al. 2005"),
    Algorithm("reduce_scatter", "*", "ring", lambda S, n, b, B, a, d: ring_all_gather(S, n, B, a),
              "(n-1)/n S/B + (n-1) alpha", "Thakur et al. 2005"),
    Algorithm("all_to_all", "ring", "bisection", lambda S, n, b, B, a, d: all_to_all(S, n, B, B, a),
              "max((n-1)/n S/B, n S/4 / B) + (n-1) alpha", "bisection bound"),
    Algorithm("all_to_all", "*", "direct", lambda S, n, b, B, a, d: all_to_all(S, n, B, math.inf, a),
              "(n-1)/n S/B + (n-1) alpha (a full-bisection switch)", "alpha-beta"),
)

@dataclass(frozen=True)
class Protocol:
    """One wire protocol of one collective library: how it scales a ``TABLE`` row's time (``protocol_time``).

    ``bandwidth_fraction`` of the level's achievable bandwidth, ``step_latency_scale`` x the level's
    per-step latency ``alpha`` (a level's ``latency_us`` is the Simple protocol's step), a fixed
    ``base_latency_us`` per collective call; ``topologies`` it runs on (``*``: every one) and the
    ``TABLE`` algorithm names it drives (``*``: every one)."""

    library: str
    name: str
    bandwidth_fraction: float
    step_latency_scale: float
    base_latency_us: float
    topologies: tuple[str, ...]
    algorithms: tuple[str, ...]
    source: str
    #: moves its data in chunks through a per-channel FIFO of NCCL_STEPS slots (LL128, Simple), so a collective pays
    #: its level's ``pipeline_fill_mib`` before the pipeline runs full; LL writes each 8-byte line with its own flag
    chunked: bool = True


_POINT = ("ring", "tree", "direct", "bisection")  # the rows LL/LL128 drive (not NVLS/SHARP, not a torus)
#: NCCL (NVIDIA), github.com/NVIDIA/nccl@b6475625fbcaa2c3c0e50eed2fa1255d7514d4a2 src/graph/tuning.cc:
#: ``baseLat`` Ring {LL 6.6, LL128 14.0, Simple 8.4} us per call; ``hwLat`` NVLink Ring {LL 0.6, LL128 1.9,
#: Simple 3.4} us per step (the step scales are these over Simple's 3.4); ring bus bandwidth x 1/4 for LL
#: all-reduce and x 0.92 (120/128) for LL128; NVLS (in-switch reduction) runs Simple only.
_NCCL = "NVIDIA/nccl@b6475625 src/graph/tuning.cc (baseLat Ring, hwLat NVLink Ring, LL 1/4 and LL128 0.92 bus bandwidth)"
#: RCCL (AMD), github.com/ROCm/rccl@0023b9b0814b6779a84bbb2d477682432c881a41 src/graph/tuning.cc: ``baseLat``
#: Ring {LL 20.5, Simple 27.9} us; ``hwLat`` xGMI ("NVLINK" row) Ring {LL 2.3, Simple 2.7} us per step; ring
#: LL bus bandwidth x 1/5; LL128 enabled by default only on NVIDIA Volta/Ampere in that version (left out).
_RCCL = "ROCm/rccl@0023b9b0 src/graph/tuning.cc (baseLat Ring, hwLat xGMI Ring, LL 1/5 bus bandwidth)"
#: The Neuron runtime's collectives (Inferentia2, Trainium): one protocol, the level's full bandwidth and one per-hop
#: latency per algorithm step, 'the per-hop latency of Ring/KangaRing is about 1-2 us (HBM load dependent)'
#: (aws-neuron/aws-neuron-sdk@81ce03a neuron-runtime/explore/intranode-collective-comm.rst); it has no low-latency
#: wire protocol like NCCL's LL, so a small all-reduce on a ring pays 2(n-1) hops. No fixed cost per call is published
#: (0: a call's launch is the chip's ``launch_overhead_us``)
_NEURON = ("aws-neuron/aws-neuron-sdk@81ce03a neuron-runtime/explore/intranode-collective-comm.rst (Ring: O(N) "
           "per-hop latency, about 1-2 us per hop)")
#: The protocols (Hu et al., "Demystifying NCCL", arXiv:2507.04786, 2025, Sec. 3, describe the three). They run
#: on GPU scale-up switches and rings; a torus (TPU ICI) runs Simple only (the ``*`` row).
PROTOCOLS: tuple[Protocol, ...] = (
    Protocol("nccl", "ll", 0.25, 0.6 / 3.4, 6.6, ("switch", "ring"), _POINT, _NCCL, chunked=False),
    Protocol("nccl", "ll128", 0.92, 1.9 / 3.4, 14.0, ("switch", "ring"), _POINT, _NCCL),
    Protocol("nccl", "simple", 1.0, 1.0, 8.4, ("*",), ("*",), _NCCL),
    Protocol("rccl", "ll", 0.2, 2.3 / 2.7, 20.5, ("switch", "ring"), _POINT, _RCCL, chunked=False),
    Protocol("rccl", "simple", 1.0, 1.0, 27.9, ("*",), ("*",), _RCCL),
    Protocol("neuron", "simple", 1.0, 1.0, 0.0, ("*",), ("*",), _NEURON),
)

#: collective libraries a network level may name (``collective_library:`` of a system level)
LIBRARIES: tuple[str, ...] = tuple(dict.fromkeys(p.library for p in PROTOCOLS))


def protocol(library: str, name: str) -> Protocol | None:
    """The ``PROTOCOLS`` record of this library and name (``None`` when the library has no such protocol)."""
    return next((p for p in PROTOCOLS if p.library == library and p.name == name), None)


def offers(p: Protocol, a: Algorithm, topology: str) -> bool:
    """Whether protocol ``p`` drives algorithm row ``a`` on a level of this topology."""
    return ("*" in p.topologies or topology in p.topologies) and ("*" in p.algorithms or a.name in p.algorithms)


def protocol_time(p: Protocol, a: Algorithm, S: float, n: int, b: float, B: float, alpha: float,
                  dims: list[int]) -> float:
    """Row ``a`` under protocol ``p``: ``a.time(S, n, f b, f B, s alpha, dims)`` with ``f`` the bandwidth
    fraction and ``s`` the step-latency scale (the fixed ``base_latency_us`` is added once per collective
    by the caller, over all levels). Still linear in ``1/b``, ``1/B`` and ``alpha``."""
    return a.time(S, n, b * p.bandwidth_fraction, B * p.bandwidth_fraction, alpha * p.step_latency_scale, dims)


#: all-reduce algorithms a network level may ask for by name (``algorithm:`` of a system level): the rows for every
#: topology and the requested rows of one topology (``multi_axis`` on a torus; ``in_network`` is the switch's
#: ``in_network_reduction`` flag, not a name)
LEVEL_ALGORITHMS: tuple[str, ...] = tuple(dict.fromkeys(
    a.name for a in TABLE if a.collective == "all_reduce" and (a.topology == "*" or a.requested)
    and a.name != "in_network"))


def algorithm_topologies(name: str) -> tuple[str, ...]:
    """The topologies whose all-reduce can run the level algorithm ``name`` (``*``: every one)."""
    return tuple(dict.fromkeys(a.topology for a in TABLE if a.collective == "all_reduce" and a.name == name))


def choose(collective: str, topology: str, algorithm: str = "ring", in_network_reduction: bool = False) -> Algorithm:
    """The first ``TABLE`` row for this collective on this topology that is a default or the level's
    requested algorithm (``in_network`` when the level's switch reduces)."""
    asked = "in_network" if in_network_reduction else algorithm
    for a in TABLE:
        if a.collective == collective and a.topology in (topology, "*") and (not a.requested or a.name == asked):
            return a
    raise ValueError(f"no algorithm for {collective} on a {topology}; accepted collectives: {', '.join(COLLECTIVES)}")
