"""What stays on chip on a study's best design, and the SRAM that would keep the next tensor there (summary.md).

Read from what the study predicted (``Prediction.ops``: ``act_on_chip``, ``held_on_chip``, ``held``,
``held_bytes``, ``footprint_weights``, ``footprint_kv``, ``residency``) and the residency rules of
:mod:`dse.predict.traffic`: the resident level is the shared on-chip level inside the main memory with the largest
``R = capacity x resident_share``; a scratchpad keeps an op's activations where its ``live`` bytes (``bytes_read +
bytes_written - held_bytes``) fit, ``live <= R``, and pins the held tensors (weights, then the KV cache) in the room
the largest such activation set leaves; a cache keeps everything only when ``max live + weights + kv <= R``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dse.hardware.designs import SRAM_MACRO_BYTES, DesignBatch
from dse.predict.traffic import resident_capacity
from dse.units import MIB
from dse.workloads.ops import KEEPS_ACTIVATIONS, KEEPS_HELD


@dataclass(frozen=True)
class ResidentLevel:
    """The on-chip level tensors stay in between operators: its name, bytes, resident share and organisation."""

    name: str
    capacity: float  # bytes
    share: float  # resident share (1 for a scratchpad)
    cache: bool
    steps: bool = True  # it keeps tensors across steps (``MemoryLevel.keeps_across_steps``)

    @property
    def resident(self) -> float:
        """Bytes that may stay, ``R = capacity x share``."""
        return self.capacity * self.share

    def label(self) -> str:
        """E.g. ``global SRAM 32 MiB`` or ``L2 cache 50 MiB, 70 % resident``."""
        extra = f", {self.share * 100:.0f} % resident" if self.share < 1 else ""
        return f"{self.named} {self.capacity / MIB:g} MiB{extra}"

    @property
    def named(self) -> str:
        """The level's name and kind, ``global SRAM``, ``L2 cache``; a name that says its kind once (``sram``)."""
        kind = "cache" if self.cache else "SRAM"
        return self.name if self.name.lower().endswith(kind.lower()) else f"{self.name} {kind}"


def resident_level(d: DesignBatch, i: int = 0) -> ResidentLevel | None:
    """Design ``i``'s resident level: of the levels inside the main memory (``offchip_index``) the one with the largest
    ``capacity x resident_share`` (``dse.predict.traffic.resident_capacity``), None when none keeps anything (no
    shared on-chip level, or a chip without DRAM whose main memory is its outermost SRAM)."""
    j = d.offchip_index
    res = resident_capacity(d)
    k = int(res.level[i, j])
    if k < 0:
        return None
    return ResidentLevel(d.level_names[k], float(d.capacity[i, k]), float(d.resident_share[k]),
                         bool(res.cache[i, j]), bool(res.steps[i, j]))


def live_bytes(ops: pd.DataFrame) -> np.ndarray:
    """[O] activation bytes of each row, ``max(bytes_read + bytes_written - held_bytes, 0)`` (held rows only)."""
    if "held" in ops:
        col = ops["held"].to_numpy()
        held = (col.astype(str) != "") & ~pd.isna(col)
    else:
        held = np.zeros(len(ops), dtype=bool)
    hb = ops["held_bytes"].to_numpy(dtype=float) if "held_bytes" in ops else np.zeros(len(ops))
    total = ops["bytes_read"].to_numpy(dtype=float) + ops["bytes_written"].to_numpy(dtype=float)
    return np.maximum(total - np.where(held, hb, 0.0), 0.0)


def _held_rows(ops: pd.DataFrame, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """([O] bool: the rows that hold a ``kind`` tensor, [O] their ``held_bytes x count``), numpy throughout (the
    explorer words every workload on each knob move)."""
    rows = ops["held"].to_numpy().astype(str) == kind
    return rows, ops["held_bytes"].to_numpy(dtype=float) * ops["count"].to_numpy(dtype=float)


def held_share(ops: pd.DataFrame, kind: str) -> float:
    """Share of the ``kind`` tensor's bytes that stay on chip: ``sum(held_on_chip x held_bytes x count) /
    sum(held_bytes x count)`` over its rows; nan without such rows."""
    rows, w = _held_rows(ops, kind)
    w = w[rows]
    if not rows.any() or w.sum() <= 0:
        return float("nan")
    return float((ops["held_on_chip"].to_numpy(dtype=float)[rows] * w).sum() / w.sum())


def activation_share(ops: pd.DataFrame) -> float:
    """Share of operators whose activations stay on chip: the count-weighted mean of ``act_on_chip`` over the rows
    that move activations (``live > 0``, collectives left out); nan without such rows."""
    rows = live_bytes(ops) > 0
    if "coll" in ops:
        rows &= ops["coll"].to_numpy().astype(str) == ""
    n = ops["count"].to_numpy(dtype=float)[rows]
    if n.sum() <= 0:
        return float("nan")
    return float((ops["act_on_chip"].to_numpy(dtype=float)[rows] * n).sum() / n.sum())


def room_capacity(lives: np.ndarray, need: float, at_least: float = 0.0) -> float:
    """Smallest resident bytes ``R >= at_least`` at which a scratchpad pins ``need`` bytes of held tensors beside the
    largest activation set that fits: ``R - reserve(R) >= need`` with ``reserve(R) = max{live <= R}`` (0 when none
    fits). ``reserve`` steps up at each distinct live size, so the room is not monotone in ``R``: a larger level lets a
    larger activation set in, which takes the room. The candidates are ``at_least`` and every ``l_j + need`` above it
    (``0 = l_0 < l_1 < ...`` the distinct lives); the first that satisfies the inequality is the answer (the last,
    ``max live + need``, always does). ``at_least`` is the level's present size, so the answer is never below it."""
    levels = np.unique(np.concatenate([[0.0], lives[lives > 0]]))
    candidates = np.unique(np.concatenate([[at_least], levels + need]))
    for r in candidates[candidates >= at_least]:
        reserve = levels[levels <= r].max()
        if r - reserve >= need * (1 - 1e-12):
            return float(r)
    return float(levels[-1] + need)  # not reached: max live + need always qualifies


def macro_mib(resident_bytes: float, share: float) -> float:
    """Level capacity (MiB) holding ``resident_bytes`` of resident storage: ``ceil(bytes / share / macro) x macro``,
    whole 128 KiB SRAM macros (``dse.hardware.designs.SRAM_MACRO_BYTES``)."""
    return math.ceil(resident_bytes / share / SRAM_MACRO_BYTES - 1e-9) * SRAM_MACRO_BYTES / MIB


@dataclass(frozen=True)
class WorkloadResidency:
    """What of one workload stays on chip (shares 0..1, nan where the workload has none of that kind)."""

    activations: float
    weights: float
    weights_bytes: float
    kv: float
    kv_bytes: float
    policy: str
    next_kind: str | None  # "weights", "KV cache", "activations", or None when everything stays
    next_mib: float  # capacity of the resident level that makes ``next_kind`` fit (nan with none)


def _footprint(ops: pd.DataFrame, column: str, kind: str) -> float:
    """Bytes of a held kind on one chip: the ``footprint_*`` column, else its rows' held bytes once each."""
    if column in ops and len(ops):
        return float(ops[column].to_numpy()[0])
    rows, w = _held_rows(ops, kind)
    return float(w[rows].sum())


def next_to_fit(ops: pd.DataFrame, level: ResidentLevel, shares: tuple[float, float, float], policy: str
                ) -> tuple[str | None, float]:
    """(the next kind that does not stay whole, the level capacity in MiB that keeps it): weights first, then the KV
    cache (:func:`room_capacity` of weights, of weights + KV), then every operator's activations (``max live``). A
    cache keeps everything together: ``max live + weights + kv`` (:func:`macro_mib` over the resident share)."""
    act, w_share, kv_share = shares
    lives = live_bytes(ops)
    acts = ops["residency"].isin(KEEPS_ACTIVATIONS).to_numpy() if "residency" in ops else np.ones(len(ops), bool)
    w, kv = _footprint(ops, "footprint_weights", "weights"), _footprint(ops, "footprint_kv", "kv_cache")
    held_ok = policy in KEEPS_HELD and level.steps  # held tensors stay only in a level that keeps them across steps
    todo = [(name, need) for name, share, need, size in (("weights", w_share, w, w), ("KV cache", kv_share, w + kv, kv))
            if held_ok and size > 0 and not share >= 1 - 1e-9]
    if not todo and policy in KEEPS_ACTIVATIONS and not act >= 1 - 1e-9 and lives.size:
        todo = [("activations", -1.0)]
    if not todo:
        return None, float("nan")
    name, need = todo[0]
    if level.cache:
        need_bytes = float(lives.max(initial=0.0)) + w + kv
    elif need < 0:
        need_bytes = float(lives[acts].max(initial=0.0))
    else:  # from the level's present size up: a size below it keeps a smaller activation set, not what runs
        need_bytes = room_capacity(lives[acts], need, at_least=level.resident)
    return name, macro_mib(need_bytes, level.share)


def workload_residency(ops: pd.DataFrame, level: ResidentLevel) -> WorkloadResidency | None:
    """:class:`WorkloadResidency` from one prediction's ``ops``; None when the table carries no residency columns
    (``act_on_chip``, ``held_on_chip``)."""
    if "act_on_chip" not in ops or "held_on_chip" not in ops or "held" not in ops:
        return None
    policy = str(ops["residency"].to_numpy()[0]) if "residency" in ops and len(ops) else "auto"
    shares = (activation_share(ops), held_share(ops, "weights"), held_share(ops, "kv_cache"))
    kind, mib = next_to_fit(ops, level, shares, policy)
    return WorkloadResidency(shares[0], shares[1], _footprint(ops, "footprint_weights", "weights"), shares[2],
                             _footprint(ops, "footprint_kv", "kv_cache"), policy, kind, mib)


def pct_text(pct: float) -> str:
    """A share in % as a whole number, ``< 1`` for a positive sliver that would print as 0."""
    text = f"{pct:.0f}"
    return "< 1" if pct > 0 and text == "0" else text


def _held_text(name: str, share: float, size: float) -> str:
    """``13 % of the weights (247 MB)``, ``all the weights (247 MB)``, ``weights: none (247 MB)``, ``no weights``."""
    if size <= 0 or math.isnan(share):
        return f"no {name}" if size <= 0 else f"{name}: none ({size / 1e6:.0f} MB)"
    if share >= 1 - 1e-9:
        return f"all the {name} ({size / 1e6:.0f} MB)"
    if share <= 0:
        return f"{name}: none ({size / 1e6:.0f} MB)"
    return f"{pct_text(share * 100)} % of the {name} ({size / 1e6:.0f} MB)"


def _mib_text(mib: float) -> str:
    """``280``, ``1,536.125``: MiB to 3 decimals without trailing zeros."""
    return f"{mib:,.3f}".rstrip("0").rstrip(".")


def _policy_keeps_off(r: WorkloadResidency) -> str:
    """What the scenario's ``residency`` policy keeps off chip whatever the SRAM (``weights``: the activations;
    ``activations``: the weights and KV cache the workload has), '' where it keeps nothing off."""
    off = []
    if r.policy not in KEEPS_ACTIVATIONS and not math.isnan(r.activations):
        off.append("activations")
    if r.policy not in KEEPS_HELD:
        off += [name for name, size in (("weights", r.weights_bytes), ("KV cache", r.kv_bytes)) if size > 0]
    return " and ".join(off)


def residency_text(r: WorkloadResidency, level: ResidentLevel) -> str:
    """E.g. ``activations of 97 % of operators; 13 % of the weights (247 MB); KV cache: none (38 MB). Weights fit
    from 280 MiB of global SRAM.``"""
    if r.policy == "none":
        return "nothing (residency: none)."
    act = "activations of no operator" if math.isnan(r.activations) else \
        f"activations of {r.activations * 100:.0f} % of operators"
    parts = [act, _held_text("weights", r.weights, r.weights_bytes)]
    if r.kv_bytes > 0:
        parts.append(_held_text("KV cache", r.kv, r.kv_bytes))
    text = "; ".join(parts) + "."
    if not level.steps and r.policy in KEEPS_HELD and r.weights_bytes + r.kv_bytes > 0:
        text += f" {level.name} keeps no tensor across steps (keeps: step), so no SRAM size keeps the weights."
    if r.next_kind is None:
        kept_off = _policy_keeps_off(r)
        if kept_off:
            return text + f" The {kept_off} stay{'s' if kept_off == 'KV cache' else ''} off chip by the scenario's " \
                f"residency: {r.policy}."
        return text + (" Every tensor stays on chip." if level.steps else "")
    what = "Every operator's activations fit" if r.next_kind == "activations" else \
        f"{r.next_kind[0].upper()}{r.next_kind[1:]} fit{'s' if r.next_kind == 'KV cache' else ''}"
    return text + f" {what} from {_mib_text(r.next_mib)} MiB of {level.named}."


def next_text(r: WorkloadResidency, level: ResidentLevel) -> str:
    """What the resident level keeps next and from what size: ``weights fit from 280 MiB``, ``every tensor stays``
    (:func:`next_to_fit`); ``every activation stays`` where the level keeps no tensor across steps (no size of it
    keeps the weights) and every operator's activations fit."""
    if r.policy == "none":
        return "nothing stays (residency: none)"
    if r.next_kind is None:
        kept_off = _policy_keeps_off(r)
        if kept_off:
            return f"{kept_off} off chip (residency: {r.policy})"
        return "every tensor stays" if level.steps else "every activation stays"
    return f"{r.next_kind} fit{'s' if r.next_kind == 'KV cache' else ''} from {_mib_text(r.next_mib)} MiB"


def nothing_resident_text(d: DesignBatch) -> str:
    """Why no tensor stays on chip between operators where :func:`resident_level` is None: a chip without DRAM keeps
    every tensor in its main memory; else the on-chip SRAM levels keep only tiles (per-core copies, or ``keeps:
    tiles``), named."""
    if not d.offchip.any():
        return f"every tensor (no DRAM level: main memory is {d.offchip_name})"
    tiles = [f"{m.name}'s {m.instances} copies" if m.instances > 1 else m.name
             for m in d.base.memory if not m.off_chip and m.kind == "sram"]
    one = len(tiles) == 1 and "copies" not in tiles[0]
    why = f"{' and '.join(tiles)} keep{'s' if one else ''} only tiles" if tiles else "no on-chip SRAM level"
    return f"nothing between operators ({why})"


def residency_table(d: DesignBatch, predictions: list, labels: list[str], i: int = 0) -> tuple[str, pd.DataFrame]:
    """(a line naming the resident level of design ``i``, one row per workload: the share of its operators whose
    activations stay, of its weights and of its KV cache that stay, in %, blank where it has none, and what stays next
    from what size, :func:`next_text`) for the explorer; the rows are empty where no on-chip level keeps tensors."""
    cols = ["workload", "activations on chip (%)", "weights on chip (%)", "KV cache on chip (%)", "next"]
    level = resident_level(d, i)
    if level is None:
        return nothing_resident_text(d), pd.DataFrame(columns=cols)
    rows = []
    for lab, p in zip(labels, predictions, strict=True):
        r = workload_residency(p.ops, level)
        if r is None:
            continue
        rows.append({"workload": lab, cols[1]: 100 * r.activations,
                     cols[2]: 100 * r.weights if r.weights_bytes > 0 else math.nan,
                     cols[3]: 100 * r.kv if r.kv_bytes > 0 else math.nan, "next": next_text(r, level)})
    steps = "kept across steps" if level.steps else "kept within a step (keeps: step)"
    return f"resident level: {level.label()}, {steps}", pd.DataFrame(rows, columns=cols)


def residency_lines(result) -> list[str]:  # noqa: ANN001 - a dse.study.StudyResult
    """summary.md lines: what stays on chip on the best design, per workload of the mix, and what size of the resident
    level keeps the next tensor (:func:`next_to_fit`); one line for a chip without DRAM or a shared on-chip level;
    none when the predictions carry no residency columns."""
    best = result.best
    preds = result.best_eval.predictions
    level = resident_level(best)
    if level is None:
        if not best.offchip.any():
            return [f"- Resident on chip on the best design: every tensor (no DRAM level: the main memory is SRAM "
                    f"`{best.offchip_name}`, {float(best.offchip_capacity[0]) / MIB:g} MiB)"]
        return [f"- Resident on chip on the best design: {nothing_resident_text(best)}"]
    rows = [(lab, workload_residency(p.ops, level)) for lab, p in zip(result.ctx.mix.labels, preds, strict=True)]
    rows = [(lab, r) for lab, r in rows if r is not None]
    if not rows:
        return []
    head = f"- Resident on chip on the best design ({level.label()}):"
    if len(rows) == 1:
        return [f"{head} {residency_text(rows[0][1], level)}"]
    return [head, *(f"  - {lab}: {residency_text(r, level)}" for lab, r in rows)]
