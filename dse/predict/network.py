"""The network time of collective operators over a hierarchy of network levels (alpha-beta).

The per-level formulas are a table, one row per (collective, topology, algorithm):
``dse.hardware.collectives.TABLE`` (notation and sources there). This module composes them:

* hierarchical (several network levels): reduce-scatter inside the inner level, the collective
  across the outer level on ``S / n_inner``, all-gather back inside; for ring-type levels this is
  ``sum_l AR_l(S_l)`` with ``S_l = S / prod_{j<l} n_j``; an all-to-all sends at each level the bytes
  that leave the block below; a point-to-point crosses the outermost level its group spans.

Every formula is linear in ``1/b``, ``1/B`` and ``alpha``, so a collective row reduces to three
coefficients per network level and the time over thousands of designs is a matrix product.

Protocol choice (``dse.hardware.collectives.PROTOCOLS``): a collective runs under one *variant*, a wire
protocol (LL, LL128, Simple) and whether a reducing switch reduces (NVLS/SHARP) or the level's own
algorithm runs. Each variant is linear on its own, so it keeps its own coefficients; the network time of
a design is the minimum over variants, as NCCL's tuner picks the fastest (algorithm, protocol) per message
size. A protocol's fixed ``base_latency_us`` counts over the cheapest protocol the op may use: that one's
fixed cost is the kernel launch, which the chip's ``launch_overhead_us`` already charges every operator
(also the collective), so it is not counted twice.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dse.hardware import collectives
from dse.hardware.collectives import Axis, Protocol, choose, offers, protocol, protocol_time
from dse.hardware.designs import DesignBatch
from dse.hardware.system import NetworkLevel, System
from dse.predict.traffic import OpArrays
from dse.units import MIB


# ---------------------------------------------------------------------------------- one level
def level_time(coll: str, S: float, n: int, topology: str, b: float, B: float, alpha: float,
               dims: list[int] | None = None, in_network_reduction: bool = False,
               algorithm: str = "ring", protocol: Protocol | None = None, wrap_min: int | None = None) -> float:
    """Time of one collective on one network level (``n`` ranks of that level take part): the
    ``dse.hardware.collectives.TABLE`` row the level chooses, under ``protocol`` when given (its fixed
    base latency excluded; ``math.inf`` when the protocol does not drive that row on this topology). On a torus
    whose slices wrap only along dimensions of at least ``wrap_min`` chips, shorter dimensions are lines."""
    if n <= 1 or S <= 0:
        return 0.0
    tdims = torus_group_dims(dims or [n], n) if topology == "torus" else dims or [n]  # fully_connected: [size]
    if topology == "torus" and wrap_min:
        tdims = [Axis(k, k >= wrap_min) for k in tdims]
    row = choose(coll, topology, algorithm, in_network_reduction)
    if protocol is None:
        return row.time(S, n, b, B, alpha, tdims)
    if not offers(protocol, row, topology):
        return math.inf
    return protocol_time(protocol, row, S, n, b, B, alpha, tdims)


def torus_group_dims(dims: list[int], n: int) -> list[int]:
    """The torus dimensions a group of ``n`` ranks spans: whole leading dimensions when they multiply to ``n``,
    else the largest set of whole dimensions that does (e.g. a group of 8 on a 4x4x8 torus runs on its 8-long ring).

    A compiler maps each parallel mesh axis onto whole physical torus axes, any of them, never splitting one
    (JAX ``mesh_utils._create_device_mesh_for_nd_torus``: "maps each logical axis to one or more physical axes",
    trying combinations of axes whose product is the axis size, and errors out rather than split a physical axis
    unless ``allow_split_physical_axes``)."""
    out, prod = [], 1
    for k in dims:
        if prod >= n:
            break
        out.append(k)
        prod *= k
    if prod == n:
        return out
    for r in range(len(dims), 0, -1):
        for idx in itertools.combinations(range(len(dims)), r):
            if math.prod(dims[i] for i in idx) == n:
                return [dims[i] for i in idx]
    sizes = sorted({math.prod(dims[i] for i in idx) for r in range(1, len(dims) + 1)
                    for idx in itertools.combinations(range(len(dims)), r)})
    raise ValueError(f"a group of {n} ranks, which fills no whole dimensions of the torus {dims} (groups of "
                     f"{', '.join(map(str, sizes))} ranks do: a compiler never splits an axis)")


def sent_bytes(coll: str, S: float, n: int) -> float:
    """Bytes one rank injects: AR ``2(n-1)/n S``, AG/RS/A2A ``(n-1)/n S``, p2p ``S``."""
    if n <= 1:
        return 0.0
    return {"all_reduce": 2 * (n - 1) / n * S, "p2p": S}.get(coll, (n - 1) / n * S)


# ---------------------------------------------------------------------------------- hierarchy
def group_split(n: int, stride: int, sizes: list[int]) -> list[int]:
    """Ranks of a group per network level.

    Group members are chips ``base + k*stride`` (k < n) with chips numbered inner level first; level
    ``l`` blocks hold ``prod(sizes[:l+1])`` consecutive chips. Returns ``n_l`` with ``prod == n``."""
    out, members_below, span = [], 1, 1
    for s in sizes:
        span *= s
        members = min(n, max(1, span // stride))
        if members % members_below:
            raise ValueError(f"a group of {n} ranks with stride {stride} does not tile network levels {sizes}")
        out.append(members // members_below)
        members_below = members
    if members_below != n:
        raise ValueError(f"a group of {n} ranks with stride {stride} needs {n * stride} chips; "
                         f"the system has {span}")
    return out


def coefficients(coll: str, S: float, n: int, stride: int,
                 levels: Sequence[NetworkLevel], protocol_name: str | None = None,
                 in_network: bool = True) -> tuple[np.ndarray, np.ndarray, float, float]:
    """(c_link [N], c_inj [N], alpha seconds, bytes sent) of one collective over the hierarchy.

    Time on a design = ``sum_l c_link[l]/b_l + c_inj[l]/B_l + alpha`` (``b_l``, ``B_l`` with efficiency). A chunked
    protocol (LL128, Simple: its data moves in chunks through a per-channel FIFO) adds each active level's
    ``pipeline_fill_mib`` to ``c_inj``: a collective must move that many bytes before its chunk pipeline runs full,
    so its time is ``(S_bus + n_1/2) / B`` at large sizes (Hockney, "The communication challenge for MPP", Parallel
    Computing 20, 1994: a link's r_inf and n_1/2; fitted per level on measured collectives).
    ``levels`` are a system's typed :class:`~dse.hardware.system.NetworkLevel` s (``System.network``, inner
    first): their ``size``, ``topology``, ``dims``, ``latency_s``, ``in_network_reduction``, ``algorithm``,
    ``collective_library``. ``protocol_name`` (``ll``, ``simple``,
    ...) scales every level's row by its library's record (the base latency is left to
    :func:`variant_coefficients`); ``in_network=False`` runs the level's own algorithm on a reducing
    switch. A protocol some active level cannot run gives ``alpha = inf``."""
    N = len(levels)
    c_link, c_inj = np.zeros(N), np.zeros(N)
    alpha, sent = 0.0, 0.0
    split = group_split(n, stride, [lv.size for lv in levels])
    active = [i for i, k in enumerate(split) if k > 1]
    if not active:
        return c_link, c_inj, 0.0, 0.0
    members_below = 1
    for i in active:
        lv, k = levels[i], split[i]
        if coll == "p2p":
            if i != active[-1]:
                continue
            s_l = S
        elif coll == "all_to_all":
            s_l = S * members_below * k / n  # so (k-1)/k * s_l = the bytes that leave the level-(l-1) block
        else:
            s_l = S / members_below
        members_below *= k
        args = dict(topology=lv.topology, dims=[lv.box_size or lv.size] if lv.topology == "fully_connected" else lv.dims,
                    in_network_reduction=in_network and lv.in_network_reduction,
                    algorithm=lv.algorithm, wrap_min=lv.wrap_min_dim)
        chunked = True
        if protocol_name is not None:
            p = protocol(lv.collective_library, protocol_name)
            if p is None:
                return np.zeros(N), np.zeros(N), math.inf, 0.0
            args["protocol"] = p
            chunked = p.chunked
        c_link[i] = level_time(coll, s_l, k, b=1.0, B=math.inf, alpha=0.0, **args)
        c_inj[i] = level_time(coll, s_l, k, b=math.inf, B=1.0, alpha=0.0, **args)
        if chunked and coll != "p2p":  # the chunk pipeline's fill at the chip's bandwidth (Hockney n_1/2)
            c_inj[i] += lv.pipeline_fill_mib * MIB
        alpha += level_time(coll, s_l, k, b=math.inf, B=math.inf, alpha=lv.latency_s, **args)
        sent += sent_bytes(coll, s_l, k)
    if not (np.isfinite(c_link).all() and np.isfinite(c_inj).all() and math.isfinite(alpha)):
        return np.zeros(N), np.zeros(N), math.inf, sent
    return c_link, c_inj, alpha, sent


def variants(levels: Sequence[NetworkLevel]) -> list[tuple[str, bool]]:
    """The (protocol name, in-network reduction used) pairs a collective may run under on these levels:
    every protocol name of the levels' libraries, with and without the switch's reduction where a level
    has one."""
    libs = {lv.collective_library for lv in levels}
    names = list(dict.fromkeys(p.name for p in collectives.PROTOCOLS if p.library in libs))
    innet = (True, False) if any(lv.in_network_reduction for lv in levels) else (True,)
    return [(name, u) for name in names for u in innet]


def base_latency_s(name: str, n: int, stride: int, levels: Sequence[NetworkLevel]) -> float:
    """The fixed cost per call of protocol ``name``: the largest base latency over the levels the group spans."""
    split = group_split(n, stride, [lv.size for lv in levels])
    bases = [p.base_latency_us for lv, k in zip(levels, split, strict=True) if k > 1
             for p in [protocol(lv.collective_library, name)] if p is not None]
    return max(bases, default=0.0) * 1e-6


def variant_coefficients(coll: str, S: float, n: int, stride: int, levels: Sequence[NetworkLevel]
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(c_link [V, N], c_inj [V, N], alpha [V], bytes sent) of one collective under each of
    :func:`variants` (``alpha = inf`` where the variant cannot run). A variant's alpha includes its
    protocol's base latency over the smallest base latency of the variants that can run: that one is
    the kernel launch, which the chip's ``launch_overhead_us`` already charges the op."""
    vs = variants(levels)
    cl, ci, al = np.zeros((len(vs), len(levels))), np.zeros((len(vs), len(levels))), np.zeros(len(vs))
    sent = 0.0
    for v, (name, u) in enumerate(vs):
        cl[v], ci[v], al[v], s = coefficients(coll, S, n, stride, levels, protocol_name=name, in_network=u)
        sent = max(sent, s)
    ok = np.isfinite(al)
    if sent > 0 and ok.any():  # a collective that crosses a level: add the protocols' fixed cost
        base = np.array([base_latency_s(name, n, stride, levels) for name, _ in vs])
        al = al + base - base[ok].min()
    return cl, ci, al, sent


# ---------------------------------------------------------------------------------- designs x ops
def row_coefficients(o: OpArrays, system: System) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(c_link [V, N, Oc], c_inj [V, N, Oc], alpha [V, Oc], bytes sent [Oc]) of the collective rows of ``o`` on
    ``system`` under each variant (:func:`variant_coefficients`), cached on ``o`` per system (the
    coefficients do not depend on the design's numbers)."""
    key = ("variants", *(repr(lv) for lv in system.network))  # every field of every level, sizes and dims included
    if key not in o.cache:
        specs = system.network
        V = len(variants(specs))
        cl = np.zeros((V, len(specs), len(o.coll)))
        ci = np.zeros_like(cl)
        al = np.zeros((V, len(o.coll)))
        sent = np.zeros(len(o.coll))
        for j, (c, S, n, st) in enumerate(zip(o.coll, o.net_bytes, o.group, o.stride, strict=True)):
            try:
                cl[:, :, j], ci[:, :, j], al[:, j], sent[j] = variant_coefficients(c, float(S), int(n), int(st), specs)
            except ValueError as exc:
                from dse.errors import DseError

                raise DseError(f"got {exc}; accepted: parallel degrees that fit {system.name}'s levels {system.sizes}",
                               field="plan") from None
        o.cache[key] = (cl, ci, al, sent)
    return o.cache[key]


def sent_per_op(o: OpArrays, system: System) -> np.ndarray:
    """[O] bytes one chip injects into the network per instance of each op (sorted order; 0 off collectives)."""
    sent = np.zeros(o.n)
    if o.coll_idx.size:
        sent[o.coll_idx] = row_coefficients(o, system)[3]
    return sent


def network_times(d: DesignBatch, o: OpArrays) -> np.ndarray:
    """[D, Oc] seconds of each collective row on each design: the fastest variant's
    ``(1/b) @ c_link + (1/B) @ c_inj + alpha`` with ``b`` = link bandwidth x efficiency and ``B`` = links x
    ``b`` per network level."""
    if d.system is None:
        from dse.errors import DseError

        raise DseError("the workload has collective operators (a parallelism plan) but the hardware is one chip; "
                       "accepted: a system (e.g. dgx-a100) or chips=/system= in predict", field="hardware")
    cl, ci, al, _ = row_coefficients(o, d.system)
    b = d.net_link_bw * d.net_eff
    B = b * d.net_links
    # a level without links (0 links searched) takes "forever" (1e30 s per byte), never a NaN
    inv_b, inv_B = 1.0 / np.maximum(b, 1e-30), 1.0 / np.maximum(B, 1e-30)
    out = np.full((d.n, cl.shape[2]), np.inf)
    for v in range(cl.shape[0]):  # a handful of variants (protocols x in-network), not designs or ops
        np.minimum(out, inv_b @ cl[v] + inv_B @ ci[v] + al[v][None, :], out=out)
    return out


def best_variant(coll: str, S: float, n: int, stride: int, levels: Sequence[NetworkLevel], b: np.ndarray,
                 B: np.ndarray) -> tuple[str, bool, float]:
    """(protocol name, in-network reduction used, seconds) of the fastest variant of one collective on one
    design whose levels have per-link bandwidth ``b`` and per-chip bandwidth ``B`` (byte/s, efficiency
    applied)."""
    cl, ci, al, _ = variant_coefficients(coll, S, n, stride, levels)
    t = cl @ (1.0 / np.asarray(b, float)) + ci @ (1.0 / np.asarray(B, float)) + al
    v = int(np.argmin(t))
    name, u = variants(levels)[v]
    return name, u and any(lv.in_network_reduction for lv in levels), float(t[v])


# ---------------------------------------------------------------------------------- placement
def placement_error(wl: Any, sysm: Any, seen: dict[tuple[str, int, int], str] | None = None) -> str:
    """Why a planned workload's collectives cannot be laid on the system ("" when they can): each collective row's
    group (its ranks and their stride, ``dse.workloads.parallel.Plan.stride``) must tile the network levels
    (``dse.predict.network.group_split``) and, on a torus, fill whole torus dimensions, any of them
    (``dse.predict.network.torus_group_dims``; a group that would split a dimension is not modelled). The same
    coefficients the predictor takes, so a candidate that passes here predicts. ``seen`` keeps each group's answer
    on this system across the candidates of one search (thousands of plans share a few dozen groups)."""
    ops = wl.ops
    if wl.plan is None or not sysm.network or "coll" not in ops:
        return ""
    seen = {} if seen is None else seen
    coll = ops["coll"].to_numpy(dtype=object)
    on = coll != ""
    groups = zip(coll[on].tolist(), ops["group"].to_numpy()[on].tolist(), ops["stride"].to_numpy()[on].tolist(),
                 strict=True)
    for key in {(str(c), int(n), int(s)) for c, n, s in groups}:
        if key not in seen:
            try:
                variant_coefficients(key[0], 1.0, key[1], key[2], sysm.network)
                seen[key] = ""
            except ValueError as exc:
                seen[key] = str(exc)
        if seen[key]:
            return seen[key]
    return ""


def placed(wls: list[Any], errors: list[str], sysm: Any) -> tuple[list[Any], list[str]]:
    """The built candidates whose groups the system can place, and the error list with a reason for the others
    (a candidate that cannot be placed is a row of the table, not the end of the search; ``dse.plan_search`` and a
    study's ``plan: auto``)."""
    out, errs, it, seen = [], list(errors), iter(wls), {}
    for i, err in enumerate(errors):
        if err:
            continue
        w = next(it)
        why = placement_error(w, sysm, seen)
        if why:
            errs[i] = why
        else:
            out.append(w)
    return out, errs
