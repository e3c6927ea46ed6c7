"""The network time of collective operators over a hierarchy of network levels (alpha-beta).

The per-level formulas are a table, one row per (collective, topology, algorithm):
``dse.hardware.collectives.TABLE`` (notation and sources there). This module composes them:

* hierarchical (several network levels): reduce-scatter inside the inner level, the collective
  across the outer level on ``S / n_inner``, all-gather back inside; for ring-type levels this is
  ``sum_l AR_l(S_l)`` with ``S_l = S / prod_{j<l} n_j``; an all-to-all sends at each level the bytes
  that leave the block below; a point-to-point crosses the outermost level its group spans.

Every formula is linear in ``1/b``, ``1/B`` and ``alpha``, so a collective row reduces to three
coefficients per network level and the time over thousands of designs is a matrix product.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dse.hardware.collectives import choose
from dse.hardware.designs import DesignBatch
from dse.hardware.system import NetworkLevel, System
from dse.predict.traffic import OpArrays


# ---------------------------------------------------------------------------------- one level
def level_time(coll: str, S: float, n: int, topology: str, b: float, B: float, alpha: float,
               dims: list[int] | None = None, in_network_reduction: bool = False,
               algorithm: str = "ring") -> float:
    """Time of one collective on one network level (``n`` ranks of that level take part): the
    ``dse.hardware.collectives.TABLE`` row the level chooses."""
    if n <= 1 or S <= 0:
        return 0.0
    tdims = torus_group_dims(dims or [n], n) if topology == "torus" else [n]
    return choose(coll, topology, algorithm, in_network_reduction).time(S, n, b, B, alpha, tdims)


def torus_group_dims(dims: list[int], n: int) -> list[int]:
    """The torus dimensions a group of ``n`` ranks spans (whole leading dimensions)."""
    out, prod = [], 1
    for k in dims:
        if prod >= n:
            break
        out.append(k)
        prod *= k
    if prod != n:
        raise ValueError(f"a group of {n} ranks does not fill whole dimensions of the torus {dims}")
    return out


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
                 levels: Sequence[NetworkLevel]) -> tuple[np.ndarray, np.ndarray, float, float]:
    """(c_link [N], c_inj [N], alpha seconds, bytes sent) of one collective over the hierarchy.

    Time on a design = ``sum_l c_link[l]/b_l + c_inj[l]/B_l + alpha`` (``b_l``, ``B_l`` with efficiency).
    ``levels`` are a system's typed :class:`~dse.hardware.system.NetworkLevel` s (``System.network``, inner
    first): their ``size``, ``topology``, ``dims``, ``latency_s``, ``in_network_reduction``, ``algorithm``."""
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
        args = dict(topology=lv.topology, dims=lv.dims, in_network_reduction=lv.in_network_reduction,
                    algorithm=lv.algorithm)
        c_link[i] = level_time(coll, s_l, k, b=1.0, B=math.inf, alpha=0.0, **args)
        c_inj[i] = level_time(coll, s_l, k, b=math.inf, B=1.0, alpha=0.0, **args)
        alpha += level_time(coll, s_l, k, b=math.inf, B=math.inf, alpha=lv.latency_s, **args)
        sent += sent_bytes(coll, s_l, k)
    return c_link, c_inj, alpha, sent


# ---------------------------------------------------------------------------------- designs x ops
def row_coefficients(o: OpArrays, system: System) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(c_link [N, Oc], c_inj [N, Oc], alpha [Oc], bytes sent [Oc]) of the collective rows of ``o`` on ``system``
    (its typed ``network`` levels), cached on ``o`` per system (the coefficients do not depend on the design's
    numbers)."""
    key = (system.name, tuple(system.sizes))
    if key not in o.cache:
        levels = system.network
        cl = np.zeros((len(levels), len(o.coll)))
        ci = np.zeros_like(cl)
        al = np.zeros(len(o.coll))
        sent = np.zeros(len(o.coll))
        for j, (c, S, n, st) in enumerate(zip(o.coll, o.net_bytes, o.group, o.stride, strict=True)):
            try:
                cl[:, j], ci[:, j], al[j], sent[j] = coefficients(c, float(S), int(n), int(st), levels)
            except ValueError as exc:
                from dse.errors import DseError

                raise DseError(f"{exc}; accepted: parallel degrees that fit {system.name}'s levels {system.sizes}",
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
    """[D, Oc] seconds of each collective row on each design: ``(1/b) @ c_link + (1/B) @ c_inj + alpha``
    with ``b`` = link bandwidth x efficiency and ``B`` = links x ``b`` per network level."""
    if d.system is None:
        from dse.errors import DseError

        raise DseError("the workload has collective operators (a parallelism plan) but the hardware is one chip; "
                       "accepted: a system (e.g. dgx-a100) or chips=/system= in predict", field="hardware")
    cl, ci, al, _ = row_coefficients(o, d.system)
    b = d.net_link_bw * d.net_eff
    B = b * d.net_links
    # a level without links (0 links searched) takes "forever" (1e30 s per byte), never a NaN
    return (1.0 / np.maximum(b, 1e-30)) @ cl + (1.0 / np.maximum(B, 1e-30)) @ ci + al[None, :]
