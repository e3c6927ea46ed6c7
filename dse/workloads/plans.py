"""The candidate parallelism plans of a workload on N chips (no prediction here: ``dse.plan_search`` predicts them,
a study with ``plan: auto`` scores each design at its best one).

TP degrees divide the chips and stay inside one node (Megatron keeps tensor parallelism in the NVLink domain,
Narayanan et al. SC 2021, Sec. 3.3), pipeline stages divide the rest, the remainder is data parallel; micro-batch
counts divide a replica's batch (at least the stage count); ZeRO 0-3 where there is data parallelism in training,
and with ZeRO 3 hybrid sharding: fully sharded within a group of ``fsdp`` data-parallel ranks that fits in one node
with its TP ranks, replicated across the groups (PyTorch FSDP ``ShardingStrategy.HYBRID_SHARD``: "apply FULL_SHARD
within a node, and replicate parameters across nodes"); recompute none / minimal / selective / full in training;
sequence parallelism on and off with TP; expert parallelism for MoE models. Fixed fields hold.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from dse.errors import DseError
from dse.workloads.library import Workload, workload

#: micro-batch counts tried (those dividing a replica's batch; with pipeline stages, at least as many as stages)
MICROBATCHES = (1, 2, 4, 8, 16, 32, 64, 128)
#: recomputation policies tried (dse.workloads.parallel.Plan.recompute)
RECOMPUTE = ("none", "minimal", "selective", "full")
#: the fields a caller may fix (the last two are only held: how a framework cuts its TP shards per core)
SEARCHED = ("tp", "pp", "dp", "fsdp", "ep", "sp", "microbatches", "zero", "recompute", "interleave", "tp_per_chip",
            "pad_heads")


def divisors(n: int) -> list[int]:
    """The positive divisors of ``n``, ascending: each ``k <= sqrt(n)`` that divides it and its cofactor ``n // k``
    (``sqrt(n)`` trials, not ``n``)."""
    small = [k for k in range(1, math.isqrt(n) + 1) if n % k == 0]
    return small + [n // k for k in reversed(small) if k * k != n]


def model_experts(wl: Workload) -> int:
    """Experts per MoE layer of a library model (0: dense, or not a library model)."""
    from dse.workloads.library import load_description

    try:
        arch = load_description(wl.origin or wl.name).arch
    except DseError:
        return 0
    moe = arch.get("moe") if isinstance(arch, dict) else None
    return int(moe.get("experts", 0)) if isinstance(moe, dict) else 0


def check_fixed(fixed: dict[str, Any], chips: int) -> None:
    bad = sorted(set(fixed) - set(SEARCHED))
    if bad:
        raise DseError(f"got {bad[0]!r}; accepted: {', '.join(SEARCHED)}", field="best_plan")
    for g in ("tp", "pp", "dp", "fsdp", "ep", "microbatches", "interleave", "tp_per_chip"):
        v = fixed.get(g)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise DseError(f"got {g}={v!r}; accepted: a positive integer", field=g)
    if "zero" in fixed and fixed["zero"] not in (0, 1, 2, 3):
        raise DseError(f"got zero={fixed['zero']!r}; accepted: 0, 1, 2 or 3 (the ZeRO stage)", field="zero")
    if "recompute" in fixed and fixed["recompute"] not in RECOMPUTE:
        raise DseError(f"got recompute={fixed['recompute']!r}; accepted: {', '.join(RECOMPUTE)}", field="recompute")
    if fixed.get("sp") and fixed.get("tp") == 1:
        raise DseError("got sp with tp=1; accepted: sp with tp > 1 (sequence parallelism splits over the TP ranks)",
                       field="sp")
    for g in ("tp", "pp", "dp"):
        if g in fixed and chips % int(fixed[g]):
            raise DseError(f"got {g}={fixed[g]} with {chips} chips; accepted: {g} dividing {chips} "
                           f"({', '.join(map(str, divisors(chips)))})", field=g)
    prod = math.prod(int(fixed.get(g, 1)) for g in ("tp", "pp", "dp"))
    if chips % prod:
        raise DseError(f"got tp x pp x dp = {prod} fixed with {chips} chips; accepted: degrees whose product divides "
                       f"{chips}", field="best_plan")
    if "fsdp" in fixed:
        n = int(fixed["fsdp"])
        if fixed.get("zero", 3) != 3:
            raise DseError(f"got zero={fixed['zero']} with fsdp={n}; accepted: zero 3 or unset (fsdp shards "
                           "parameters, gradients and optimizer state)", field="zero")
        if chips % n or ("dp" in fixed and int(fixed["dp"]) % n):
            within = int(fixed["dp"]) if "dp" in fixed else chips
            raise DseError(f"got fsdp={n} with {within} {'data-parallel ranks' if 'dp' in fixed else 'chips'}; "
                           f"accepted: fsdp dividing {within} ({', '.join(map(str, divisors(within)))})",
                           field="fsdp")


def fsdp_sizes(dp: int, tp: int, per_node: int, fixed: dict[str, Any]) -> list[int | None]:
    """The shard-group sizes tried with ZeRO 3 on ``dp`` data-parallel ranks: ``None`` (all ``dp`` ranks, plain
    ZeRO 3 = FSDP ``FULL_SHARD``) and each hybrid group ``1 < fsdp < dp`` dividing ``dp`` whose ranks with their TP
    ranks fit one node, ``fsdp x tp <= per_node`` (``HYBRID_SHARD`` shards within a node and replicates across
    nodes); a fixed ``fsdp`` alone (``None`` when it equals ``dp``)."""
    if "fsdp" in fixed:
        n = int(fixed["fsdp"])
        return [] if dp % n else [None if n == dp else n]
    return [None] + [k for k in divisors(dp) if 1 < k < dp and k * tp <= per_node]


def candidates(wl: Workload, chips: int, per_node: int, **fixed: Any) -> list[dict[str, Any]]:
    """Plan keyword sets for ``chips`` chips (see the module docstring); ``fixed`` fields are held. TP degrees
    go up to ``per_node`` (chips in one node) unless ``tp`` is fixed."""
    check_fixed(fixed, chips)
    batch = int(wl.scenario.get("batch", 1) or 1)
    training = wl.scenario.get("phase") == "training"
    experts = model_experts(wl)
    out = []
    tps = [int(fixed["tp"])] if "tp" in fixed else [t for t in divisors(chips) if t <= max(per_node, 1)]
    v = int(fixed.get("interleave", 1))
    for tp in tps:
        pps = [int(fixed["pp"])] if "pp" in fixed else divisors(chips // tp)
        for pp in pps:
            if (chips // tp) % pp or (v > 1 and pp == 1):  # interleaving needs stages (parallel.check_interleave)
                continue
            dp = chips // (tp * pp)
            if "dp" in fixed and int(fixed["dp"]) != dp:
                continue
            if batch % dp:
                continue
            per_replica = batch // dp
            mbs = [int(fixed["microbatches"])] if "microbatches" in fixed else [
                m for m in MICROBATCHES if per_replica % m == 0 and (pp == 1 or m >= pp) and m <= per_replica
                and (v == 1 or m % pp == 0)]  # the interleaved schedule runs groups of pp micro-batches
            if v > 1 and not mbs:
                continue
            zeros = ([3] if "fsdp" in fixed else [int(fixed["zero"])] if "zero" in fixed
                     else ([0, 1, 2, 3] if dp > 1 and training else [0]))
            if (dp == 1 and any(zeros)) or (tp == 1 and fixed.get("sp")):
                continue  # ZeRO needs data-parallel ranks, sequence parallelism tensor-parallel ones (Plan refuses)
            recs = [fixed["recompute"]] if "recompute" in fixed else (list(RECOMPUTE) if training else ["none"])
            sps = [bool(fixed["sp"])] if "sp" in fixed else ([False, True] if tp > 1 else [False])
            eps = [int(fixed["ep"])] if "ep" in fixed else ([e for e in divisors(dp * tp) if experts % e == 0]
                                                           if experts else [1])
            shards = [(z, f) for z in zeros for f in (fsdp_sizes(dp, tp, per_node, fixed) if z == 3 else [None])]
            for mb, (zero, fsdp), rec, sp, ep in itertools.product(mbs or [None], shards, recs, sps, eps):
                kw = {"tp": tp, "pp": pp, "dp": dp, "ep": ep, "sp": sp, "zero": zero, "recompute": rec, "interleave": v}
                if fsdp is not None:
                    kw["fsdp"] = fsdp
                if mb is not None:
                    kw["microbatches"] = mb
                kw |= {k: fixed[k] for k in ("tp_per_chip", "pad_heads") if k in fixed}  # held, never searched
                out.append(kw)
    return out


def plan_text(plan: Any) -> str:
    """A plan in full, every searched field, in ``Plan.label``'s order (``tp4 dp2 sp mb8 zero1 rc:selective``; the
    micro-batches shown even where they equal pp); ``1 chip`` for none."""
    if plan is None:
        return "1 chip"
    bits = [f"{g}{getattr(plan, g)}" for g in ("tp", "pp", "dp", "ep") if getattr(plan, g) > 1]
    bits += [f"fsdp{plan.shards}"] if getattr(plan, "hybrid", False) else []  # the shard group of hybrid sharding
    bits += [f"x{plan.tp_per_chip}/chip"] if plan.tp_per_chip > 1 else []
    bits += ["padheads"] if plan.pad_heads else []
    bits += ["sp"] if plan.sp and plan.tp > 1 else []  # in Plan.label's order: sp, mb, v, zero, rc
    bits += [f"mb{plan.m}"] if plan.m > 1 else []
    bits += [f"v{plan.interleave}"] if plan.interleave > 1 else []
    bits += [f"zero{plan.zero}"] if plan.zero else []
    bits += [f"rc:{plan.recompute}"] if plan.recompute != "none" else []
    return " ".join(bits) or "1 chip"


def expand(wl: Workload, keys: list[dict[str, Any]]) -> tuple[list[Workload], list[dict[str, Any]], list[str]]:
    """Each candidate built (``dse.workload(origin, plan=..., **spec)``): the workloads that build, their plan
    keywords, and one error line per candidate that does not (in ``keys`` order: ``""`` where it built)."""
    wls, kept, errors = [], [], []
    for kw in keys:
        try:
            wls.append(workload(wl.origin or wl.name, plan=kw, **wl.spec))
        except (DseError, ValueError) as exc:
            errors.append(str(exc).splitlines()[0])
            continue
        kept.append(kw)
        errors.append("")
    return wls, kept, errors
