"""The workload library: YAML model descriptions in ``workloads/`` expanded into operator tables.

A description file holds a model's architecture hyperparameters with the public source of each,
its family, and default scenario values. :func:`workload` validates the description and the
scenario, then calls the family builder; the result is a :class:`Workload`.
"""

from __future__ import annotations

import math
import os
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import Field, ValidationError, field_validator

from dse.errors import DseError, did_you_mean, from_validation_error
from dse.limits import MAX_ELEMS, MAX_GEMM_DIM
from dse.strict import Strict
from dse.units import DTYPE_BYTES, repo_root
from dse.workloads import ops, parallel, serving, transformer
from dse.workloads import training as training_mod
from dse.workloads.families import COMMON as COMMON  # re-exported: the keywords every family takes
from dse.workloads.families import FAMILIES, accepted_families
from dse.workloads.families import family as family_of
from dse.workloads.frameworks import framework_defaults
from dse.workloads.parallel import Plan
from dse.workloads.scenario import MAX_BATCH, Scenario, weight_roles
from dse.yamlio import is_file, load_yaml


class ModelDescription(Strict):
    """One file in ``workloads/``."""

    name: str = Field(min_length=1)
    family: str = Field(description="A record of dse.workloads.families.FAMILIES")
    domain: str = Field("", description="e.g. vision, nlp, llm")
    source: str = Field(min_length=3, description="Public source of the hyperparameters")
    arch: dict[str, Any]
    defaults: dict[str, Any] = Field(default_factory=dict, description="Default scenario values")

    @field_validator("family")
    @classmethod
    def _registered(cls, v: str) -> str:
        if v not in FAMILIES:
            raise ValueError(f"accepted: {accepted_families()}")
        return v


class _FamilyTable(Mapping[str, Any]):
    """A read-only view of one attribute of every :data:`~dse.workloads.families.FAMILIES` record (the
    old ``ARCH_MODELS``/``BUILDERS`` tables, kept for callers): a registered family shows up at once."""

    def __init__(self, attr: str) -> None:
        self._attr = attr

    def __getitem__(self, name: str) -> Any:
        return getattr(FAMILIES[name], self._attr)

    def __iter__(self) -> Iterator[str]:
        return iter(FAMILIES)

    def __len__(self) -> int:
        return len(FAMILIES)


ARCH_MODELS: Mapping[str, type] = _FamilyTable("arch")
BUILDERS: Mapping[str, Any] = _FamilyTable("build")


@dataclass(frozen=True)
class Workload:
    """An operator table plus what produced it.

    ``ops`` has one row per distinct operator (see :mod:`dse.workloads.ops` for the columns);
    totals apply ``count``.
    """

    name: str
    ops: pd.DataFrame
    scenario: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    memory: dict[str, float] = field(default_factory=dict)  #: bytes per chip by part (weights, kv_cache, ...)
    plan: Plan | None = None  #: how the workload is split over chips (None: one chip)
    spec: dict[str, Any] = field(default_factory=dict)  #: scenario keywords that rebuild it (library models)
    origin: str = ""  #: the name or YAML path it was built from (``workload(origin, **spec)`` rebuilds it)

    def __repr__(self) -> str:
        """One line (the dataclass default printed the whole operator table)."""
        return (f"Workload({self.label()}: {len(self.ops)} operator rows, {self.flops / 1e9:.4g} GFLOP, "
                f"{self.chips} chip{'s' if self.chips != 1 else ''})")

    @property
    def chips(self) -> int:
        return self.plan.n_chips if self.plan else 1

    @property
    def memory_bytes(self) -> float:
        """Bytes one chip must hold (weights, KV cache, activations, gradients, optimizer state)."""
        return float(sum(self.memory.values()))

    @property
    def host_s(self) -> float:
        """Seconds of host time in one pass that no operator accounts for: a serving engine's scheduling and
        output processing (``dse.workloads.serving.host_times``; 0 for every other workload)."""
        return float(self.scenario.get("host_prefill_s", 0.0)) + float(self.scenario.get("host_decode_s", 0.0))

    @property
    def flops(self) -> float:
        """Total FLOPs of one pass (counts applied)."""
        return float((self.ops["flops"] * self.ops["count"]).sum())

    @property
    def bytes(self) -> float:
        """Total compulsory bytes read + written (counts applied)."""
        o = self.ops
        return float(((o["bytes_read"] + o["bytes_written"]) * o["count"]).sum())

    @property
    def ai(self) -> float:
        """Arithmetic intensity of the whole pass, FLOP/byte (compulsory traffic)."""
        return self.flops / self.bytes if self.bytes else float("inf")

    @property
    def matrix_flops(self) -> float:
        """FLOPs on the matrix unit (GEMM, conv, attention): comparable with published model FLOPs."""
        o = self.ops[self.ops["unit"] == "matrix"]
        return float((o["flops"] * o["count"]).sum())

    def label(self) -> str:
        s = self.scenario
        bits = [s.get("phase", "")]
        for key in ("batch", "seq", "context", "resolution"):
            if s.get(key) and not (key == "seq" and s.get("phase") == "serving"):
                bits.append(f"{key[0] if key != 'context' else 'ctx'}{s[key]}")
        if s.get("phase") == "serving":
            bits.append(f"in{s['input_len']} out{s['output_len']}" + (f" chunk{s['chunk']}" if s.get("chunk") else ""))
        if s.get("serving_engine"):
            bits.append(f"engine:{s['serving_engine']}")
        bits.append(s.get("dtype", ""))
        sp = self.spec
        if sp.get("weight_dtype") and sp["weight_dtype"] != s.get("dtype"):
            bits.append(f"w:{sp['weight_dtype']}" + (f"/g{sp['weight_group']}" if sp.get("weight_group") else ""))
        roles = weight_roles(sp.get("weight_dtypes"))  # a mapping, or the text a validation row or the CLI gives
        if roles:
            bits.append(" ".join(f"{r}:{d}" for r, d in roles.items()))
        if sp.get("kv_dtype") and sp["kv_dtype"] != s.get("dtype"):
            bits.append(f"kv:{sp['kv_dtype']}")
        if sp.get("kv_block"):
            bits.append(f"kvblock{sp['kv_block']}")
        if sp.get("attention_dtype") and sp["attention_dtype"] != s.get("dtype"):
            bits.append(f"attn:{sp['attention_dtype']}")
        act = sp.get("activation_dtype") or s.get("activation_dtype")  # a library model's spec, a gemm's scenario
        if act and act != s.get("dtype"):
            bits.append(f"act:{act}")
        if sp.get("input_quant") == "kernel":
            bits.append("quant:kernel")
        kernel = sp.get("attention_kernel") or s.get("attention_kernel")
        if s.get("causal"):
            bits.append("causal")
        if kernel and kernel != "auto":
            bits.append(str(kernel))
        if (sp.get("attention_gqa") or s.get("attention_gqa")) == "per_head":
            bits.append("gqa:per_head")
        gk = sp.get("gemm_kernel") or s.get("gemm_kernel")
        if gk and gk != "auto":
            bits.append(f"gemm:{gk}")
        fw = sp.get("framework")
        if fw:
            bits.append(f"fw:{fw}")
        preset = framework_defaults(fw, {"execution"}).get("execution", "graph") if fw else "graph"
        if s.get("execution", "graph") != preset:  # an execution given beside a framework that runs the other one
            bits.append(str(s["execution"]))
        for key, default in training_mod.STEP_FIELDS.items():  # a step field given beside a framework or off default
            if key in sp and (sp.get("framework") or sp[key] != default):
                bits.append(f"{key}:{sp[key]}")
        if s.get("residency", "auto") != "auto":
            bits.append(f"residency:{s['residency']}")
        if self.plan is not None and self.plan.label() != "1 chip":
            bits.append(self.plan.label())
        return f"{self.name}[{' '.join(b for b in bits if b)}]"


def workloads_dir() -> Path:
    return repo_root() / "workloads"


def is_path(name: str) -> bool:
    """Whether a workload name is a file path (ends in .yaml/.yml or names a folder)."""
    return name.endswith((".yaml", ".yml", ".onnx", ".json")) or "/" in name or os.sep in name


def search_dirs() -> list[Path]:
    """Where a model name is looked up, in order: each folder of ``$DSE_PATH`` (``os.pathsep``-separated;
    a model there overrides a shipped one of the same name), then the shipped library and its
    ``custom/`` imports."""
    extra = [Path(p).expanduser() for p in os.environ.get("DSE_PATH", "").split(os.pathsep) if p]
    return [*extra, workloads_dir(), workloads_dir() / "custom"]


def description_path(name: str) -> Path:
    """A model description file: ``name`` itself when it is a path, else ``NAME.yaml`` in the first of
    :func:`search_dirs` that has it."""
    if is_path(name):
        return Path(name).expanduser()
    for d in search_dirs():
        if is_file(d / f"{name}.yaml"):
            return d / f"{name}.yaml"
    return workloads_dir() / f"{name}.yaml"


@lru_cache(maxsize=512)
def load_description(name: str) -> ModelDescription:
    path = description_path(name)
    if not is_file(path):
        if is_path(name):
            raise DseError(f"got {name!r}: no such file; accepted: a model description YAML (see workloads/)",
                           field="workload")
        names = available()
        hint = did_you_mean(name, names)
        # a close match is the news: the whole library (150 names) would bury it, so it is named by its command
        models = (f"one of the {len(names)} library models (dse workloads list)" if hint
                  else ", ".join(names))
        raise DseError(f"unknown workload {name!r}{hint}; accepted: {models}, a YAML path, a name in $DSE_PATH, or "
                       "gemm:MxNxK")
    suffix = Path(str(path)).suffix.lower()
    if suffix in (".onnx", ".json"):  # a model file dse imports, not a description: say how (was a YAML parse error)
        kind = "an ONNX model" if suffix == ".onnx" else "a JSON file (a Hugging Face config.json?)"
        raise DseError(f"got {kind}; accepted: a model description YAML; import it first: dse workloads import "
                       f"{path} -o MODEL.yaml, then use MODEL.yaml", file=str(path))
    data = load_yaml(path)
    try:
        desc = ModelDescription.model_validate(data)
    except ValidationError as exc:
        raise from_validation_error(exc, file=str(path), model=ModelDescription) from None
    arch_model = FAMILIES[desc.family].arch
    try:
        arch_model.model_validate(desc.arch)
    except ValidationError as exc:
        raise from_validation_error(exc, file=str(path), model=arch_model, prefix="arch") from None
    if desc.name != path.stem:
        raise DseError(f"got {desc.name!r}; accepted: the file's own name {path.stem!r} (a description is found by "
                       "its file name)", file=str(path), field="name")
    return desc


def accepted_keywords(desc: ModelDescription) -> set[str]:
    """The scenario keywords a model uses (any other is an error naming these): its family record's."""
    return set(family_of(desc.family).accepted_keywords(desc.arch))


def available() -> list[str]:
    """Library models: ``workloads/*.yaml``, imported ``workloads/custom/*.yaml`` and ``$DSE_PATH``'s."""
    return sorted({p.stem for d in search_dirs() for p in d.glob("*.yaml")})


def inference_phases(name: str) -> tuple[str, ...]:
    """The phases ``phase: inference`` covers for a model: ``("prefill", "decode")`` for a language model (a
    served LLM spends its time in both), ``("forward",)`` for every other model."""
    desc = load_description(name)
    return ("prefill", "decode") if family_of(desc.family).is_language_model(desc.arch) else ("forward",)


#: expanded workloads kept per (name, plan, scenario): a repeated call returns the same object (its ``ops``
#: table is shared, treat it as read-only), so scripted loops over variants skip the expansion (issue 17)
WORKLOAD_CACHE_SIZE = 256
_WORKLOADS: OrderedDict[tuple, tuple[Any, Workload]] = OrderedDict()


def _cache_key(name: str, plan: Any, scenario: dict[str, Any]) -> tuple | None:
    """A hashable key of one call, or None (not cached) when an argument is not hashable."""
    try:
        p = plan.model_dump_json() if isinstance(plan, Plan) else (
            None if plan is None else tuple(sorted(dict(plan).items())))
        key = (name, p, tuple(sorted(scenario.items())))
        hash(key)
        return key
    except TypeError:
        return None


def workload(name: str, *, plan: Plan | dict[str, Any] | None = None, **scenario: Any) -> Workload:
    """Expand a library model at a scenario, e.g. ``workload("llama2-7b", phase="decode", batch=1,
    context=1024, dtype="bf16")``. ``name`` may also be ``gemm:MxNxK``, ``copy:N`` (a streaming copy) or
    ``attention:BxHxSQxSKxD`` (one scaled dot-product attention, see :func:`attention_op`).

    With a ``plan`` (:class:`~dse.workloads.parallel.Plan` or its keywords, e.g. ``{"tp": 8}``) the
    result is one chip's share of the workload with its collective operators and memory footprint.

    The last ``WORKLOAD_CACHE_SIZE`` expansions are kept: the same call returns the same object."""
    if isinstance(name, Path):
        name = str(name)
    if not isinstance(name, str) or not name:
        raise DseError(f"got {name!r} ({type(name).__name__}); accepted: a model name, a YAML path, gemm:MxNxK, "
                       "copy:N, attention:BxHxSQxSKxD or all_reduce:BYTES", field="workload")
    if plan is not None and not isinstance(plan, Plan | Mapping):
        raise DseError(f"got {plan!r}; accepted: a Plan or a mapping of its fields (e.g. {{'tp': 8}}); a study's "
                       "plan: auto is dse.best_plan here", field="plan")
    key = _cache_key(name, plan, scenario)
    # the description object is part of the key: clearing load_description's cache (an edited model file)
    # also retires the expansions made from the old one
    desc = None if name.startswith((*SINGLE_OPS, *COLLECTIVE_OPS)) or key is None else load_description(name)
    if key is not None:
        key = (id(desc), *key)
        hit = _WORKLOADS.get(key)
        if hit is not None and hit[0] is desc:
            _WORKLOADS.move_to_end(key)
            return hit[1]
    wl = _expand(name, plan=plan, **scenario)
    if key is not None:
        _WORKLOADS[key] = (desc, wl)
        while len(_WORKLOADS) > WORKLOAD_CACHE_SIZE:
            _WORKLOADS.popitem(last=False)
    return wl


def plan_for(chips: int | None = None, base: Plan | None = None, **keys: Any) -> Plan:
    """The :class:`~dse.workloads.parallel.Plan` of ``chips`` and plan keywords (``tp``, ``pp``, ``dp``, ``ep``,
    ``microbatches``, ``recompute``, ...; ``None`` values ignored): ``chips`` alone means tensor parallel over
    all of them, ``chips`` with only ``ep`` data parallel over all of them with the experts split over ``ep`` of the
    data-parallel ranks (DeepSpeed-MoE's and Megatron's expert parallelism inside the data-parallel group: ``--chips
    8 --ep 8`` read as tp 8 and placed the expert group past the 8 chips); a one-chip ``base`` plan's settings
    (``recompute``) carry over. Errors name ``plan.FIELD``."""
    given = {k: v for k, v in keys.items() if v is not None}
    if base is not None and base.trivial:
        given = {**base.model_dump(exclude_defaults=True), **given}
    if chips is not None and not ({"tp", "pp", "dp", "fsdp"} & set(given)):
        given["dp" if given.get("ep", 1) > 1 else "tp"] = chips  # chips alone: tensor parallel over all of them
    try:
        return Plan.model_validate({"chips": chips, **given} if chips is not None else given)
    except ValidationError as exc:
        raise from_validation_error(exc, file=None, model=Plan, prefix="plan") from None


def with_plan(wl: Workload, *, chips: int | None = None, **keys: Any) -> Workload:
    """One chip's share of an unplanned workload under a plan (:func:`plan_for` of ``chips`` and ``keys``):
    the workload built again from its origin at its scenario with the plan applied at construction,
    ``workload(wl.origin, plan=..., **wl.spec)`` (the only place an already-built workload gets a plan;
    ``dse.predict(wl, hw, chips=, tp=, ...)`` calls it once, then predicts the result as given)."""
    p = plan_for(chips, wl.plan, **keys)
    if wl.plan is not None and not wl.plan.trivial:
        raise DseError(f"{wl.label()} already has a plan; accepted: a single-chip workload", field="plan")
    if not wl.spec and wl.name.startswith((*SINGLE_OPS, "elementwise:")):
        raise DseError(f"{wl.name} is a single operator; accepted: a library model for a plan", field="plan")
    if wl.spec and not wl.origin:  # dse.workloads.library.variant: its own name would rebuild the unchanged model
        raise DseError(f"{wl.label()} is a variant of its model (arch fields replaced); accepted: a library model or "
                       "a model file for a plan (write the changed arch into a model file)", field="plan")
    return workload(wl.origin or wl.name, plan=p, **wl.spec)


def _expand(name: str, *, plan: Plan | dict[str, Any] | None = None, **scenario: Any) -> Workload:
    """:func:`workload` without the cache."""
    if plan is not None and not isinstance(plan, Plan):
        try:
            plan = Plan.model_validate(dict(plan))
        except ValidationError as exc:
            raise from_validation_error(exc, file=None, model=Plan, prefix="plan") from None
    if plan is not None:
        parallel.check_one_chip(plan)  # a one-chip plan's pipeline or collective fields: one line, not dropped
        parallel.check_overlap(plan)  # an overlap share for a collective the plan does not run
    if plan is not None and plan.trivial and plan.recompute == "none":
        plan = None  # one chip, nothing to charge: the plain workload
    if name.startswith(COLLECTIVE_OPS):
        return collective_workload(name, plan, scenario)
    if plan is not None and name.startswith(SINGLE_OPS):
        raise DseError(f"{name} is a single operator; accepted: a library model for a parallelism plan", field="plan")
    if name.startswith("copy:"):
        try:
            n = int(float(name[5:]))
        except (ValueError, OverflowError):
            raise DseError(f"got {name!r}; accepted: copy:N with N elements") from None
        if not 0 < n <= MAX_ELEMS:
            raise DseError(f"got {name!r}; accepted: copy:N with 0 < N <= 2^50 elements")
        kw = _single_op_keys(name, scenario, COPY_KEYS)
        return _resident(elementwise(n, dtype=str(kw["dtype"]), flops_per_elem=0.0), kw)
    if name.startswith("gemm:"):
        try:
            m, n, k = (int(x) for x in name[5:].lower().split("x"))
        except ValueError:
            raise DseError(f"got {name!r}; accepted: gemm:MxNxK with positive integers") from None
        if not all(0 < v <= MAX_GEMM_DIM for v in (m, n, k)):
            raise DseError(f"got {name!r}; accepted: gemm:MxNxK with 0 < M, N, K <= 2^24")
        kw = _single_op_keys(name, scenario, GEMM_KEYS)
        return _resident(gemm(m, n, k, dtype=str(kw["dtype"]), batch=kw["batch"], gemm_kernel=str(kw["gemm_kernel"]),
                              activation_dtype=kw["activation_dtype"]), kw)
    if name.startswith("attention:"):
        return _attention_from_name(name, scenario)
    return _expand_model(load_description(name), name, plan, scenario)


def variant(name: str, arch: Mapping[str, Any], **scenario: Any) -> Workload:
    """A library model with some of its ``arch`` fields replaced (``variant("gemma3-27b", {"window": None})``: every
    layer global), expanded at ``scenario`` as :func:`workload` would (no plan; not cached). For what-if stages that
    change the model itself; a bad field is one line naming ``arch.FIELD``."""
    desc = load_description(name)
    merged = {**desc.arch, **arch}
    try:  # checked here so that a bad field names arch.FIELD (the expansion would name the workload)
        FAMILIES[desc.family].arch.model_validate(merged)
    except ValidationError as exc:
        raise from_validation_error(exc, file=None, model=FAMILIES[desc.family].arch, prefix="arch") from None
    changed = desc.model_copy(update={"arch": merged})
    return replace(_expand_model(changed, name, None, scenario), origin="")  # no name rebuilds it (with_plan)


def _expand_model(desc: ModelDescription, origin: str, plan: Plan | None, scenario: dict[str, Any]) -> Workload:
    """A library model's description expanded at ``scenario`` under ``plan`` (:func:`workload`'s model branch)."""
    name = desc.name  # a path names its model by the description's name
    given = {k: v for k, v in scenario.items() if v is not None}
    if given.get("phase") == "inference":
        given["phase"] = "prefill" if family_of(desc.family).is_language_model(desc.arch) else "forward"
    allowed = accepted_keywords(desc)
    unknown = sorted(set(given) - allowed)
    if unknown:
        raise DseError(f"got {', '.join(unknown)}: {name} does not use {', '.join(unknown)}; accepted: "
                       f"{', '.join(sorted(allowed))}",
                       field=f"workload {name}")
    preset = framework_defaults(given.get("framework", desc.defaults.get("framework")), allowed)
    merged = {**desc.defaults, **preset, **given}  # a framework's fields sit between the model's and the given
    try:
        sc = Scenario.model_validate(merged)
    except ValidationError as exc:
        key = str(exc.errors()[0]["loc"][0]) if exc.errors() and exc.errors()[0]["loc"] else ""
        if key in desc.defaults and key not in given and key not in preset:  # the model file's own default is bad
            raise from_validation_error(exc, file=str(description_path(origin)), model=Scenario,
                                        prefix="defaults") from None
        err = from_validation_error(exc, file=None, model=Scenario, prefix=f"workload {name}")
        if key == "phase":  # 'inference' is taken before validation: say so beside the phases the schema lists
            raise DseError(f"{err.message}, or 'inference' (prefill for a language model, else forward)",
                           field=err.field) from None
        raise err from None
    check_step_fields(sc, given, name)
    check_length_fields(sc, given, name, desc.family)
    check_attention_fields(sc, given, name)
    arch = FAMILIES[desc.family].arch.model_validate(desc.arch)
    if plan is not None and plan.microbatches is None and plan.pp > 1 and sc.batch % plan.dp == 0:
        per_replica = sc.batch // plan.dp  # default: as many micro-batches as stages, if the batch allows
        plan = plan.model_copy(update={"microbatches": max(k for k in range(1, plan.pp + 1) if per_replica % k == 0)})
    try:
        rows, facts, memory = build_shard(desc.family, arch, sc, name, plan or Plan())
        rows = ops.with_gemm_kernel(ops.group_scales(rows, sc.weight_group), sc.gemm_kernel)
        scales = ops.stored_scale_bytes(rows, sc.weight_group, getattr(getattr(arch, "moe", None), "experts", None))
        if scales and "weights" in memory:  # the scales are held beside the weights they scale
            memory = {**memory, "weights": memory["weights"] + scales}
    except ValueError as exc:  # the builders name the model first; the field names it already
        text = str(exc)
        raise DseError(text.removeprefix(f"{name}: "), field=f"workload {name}") from None
    facts = {**facts, "dtype": sc.dtype, "fused_attention": sc.fused_attention,
             "fuse_elementwise": sc.fuse_elementwise, "execution": sc.execution, "residency": sc.residency}
    try:
        if facts.get("phase") == "serving":  # compact prefill and decode apart: the TTFT/TPOT split reads them by name
            parts = [[r for r in rows if str(r["name"]).startswith(pre)] for pre in (serving.PREFILL, serving.DECODE)]
            table = pd.concat([ops.table(p) for p in parts], ignore_index=True)
        else:
            table = ops.table(rows)
    except ValueError as exc:  # a row beyond the table's int64 columns
        raise DseError(f"{exc}", field=f"workload {name}") from None
    table = ops.with_residency(table, memory, sc.residency)
    if sc.execution == "eager":  # every operator the host launches itself: not fused, not a collective
        table["eager"] = ~table["fused"] & (table["coll"] == "")
    return Workload(name=name, ops=table, scenario=facts, source=desc.source, memory=memory, plan=plan,
                    spec=given, origin=origin)


#: the token-length fields (and ``logits``: which positions a prefill projects to the vocabulary; decode and
#: training project every position they compute) and the phases that read them. A field given for a phase that does
#: not read it would be dropped without a word (``seq`` in decode, where the KV length is ``context``), so it is an
#: error instead; an encoder-decoder's decode also reads ``seq``, the encoder input its decoder attends to
LENGTH_PHASES: dict[str, frozenset[str]] = {
    "seq": frozenset({"forward", "prefill", "training"}), "context": frozenset({"decode"}),
    "input_len": frozenset({"serving"}), "output_len": frozenset({"serving"}), "chunk": frozenset({"serving"}),
    "logits": frozenset({"prefill"})}


def length_phases(key: str, family: str) -> frozenset[str]:
    """The phases in which a model of ``family`` reads the length field ``key`` (:data:`LENGTH_PHASES`)."""
    return LENGTH_PHASES[key] | ({"decode"} if key == "seq" and family == "encdec" else frozenset())


def check_length_fields(sc: Scenario, given: dict[str, Any], name: str, family: str) -> None:
    """A token-length field (``seq``, ``context``, ``input_len``, ``output_len``, ``chunk``) given for a phase that
    does not read it is one ``DseError`` naming the field and the phases that do (a model default is never checked:
    only what the caller gave)."""
    if sc.phase is None:
        return
    for key in LENGTH_PHASES:
        phases = length_phases(key, family)
        if key in given and sc.phase not in phases:
            instead = [k for k in LENGTH_PHASES if sc.phase in length_phases(k, family)]
            hint = f"; phase {sc.phase} reads {' and '.join(instead)}" if instead else ""
            if "phase" not in given:  # the model's default phase, not one the caller chose: say which to give
                hint += f" (phase {sc.phase} is {name}'s default: give phase {' or '.join(sorted(phases))})"
            raise DseError(f"got {given[key]!r} for phase {sc.phase}; accepted: only in phase "
                           f"{' or '.join(sorted(phases))}{hint}", field=f"workload {name}: {key}")


def check_attention_fields(sc: Scenario, given: dict[str, Any], name: str) -> None:
    """``attention_kernel`` picks the kernel of a fused attention; with ``fused_attention: false`` the scores go through
    memory as separate operators and no such kernel runs, so a kernel given beside it is one line (the label said
    ``flash`` over the unfused time)."""
    kernel = given.get("attention_kernel")
    if kernel not in (None, "auto") and not sc.fused_attention:
        raise DseError(f"got {kernel!r} with fused_attention false; accepted: 'auto' or unset (a kernel of the fused "
                       "attention), or fused_attention true", field=f"workload {name}: attention_kernel")


def check_step_fields(sc: Scenario, given: dict[str, Any], name: str) -> None:
    """A training-step field (``weight_cast``, ``optimizer``, ``zero_grad``, ``optimizer_dtype``) given away from its
    default outside training is one ``DseError`` naming it (a framework preset's values are inert outside training);
    a bf16 optimizer state (pure bf16 training) with another compute dtype or autocast's fp32 weights is one too."""
    if sc.phase == "training":  # no model defaults to training: a phase left out is an inference phase
        if sc.optimizer_dtype == "bf16" and (sc.dtype != "bf16" or sc.weight_cast != "none"):
            raise DseError(f"got bf16 with dtype {sc.dtype} and weight_cast {sc.weight_cast}; accepted: fp32, or bf16 "
                           "with dtype bf16 and weight_cast none (pure bf16 training keeps no fp32 copy)",
                           field=f"workload {name}: optimizer_dtype")
        return
    for key, default in training_mod.STEP_FIELDS.items():
        if key in given and given[key] != default:
            raise DseError(f"got {given[key]!r} for phase {sc.phase or 'the model default'}; accepted: {default!r} "
                           "(a training step's field)", field=f"workload {name}: {key}")


def build_shard(family: str, arch: Any, sc: Scenario, name: str, plan: Plan
                ) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, float]]:
    """One chip's operator rows, facts and memory footprint under ``plan`` (see ``dse.workloads.parallel``)."""
    if not family_of(family).supports_plan and (plan.tp > 1 or plan.pp > 1 or plan.ep > 1):
        raise ValueError(f"{name} ({family} family) supports data parallelism only; accepted: tp = pp = ep = 1")
    per = plan.dp * plan.m
    if sc.batch % per:
        raise ValueError(f"got batch {sc.batch}, not divisible by dp x microbatches = {plan.dp} x {plan.m}; "
                         f"accepted: a batch that is a multiple of {per}")
    local = sc.model_copy(update={"batch": sc.batch // per})
    if sc.serving_engine and sc.phase not in ("serving", "prefill", "decode"):  # the family's keywords admit it
        raise DseError(f"got serving_engine {sc.serving_engine!r} for phase {sc.phase!r}; accepted: phase serving, "
                       "prefill or decode (an engine's host time is per generation step)", field="serving_engine")
    if sc.phase == "serving":
        return build_serving(family, arch, local, name, plan, sc.batch)
    if family == "transformer":
        arch_l = parallel.shard_transformer(arch, plan, name) if not plan.trivial else arch
        rows, facts = transformer.build(arch_l, local, name)
        if plan.pp > 1:
            arch_l, rows, facts = pipeline_stage(arch, arch_l, local, name, plan)
        rows = parallel.sequence_shard(rows, plan)
        training = facts["phase"] == "training"
        memory = parallel.transformer_memory(arch_l, plan, facts, local, training)
        coll = parallel.collectives(arch_l, plan, facts, local, training)
    else:
        rows, facts = family_of(family).build(arch, local, name)
        training = facts.get("phase") == "training"
        memory = parallel.generic_memory(rows, facts, local, plan, training)
        coll = parallel.gradient_rows(plan, facts, local, training)
    if plan.zero and not training:  # no gathers are charged outside training: the sharded weights would be free
        raise DseError(f"got zero {plan.zero} for phase {facts.get('phase')}; accepted: 0 (ZeRO and fsdp shard "
                       "training state over data-parallel ranks; for inference, shard weights with tp, pp or ep)",
                       field="plan.fsdp" if plan.fsdp else "plan.zero")
    if plan.recompute != "none":
        if not training:
            raise DseError(f"got {plan.recompute!r} for phase {facts.get('phase')}; accepted: 'none' "
                           "(recomputation trades memory for time in training only)", field="plan.recompute")
        rows = rows + training_mod.recompute_rows(rows, plan.recompute, sc.fused_attention)
    if training:
        rows = parallel.shard_optimizer(rows, plan)
    if not plan.trivial:
        rows = parallel.per_microbatch(rows, plan) + coll
        facts = {**facts, "batch": sc.batch, "tokens_per_chip_microbatch": facts.get("tokens"),
                 "params_per_chip": facts.get("params"), "chips": plan.n_chips}
    if sc.serving_engine:  # one prefill or decode step is one engine step (dse.workloads.serving.step_host)
        facts = {**facts, **serving.step_host(sc.serving_engine, sc.phase, sc.batch, serving.operators(rows))}
    if training:  # FLOPs spent again by recomputation: hardware FLOPs, not model FLOPs (MFU leaves them out)
        facts["recompute_flops"] = float(sum(r["flops"] * r["count"] for r in rows
                                             if str(r["name"]).endswith(training_mod.RECOMPUTE_SUFFIX)))
    return rows, facts, memory


def pipeline_stage(arch: Any, arch_l: Any, local: Scenario, name: str, plan: Plan
                   ) -> tuple[Any, list[dict[str, Any]], dict[str, Any]]:
    """The pipeline stage that paces the step (``parallel.slowest_stage`` by FLOPs, one layer built to
    weigh a layer against the LM head): its layers, the head and loss only on the last stage, the
    embedding only on the first."""
    first, middle, last = parallel.stage_layers(arch.layers, plan)
    one, _ = transformer.build(arch_l.model_copy(update={"layers": 1}), local, name)

    def flops(prefixes: tuple[str, ...]) -> float:
        return float(sum(r["flops"] * r["count"] for r in one if str(r["name"]).startswith(prefixes)))

    stage = parallel.slowest_stage(first, middle, last, plan.pp, flops(("layer.",)), flops(parallel.HEAD_ROWS))
    arch_s = arch_l.model_copy(update={"layers": {"first": first, "middle": middle, "last": last}[stage]})
    rows, facts = transformer.build(arch_s, local, name)
    drop = (() if stage == "last" else parallel.HEAD_ROWS) + (() if stage == "first" else parallel.EMBED_ROWS)
    rows = [r for r in rows if not str(r["name"]).startswith(drop)] if drop else rows
    return arch_s, rows, {**facts, "params": stage_params(arch_s, facts["params"], stage), "pipeline_stage": stage}


def stage_params(arch: Any, params: int, stage: str) -> int:
    """The weights one pipeline stage holds: ``params`` (its layers plus the whole model's embedding and head, as
    ``transformer.build`` counts them) less the vocabulary matrices that live on another stage. With ``e = vocab x
    hidden``: the embedding on the first stage, an LM head on the last; tied embeddings keep a copy on both ends
    (Megatron-LM holds the word embeddings on the first and last stages and all-reduces their gradients:
    Narayanan et al., SC21), so a middle stage holds neither."""
    if not arch.vocab:
        return params
    e = arch.vocab * arch.hidden
    keep = {"first": e, "last": e if arch.head == "lm" else 0}.get(stage, 0)
    return int(params - transformer.vocab_params(arch) + keep)


def build_serving(family: str, arch: Any, local: Scenario, name: str, plan: Plan, batch: int
                  ) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, float]]:
    """``phase: serving`` (``dse.workloads.serving``): the prefill of ``batch`` prompts plus
    ``output_len`` decode steps at the mean KV length, each with its collectives; memory at the
    longest KV cache (``input_len + output_len`` tokens per sequence)."""
    if family != "transformer" or getattr(arch, "kind", "") != "decoder":
        raise ValueError(f"{name} ({family}) has no serving phase; accepted: a decoder transformer (LLM)")
    if local.input_len is None or local.output_len is None:
        raise DseError(f"phase serving needs input_len and output_len; got input_len={local.input_len}, "
                       f"output_len={local.output_len}; accepted: integers >= 1", field=f"workload {name}")
    if plan.recompute != "none":
        raise DseError(f"got {plan.recompute!r} for phase serving; accepted: 'none' "
                       "(recomputation trades memory for time in training only)", field="plan.recompute")
    if local.dropout:  # said for the phase asked, not for the prefill and decode passes serving builds from it
        raise DseError(f"got {local.dropout:g} for phase serving; accepted: 0 (dropout runs in training only)",
                       field=f"workload {name}: dropout")
    i, o = local.input_len, local.output_len
    arch_l = parallel.shard_transformer(arch, plan, name) if not plan.trivial else arch
    pre = local.model_copy(update={"phase": "prefill", "seq": i, "logits": "last", "kv_block": None})
    # the decode steps' mean KV read, whole blocks with kv_block (applied here, so the decode build reads it as is)
    dec = local.model_copy(update={"phase": "decode", "context": serving.mean_read_context(i, o, local.kv_block),
                                   "kv_block": None})
    rows_p, facts_p = transformer.build(arch_l, pre, name)
    win = arch_l.window  # a local layer's steps read their window's keys, where it binds within the sequence
    local_kv = serving.mean_read_context(i, o, local.kv_block, win.keys) if win and win.tokens < i + o else None
    rows_d, facts_d = transformer.build(arch_l, dec, name, local_kv)
    if not plan.trivial:
        rows_p = parallel.per_microbatch(rows_p, plan) + parallel.collectives(arch_l, plan, facts_p, pre, False)
        rows_d = parallel.per_microbatch(rows_d, plan) + parallel.collectives(arch_l, plan, facts_d, dec, False)
    rows = serving.prefixed(rows_p, serving.PREFILL) + serving.prefixed(rows_d, serving.DECODE, o)
    memory = parallel.transformer_memory(arch_l, plan, {**facts_d, "context": i + o, "seq": 0}, dec, False)
    host_p, host_d = serving.host_times(local.serving_engine, batch, o, serving.operators(rows_p))
    facts = {"phase": "serving", "batch": batch, "seq": i, "context": None, "input_len": i, "output_len": o,
             "chunk": local.chunk, "tokens": batch * o, "params": facts_d["params"], "chips": plan.n_chips,
             "serving_engine": local.serving_engine, "host_prefill_s": host_p, "host_decode_s": host_d}
    return rows, facts, memory


def operand_memory(table: pd.DataFrame) -> dict[str, float]:
    """Bytes a one-operator workload holds on the chip: the largest operator's inputs plus outputs (a lower
    bound for an unfused chain, whose intermediates are such operands), as ``{"operands": bytes}``."""
    return {"operands": float((table["bytes_read"] + table["bytes_written"]).max())}


def whole(field: str, value: Any, top: float) -> None:
    """One line unless ``value`` is a whole number from 1 to ``top`` (``dse.gemm(2**40, 1, 1)`` or ``(1.5, 1, 1)``
    built a workload the command line's ``gemm:MxNxK`` refuses)."""
    ok = isinstance(value, int | float | np.integer) and not isinstance(value, bool) and math.isfinite(value)
    if not (ok and value == int(value) and 1 <= value <= top):
        raise DseError(f"got {value!r}; accepted: a whole number from 1 to {top:,.0f}", field=field)


def gemm(M: int, N: int, K: int, *, dtype: str = "fp32", batch: int = 1, gemm_kernel: str = "auto",
         activation_dtype: str | None = None) -> Workload:
    """A one-operator workload: ``batch`` products [M,K]x[K,N] (the textbook worked example), run by a
    ``gemm_kernel`` (:data:`dse.workloads.ops.GemmKernel`; ``auto``: the template's), writing its [M,N] output in
    ``activation_dtype`` (default ``dtype``; e.g. fp16 from fp8 operands, as cuBLASLt's FP8 GEMMs do)."""
    try:
        Scenario(dtype=dtype, activation_dtype=activation_dtype)  # validates the dtype names
    except ValidationError as exc:
        raise from_validation_error(exc, file=None, model=Scenario, prefix="workload gemm") from None
    for key, value, top in (("M", M, MAX_GEMM_DIM), ("N", N, MAX_GEMM_DIM), ("K", K, MAX_GEMM_DIM),
                            ("batch", batch, MAX_BATCH)):
        whole(f"workload gemm: {key}", value, top)  # as gemm:MxNxK on the command line
    try:
        rows = ops.with_gemm_kernel([ops.gemm(f"gemm{M}x{N}x{K}", M, N, K, dtype=dtype, batch=batch,
                                              out_dtype=activation_dtype)], gemm_kernel)
    except ValueError as exc:
        raise DseError(str(exc).splitlines()[0]) from None
    table = ops.table(rows)
    scen = {"phase": "forward", "batch": batch, "dtype": dtype}
    if gemm_kernel != "auto":
        scen["gemm_kernel"] = gemm_kernel
    if activation_dtype is not None:
        scen["activation_dtype"] = activation_dtype
    return Workload(name=f"gemm:{M}x{N}x{K}", ops=table, scenario=scen, source="synthetic",
                    memory=operand_memory(table))


#: name prefixes of the one-operator workloads (no model description, no parallelism plan)
SINGLE_OPS = ("copy:", "gemm:", "attention:")
#: name prefixes of the one-collective workloads (``all_reduce:BYTES`` ...): one collective over the chips of a plan
COLLECTIVE_OPS = ("all_reduce:", "all_gather:", "reduce_scatter:", "all_to_all:")
#: scenario keywords of ``copy:N`` and ``gemm:MxNxK`` and their defaults (``activation_dtype`` None: ``dtype``)
COPY_KEYS: dict[str, Any] = {"dtype": "fp32", "residency": "auto"}
GEMM_KEYS: dict[str, Any] = {"dtype": "fp32", "batch": 1, "gemm_kernel": "auto", "activation_dtype": None,
                             "residency": "auto"}
#: scenario keywords of ``attention:BxHxSQxSKxD`` and their defaults
ATTENTION_KEYS: dict[str, Any] = {"dtype": "fp16", "causal": False, "fused_attention": True, "kv_heads": None,
                                  "attention_kernel": "auto", "attention_gqa": "grouped", "residency": "auto"}
ATTENTION_FORM = "attention:BxHxSQxSKxD (batch, heads, query length, key length, head dim; 0 < each <= 2^20)"


def collective_workload(name: str, plan: Plan | None, scenario: dict[str, Any]) -> Workload:
    """``all_reduce:BYTES`` (``all_gather``, ``reduce_scatter``, ``all_to_all``): one collective of ``BYTES`` (an
    all-reduce's buffer, an all-gather's gathered result, the bytes one rank sends in an all-to-all;
    ``dse.predict.network``) over every chip of ``plan`` (its one group that spans them all, ``tp`` when the plan is
    ``chips`` alone), as a collective benchmark (nccl-tests, hccl_demo) times it. Without a plan it runs on one chip
    and moves nothing. No scenario keywords."""
    coll, _, size = name.partition(":")
    try:
        S = float(size)
    except ValueError:
        raise DseError(f"got {name!r}; accepted: {coll}:BYTES with a number of bytes") from None
    if not 0 < S <= MAX_ELEMS:
        raise DseError(f"got {name!r}; accepted: {coll}:BYTES with 0 < BYTES <= 2^50")
    unknown = sorted(k for k, v in scenario.items() if v is not None)
    if unknown:
        raise DseError(f"got {', '.join(unknown)}; accepted: none (a collective takes its chips from the plan)",
                       field=f"workload {name}")
    plan = plan or Plan()
    n = plan.n_chips
    group = next((g for g in ("tp", "dp", "pp", "ep", "fsdp") if getattr(plan, g, 1) == n), None) if n > 1 else "tp"
    if group is None:
        raise DseError(f"got {plan.label()}; accepted: one parallel group over all {n} chips (e.g. tp={n})",
                       field="plan")
    row = parallel.collective(coll, coll, S, group, plan, 1, 1.0)
    return Workload(name=name, ops=ops.table([row]), scenario={}, source="synthetic", memory={},
                    plan=plan if n > 1 else None, origin=name)


def _resident(wl: Workload, kw: dict[str, Any]) -> Workload:
    """A one-operator workload with its scenario's ``residency`` policy (:func:`dse.workloads.ops.with_residency`)."""
    policy = str(kw.get("residency", "auto"))
    try:
        table = ops.with_residency(wl.ops, wl.memory, policy)
    except ValueError as exc:
        raise DseError(f"{exc}", field=f"workload {wl.name}") from None
    return replace(wl, ops=table, scenario={**wl.scenario, "residency": policy})


def _single_op_keys(name: str, scenario: dict[str, Any], accepted: dict[str, Any]) -> dict[str, Any]:
    """``accepted``'s defaults updated by the scenario keywords a one-operator workload ``name`` was given (``None``
    values: not given); a keyword it does not use is one error line naming it and the accepted ones."""
    unknown = sorted(set(scenario) - set(accepted))
    if unknown:
        raise DseError(f"got {', '.join(unknown)}: {name} does not use {', '.join(unknown)}; accepted: "
                       f"{', '.join(accepted)}",
                       field=f"workload {name}")
    return {**accepted, **{k: v for k, v in scenario.items() if v is not None}}


def _attention_from_name(name: str, scenario: dict[str, Any]) -> Workload:
    """``attention:BxHxSQxSKxD`` with scenario keywords ``dtype``, ``causal``, ``fused_attention``, ``kv_heads``,
    ``attention_kernel``, ``attention_gqa``."""
    try:
        b, h, sq, sk, d = (int(x) for x in name[len("attention:"):].lower().split("x"))
    except ValueError:
        raise DseError(f"got {name!r}; accepted: {ATTENTION_FORM}", field="workload") from None
    if not all(0 < v <= 2**20 for v in (b, h, sq, sk, d)):
        raise DseError(f"got {name!r}; accepted: {ATTENTION_FORM}", field="workload")
    kw = _single_op_keys(name, scenario, ATTENTION_KEYS)
    for key in ("causal", "fused_attention"):
        if not isinstance(kw[key], bool):
            raise DseError(f"{key}: got {kw[key]!r}; accepted: true, false", field=f"workload {name}")
    return _resident(attention_op(b, h, sq, sk, d, causal=kw["causal"], dtype=str(kw["dtype"]),
                                  fused=kw["fused_attention"], kv_heads=kw["kv_heads"],
                                  kernel=str(kw["attention_kernel"]), gqa=str(kw["attention_gqa"])), kw)


def attention_op(batch: int, heads: int, seq_q: int, seq_k: int, head_dim: int, *, causal: bool = False,
                 dtype: str = "fp16", fused: bool = True, kv_heads: int | None = None,
                 kernel: str = "auto", gqa: str = "grouped") -> Workload:
    """A one-operator workload: scaled dot-product attention of ``batch`` sequences, ``heads`` query heads
    (``kv_heads`` key/value heads, default ``heads``), as :func:`dse.workloads.ops.attention` builds it:
    fused (flash-style, one kernel) or unfused (QK^T, softmax, PV). Matrix FLOPs of the forward pass
    ``4 * batch * heads * seq_q * seq_k * head_dim`` (FlashAttention-2, Dao 2023, Sec. 4.1); causal keeps
    the pairs on and below the diagonal (:func:`dse.workloads.ops.causal_pairs`: a flash kernel also computes
    its diagonal blocks whole), about half when ``seq_q == seq_k``. ``kernel`` names the fused kernel
    (:data:`dse.workloads.ops.ATTENTION_KERNELS`: ``auto``, ``whole_row``, ``flash``) and ``gqa`` how it serves the
    query heads of a KV head (:data:`dse.workloads.ops.ATTENTION_GQA`: ``grouped``, ``per_head``)."""
    kvh = heads if kv_heads is None else kv_heads
    try:
        Scenario(dtype=dtype)  # validates the dtype name
    except ValidationError as exc:
        raise from_validation_error(exc, file=None, model=Scenario, prefix="workload attention") from None
    try:
        ops.check_positive("attention", batch=batch, heads=heads, seq_q=seq_q, seq_k=seq_k, head_dim=head_dim,
                           kv_heads=kvh)
        if heads % kvh:
            raise ValueError(f"kv_heads: got {kvh}; accepted: a divisor of heads = {heads}")
        if causal and seq_q > seq_k:
            raise ValueError(f"causal: got seq_q {seq_q} > seq_k {seq_k}; accepted: seq_q <= seq_k")
        ops.attention_kernel(kernel, seq_k)
        ops.check_choice("attention_gqa", gqa, ops.ATTENTION_GQA)
    except ValueError as exc:
        raise DseError(str(exc), field="workload attention") from None
    rows = ops.attention("attention", batch=batch, heads=heads, kv_heads=kvh, q_len=seq_q, kv_len=seq_k,
                        head_dim=head_dim, causal=causal, dtype=dtype, fused=fused, kernel=kernel, gqa=gqa)
    table = ops.table(rows)
    return Workload(name=f"attention:{batch}x{heads}x{seq_q}x{seq_k}x{head_dim}", ops=table,
                    scenario={"phase": "forward", "batch": batch, "dtype": dtype, "causal": causal,
                              "fused_attention": fused, "kv_heads": kvh, "attention_kernel": kernel,
                              "attention_gqa": gqa},
                    source="synthetic",
                    memory=operand_memory(table))


def elementwise(elems: int, *, dtype: str = "fp32", flops_per_elem: float = 1.0, inputs: int = 1) -> Workload:
    """A one-operator streaming workload, e.g. y = x + 1 over ``elems`` elements."""
    whole("workload elementwise: elems", elems, MAX_ELEMS)
    whole("workload elementwise: inputs", inputs, 64)
    if not (isinstance(flops_per_elem, int | float) and math.isfinite(flops_per_elem) and 0 <= flops_per_elem <= 1e4):
        raise DseError(f"got {flops_per_elem!r}; accepted: a number from 0 to 1e4", field="workload elementwise: "
                       "flops_per_elem")
    if dtype not in DTYPE_BYTES:
        raise DseError(f"got {dtype!r}; accepted: one of {', '.join(DTYPE_BYTES)}", field="workload elementwise: dtype")
    row = ops.streaming("elementwise", kind="elementwise", elems=elems, flops_per_elem=flops_per_elem,
                        inputs=inputs, dtype=dtype)
    table = ops.table([row])
    return Workload(name=f"elementwise:{elems}", ops=table, scenario={"phase": "forward", "dtype": dtype},
                    source="synthetic", memory=operand_memory(table))


def list_workloads() -> pd.DataFrame:
    """What the library holds: one row per model with family, domain, default scenario and totals."""
    recs = []
    for name in available():
        desc = load_description(name)
        wl = workload(name)
        recs.append({
            "name": name, "family": desc.family, "domain": desc.domain,
            "default_scenario": wl.label(), "params_m": wl.scenario.get("params", 0) / 1e6,
            "gflop": wl.flops / 1e9, "mbyte": wl.bytes / 1e6, "ai_flop_per_byte": wl.ai,
            "source": desc.source,
        })
    return pd.DataFrame(recs)
