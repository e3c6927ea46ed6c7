"""What-if: staged optimisations of one workload or operator on one design, the roofline-guided loop.

Stage 0 is the subject as given, unoptimised: for a library model ``fused_attention`` and
``fuse_elementwise`` start off unless the workload entry sets them. Each further stage applies its
transforms on top of the previous ones:

* ``fuse_elementwise``: norms, activations and adds fused into their producers (the builders' flag);
* ``flash_attention``: flash-style fused attention (the builders' ``fused_attention`` flag);
* ``dtype`` / ``weight_dtype`` / ``kv_dtype``: lower precision (weight-only when only the weights
  narrow; the dequantization is counted by the builders);
* ``sram_mib``: a larger (or smaller) outermost on-chip level on the design;
* ``dram_part``: the design's main memory rebuilt on another DRAM part, its stacks each one of the part's
  (``DesignBatch.with_part``: the part's stack bandwidth and capacity);
* ``winograd``: 3x3 stride-1 convolutions run as Winograd F(2x2, 3x3) (:func:`winograd`);
* ``op_boundaries``: the runtime between two operators (``overlapped``: one compiled graph, which hides a GEMM's
  software-pipeline fill and drain behind its neighbours; ``serial``: a program per operator, each paying its own;
  ``dse.predict.pipeline``), on a design whose GEMMs stage their blocks in a scratchpad;
* ``keeps``: what the outermost on-chip SRAM (the level ``sram_mib`` sizes), or a named on-chip level
  (``{local: step}``), keeps between operators (``tiles``, ``step``, ``steps``; ``dse.predict.traffic`` residency): a
  compiler that keeps activations in a chip's per-core scratchpads, or a runtime that keeps the weights across
  steps; not on a per-core cache;
* ``window``: the model's attention window replaced (``{tokens, global_every, kind}``, or ``none``: every layer
  global), the model itself changed (``dse.workloads.library.variant``): local layers read and cache at most a
  window of keys.

Every stage is predicted with :func:`dse.predict.predict` on the transformed workload and design. A
transform that does not apply to the subject (``winograd`` on a model without 3x3 stride-1 convs,
``flash_attention`` on a CNN, a value already in force) is not an error: the stage repeats the
previous one and its ``note`` says why, so a scripted list of stages runs on any model. An unknown
transform or a bad value is a one-line error at load time (:data:`dse.config.TRANSFORMS`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dse.config import WhatIf, WhatIfFile, load_study
from dse.document import Document, Figure, Table
from dse.errors import DseError, from_validation_error
from dse.hardware.designs import DesignBatch
from dse.hardware.fields import knob_values
from dse.hardware.schema import Hardware
from dse.hardware.templates import load_hardware
from dse.predict import Prediction, predict
from dse.predict.pipeline import staging_level
from dse.units import DTYPE_INDEX, MIB, TERA
from dse.workloads import ops as oprows
from dse.workloads.families import FAMILIES
from dse.workloads.library import Workload, accepted_keywords, load_description, variant, workload
from dse.yamlio import load_yaml

#: Winograd F(2x2, 3x3): 36 multiplications of direct 3x3 convolution per 2x2 output tile and input
#: channel become 16 (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", CVPR 2016).
WINOGRAD_F2X2_3X3 = 36 / 16

#: scenario keys the stages set, and the subject keyword each needs
SCENARIO_KEYS = {"fuse_elementwise": "fuse_elementwise", "flash_attention": "fused_attention", "dtype": "dtype",
                 "weight_dtype": "weight_dtype", "kv_dtype": "kv_dtype"}
#: keywords each operator kind uses (as ``dse.workloads.library.accepted_keywords`` for models)
OPERATOR_KEYWORDS = {"gemm": {"dtype", "weight_dtype"}, "conv": {"dtype"},
                     "attention": {"dtype", "kv_dtype", "fused_attention", "fuse_elementwise"}}


def winograd_rows(ops: pd.DataFrame) -> np.ndarray:
    """[O] bool: conv rows that are 3x3, stride 1, same padding, not grouped, on the MAC arrays.

    A conv row is its GEMM-equivalent (``M = N*Ho*Wo``, ``K = C_in*kh*kw``) with ``a_bytes`` the true input
    ``N*H*W*C_in*e``; with stride 1 and same padding ``Ho*Wo = H*W``, so ``C_in = a_bytes / (M*e)`` and the
    kernel is 3x3 when ``K = 9*C_in``. (A strided 3x3 gives ``K / C_in_est = 9 / stride^2``; a valid-padded
    one is missed.)"""
    conv = (ops["kind"] == "conv") & (ops["unit"] == "matrix") & (ops["batch"] == 1) & (ops["M"] > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        c_in = ops["a_bytes"] / (ops["M"] * ops["elem_a"])
    return (conv & (np.abs(ops["K"] - 9 * c_in) < 0.5)).to_numpy()


def winograd(wl: Workload) -> tuple[Workload, int]:
    """``wl`` with its 3x3 stride-1 convolutions as Winograd F(2x2, 3x3): FLOPs / 2.25 (Lavin & Gray 2016);
    bytes and shapes kept (the input/output transforms' own work and the larger transformed weights are
    not modelled, so this is the method's upper bound). Returns the workload and how many rows changed."""
    rows = winograd_rows(wl.ops)
    ops = wl.ops.copy()
    ops.loc[rows, "flops"] = ops.loc[rows, "flops"] / WINOGRAD_F2X2_3X3
    return Workload(wl.name, ops, {**wl.scenario, "winograd": True}, wl.source), int(rows.sum())


@dataclass(frozen=True)
class Subject:
    """What the stages transform: a library model (``name`` + scenario) or one operator (``operator``)."""

    label: str
    keywords: set[str]  # scenario keywords it uses
    base_scenario: dict[str, Any]
    model: str | None = None
    operator: Any = None  # a dse.config GemmOp | AttentionOp | ConvOp
    window: Any = None  # the model's own attention window (a dict of AttentionWindow's fields) or None
    no_window: str | None = None  # why a window cannot apply to the subject (None: it can)

    def build(self, scenario: dict[str, Any], arch: dict[str, Any] | None = None) -> Workload:
        if self.model is not None:
            return variant(self.model, arch, **scenario) if arch else workload(self.model, **scenario)
        return operator_workload(self.operator, scenario)


def window_of(model: str) -> tuple[dict[str, Any] | None, str | None]:
    """A library model's attention window (its fields, or None) and why a window cannot apply to it (None: it
    can): a model of a family without attention windows, a non-causal one, one with MLA
    (``dse.workloads.transformer.TransformerArch._check_window``)."""
    desc = load_description(model)
    arch = FAMILIES[desc.family].arch.model_validate(desc.arch)
    if "window" not in type(arch).model_fields:
        return None, f"{desc.name} ({desc.family}) has no attention window"
    own = arch.window.model_dump() if arch.window is not None else None
    if not arch.is_causal:
        return own, f"{desc.name} is not a causal decoder"
    if arch.mla is not None:
        return own, f"{desc.name} uses MLA"
    return own, None


def operator_workload(op: Any, scenario: dict[str, Any]) -> Workload:
    """One operator's rows (``dse.workloads.ops``) at the stage's dtypes and fusion flags."""
    dt = scenario.get("dtype", op.dtype)
    try:
        if op.kind == "gemm":
            rows = oprows.weight_gemm(f"gemm{op.M}x{op.N}x{op.K}", op.M, op.N, op.K, dtype=dt,
                                      weight_dtype=scenario.get("weight_dtype", op.weight_dtype), batch=op.batch)
            label = f"gemm {op.batch}x[{op.M}x{op.K}]x[{op.K}x{op.N}]"
        elif op.kind == "attention":
            rows = oprows.attention("attention", batch=op.batch, heads=op.heads, kv_heads=op.kv_heads or op.heads,
                                    q_len=op.q_len, kv_len=op.kv_len or op.q_len, head_dim=op.head_dim,
                                    causal=op.causal, dtype=dt, kv_dtype=scenario.get("kv_dtype", op.kv_dtype),
                                    fused=scenario.get("fused_attention", False),
                                    fuse_elementwise=scenario.get("fuse_elementwise", False))
            label = f"attention b{op.batch} h{op.heads} q{op.q_len} kv{op.kv_len or op.q_len} d{op.head_dim}"
        else:
            row, _ = oprows.conv2d("conv", n=op.batch, h=op.resolution, w=op.resolution, c_in=op.c_in, c_out=op.c_out,
                                   k=op.k, stride=op.stride, groups=op.groups, dtype=dt)
            rows = [row]
            label = f"conv{op.k}x{op.k}/{op.stride} {op.c_in}->{op.c_out} @{op.resolution}px b{op.batch}"
    except ValueError as exc:
        raise DseError(str(exc), field="whatif.operator") from None
    return Workload(label, oprows.table(rows), {"phase": "forward", "dtype": dt, **scenario}, "synthetic")


def subject_of(spec: WhatIf) -> Subject:
    """The stage-0 subject: unfused (``fused_attention``/``fuse_elementwise`` off) unless the entry says."""
    if spec.operator is not None:
        op = spec.operator
        keys = OPERATOR_KEYWORDS[op.kind]
        base = {k: v for k, v in (("fused_attention", False), ("fuse_elementwise", False)) if k in keys}
        return Subject(op.kind, keys, base, operator=op)
    entry = spec.workload
    keys = accepted_keywords(load_description(entry.name))
    base = {k: False for k in ("fused_attention", "fuse_elementwise") if k in keys}
    own, why = window_of(entry.name)
    return Subject(entry.name, keys, {**base, **entry.scenario()}, model=entry.name, window=own, no_window=why)


@dataclass
class State:
    """Everything the stages have set so far."""

    scenario: dict[str, Any]
    sram_mib: float | None = None
    winograd: bool = False
    notes: list[str] = field(default_factory=list)
    dram_part: str | None = None
    arch: dict[str, Any] = field(default_factory=dict)  # arch fields replaced (window)
    op_boundaries: str | None = None  # the design's compute.op_boundaries replaced
    keeps: dict[str, str] = field(default_factory=dict)  # what the design's on-chip levels keep, replaced, by name


def apply_stage(subject: Subject, state: State, stage: dict[str, Any]) -> State:
    """``state`` with ``stage``'s transforms; a transform that does not apply leaves it and adds a note."""
    new = State(dict(state.scenario), state.sram_mib, state.winograd, [], state.dram_part, dict(state.arch),
                state.op_boundaries, dict(state.keeps))
    for key, value in stage.items():
        if key == "label":
            continue
        if key == "window":
            why = subject.no_window if subject.model is not None else f"{subject.label} is one operator"
            if why is not None:
                new.notes.append(f"window does not apply: {why}")
            elif new.arch.get("window", subject.window) == value:
                new.notes.append("window already in force")
            else:
                new.arch["window"] = value
            continue
        if key == "sram_mib":
            new.sram_mib = float(value)
            continue
        if key == "dram_part":
            new.dram_part = str(value)
            continue
        if key == "op_boundaries":
            new.op_boundaries = str(value)
            continue
        if key == "keeps":
            level, kept = next(iter(value.items())) if isinstance(value, dict) else ("", str(value))
            new.keeps[level] = kept  # "": the outermost on-chip SRAM, named once the design is known
            continue
        if key == "winograd":
            new.winograd = True  # whether any conv qualifies is known once the workload is built
            continue
        kw = SCENARIO_KEYS[key]
        if kw not in subject.keywords:
            new.notes.append(f"{key} does not apply to {subject.label} (it uses {', '.join(sorted(subject.keywords))})")
            continue
        if new.scenario.get(kw) == value:
            new.notes.append(f"{key} already in force")
            continue
        new.scenario[kw] = value
    return new


def bound_shares(p: Prediction) -> pd.Series:
    """Share of the pass time under each binding ceiling, largest first."""
    return p.time_by_bound().sort_values(ascending=False)


def stage_row(k: int, label: str, p: Prediction, design: DesignBatch, notes: list[str]) -> dict[str, Any]:
    """One table row: FLOPs, DRAM bytes, AI = FLOPs / DRAM bytes, time, achieved TFLOP/s = FLOPs / time,
    DRAM bandwidth utilization = DRAM bytes / time / peak DRAM bandwidth, compute utilization = achieved /
    matrix peak at the stage's dtype, binding ceiling = the ceiling holding the largest share of time."""
    ops = p.ops
    dram = design.offchip_name
    flops = float((ops["flops"] * ops["count"]).sum())
    dram_bytes = float((ops[f"traffic_{dram}_bytes"] * ops["count"]).sum())
    t = p.time_s
    dt = p.workload.scenario.get("dtype", design.base.reference_dtype)
    shares = bound_shares(p)
    peak = float(design.matrix_peak[0, DTYPE_INDEX[dt]])
    if not np.isfinite(peak):  # no matrix mode at this dtype: the ops run on the vector units
        peak = float(design.vector_peak[0, DTYPE_INDEX[dt]])
    return {
        "stage": k, "transform": label, "flops": flops, "dram_bytes": dram_bytes,
        "ai_flop_per_byte": flops / dram_bytes if dram_bytes else float("inf"), "time_ms": t * 1e3,
        "achieved_tflops": flops / t / TERA,
        "dram_bw_utilization": dram_bytes / t / float(design.dram_bandwidth[0]),
        "compute_utilization": flops / t / peak,
        "binding": str(shares.index[0]), "binding_time_share": float(shares.iloc[0]),
        "time_by_bound": ", ".join(f"{b} {v:.0%}" for b, v in shares.items() if v >= 0.005),
        "sram_mib": float(design.capacity[0, design.sram_level] / MIB), "dtype": dt,
        "note": "; ".join(notes),
    }


@dataclass(frozen=True)
class WhatIfResult:
    table: pd.DataFrame  # one row per stage (stage 0 = as given)
    predictions: list[Prediction]
    designs: list[DesignBatch]
    hardware: Hardware
    subject: str


def runtime_design(base: DesignBatch, hw: Hardware, state: State, before: State, stage: dict[str, Any],
                   notes: list[str]) -> DesignBatch:
    """``base``, or the template rebuilt with the stages' ``op_boundaries`` and ``keeps`` (``state``'s; ``before``:
    the previous stage's); a stage that sets one where it changes nothing adds a note (the runtime or residency
    already in force, a design that stages no GEMM blocks in a scratchpad, a per-core cache)."""
    want = state.op_boundaries or hw.compute.op_boundaries
    if "op_boundaries" in stage:
        if staging_level(base) is None:
            notes.append(f"op_boundaries does not apply: {hw.name}'s GEMMs stage no blocks in a scratchpad "
                         "(a cache, a GPU's tiles or no DRAM)")
        elif want == (before.op_boundaries or hw.compute.op_boundaries):
            notes.append("op_boundaries already in force")
    memory = kept_memory(base, hw, state, before, stage, notes)
    if want == hw.compute.op_boundaries and memory is None:
        return base
    update: dict[str, Any] = {"compute": hw.compute.model_copy(update={"op_boundaries": want})}
    if memory is not None:
        update["memory"] = memory
    return DesignBatch.from_hardware(hw.model_copy(update=update))


def kept_memory(base: DesignBatch, hw: Hardware, state: State, before: State, stage: dict[str, Any],
                notes: list[str]) -> list | None:
    """The template's memory levels with each level named in ``state.keeps`` keeping what it says (None: as the
    template has them). A level that is not on-chip SRAM is a one-line error; a per-core cache keeps only tiles
    (``MemoryLevel``'s rule): the stage adds a note and that level goes back to the previous stage's, as a transform
    that does not apply leaves the state."""
    names = [m.name for m in hw.memory]
    if "" in state.keeps:
        state.keeps[names[base.sram_level]] = state.keeps.pop("")
    if "keeps" in stage:
        value = stage["keeps"]
        name = next(iter(value)) if isinstance(value, dict) else names[base.sram_level]
        if name not in names or hw.memory[names.index(name)].off_chip:
            on_chip = ", ".join(m.name for m in hw.memory if not m.off_chip)
            raise DseError(f"{stage['label']}: got level {name!r}; accepted: an on-chip level of {hw.name} "
                           f"({on_chip})")
        level = hw.memory[names.index(name)]
        want = state.keeps[name]
        if level.tiles_only and want != "tiles":
            notes.append(f"keeps does not apply: {hw.name}'s {level.name} is a cache with a copy per core, which "
                         "keeps only tiles")
            state.keeps.pop(name)
            if name in before.keeps:
                state.keeps[name] = before.keeps[name]
        elif want == before.keeps.get(name, level.kept):
            notes.append(f"keeps already in force ({level.name} keeps {want})")
    changed = {n: k for n, k in state.keeps.items() if k != hw.memory[names.index(n)].kept}
    if not changed:
        return None
    return [m.model_copy(update={"keeps": changed[m.name]}) if m.name in changed else m for m in hw.memory]


def run_whatif(spec: WhatIf, hw: Hardware) -> WhatIfResult:
    """Predict stage 0 and every cumulative stage of ``spec`` on ``hw`` (and its SRAM what-ifs)."""
    subject = subject_of(spec)
    base = DesignBatch.from_hardware(hw)
    state = State(dict(subject.base_scenario))
    off = [what for k, what in (("fused_attention", "attention"), ("fuse_elementwise", "elementwise ops"))
           if subject.base_scenario.get(k) is False]
    # stage 0 starts unfused unless the entry says (subject_of), so it is not dse predict's default: the label says so
    stages = [{"label": "as given" + (f" ({' and '.join(off)} unfused)" if off else "")}, *spec.stages]
    rows, preds, designs = [], [], []
    for k, stage in enumerate(stages):
        before = state
        if k:
            state = apply_stage(subject, state, stage)
        try:
            wl = subject.build(state.scenario, state.arch)
        except DseError as exc:
            raise DseError(exc.message, field=f"whatif.stages.{k - 1}" if k else (exc.field or "whatif")) from None
        notes = list(state.notes)
        if state.winograd:
            wl, n = winograd(wl)
            if "winograd" in stage and n == 0:
                notes.append(f"winograd does not apply: {subject.label} has no 3x3 stride-1 convolution")
        try:
            d = runtime_design(base, hw, state, before, stage, notes)
        except DseError as exc:  # a keeps stage naming no on-chip level of the design
            raise DseError(exc.message, field=f"whatif.stages.{k - 1}") from None
        if state.sram_mib is not None:
            d = d.with_knobs(sram_bytes=np.array([state.sram_mib * MIB]))
        if state.dram_part is not None:
            try:
                d = d.with_field(f"memory.{d.offchip_name}.generation", [state.dram_part])
            except ValueError as exc:  # a part of another kind, or a main memory not bought in stacks
                raise DseError(f"{stage['label']}: {str(exc).split(': ', 1)[-1]}",
                               field=f"whatif.stages.{k - 1}") from None
        try:
            p = predict(wl, d)
        except DseError as exc:
            raise DseError(f"{stage['label']}: {exc.message}", field=f"whatif.stages.{k - 1}" if k else "whatif") \
                from None
        if not p.fits:  # predicted all the same: a what-if explores the subject, the footprint is the user's call
            notes.append(f"does not fit: {p.infeasible_reason}")
        if k and not notes and abs(p.time_s - preds[-1].time_s) <= 1e-12 * preds[-1].time_s:
            why = (f" (the {base.level_names[base.sram_level]} level already held what this workload keeps on chip, "
                   "or keeps only an operator's tiles)" if "sram_mib" in stage else "")
            notes.append(f"no operator's time changed{why}")  # applied, and bound nowhere: said, not silent
        rows.append(stage_row(k, stage["label"], p, d, notes))
        preds.append(p)
        designs.append(d)
    table = pd.DataFrame(rows)
    table.insert(6, "speedup_vs_stage0", table["time_ms"].iloc[0] / table["time_ms"])
    return WhatIfResult(table, preds, designs, hw, preds[0].workload.label() if subject.model else preds[0].workload.name)


def load_whatif(path: Any) -> tuple[WhatIf, str, Hardware]:
    """A what-if from a study config's ``whatif:`` section (hardware defaults to the study's base) or a
    file of its own (``name``, ``hardware``, ``workload``/``operator``, ``stages``). ``path`` is a YAML file, a
    mapping of either kind or a ``dse.Study``."""
    from dse.config import config_label

    label = config_label(path)
    if isinstance(path, str | Path):
        data, folder = load_yaml(Path(path)), Path(path).parent
    elif isinstance(path, dict):
        data, folder = dict(path), Path.cwd()
    else:
        data, folder = getattr(path, "data", None), (Path(path.source).parent if getattr(path, "source", None)
                                                      else Path.cwd())
    if isinstance(data, dict) and "stages" in data:
        from pydantic import ValidationError

        try:
            spec = WhatIfFile.model_validate(data)
        except ValidationError as exc:
            raise from_validation_error(exc, file=label, model=WhatIfFile) from None
        name, hw_spec, prefix = spec.name, spec.hardware, "hardware"
    else:
        cfg, folder = load_study(path)
        if cfg.whatif is None:
            raise DseError("no whatif: section; accepted: a study config with whatif: {workload|operator, stages} or "
                           "a what-if file with name, hardware, workload|operator and stages", file=label)
        spec, name, hw_spec, prefix = cfg.whatif, cfg.name, cfg.whatif.hardware or cfg.base, "whatif.hardware"
    if hw_spec.endswith((".yaml", ".yml")) and not Path(hw_spec).is_absolute():
        hw_spec = str(folder / hw_spec)
    if spec.workload is not None and spec.workload.path is not None:  # a model file of one's own, by its path
        wpath = Path(spec.workload.path).expanduser()
        wpath = wpath if wpath.is_absolute() else folder / wpath
        if not wpath.is_file():
            raise DseError(f"got {spec.workload.path!r} ({wpath}); accepted: an existing model description .yaml file",
                           file=label, field="workload.path")
        spec = spec.model_copy(update={"workload": spec.workload.model_copy(update={"name": str(wpath),
                                                                                     "path": None})})
    try:
        hw = load_hardware(hw_spec)
    except DseError as exc:
        raise DseError(exc.message, file=exc.file or label, field=exc.field or prefix) from None
    return spec, name, hw


def whatif_document(res: WhatIfResult, title: str, config_text: str | None = None, plots: bool = True) -> Document:
    """The what-if report, computed once (``dse.report.render.render`` writes it): whatif.csv, whatif.png/.svg
    (roofline with one arrow per stage transition; ``plots=False``: none), the summary table of the stages."""
    cols = ["stage", "transform", "flops", "dram_bytes", "ai_flop_per_byte", "time_ms", "speedup_vs_stage0",
            "achieved_tflops", "dram_bw_utilization", "compute_utilization", "binding", "time_by_bound", "note"]
    t = res.table[cols].rename(columns={"flops": "FLOPs", "dram_bytes": "DRAM bytes",
                                        "ai_flop_per_byte": "AI (FLOP/byte at DRAM)",
                                        "achieved_tflops": "achieved (TFLOP/s)",
                                        "dram_bw_utilization": "DRAM BW utilization (fraction)",
                                        "compute_utilization": "compute utilization (fraction)",
                                        "time_ms": "time (ms)", "speedup_vs_stage0": "speedup vs stage 0 (x)",
                                        "binding": "binding ceiling", "time_by_bound": "time by ceiling"})
    d = res.designs[0]
    k = knob_values(d)
    mem = "DRAM" if d.offchip.any() else f"main memory `{d.offchip_name}` (SRAM, no DRAM level)"
    body = (f"# What-if `{title}`: {res.subject} on `{res.hardware.name}`\n\n"
            f"Design: {k['peak_tflops'][0]:.0f} TFLOP/s {d.base.reference_dtype}, {mem} "
            f"{k['dram_bandwidth_tbps'][0]:.2f} TB/s (ridge {d.ridge[0]:.0f} FLOP/byte). Each stage applies its "
            "transforms on top of the previous ones; stage 0 is unfused unless the workload entry says otherwise. "
            "AI and bandwidth utilization count the predicted DRAM traffic (tiling and fusion included).\n\n", t,
            "\n\nFigure: `whatif.png` (arrows from each stage to the next); table: `whatif.csv`\n" if plots else
            "\n\nTable: `whatif.csv`\n")
    figs = (Figure("whatif.png", "whatif_roofline", (res.table, d),
                   f"{title}: {res.subject} on {res.hardware.name}, stage by stage"),) if plots else ()
    return Document(f"dse whatif {title}", body, (Table("whatif.csv", res.table),), figs, config_text)
