"""One study from a validated config: prepare -> search -> write results.

Stages (each a small function): :func:`prepare` builds the base design, the workload mix and the
base times; :func:`make_evaluator` turns trial parameters into scores in one vectorized call;
:func:`run_study` opens the optuna study, runs it, and evaluates the base and best designs once
(:func:`evaluated`: per-operator predictions, binding ceilings, area, cost, energy, the score heatmap and
the SRAM variants); :mod:`dse.report` renders that outcome and predicts nothing itself.
"""

from __future__ import annotations

import contextlib
import json
import math
import multiprocessing
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import optuna

from dse._version import __version__
from dse.config import StudyConfig, config_label, load_study
from dse.cost.area import AreaBreakdown, area, dram_stacks, level_mm2_per_mib, shoreline
from dse.cost.cost import CostBreakdown, unit_cost
from dse.cost.power import MixEnergy, mix_energy
from dse.errors import DseError, DseMultiError, InfeasibleError
from dse.hardware.designs import DesignBatch
from dse.hardware.fields import built_values, is_part_field, part_codes
from dse.hardware.schema import Hardware, Node
from dse.hardware.system import System, default_system, load_system
from dse.hardware.templates import load_hardware, load_node
from dse.inputs import snapshot, study_inputs, write_inputs
from dse.predict import MixArrays, Prediction, mix_arrays, mix_times, predict
from dse.score import Scored, capacity_constraint, constraints, mix_score, objective_value
from dse.search import optimize
from dse.search.space import base_knobs, designs_from_params, knob_range
from dse.search.storage import make_storage
from dse.workloads.library import workload
from dse.workloads.mix import AutoPlan, Mix
from dse.workloads.suites import load_suite
from dse.yamlio import make_dir, write_text


@dataclass(frozen=True)
class Context:
    """What every evaluation of this study shares."""

    cfg: StudyConfig
    base_hw: Hardware
    base: DesignBatch
    mix: Mix
    base_times: np.ndarray  # [W] seconds per pass on the base design
    base_resources: dict[str, float]  # area_mm2, cost_usd, power_w of the base design
    limits: dict[str, float]  # constraint name -> limit (reticle always; budgets from the config)
    arrays: MixArrays  # dse.predict.mix_arrays(mix), built once for every evaluation

    @property
    def base_area_mm2(self) -> float:
        return self.base_resources["area_mm2"]


def resolve_system(cfg: StudyConfig, cfg_dir: Path) -> System | None:
    spec = cfg.system
    if spec is None:
        return None
    try:
        if spec.endswith((".yaml", ".yml")):
            return load_system(Path(spec) if Path(spec).is_absolute() else cfg_dir / spec)
        return load_system(spec)
    except DseError as exc:
        raise DseError(exc.message, file=exc.file, field=exc.field or "system") from None


def resolve_base(cfg: StudyConfig, cfg_dir: Path) -> Hardware:
    spec = cfg.base
    if spec is None:
        return load_hardware(resolve_system(cfg, cfg_dir).chip)  # type: ignore[union-attr]
    if spec.endswith((".yaml", ".yml")):
        path = Path(spec) if Path(spec).is_absolute() else cfg_dir / spec
        if not path.is_file():  # the config's base field is wrong, not a template file: name the field's file
            raise DseError(f"got {spec!r}: no file at {path} (a path is relative to the config's folder); accepted: "
                           "a template YAML path or a shipped template name", field="base")
        return load_hardware(path)
    return load_hardware(spec)


def build_mix(cfg: StudyConfig, field: str = "workloads", cfg_dir: Path | None = None, per_node: int = 1,
              system: System | None = None) -> Mix:
    """Workloads of the config (suites expanded, their weights times the entry's weight; a ``path``
    entry is a model YAML relative to the config's folder ``cfg_dir``). A ``plan: auto`` entry is its candidate
    plans over ``chips`` (``dse.workloads.plans``; TP within ``per_node`` chips; those whose groups ``system`` can
    place), its first candidate in the mix until :func:`prepare` puts the base design's choice there."""
    wls, weights, autos = [], [], []
    for i, entry in enumerate(cfg.workloads):
        if entry.auto_plan:
            autos.append(auto_entry(entry, len(wls), per_node, f"{field}.{i}", system))
            wls.append(autos[-1].candidates.workloads[0])
            weights.append(entry.weight)
            continue
        if entry.path is not None:
            path = Path(entry.path).expanduser()
            path = path if path.is_absolute() else (cfg_dir or Path.cwd()) / path
            if not path.is_file() or path.suffix not in (".yaml", ".yml"):
                raise DseError(f"got {entry.path!r} ({path}); accepted: an existing model description .yaml file",
                               field=f"{field}.{i}.path")
            try:
                wls.append(workload(str(path), plan=entry.plan, **entry.scenario()))
            except DseError as exc:  # name the config field and the file, then what is wrong in it
                where = ": ".join(x for x in (exc.file, exc.field) if x)
                raise DseError(f"{entry.path!r} is not a usable model description ({where + ': ' if where else ''}"
                               f"{exc.message})", field=f"{field}.{i}.path") from None
            weights.append(entry.weight)
            continue
        if entry.exclude is not None:
            check_exclude(entry.suite, entry.exclude, f"{field}.{i}.exclude")  # type: ignore[arg-type]
        try:
            if entry.suite is not None:
                for e in load_suite(entry.suite):
                    if e["name"] in (entry.exclude or ()):
                        continue
                    scen = {k: v for k, v in e.items() if k not in ("name", "weight")}
                    wls.append(workload(e["name"], plan=entry.plan, **{**scen, **entry.scenario()}))
                    weights.append(float(e["weight"]) * entry.weight)
            else:
                wls.append(workload(entry.name, plan=entry.plan, **entry.scenario()))
                weights.append(entry.weight)
        except DseError as exc:  # the entry's own key when the error names one (e.g. workloads.0.serving_engine)
            key = entry_key(exc.field, type(entry).model_fields)
            raise DseError(exc.message, field=f"{field}.{i}" + (f".{key}" if key else "")) from None
    return Mix.of(wls, weights).with_auto(autos)


def entry_key(error_field: str | None, keys: Mapping[str, Any]) -> str | None:
    """The workload entry's key an error from ``dse.workloads.library.workload`` names: its field itself
    (``serving_engine``) or the field after ``workload NAME: `` (``workload gpt2: context``), if that is one of the
    entry's ``keys``; else None (the error is the entry's as a whole)."""
    if not error_field:
        return None
    key = error_field.split(": ")[-1] if error_field.startswith("workload ") else error_field
    return key if key in keys else None


def auto_entry(entry, index: int, per_node: int, field: str,  # noqa: ANN001 - a WorkloadEntry
               system: System | None = None) -> AutoPlan:
    """A ``plan: auto`` entry's candidate plans (``dse.workloads.plans.candidates``), each built and, on ``system``,
    placed (``dse.predict.network.placed``: on a torus a group must fill whole axes); one line when none is left."""
    from dse.predict.network import placed
    from dse.workloads.plans import candidates, expand, plan_text

    try:
        wl = workload(entry.name, **entry.scenario())
        built, _, errors = expand(wl, candidates(wl, entry.chips, per_node))
        if system is not None and built:
            built, errors = placed(built, errors, system.resized(entry.chips))
    except DseError as exc:
        raise DseError(exc.message, field=f"{field}.{exc.field or 'plan'}") from None
    if not built:
        raise DseError(f"got plan: auto over {entry.chips} chips for {wl.label()}, where no plan builds "
                       f"({next(e for e in errors if e)}); accepted: a chip count the model splits over",
                       field=f"{field}.chips")
    return AutoPlan(index, Mix.of(built), tuple(plan_text(w.plan) for w in built))


def with_choice(mix: Mix, d: DesignBatch) -> Mix:
    """``mix`` with each ``plan: auto`` entry's workload set to design 0 of ``d``'s choice (the fastest plan that
    fits it; the smallest footprint where none fits), the candidates kept."""
    if not mix.auto:
        return mix
    from dse.predict import auto_choice

    wls = list(mix.workloads)
    choice = auto_choice(d.take([0]), mix)
    for ap in mix.auto:
        pick, ok = choice[ap.index]
        wls[ap.index] = ap.candidates.workloads[int(pick[0]) if ok[0] else int(np.argmin(ap.memory))]
    return Mix.of(wls, list(mix.weights)).with_auto(list(mix.auto))


def check_exclude(suite: str, exclude: list[str], field: str) -> None:
    """Every name of a suite entry's ``exclude`` is a model of that suite (a typo would keep the model in the mix)."""
    import difflib

    try:
        names = [e["name"] for e in load_suite(suite)]
    except DseError as exc:
        raise DseError(exc.message, file=exc.file, field=field.rsplit(".", 1)[0] + ".suite") from None
    for x in exclude:
        if x not in names:
            close = difflib.get_close_matches(x, names, n=1)
            raise DseError(f"got {x!r}; accepted: a model of suite {suite} ({len(names)} models, `dse workloads` "
                           f"lists them){f'; did you mean {close[0]!r}?' if close else ''}", field=field)


def study_limits(cfg: StudyConfig, node: Node, base: DesignBatch) -> dict[str, float]:
    """Constraint limits: the reticle always, and the config's budgets (a budget no design can meet,
    one at or below the base design's fixed area, the node's or its template's ``package.fixed_mm2``, is refused)."""
    s = cfg.search
    fixed = float(area(base, node).parts["fixed"][0])  # the base design: the node's block or its template's own
    if s.area_budget_mm2 is not None and s.area_budget_mm2 <= fixed:
        whose = f"base {base.base.name}" if base.base.package and base.base.package.fixed_mm2 is not None \
            else f"node {node.name}"
        raise DseError(f"got {s.area_budget_mm2:g}; accepted: more than the fixed area of {whose} "
                       f"({fixed:g} mm2)", field="search.area_budget_mm2")
    return {"reticle": node.reticle_limit_mm2.value, **s.budgets()}


def prepare(cfg: StudyConfig, cfg_dir: Path, mix_field: str = "workloads") -> Context:
    try:
        base_hw = resolve_base(cfg, cfg_dir)
    except DseError as exc:
        raise DseError(exc.message, file=exc.file, field=exc.field or "base") from None
    base = DesignBatch.from_hardware(base_hw)
    check_main_memory_knobs(cfg, base_hw)
    auto_sys = auto_system(cfg, cfg_dir, base_hw)
    mix = build_mix(cfg, mix_field, cfg_dir, per_node=auto_sys.network[0].size if auto_sys and auto_sys.network else 1,
                    system=auto_sys)
    base = attach_system(cfg, cfg_dir, base, mix)
    mix = with_choice(mix, base)  # an auto entry's workload: the base design's best plan
    for i, prm in enumerate(cfg.search.space.params):
        try:
            base.with_field(prm.field, part_codes(prm.choices[:1]) if is_part_field(prm.field) else np.ones(1))
        except ValueError as exc:
            head, _, accepted = str(exc).partition("; ")
            why = f" ({head.split(': ', 1)[1]})" if head.startswith("cannot search") and ": " in head else ""
            raise DseError(f"got {prm.field!r}{why}; {accepted}", field=f"search.space.params.{i}.field") from None
        check_param_range(base, prm, i)
        check_param_knob(cfg.search.space, base, prm.field, i)
    node = load_node(base_hw.process_node)
    limits = study_limits(cfg, node, base)
    arrays = mix_arrays(mix)
    base_times = mix_times(base, mix, arrays=arrays)[0]
    res = resources(base, mix, base_times[None, :], arrays)
    return Context(cfg, base_hw, base, mix, base_times, {k: float(v[0]) for k, v in res.items()}, limits, arrays)


def check_param_knob(space, base: DesignBatch, name: str, i: int) -> None:  # noqa: ANN001 - a dse.config.Space
    """A searched field that one of the three knobs also sets (``compute.cores`` by ``peak_tflops``; the main memory's
    ``bandwidth_tbps`` by ``dram_bandwidth_tbps``; the searched SRAM level's ``capacity_mib`` by ``sram_mib``) would
    have one of the two overwrite the other in every design while trials.csv records both: one line naming both."""
    owners = {"compute.cores": "peak_tflops",
              f"memory.{base.level_names[base.offchip_index]}.bandwidth_tbps": "dram_bandwidth_tbps",
              f"memory.{base.level_names[base.sram_level]}.capacity_mib": "sram_mib"}
    knob = owners.get(name)
    if knob is not None and getattr(space, knob) is not None:
        raise DseError(f"got {name!r} beside the {knob} knob, which sets it too; accepted: one of the two",
                       field=f"search.space.params.{i}.field")


def check_param_range(base: DesignBatch, prm, i: int) -> None:
    """The ends of a searched field's range (or its smallest and largest choice) must build a design the schema
    accepts (``dse.limits``: no 1000 GHz clock, no link wider than 64 KiB): each end set alone on the base design and
    written back as a template; one line naming the end and the field's limit otherwise."""
    from dse.hardware.fields import whole_numbered

    if is_part_field(prm.field):
        check_part_choices(base, prm, i)
        return
    if prm.choices is not None and whole_numbered(prm.field):
        bad = next((c for c in prm.choices if float(c) != round(float(c))), None)
        if bad is not None:
            raise DseError(f"got {bad:g} for {prm.field}; accepted: whole numbers (it counts cores, MACs, links or "
                           "dies)", field=f"search.space.params.{i}.choices")
    g = base.base.compute.spare_granule_cores
    dies = base.base.die_groups[base.base.matrix_die].count if base.base.die_groups else 1
    step = int(base.base.spare_step())  # whole groups, and each die that holds the matrix units its own share of them
    if prm.field == "compute.spare_cores" and step > 1:
        odd = None if prm.choices is None else next((c for c in prm.choices if float(c) % step), None)
        if prm.choices is None or odd is not None:
            why = (f"a die that fuses off {g} cores together (compute.spare_granule_cores)" if dies == 1 else
                   f"{dies} dies that each fuse off whole groups of {g} (compute.spare_granule_cores)")
            raise DseError(f"got {'a range' if prm.choices is None else f'{odd:g}'} for compute.spare_cores on {why}; "
                           f"accepted: choices that are multiples of {step}", field=f"search.space.params.{i}."
                           + ("low" if prm.choices is None else "choices"))
    ends = (("low", prm.low), ("high", prm.high)) if prm.choices is None else (
        ("choices", min(prm.choices)), ("choices", max(prm.choices)))
    for key, value in ends:
        try:
            with np.errstate(over="ignore", invalid="ignore"):  # a huge end overflows: the check below says so
                base.with_field(prm.field, np.array([float(value)])).to_hardware(0, "probe", prefer=prm.field)
        except DseError as exc:
            got, _, accepted = exc.message.partition("; ")
            where = f"search.space.params.{i}.{key}"
            if exc.field and exc.field != prm.field:  # the end is fine, a field the design derives from it is not
                raise DseError(f"got {value:g} for {prm.field}: the design it builds has {exc.field} {got}; "
                               f"{accepted or 'accepted: a value whose design stays within the limits'}",
                               field=where) from None
            raise DseError(f"got {value:g} for {prm.field}; {accepted or exc.message}", field=where) from None


def check_part_choices(base: DesignBatch, prm, i: int) -> None:  # noqa: ANN001 - a dse.config.Param
    """Every DRAM part a study searches must be one the main memory's kind takes, and the design it builds (the
    base's stacks of that part) one the schema accepts: one line naming the part otherwise."""
    for c in prm.choices:
        try:
            base.with_field(prm.field, part_codes([c])).to_hardware(0, "probe", prefer=prm.field)
        except ValueError as exc:
            raise DseError(f"got {c!r}; {str(exc).split('; ', 1)[-1]}", field=f"search.space.params.{i}.choices") from None
        except DseError as exc:
            raise DseError(f"got {c!r} for {prm.field}: {exc.message}", field=f"search.space.params.{i}.choices") from None


def auto_system(cfg: StudyConfig, cfg_dir: Path, hw: Hardware) -> System | None:
    """The system ``plan: auto`` entries are planned on: the config's (or the chip's shipped one); its first level's
    size is the most a tensor-parallel group takes, and its levels say which groups can be placed. None when no entry
    is ``plan: auto``."""
    entries = [e for m in ([cfg.workloads] if cfg.mixes is None else cfg.mixes.values()) for e in (m or [])]
    if not any(e.auto_plan for e in entries):
        return None
    return resolve_system(cfg, cfg_dir) or default_system(hw)


def has_dram(hw: Hardware) -> bool:
    """Whether ``hw`` has an off-chip (DRAM) memory level; an all-SRAM chip's main memory is its outermost SRAM
    (``Hardware.offchip_index``)."""
    return any(m.off_chip for m in hw.memory)


def check_main_memory_knobs(cfg: StudyConfig, hw: Hardware) -> None:
    """Refuse the DRAM knobs on a chip without a DRAM level: ``search.space.dram_bandwidth_tbps`` and a budget
    ``split`` (whose ``dram`` weight buys HBM stacks) size a level it does not have. Its outermost SRAM's bandwidth
    is searched as ``memory.<level>.bandwidth_tbps`` in ``params``, its capacity with ``sram_mib``."""
    if has_dram(hw):
        _check_whole_stacks(cfg, hw)
        return
    space = cfg.search.space
    levels = ", ".join(f"{m.name} ({m.kind})" for m in hw.memory)
    outer = hw.memory[hw.offchip_index].name
    hint = (f"accepted: peak_tflops, sram_mib or params (e.g. memory.{outer}.bandwidth_tbps) on {hw.name}, a chip "
            f"without a DRAM level (memory: {levels})")
    r = space.dram_bandwidth_tbps
    if r is not None:
        raise DseError(f"got {r.low:g}..{r.high:g} TB/s; {hint}", field="search.space.dram_bandwidth_tbps")
    if space.split is not None:
        raise DseError(f"got a split with a dram weight; {hint}", field="search.space.split")


def _check_whole_stacks(cfg: StudyConfig, hw: Hardware) -> None:
    """A searched DRAM bandwidth range that holds no whole number of stacks (or channels) is one line: every design
    is built of whole stacks (``DesignBatch.with_knobs``), so a range below one stack's bandwidth, or between two
    counts, would be built entirely outside itself (0.001..0.002 TB/s of 12.8 GB/s channels ran every trial at
    0.0128 TB/s, and the summary said no knob sat on a bound)."""
    r = cfg.search.space.dram_bandwidth_tbps
    level = hw.offchip_level
    if r is None or not level.stack_bandwidth_gbps or level.spec.area not in ("dram_phy", "ddr_phy"):
        return
    per = level.stack_bandwidth_gbps / 1e3  # TB/s of one stack
    # counts past 2^53 are not whole numbers a float holds (a high of 1e308 TB/s is inf stacks): capped, the range
    # holds stacks and the knob's physical limit (dse.limits) speaks for it
    lo_n, hi_n = (math.ceil(min(r.low / per, 2.0**53) - 1e-9), math.floor(min(r.high / per, 2.0**53) + 1e-9))
    if hi_n >= max(lo_n, 1):
        return
    unit = "channels" if level.spec.area == "ddr_phy" else "stacks"
    n = max(lo_n, 1)
    raise DseError(f"got {r.low:g}..{r.high:g} TB/s, which holds no whole number of {level.name} {unit} of "
                   f"{per:g} TB/s; accepted: a range that holds at least one ({n} {unit} = {n * per:g} TB/s): designs "
                   f"are built of whole {unit}", field="search.space.dram_bandwidth_tbps")


def check_capacity(cfg: StudyConfig, base: DesignBatch, mix: Mix, node: Node, mix_field: str = "workloads") -> None:
    """Before any trial: a workload whose per-chip footprint exceeds the most main memory the search space can build
    (``dse.search.space.max_offchip_capacity``) can never fit, so it is one :class:`~dse.errors.InfeasibleError`
    naming it, its footprint and that capacity."""
    from dse.search.space import max_offchip_capacity

    need = mix.memory_bytes
    if not need.size:
        return
    cap, how = max_offchip_capacity(cfg.search.space, base, node.max_dram_stacks.value)
    worst = int(np.argmax(need))
    if need[worst] > cap:
        raise InfeasibleError(f"got {mix.workloads[worst].label()} needing {need[worst] / 1e9:.1f} GB per chip; accepted: a "
                              f"workload within {cap / 1e9:.1f} GB, the most {base.offchip_name} the search space can "
                              f"build ({how}), or a parallelism plan over more chips", field=mix_field)


def attach_system(cfg: StudyConfig, cfg_dir: Path, base: DesignBatch, mix: Mix) -> DesignBatch:
    """The base design on the config's system (or the chip's shipped one when a workload has a plan),
    sized for the mix's largest plan."""
    chips = max(w.chips for w in mix.workloads)
    sysm = resolve_system(cfg, cfg_dir)
    if sysm is None and chips == 1:
        return base
    try:
        sysm = sysm or default_system(base.base)
        return base.with_system(sysm.resized(max(chips, 1)))
    except DseError as exc:
        raise DseError(exc.message, file=exc.file, field="system") from None


def resources(designs: DesignBatch, mix: Mix, times: np.ndarray, arrays: MixArrays | None = None,
              ar: AreaBreakdown | None = None) -> dict[str, np.ndarray]:
    """[D] area (mm2, all dies; the largest die's for the reticle), unit cost (USD), peak average power over
    the mix (W) and that power over the package's silicon footprint (W/mm2, ``AreaBreakdown.footprint_mm2``: what its
    cooling carries away per mm2)."""
    ar = ar or area(designs)
    power = mix_energy(designs, mix, times=times, node=ar.node, arrays=arrays).peak_power_w
    return {
        "area_mm2": ar.total,
        "largest_die_mm2": ar.largest_die_mm2,
        "cost_usd": unit_cost(designs, ar).total,
        "power_w": power,
        "power_density_w_per_mm2": power / ar.footprint_mm2,
    }


def written_mismatch(result: StudyResult, written: Hardware, system: System | None = None,
                     rtol: float = 1e-6) -> str | None:
    """Why the template written for the best design (``best_design.yaml``, on its ``best_system.yaml``) is not the
    design the study timed, or None: the mix predicted on it against the best trial's times. Every searched field is
    written, so a difference is a defect of the written files."""
    back = DesignBatch.from_hardware(written)
    if system is not None:  # on the system written beside it (best_system.yaml)
        back = back.with_system(system)
    times = mix_times(back, result.ctx.mix, arrays=result.ctx.arrays)[0]
    ref = np.asarray(result.best_times, dtype=float)
    off = np.abs(times / ref - 1.0)
    if not (off > rtol).any():
        return None
    k = int(np.argmax(off))
    return (f"best_design.yaml predicts {result.ctx.mix.labels[k]} in {times[k]:.6g} s where the study timed "
            f"its best design at {ref[k]:.6g} s ({times[k] / ref[k] - 1:+.2%}): the written template is not the design "
            "the study chose; please report it")


def score_designs(ctx: Context, designs: DesignBatch, times: np.ndarray | None = None) -> tuple[Scored, np.ndarray]:
    """Score, objective, resources and constraints of every design, plus its per-workload times [D, W]
    (``times`` when the caller already has them from ``mix_times``/``mix_times_bounds``)."""
    times = mix_times(designs, ctx.mix, arrays=ctx.arrays) if times is None else times
    s = mix_score(times, ctx.base_times, ctx.mix.weights)
    ar = area(designs)
    res = resources(designs, ctx.mix, times, ctx.arrays, ar=ar)
    obj = objective_value(ctx.cfg.search.objective, s, res, ctx.base_resources)
    cons, reason = constraints(res, ctx.limits)
    cap, why = capacity_constraint(designs, ctx.mix)
    cons["capacity"] = cap
    sh = shoreline(designs, ar)
    cons["package"] = sh.stacks_over
    cons["shoreline"] = sh.edge_over_mm
    shore = sh.reasons()
    for i in np.flatnonzero(np.any([v > 0 for v in cons.values()], axis=0)).tolist():  # '' stays '' where all hold
        reason[i] = "; ".join(x for x in (reason[i], why[i], shore[i]) if x)
    return Scored(score=s, objective=obj, area_mm2=res["area_mm2"], cost_usd=res["cost_usd"],
                  power_w=res["power_w"], constraints=cons, reason=reason,
                  power_density_w_per_mm2=res["power_density_w_per_mm2"]), times


def objective_columns(ctx: Context, sc: Scored) -> np.ndarray:
    """[D, K] values of the configured objective(s), in ``search.objective_names`` order."""
    res = {"area_mm2": sc.area_mm2, "cost_usd": sc.cost_usd, "power_w": sc.power_w}
    return np.stack([objective_value(name, sc.score, res, ctx.base_resources)
                     for name in ctx.cfg.search.objective_names], axis=1)


def make_evaluator(ctx: Context, worker: int = 0) -> optimize.Evaluator:
    base_ridge = float(ctx.base.ridge[0])

    def evaluate(params: list[dict[str, float]]) -> tuple[np.ndarray, list[dict], dict[str, np.ndarray]]:
        designs = designs_from_params(ctx.base, params, ctx.cfg.search.space)
        choices: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # plan: auto entries' picks, from the one prediction
        sc, _ = score_designs(ctx, designs, mix_times(designs, ctx.mix, arrays=ctx.arrays, choices=choices))
        ridge = designs.ridge
        built = built_values(designs) | {"dram_stacks": dram_stacks(designs)}  # the die's stacks, every DRAM level
        plans = auto_labels(ctx.mix, choices)
        attrs = [
            {"score": float(sc.score[i]), "area_mm2": float(sc.area_mm2[i]), "cost_usd": float(sc.cost_usd[i]),
             "power_w": float(sc.power_w[i]), "power_density_w_per_mm2": float(sc.power_density_w_per_mm2[i]),
             "ridge_flop_per_byte": float(ridge[i]),
             "bw_per_flop_vs_base": float(base_ridge / ridge[i]), "infeasible_reason": sc.reason[i],
             **{k: float(v[i]) for k, v in built.items()}, **{k: v[i] for k, v in plans.items()},
             "worker": worker}
            for i in range(designs.n)
        ]
        return objective_columns(ctx, sc), attrs, sc.constraints

    return evaluate


def auto_labels(mix: Mix, choices: dict[int, tuple[np.ndarray, np.ndarray]]) -> dict[str, list[str]]:
    """``plan.<workload>`` -> [D] the plan each design runs a ``plan: auto`` workload at ("" where none fits), from
    the ``choices`` that ``mix_times`` filled."""
    out = {}
    for ap in mix.auto:
        pick, ok = choices[ap.index]
        out[f"plan.{mix.workloads[ap.index].name}"] = [ap.labels[k] if f else ""
                                                       for k, f in zip(pick.tolist(), ok.tolist(), strict=True)]
    return out


def study_meta(cfg: StudyConfig, inputs: dict | None = None) -> dict:
    """What makes a study reproducible: package version, a hash of everything that defines the
    search (not n_trials, batch size, output or description), the seed, and with ``inputs``
    (:func:`dse.inputs.study_inputs`) the sha256 of every input file (``--resume`` refuses a changed one)."""
    defining = cfg.model_dump(mode="json", exclude={"description": True, "output": True,
                                                      "search": {"n_trials", "batch_size"}})
    meta = {"dse_version": __version__, "config_sha256": optimize.config_hash(json.dumps(defining, sort_keys=True)),
            "seed": cfg.search.seed, "created_utc": datetime.now(UTC).isoformat(timespec="seconds")}
    return meta if inputs is None else {**meta, "inputs": inputs}


def check_output_root(root: Path) -> Path:
    """The output folder, refused when it is a filesystem root or the package's own checkout (results
    would be written among system or source files)."""
    from dse.units import repo_root

    try:
        resolved = Path(root).expanduser().resolve()
    except (OSError, RuntimeError) as exc:
        raise DseError(f"got {str(root)!r:.80}: {exc}; accepted: a folder path", field="output.dir") from None
    if any(len(part.encode()) > 255 for part in resolved.parts) or len(str(resolved).encode()) > 4000:
        raise DseError(f"got {str(root)!r:.80}; accepted: folder names of at most 255 bytes", field="output.dir")
    if resolved == Path(resolved.anchor):
        raise DseError(f"got {str(root)!r}; accepted: a folder below the filesystem root (e.g. results)",
                       field="output.dir")
    if resolved == repo_root().resolve():
        raise DseError(f"got {str(root)!r} (the dse checkout itself); accepted: a folder inside it or elsewhere "
                       "(e.g. results)", field="output.dir")
    return resolved


def clean_stale_temps(folder: Path) -> int:
    """Remove temporary files an interrupted atomic write left in ``folder`` (``.NAME.*.tmp*``)."""
    n = 0
    for tmp in folder.glob(".*.tmp*"):
        if tmp.is_file():
            tmp.unlink(missing_ok=True)
            n += 1
    return n


def results_folder(root: Path, name: str, resume: bool) -> Path:
    """``root/name`` for a new study; a new ``name-N`` if that exists; the latest one with ``resume``
    (its interrupted writes' temporary files removed). The folder always lies inside ``root``."""
    root = check_output_root(root)
    existing = sorted(
        [p for p in root.glob(f"{name}*") if p.is_dir() and (p.name == name or p.name[len(name):].lstrip("-").isdigit())],
        key=lambda p: int(p.name[len(name):].lstrip("-") or 1),
    )
    if resume:
        if not existing:
            raise DseError(f"nothing to resume in {root}; accepted: run without --resume first",
                           field=f"{root}/{name}")
        clean_stale_temps(existing[-1])
        return existing[-1]
    if not existing:
        folder = root / name
    else:
        last = int(existing[-1].name[len(name):].lstrip("-") or 1)
        folder = root / f"{name}-{last + 1}"
    if folder.resolve().parent != root:
        raise DseError(f"got name {name!r}; accepted: a name that stays inside {root}", field="name")
    return folder


def prune_empty(folder: Path) -> bool:
    """Remove ``folder`` when it holds nothing but empty folders (a run that failed before writing anything), so a
    later ``--resume`` does not take it for a killed study; True when it was removed. Anything written is kept."""
    if not folder.is_dir():
        return False
    if any(not (p.is_dir() and prune_empty(p)) for p in list(folder.iterdir())):
        return False
    folder.rmdir()
    return True


def max_workers() -> int:
    """The most worker processes a study may start: 4 per CPU core (each is a full Python process)."""
    import os

    return 4 * (os.cpu_count() or 1)


def claim_results_folder(root: Path, name: str) -> Path:
    """A new results folder (:func:`results_folder`), created atomically: two runs started together
    never share one (the second takes ``name-N+1``)."""
    for _ in range(100):
        folder = results_folder(root, name, False)
        make_dir(folder.parent)
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        except OSError as exc:
            raise DseError(f"cannot write ({exc.strerror}); accepted: a writable folder with free space",
                           file=str(folder)) from None
        return folder
    raise DseError(f"could not claim a new folder for {name!r} in {root} after 100 tries", field="output.dir")


@contextlib.contextmanager
def storage_errors(url: str) -> Iterator[None]:
    """A study storage that cannot be written (disk full, read-only, I/O error) ends in one line that
    says the completed trials are kept and ``--resume`` continues (a trial caught mid-write is marked
    failed on resume)."""
    import sqlalchemy

    try:
        yield
    except (sqlalchemy.exc.OperationalError, optuna.exceptions.StorageInternalError, OSError) as exc:
        cause = exc.__cause__ or exc
        first = str(getattr(cause, "orig", None) or cause).strip().splitlines()
        raise DseError(f"cannot write the study storage ({first[0] if first else type(exc).__name__}); accepted: "
                       "a writable storage with free space; the completed trials are saved: free space and "
                       "continue with --resume", field=url) from None


@dataclass(frozen=True)
class DesignEval:
    """One design of a study evaluated once after the search: what the report renders."""

    design: DesignBatch  # one design
    times: np.ndarray  # [W] seconds per step of each workload of the mix (mix_times)
    predictions: tuple[Prediction, ...]  # per workload: per-operator times and binding ceilings
    area: AreaBreakdown
    cost: CostBreakdown
    energy: MixEnergy  # per workload, at ``times``

    def binding_shares(self, weights: np.ndarray) -> dict[str, float]:
        """Mix-weighted time share of each binding ceiling: ``sum_w weight_w x share_w(ceiling)``."""
        shares: dict[str, float] = {}
        for p, w in zip(self.predictions, weights, strict=True):
            for k, v in p.time_by_bound().items():
                shares[k] = shares.get(k, 0.0) + w * v
        return shares


def evaluate_design(ctx: Context, d: DesignBatch, times: np.ndarray) -> DesignEval:
    """:class:`DesignEval` of one design whose mix times [W] the search already has: one ``predict`` per
    workload, area, unit cost and the mix energy at those times."""
    ar = area(d)
    energy = mix_energy(d, ctx.mix, times=times[None, :], node=ar.node, arrays=ctx.arrays)
    return DesignEval(d, times, tuple(predict(w, d) for w in ctx.mix.workloads), ar, unit_cost(d, ar), energy)


#: the score heatmap's x and y knobs (``dse.hardware.fields.KNOB``, config units), the others held at the best design's
HEATMAP_KNOBS = ("peak_tflops", "dram_bandwidth_tbps")


def heatmap_grid(ctx: Context, best: DesignBatch, n: int) -> dict[str, np.ndarray]:
    """Score, the study's (first) objective, area, cost, power and feasibility (every constraint met) over an
    ``n`` x ``n`` compute x bandwidth grid (search ranges, else 0.25x-4x the base), at the best design's SRAM size,
    evaluated in one vectorized call (rows: bandwidth, columns: compute)."""
    space = ctx.cfg.search.space
    kx = base_knobs(best)

    def axis(knob: str) -> np.ndarray:
        return np.geomspace(*knob_range(space, ctx.base, knob), n)

    peak, bw = (axis(k) for k in HEATMAP_KNOBS)
    P, B = np.meshgrid(peak, bw)
    params = {**{k: np.full(P.size, v) for k, v in kx.items()},
              **dict(zip(HEATMAP_KNOBS, (P.ravel(), B.ravel()), strict=True))}
    designs = designs_from_params(best, params)
    scored, _ = score_designs(ctx, designs)
    return {"peak": peak, "bw": bw, "score": scored.score.reshape(P.shape), "area": scored.area_mm2.reshape(P.shape),
            "cost": scored.cost_usd.reshape(P.shape), "power": scored.power_w.reshape(P.shape),
            "objective": objective_columns(ctx, scored)[:, 0].reshape(P.shape),
            "feasible": scored.feasible.reshape(P.shape)}


@dataclass(frozen=True)
class SramVariants:
    """The best design with its searched SRAM level halved, doubled, and halved with the freed area put into
    whole cores (everything else held): ``scored`` holds the three in that order."""

    level: str
    organization: str
    node: str
    mm2_per_mib: float
    mib: float
    saved_mm2: float  # what halving the level frees
    grow: float  # peak factor, as built, of the whole cores the freed area buys (1: it buys none)
    scored: Scored


def sram_variants(ctx: Context, best: DesignBatch, ar: AreaBreakdown) -> SramVariants:
    """:class:`SramVariants` of ``best`` (``ar`` its area), scored in one call."""
    j = best.sram_level
    level = best.base.memory[j]
    per_mib = level_mm2_per_mib(best, ar.node, j)
    mib = float(best.capacity[0, j]) / 2**20
    saved = 0.5 * mib * per_mib  # the mm2 that halving the level frees, spent on whole cores instead
    # a core is its MAC arrays, vector lanes and per-core SRAM (``dse.search.space.split_designs``); the freed area
    # buys the whole cores it holds (none if it holds less than one): peaks are built of whole cores, so a fractional
    # +12.5 % was built as a whole extra core, more area than was freed, and reported as the fraction
    cores = float(best.cores[0])
    sized = float(best.capacity[0, j]) / 2**20 * per_mib if best.base.memory[j].instances == 1 else 0.0
    core_mm2 = (float(ar.parts["matrix"][0] + ar.parts["vector"][0] + ar.parts["sram"][0]) - sized) / cores
    extra = np.floor(saved / core_mm2 + 1e-9) if core_mm2 > 0 else 0.0
    variants = DesignBatch.stack([best, best, best])
    variants = variants.with_knobs(sram_bytes=np.array([0.5, 2.0, 0.5]) * mib * 2**20,
                                   peak_flops=best.peak_flops[0] * np.array([1.0, 1.0, (cores + extra) / cores]))
    grow = float(variants.peak_flops[2] / best.peak_flops[0])  # as built
    sc, _ = score_designs(ctx, variants)
    return SramVariants(level.name, level.organization, ar.node.name, per_mib, mib, saved, grow, sc)


@dataclass(frozen=True)
class StudyResult:
    folder: Path
    ctx: Context
    best_params: dict[str, float]
    best: DesignBatch
    best_scored: Scored
    best_times: np.ndarray  # [W]
    study: object  # optuna.Study
    n_trials: int  # complete trials in the study (a worker's claims past the target are pruned, failures failed)
    new_trials: int
    recovered: int
    storage: str
    meta: dict
    workers: int = 1
    #: filled by :func:`evaluated` (``run_study`` does): what the report renders without predicting again
    base_eval: DesignEval | None = None
    best_eval: DesignEval | None = None
    heatmap: dict[str, np.ndarray] | None = None  # heatmap_grid at output.heatmap_points
    sram: SramVariants | None = None
    best_template: Hardware | None = None  # the best design as best_design.yaml holds it
    best_system: System | None = None  # the system it ran on as best_system.yaml holds it (None: a single chip)
    written_check: str | None = None  # :func:`written_mismatch` of the two (None: they are the design timed)

    def evaluations(self) -> dict[str, DesignEval]:
        """``{"base": base_eval, "best": best_eval}`` as :func:`evaluated` filled them (with the heatmap and the
        SRAM variants); a result without them is refused, because the report predicts nothing itself."""
        if (self.base_eval is None or self.best_eval is None or self.heatmap is None or self.sram is None
                or self.best_template is None):
            raise ValueError("the study result carries no evaluations; accepted: a result of dse.study.run_study "
                             "or dse.study.evaluated(result)")
        return {"base": self.base_eval, "best": self.best_eval}


def evaluated(result: StudyResult) -> StudyResult:
    """``result`` with its base and best designs evaluated once (:func:`evaluate_design` at the times the
    study already has), the score heatmap around the best design, its SRAM variants and the check that its written
    template (and system) are the design the study timed (:func:`written_mismatch`)."""
    ctx = result.ctx
    note = f"best design of study {ctx.cfg.name}"
    template = result.best.to_hardware(0, f"{ctx.cfg.name}-best", note=note)
    system = result.best.to_system(0, "best_design.yaml", note=note)  # its chip file beside it
    at_best = ctx if not ctx.mix.auto else replace(ctx, mix=(m := with_choice(ctx.mix, result.best)),
                                                     arrays=mix_arrays(m))  # its own plans (plan: auto)
    best = evaluate_design(at_best, result.best, result.best_times)
    return replace(result, base_eval=evaluate_design(ctx, ctx.base, ctx.base_times), best_eval=best,
                   heatmap=heatmap_grid(ctx, result.best, ctx.cfg.output.heatmap_points),
                   sram=sram_variants(ctx, result.best, best.area),
                   best_template=template, best_system=system, written_check=written_mismatch(result, template, system))


def check_trials(n: int) -> None:
    """``--trials N`` against the bounds of ``search.n_trials`` in a file (one line naming the flag)."""
    from pydantic import ValidationError

    from dse.config import Search

    try:
        Search.__pydantic_validator__.validate_assignment(Search.model_construct(), "n_trials", n)
    except ValidationError as exc:
        raise DseError(f"got {n}; accepted: {exc.errors()[0]['msg'].lower()}", field="--trials") from None


def load_context(config: str | Path, n_trials: int | None = None, mix: str | None = None,
                 one_mix: str | None = None) -> tuple[StudyConfig, Context]:
    """Load, validate and prepare a config (errors name the config file); ``one_mix`` names a command
    that takes one mix only, refusing configs with ``mixes:``."""
    cfg, cfg_dir = load_study(config)
    if n_trials is not None:
        check_trials(n_trials)
        cfg = cfg.model_copy(update={"search": cfg.search.model_copy(update={"n_trials": n_trials})})
    if cfg.mixes is not None and mix is None:
        label = config_label(config)
        if one_mix:
            raise DseError(f"{one_mix} takes one mix (workloads:), this config has {len(cfg.mix_names)} "
                           f"({', '.join(cfg.mix_names)}); accepted: a config without mixes"
                           + (", or --mix NAME" if "--mix" in one_mix else ""), file=label)
        raise DseError(f"this config has several mixes ({', '.join(cfg.mix_names)}); use run_mixes()", file=label)
    if mix is not None:
        if not cfg.mixes or mix not in cfg.mixes:
            have = ", ".join(cfg.mix_names) if cfg.mixes else "none: this config has one workloads: list, no mixes:"
            raise DseError(f"got {mix!r}; accepted: a mix the config names ({have})", file=config_label(config),
                           field="--mix")
        cfg = cfg.for_mix(mix)
    try:
        return cfg, prepare(cfg, cfg_dir, f"mixes.{mix}" if mix else "workloads")
    except DseError as exc:  # name the config file when the error came from one of its entries
        raise DseError(exc.message, file=exc.file or config_label(config), field=exc.field) from None


def check_study_capacity(config: str | Path, cfg: StudyConfig, ctx: Context, mix: str | None = None) -> None:
    """:func:`check_capacity` of a loaded study (``mix``: the named mix it was narrowed to); the error names the
    config file ``config`` and the mix's field (``mixes.<mix>``, else ``workloads``)."""
    try:
        check_capacity(cfg, ctx.base, ctx.mix, load_node(ctx.base_hw.process_node),
                       f"mixes.{mix}" if mix else "workloads")
    except InfeasibleError as exc:
        raise InfeasibleError(exc.message, file=exc.file or config_label(config), field=exc.field) from None


def check_mixes(config: str | Path, n_trials: int | None = None) -> dict[str, InfeasibleError]:
    """Every mix of ``config`` loaded and checked before any search: a bad input in any mix raises its one-line
    :class:`DseError`; a mix with a workload no design of the search space can hold (:func:`check_capacity`) is
    returned, by name, with its :class:`InfeasibleError`; when every mix is, that error raises (one line per mix,
    a :class:`DseMultiError` for several). A config with one mix (``workloads:``) is checked the same way."""
    cfg, _ = load_study(config)
    out: dict[str, InfeasibleError] = {}
    for m in cfg.mix_names or [None]:
        sub, ctx = load_context(config, n_trials, m)
        try:
            check_study_capacity(config, sub, ctx, m)
        except InfeasibleError as exc:
            if m is None:
                raise
            out[m] = exc
    if cfg.mixes is not None and len(out) == len(cfg.mix_names):
        errors = list(out.values())
        raise errors[0] if len(errors) == 1 else DseMultiError(errors)
    return out


def worker_main(config: str, url: str, n_trials: int | None, worker: int, mix: str | None = None,
                start: object | None = None) -> int:
    """One extra worker process: load the existing study, claim a first batch, wait at ``start`` (a barrier
    shared with the other workers, so each holds a batch before any evaluates) and run until the study holds
    n_trials."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # a spawned process: its own optuna logs INFO lines
    cfg, ctx = load_context(config, n_trials, mix)
    search = cfg.search.model_copy(update={"seed": cfg.search.seed + worker})
    study = optuna.load_study(study_name=cfg.name, storage=make_storage(url), sampler=optimize.make_sampler(search))
    return optimize.run(study, cfg.search, make_evaluator(ctx, worker), progress=False,
                        claimed=lambda: _wait(start))


def _wait(barrier: object | None, timeout: float = 300.0) -> None:
    """Wait at a start barrier; a worker that never arrives (crashed) does not block the others."""
    if barrier is None:
        return
    with contextlib.suppress(threading.BrokenBarrierError):
        barrier.wait(timeout)  # type: ignore[attr-defined]


def run_study(
    config: str | Path, *, resume: bool = False, storage: str | None = None, out: str | Path | None = None,
    n_trials: int | None = None, progress: bool = True, workers: int = 1, mix: str | None = None,
    folder: Path | None = None, exclusive: bool | None = None, top: Path | None = None,
) -> StudyResult:
    """Run the study in ``config`` (results folder created, inputs copied); return the outcome.

    The results folder (``folder``, else a new one in ``out``, else in ``output.dir``: :meth:`dse.config.Output.root`)
    is self-contained (:mod:`dse.inputs`): ``inputs/`` in ``top`` (default ``folder``; :func:`run_mixes` passes its
    top folder) holds a copy of every input file, ``config.yaml`` points at them (a rerun of it from any working
    folder writes a new study beside the top folder) and ``metadata.json`` their sha256 under ``inputs``; ``resume``
    refuses a changed input before any trial runs (studies created before inputs were recorded resume as before).

    The study is created once here; with ``workers > 1`` that many processes (this one included)
    share it through the storage. :func:`dse.report.write.write_results` writes the tables, plots
    and summary from the result. ``exclusive`` (default: one worker on the default storage in the results
    folder) lets the search buffer its trials in memory and write them in batches (``optimize.run``); with
    ``--storage`` another machine may join the study, so each trial is claimed and recorded there at once."""
    if not 1 <= workers <= max_workers():
        raise DseError(f"got {workers}; accepted: an integer 1..{max_workers()} (4 per CPU core)", field="--workers")
    cfg, ctx = load_context(config, n_trials, mix)
    check_study_capacity(config, cfg, ctx, mix)  # before any trial
    claimed = folder is None and not resume  # a folder this call creates (removed again if the storage fails)
    if folder is None:
        root = Path(out) if out is not None else cfg.output.root(Path(config).parent)
        folder = results_folder(root, cfg.name, True) if resume else claim_results_folder(root, cfg.name)
    make_dir(folder)
    top = folder if top is None else top
    url = storage or f"sqlite:///{(folder / 'study.db').resolve()}"
    snap = snapshot(config, ctx.base_hw.process_node)
    meta = study_meta(cfg, study_inputs(snap, folder, top))
    # metadata.json is written last when a study is created: a folder without it is a run killed
    # before its study existed, which --resume then creates (so --resume always finds a killed run)
    created = (folder / "metadata.json").is_file()
    try:
        with storage_errors(url):
            study, recovered = optimize.open_study(cfg.name, make_storage(url), cfg.search, resume, meta,
                                                   recover_stale=workers == 1, create_missing=not created,
                                                   source=str(config))
    except DseError:  # a storage that cannot be opened (a bad URL): leave no empty folder for --resume to pick
        if claimed:
            prune_empty(folder)
        raise
    if not resume or not (folder / "config.yaml").is_file():
        write_inputs(snap, folder, top)
    write_text(folder / "metadata.json", json.dumps({**study.user_attrs.get(optimize.META_ATTR, meta),
                                                     "storage": url, "workers": workers}, indent=2) + "\n")
    procs, start, before = [], None, optimize.complete_count(study)
    if workers > 1:
        mp = multiprocessing.get_context("spawn")
        start = mp.Barrier(workers)
        procs = [mp.Process(target=worker_main, args=(str(config), url, n_trials, k, mix, start))
                 for k in range(1, workers)]
        for p in procs:
            p.start()
    if exclusive is None:
        exclusive = workers == 1 and storage is None
    with storage_errors(url):
        new = optimize.run(study, cfg.search, make_evaluator(ctx), progress=progress,
                           exclusive=exclusive and workers == 1, claimed=lambda: _wait(start))
    for p in procs:
        p.join()
    bad = [p.exitcode for p in procs if p.exitcode != 0]
    if bad:
        raise DseError(f"{len(bad)} worker process(es) failed (exit codes {bad}); completed trials are in the "
                       "storage: continue with --resume", field="--workers")
    try:
        best_trial = optimize.best_feasible(study)
    except InfeasibleError as exc:  # every trial broke a limit: the line names the config, as a capacity error does
        raise InfeasibleError(exc.message, file=exc.file or config_label(config), field=exc.field) from None
    best = designs_from_params(ctx.base, [best_trial.params], cfg.search.space)
    scored, times = score_designs(ctx, best)
    complete = optimize.complete_count(study)
    new = max(new, complete - before) if procs else new  # every worker's trials, not this process's alone
    return evaluated(StudyResult(folder, ctx, dict(best_trial.params), best, scored, times[0], study,
                                 complete, new, recovered, url, meta, workers))


@dataclass(frozen=True)
class MixesRun:
    """What :func:`run_mixes` returns: the top folder, the result of every mix that has a feasible design (in the
    config's order) and, for every other mix, the one-line reason it has none. Unpacks as ``top, results`` (the
    feasible results as a list), as the earlier ``(top, results)`` tuple did."""

    top: Path
    results: dict[str, StudyResult]
    infeasible: dict[str, InfeasibleError]  # mix -> why it has no result (str(): config file: mixes.<mix>: got ...)

    def __iter__(self) -> Iterator[object]:
        yield self.top
        yield list(self.results.values())


def run_mixes(
    config: str | Path, *, resume: bool = False, storage: str | None = None, out: str | Path | None = None,
    n_trials: int | None = None, progress: bool = True, workers: int = 1,
) -> MixesRun:
    """One search per named mix of ``config`` (studies ``<name>.<mix>`` in one storage, results in
    ``<folder>/<mix>/``, the copied inputs in ``<folder>/inputs/`` and the config pointing at them in
    ``<folder>/config.yaml`` and each ``<folder>/<mix>/config.yaml``); returns the top folder, the per-mix results
    and the infeasible mixes (:class:`MixesRun`).

    Every mix is loaded and checked first (:func:`check_mixes`: a bad input anywhere fails before any search). A mix
    with a workload no design of the search space can hold is not searched, and one whose every trial broke a limit
    has no result; both are reported with their one-line reason while the other mixes run. Only when no mix has a
    feasible design does this raise (:class:`~dse.errors.InfeasibleError`, one line per mix)."""
    cfg, cfg_dir = load_study(config)
    if cfg.mixes is None:
        raise DseError("this config has one mix (workloads); use run_study()", file=str(config))
    skipped = check_mixes(config, n_trials)
    root = Path(out) if out is not None else cfg.output.root(cfg_dir)
    top = results_folder(root, cfg.name, True) if resume else claim_results_folder(root, cfg.name)
    make_dir(top)
    url = storage or f"sqlite:///{(top / 'study.db').resolve()}"
    results: dict[str, StudyResult] = {}
    errors: dict[str, InfeasibleError] = dict(skipped)
    for m in cfg.mix_names:
        if m in skipped:
            continue
        try:
            results[m] = run_study(config, resume=resume, storage=url, n_trials=n_trials, progress=progress,
                                   workers=workers, mix=m, folder=top / m, exclusive=workers == 1 and storage is None,
                                   top=top)
        except InfeasibleError as exc:  # every trial of this mix broke a limit: its trials stay in the storage
            errors[m] = InfeasibleError(exc.message, file=exc.file or str(config), field=exc.field or f"mixes.{m}")
        except DseError:  # the storage could not be opened: no empty folder left for --resume to pick
            if not resume:
                prune_empty(top)
            raise
    if not results:
        found = [errors[m] for m in cfg.mix_names]
        raise found[0] if len(found) == 1 else DseMultiError(found)
    if not resume or not (top / "config.yaml").is_file():
        write_inputs(snapshot(config, next(iter(results.values())).ctx.base_hw.process_node), top, top)
    return MixesRun(top, results, {m: errors[m] for m in cfg.mix_names if m in errors})
