"""The root config of a study (``configs/*.yaml``): one strict pydantic model, validated first.

Unknown keys are errors (``extra="forbid"`` everywhere); values carry units in their names.
:func:`load_study` reads YAML safely (no code, no duplicate keys) and turns any validation failure
into a one-line :class:`~dse.errors.DseError` naming file, field, value and what is accepted.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, Field, ValidationError, field_validator, model_validator

from dse.errors import DseError, from_validation_error
from dse.hardware.dram_parts import searchable_names
from dse.hardware.fields import KNOB, KNOBS, domain_text, in_domain, is_part_field, zero_ok
from dse.hardware.schema import Keeps
from dse.limits import KNOB_MAX, MAX_CHIPS
from dse.score import OBJECTIVES, SCORE_OBJECTIVES
from dse.search.samplers import SAMPLERS
from dse.strict import Strict
from dse.units import Dtype, GemmKernel
from dse.workloads.ops import AttentionGqa, AttentionKernel, InputQuant, Residency
from dse.workloads.parallel import Plan
from dse.workloads.scenario import MAX_BATCH, MAX_RESOLUTION, MAX_TOKENS, WeightRole, weight_roles
from dse.workloads.training import GradDtype, OptimizerDtype, OptimizerKernel, WeightCast, ZeroGrad
from dse.workloads.transformer import AttentionWindow
from dse.yamlio import load_yaml

#: a results-folder name: a slug that cannot be '.', '..' or hidden, and cannot leave its folder
NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$"


class WorkloadEntry(Strict):
    """One workload of the mix: a library model at a scenario, with a weight."""

    name: str | None = Field(None, min_length=1, description="Library model (see `dse workloads`) or gemm:MxNxK")
    path: str | None = Field(None, min_length=1, description="A model description YAML of your own (relative to "
                                                            "this config)")
    suite: str | None = Field(None, min_length=1, description="A named suite instead of one model (its weights x weight)")
    exclude: list[Annotated[str, Field(min_length=1)]] | None = Field(
        None, min_length=1, description="With suite: models of the suite left out of the mix (e.g. those too large for "
                                        "any chip of the search space)")
    weight: float = Field(1.0, gt=0, description="Relative weight in the mix score")
    phase: Literal["forward", "prefill", "decode", "training", "serving"] | None = None
    batch: int | None = Field(None, gt=0, le=MAX_BATCH)
    input_len: int | None = Field(None, gt=0, le=MAX_TOKENS, description="Serving: prompt tokens per request")
    output_len: int | None = Field(None, gt=0, le=MAX_TOKENS, description="Serving: generated tokens per request")
    chunk: int | None = Field(None, gt=0, le=MAX_TOKENS, description="Serving: chunked-prefill tokens per iteration")
    serving_engine: str | None = Field(None, min_length=1, description="Serving: engine whose host time per step "
                                                                       "the serving metrics pay (workloads/engines/)")
    dropout: float | None = Field(None, ge=0.0, lt=1.0, description="Training: dropout probability")
    seq: int | None = Field(None, gt=0, le=MAX_TOKENS)
    context: int | None = Field(None, gt=0, le=MAX_TOKENS)
    resolution: int | None = Field(None, gt=0, le=MAX_RESOLUTION)
    dtype: Dtype | None = None
    kv_dtype: Dtype | None = None
    kv_block: int | None = Field(None, gt=0, le=MAX_TOKENS, description="Decode/serving: the attention reads the KV "
                                 "cache in whole blocks of this many tokens")
    attention_dtype: Dtype | None = None
    activation_dtype: Dtype | None = None
    weight_dtype: Dtype | None = None
    weight_dtypes: dict[WeightRole, Dtype] | None = Field(
        None, description="Transformers: a dtype per weight role (qkv_proj, out_proj, ffn_up, ffn_down, lm_head), "
        "overriding weight_dtype; a mapping or 'ffn_up=bfp4,lm_head=bfp8'")
    weight_group: int | None = Field(None, gt=0, description="Weight-only quantization: weights per scale group")
    fused_attention: bool | None = None
    attention_kernel: AttentionKernel | None = None
    attention_gqa: AttentionGqa | None = None
    gemm_kernel: GemmKernel | None = None
    fuse_elementwise: bool | None = None
    logits: Literal["last", "all"] | None = None
    execution: Literal["graph", "eager"] | None = None
    residency: Residency | None = Field(None, description="Which tensors stay on chip between operators: auto, none, "
                                        "weights, activations (dse predict --residency)")
    memory_format: Literal["nhwc", "nchw"] | None = Field(None, description="CNN activation layout (dse predict "
                                                          "--memory-format)")
    input_quant: InputQuant | None = Field(None, description="Where a GEMM's input is cast to a narrower dtype: "
                                           "producer or kernel (dse predict --input-quant)")
    framework: str | None = Field(None, min_length=1, description="Training: the framework preset whose step is "
                                  "modelled (workloads/frameworks/NAME.yaml: pytorch-eager, pytorch-compile, megatron, "
                                  "xla)")
    weight_cast: WeightCast | None = Field(None, description="Training: none or kernel (autocast weight casts)")
    optimizer: OptimizerKernel | None = Field(None, description="Training: AdamW kernels, fused or foreach")
    zero_grad: ZeroGrad | None = Field(None, description="Training: the gradient buffer, memset or none")
    optimizer_dtype: OptimizerDtype | None = Field(None, description="Training: the optimizer state, fp32 (master "
                                                   "weights and moments) or bf16 (pure bf16 training)")
    grad_dtype: GradDtype | None = Field(None, description="Training: the gradients kept and reduced over data "
                                         "parallelism, auto (Megatron-LM's rule), fp32, bf16 or fp16")
    plan: Plan | None = Field(
        None, description="Parallelism plan: chips, tp, pp, dp, ep, sp, microbatches, zero, recompute, overlap (needs "
        "a system with enough chips); or auto: every design at its own fastest plan over `chips` chips that fits")
    chips: int | None = Field(None, gt=0, le=MAX_CHIPS, description="With plan: auto, the chips the workload is split over")
    auto_plan: bool = Field(False, description="Set by plan: auto (the plan searched per design)")

    @field_validator("weight_dtypes", mode="before")
    @classmethod
    def _roles_text(cls, v: Any) -> Any:
        return weight_roles(v)

    @model_validator(mode="before")
    @classmethod
    def _plan_auto(cls, data: Any) -> Any:
        """``plan: auto`` is ``auto_plan: true`` with no fixed plan (a plan mapping keeps its own error paths)."""
        if isinstance(data, dict) and data.get("plan") == "auto":
            return {**data, "plan": None, "auto_plan": True}
        return data

    @model_validator(mode="after")
    def _name_or_suite(self) -> WorkloadEntry:
        if sum(x is not None for x in (self.name, self.path, self.suite)) != 1:
            given = [k for k in ("name", "path", "suite") if getattr(self, k) is not None]
            raise ValueError(f"@{given[1] if len(given) > 1 else 'name'}@got {' and '.join(given) or 'none of them'}; "
                             "accepted: exactly one of name (a library model), path (a model YAML) or suite (a named "
                             "mix)")
        if self.auto_plan and (self.chips is None or self.name is None):
            raise ValueError("@plan@got plan: auto without chips or on a suite or path entry; accepted: plan: auto with "
                             "chips: N on a library model (name:)")
        if self.chips is not None and not self.auto_plan:
            raise ValueError("@chips@got chips without plan: auto; accepted: chips with plan: auto (a given plan says "
                             "its own chips)")
        if self.exclude is not None and self.suite is None:
            raise ValueError("@exclude@got exclude without suite; accepted: exclude with suite (models of the suite "
                             "left out)")
        return self

    def scenario(self) -> dict[str, Any]:
        return self.model_dump(exclude={"name", "path", "weight", "suite", "exclude", "plan", "chips", "auto_plan"},
                               exclude_none=True)


class Range(Strict):
    """A searched parameter: ``low`` to ``high``, log-uniform unless ``log: false``."""

    low: float = Field(gt=0)
    high: float = Field(gt=0)
    log: bool = True

    @model_validator(mode="after")
    def _order(self) -> Range:
        if not self.low < self.high:
            raise ValueError(f"@low@got low {self.low:g}, high {self.high:g}; accepted: low below high")
        return self


class Param(Strict):
    """A searched hardware field: a range (float or int, log or linear) or a list of choices."""

    field: str = Field(min_length=3, description="e.g. memory.local.capacity_mib, compute.clock_ghz, network.links")
    low: float | None = Field(None, ge=0, description="> 0, or >= 0 for a field that may be 0 (compute.spare_cores)")
    high: float | None = Field(None, gt=0)
    log: bool = True
    type: Literal["float", "int"] = "float"
    choices: list[float] | list[str] | None = Field(
        None, min_length=1, description="Categorical values instead of a range: numbers, or DRAM part names for a "
        "main memory's generation (memory.<main>.generation: [hbm3, hbm3e, hbm4])")

    @model_validator(mode="after")
    def _range_or_choices(self) -> Param:
        if is_part_field(self.field):
            if self.choices is None or not all(isinstance(c, str) for c in self.choices):
                raise ValueError(f"@choices@got {self.choices if self.choices is not None else 'a range'} for "
                                 f"{self.field}; accepted: a list of DRAM parts ({', '.join(searchable_names())})")
            bad = [c for c in self.choices if c not in searchable_names()]
            if bad or self.low is not None or self.high is not None:
                raise ValueError(f"@choices@got {bad or 'low/high beside choices'} for {self.field}; accepted: "
                                 f"parts {', '.join(searchable_names())}")
            return self
        if self.choices is not None:
            if self.low is not None or self.high is not None:
                raise ValueError("give either choices or low/high, not both")
            if not all(isinstance(c, float | int) and in_domain(self.field, c) for c in self.choices):
                raise ValueError(f"@choices@got {self.choices}; accepted: numbers {domain_text(self.field)}")
        elif self.low is None or self.high is None:
            raise ValueError("give low and high (a range) or choices (a list)")
        elif not in_domain(self.field, self.low):  # low >= 0 by its Field: 0 where the field may not be 0
            raise ValueError(f"@low@got {self.low:g} for {self.field}; accepted: a number {domain_text(self.field)}")
        elif self.low == 0 and self.log:
            raise ValueError(f"@log@got log: true with low 0 for {self.field}; accepted: log: false (a log range "
                             "cannot start at 0)")
        elif not self.low < self.high:
            raise ValueError(f"@low@got low {self.low:g}, high {self.high:g}; accepted: low below high")
        elif self.type == "int" and (self.low != int(self.low) or self.high != int(self.high)):
            raise ValueError(f"@low@got {self.low:g}..{self.high:g}; accepted: whole numbers for type: int")
        return self


class Split(Strict):
    """Budget split: a total die area shared between MAC arrays, SRAM and DRAM PHYs by searched
    weights (normalised to fractions), so "which ratio under this area" is searched directly."""

    total_area_mm2: float = Field(gt=0, description="Die area to share (fixed, vector, NoC, SerDes come off first)")
    compute: Range = Field(Range(low=0.05, high=1.0, log=False), description="Weight of the MAC arrays")
    sram: Range = Field(Range(low=0.05, high=1.0, log=False), description="Weight of the outermost on-chip SRAM")
    dram: Range = Field(Range(low=0.05, high=1.0, log=False), description="Weight of the DRAM PHYs and controllers")


class Space(Strict):
    """The knobs searched on the base design (each optional; at least one)."""

    peak_tflops: Range | None = Field(None, description=KNOB["peak_tflops"].description)
    dram_bandwidth_tbps: Range | None = Field(None, description=KNOB["dram_bandwidth_tbps"].description)
    sram_mib: Range | None = Field(None, description=KNOB["sram_mib"].description)
    params: list[Param] = Field(default_factory=list, description="Any other searched hardware fields")
    split: Split | None = Field(None, description="Budget split instead of the three knobs above")

    @model_validator(mode="after")
    def _some(self) -> Space:
        knobs = bool(self.knobs())
        if not (knobs or self.params or self.split):
            raise ValueError(f"the search space is empty; accepted: {', '.join(KNOBS)}, params or split")
        if self.split and knobs:
            raise ValueError(f"split replaces {', '.join(KNOBS[:-1])} and {KNOBS[-1]}; give one or the other")
        fields = [p.field for p in self.params]
        if len(set(fields)) != len(fields):
            raise ValueError(f"a field is searched twice: {fields}")
        for name, r in self.knobs().items():  # a design past the field's own bound could never be built or written
            if r.high > KNOB_MAX[name]:
                raise ValueError(f"@{name}.high@got {r.high:g}; accepted: at most {KNOB_MAX[name]:g} "
                                 f"{KNOB[name].unit} (dse.limits, docs/limits.md)")
        return self

    def knobs(self) -> dict[str, Range]:
        """The searched knobs (``dse.hardware.fields.KNOBS`` order) and their ranges."""
        return {k: getattr(self, k) for k in KNOBS if getattr(self, k) is not None}


ObjectiveName = Literal[tuple(OBJECTIVES)]  # type: ignore[valid-type]
ScoreObjectiveName = Literal[SCORE_OBJECTIVES]  # type: ignore[valid-type]
SamplerName = Literal[tuple(SAMPLERS)]  # type: ignore[valid-type]


class Search(Strict):
    n_trials: int = Field(200, gt=0, le=1_000_000, description="Total trials in the study (resume continues to it)")
    batch_size: int = Field(16, gt=0, le=10_000, description="Trials asked, predicted together, then told")
    sampler: SamplerName | None = Field(
        None, description="Default: tpe for one objective, nsga2 for several")
    grid_points: int = Field(8, ge=2, le=1000, description="Grid sampler: values per searched parameter")
    seed: int = Field(0, ge=0, le=2**31 - 1, description="Sampler seed (worker k uses seed + k)")
    objective: ScoreObjectiveName = "score"
    objectives: list[ObjectiveName] | None = Field(
        None, min_length=2, description="Several objectives -> a Pareto front (e.g. [score, area_mm2])")
    area_budget_mm2: float | None = Field(None, gt=0, description="Die area budget; larger designs are infeasible")
    cost_budget_usd: float | None = Field(None, gt=0, description="Unit cost budget (USD per good part)")
    power_budget_w: float | None = Field(None, gt=0, description="Power budget (W): the mix's most power-hungry"
                                         " workload must stay below it (a TDP)")
    power_density_budget_w_per_mm2: float | None = Field(
        None, gt=0, description="Power-density budget (W/mm2): the mix's most power-hungry workload's average power "
        "over the package's silicon footprint (the dies on its interposer or substrate; a die bonded on another adds "
        "its power, not its area) must stay below it: the heat flux the cooling carries away")
    space: Space

    @model_validator(mode="after")
    def _objectives(self) -> Search:
        if self.objectives is not None and len(set(self.objectives)) != len(self.objectives):
            raise ValueError(f"objectives repeat a name: {self.objectives}")
        if self.objectives is not None and "objective" in self.model_fields_set:  # it was dropped without a word
            raise ValueError(f"@objective@got {self.objective!r} beside objectives {self.objectives}; accepted: one "
                             "of the two (objective: one to maximise, objectives: a Pareto front)")
        if self.sampler is None:
            object.__setattr__(self, "sampler", "nsga2" if self.objectives else "tpe")
        return self

    @property
    def objective_names(self) -> list[str]:
        return list(self.objectives) if self.objectives else [self.objective]

    def budgets(self) -> dict[str, float]:
        """The budgets this search sets, by constraint name (``dse.score.LIMITS``: the resource each bounds)."""
        named = {"area": self.area_budget_mm2, "cost": self.cost_budget_usd, "power": self.power_budget_w,
                 "power_density": self.power_density_budget_w_per_mm2}
        return {k: v for k, v in named.items() if v is not None}


class Output(Strict):
    dir: str = Field("results", description="Parent folder of results/<study-name>/")
    relative_to: Literal["cwd", "config"] = Field(
        "cwd", description="What a relative dir starts from: the working folder (default) or this config's folder "
        "(the config.yaml a results folder holds, so a rerun lands beside it wherever it is run from)")
    plots: bool = True
    heatmap_points: int = Field(24, ge=4, le=200, description="Grid side of the score heatmap")

    def root(self, cfg_dir: Path) -> Path:
        """The parent folder of the results: ``dir`` as given when absolute, else relative to the working folder
        or, with ``relative_to: config``, to the config's folder ``cfg_dir``."""
        path = Path(self.dir).expanduser()
        return cfg_dir / path if self.relative_to == "config" and not path.is_absolute() else path


def parse_ratio(text: str) -> float:
    """``"1:2"`` -> 2.0: the bandwidth per FLOP relative to the base design (``a:b`` -> ``b / a``)."""
    try:
        a, b = (float(x) for x in str(text).split(":"))
    except ValueError:
        raise ValueError("accepted: a ratio like 1:1 or 1:2") from None
    if not (0 < a < float("inf") and 0 < b < float("inf")):
        raise ValueError("accepted: a ratio of positive finite numbers, e.g. 1:2")
    if not RATIO_RANGE[0] <= b / a <= RATIO_RANGE[1]:
        raise ValueError(f"accepted: 1:x with x in {RATIO_RANGE[0]:g}..{RATIO_RANGE[1]:g} (bandwidth per FLOP "
                         "relative to the base design)")
    return b / a


RATIO_RANGE = (1e-3, 1e3)  # a candidate's bandwidth per FLOP within 1000x of the base's either way
#: an absolute ridge point, FLOP/byte: shipping chips sit at 10-600 (hardware.csv: V100 139, H100 295, TPU v4 229,
#: Wormhole n150 257); 0.1 and 10,000 are 100x past either end (1e-6 built a design of 672 M DRAM stacks)
RIDGE_RANGE = (0.1, 1e4)


Hold = Literal["compute", "area", "score"]


class Candidate(Strict):
    """One design of a comparison: a compute:bandwidth ratio relative to the base (``ratio: "1:2"`` = twice
    the base's bandwidth per FLOP), or absolute values (any of the three knobs and/or hardware ``fields``;
    what is not given keeps the base's value)."""

    name: str = Field(min_length=1, description="Label in tables and charts")
    ratio: str | None = Field(None, description="1:x relative to the base design, e.g. '1:2'")
    ridge: float | None = Field(None, description="Instead of ratio: the absolute ridge point, FLOP/byte "
                                "(peak compute / DRAM bandwidth), e.g. 42")
    hold: Hold | None = Field(None, description="Ratio candidates: what stays fixed (default: the section's hold); "
                              "score = the smallest design at the first candidate's score")
    reinvest: float | None = Field(None, description="Ratio candidates: fraction in [0, 1] of the die area saved at "
                                   "fixed compute (vs the first candidate) put back into compute at the same ratio")
    area_of: str | None = Field(None, min_length=1, description="Ratio candidates: fill the die area of this "
                                "earlier candidate instead of the base's (implies hold: area)")
    peak_tflops: float | None = Field(None, gt=0, description=KNOB["peak_tflops"].description)
    dram_bandwidth_tbps: float | None = Field(None, gt=0, description=KNOB["dram_bandwidth_tbps"].description)
    sram_mib: float | None = Field(None, gt=0, description=KNOB["sram_mib"].description)
    fields: dict[str, float | str] = Field(default_factory=dict, description="Other hardware fields, e.g. "
                                           "{memory.local.capacity_mib: 24} (see `DesignBatch.with_field`), or the "
                                           "main memory's DRAM part by name ({memory.hbm.generation: hbm4})")

    @field_validator("ratio", mode="before")
    @classmethod
    def _ratio(cls, v: object) -> object:
        if isinstance(v, int | float) and not isinstance(v, bool):
            raise ValueError("YAML reads an unquoted a:b as a base-60 number; accepted: a quoted ratio, e.g. '1:2'")
        if v is not None:
            parse_ratio(str(v))
        return v

    @field_validator("ridge", mode="before")
    @classmethod
    def _ridge(cls, v: object) -> object:
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)
                              or not RIDGE_RANGE[0] <= v <= RIDGE_RANGE[1]):
            raise ValueError(f"accepted: a ridge point from {RIDGE_RANGE[0]:g} to {RIDGE_RANGE[1]:g} FLOP/byte, e.g. 42")
        return v

    @field_validator("reinvest", mode="before")
    @classmethod
    def _reinvest(cls, v: object) -> object:
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 1):
            raise ValueError("accepted: a fraction in [0, 1] of the saved area put into compute")
        return v

    @field_validator("fields")
    @classmethod
    def _physical_fields(cls, v: dict[str, float | str]) -> dict[str, float | str]:
        for name, value in v.items():
            if is_part_field(name) or isinstance(value, str):
                if not (is_part_field(name) and value in searchable_names()):
                    raise ValueError(f"fields.{name} = {value!r}; accepted: "
                                     + (f"a DRAM part ({', '.join(searchable_names())})" if is_part_field(name)
                                        else "a number"))
                continue
            if not in_domain(name, value):
                raise ValueError(f"fields.{name} = {value}; accepted: a number {domain_text(name)}"
                                 + ("" if zero_ok(name) else " (every hardware field but compute.spare_cores is "
                                                             "positive)"))
            if name.endswith("efficiency") and value > 1:
                raise ValueError(f"fields.{name} = {value}; accepted: an efficiency in (0, 1]")
        return v

    @model_validator(mode="after")
    def _ratio_or_absolute(self) -> Candidate:
        knobs = [k for k in KNOBS if getattr(self, k) is not None]
        accepted = (f"accepted: either ratio (e.g. '1:2') or absolute values ({', '.join(KNOBS)} "
                    "and/or fields)")
        if self.ratio is not None and self.ridge is not None:
            raise ValueError(f"candidate {self.name!r} gives both ratio and ridge; accepted: one of them")
        rel = self.ratio if self.ridge is None else self.ridge
        if rel is None and not knobs and not self.fields:
            raise ValueError(f"candidate {self.name!r} gives neither a ratio nor any value; {accepted}")
        if rel is not None and knobs:
            what = "ratio" if self.ridge is None else "ridge"
            raise ValueError(f"candidate {self.name!r} gives both {what} and {', '.join(knobs)}; {accepted}, not both")
        if rel is None and (self.hold is not None or self.area_of is not None or self.reinvest is not None):
            raise ValueError(f"candidate {self.name!r}: hold, area_of and reinvest apply to ratio candidates only; "
                             "accepted: drop them or give a ratio")
        if self.area_of is not None and self.hold in ("compute", "score"):
            raise ValueError(f"candidate {self.name!r}: area_of holds an area; accepted: hold: area or no hold")
        if self.reinvest is not None and (self.hold is not None or self.area_of is not None):
            raise ValueError(f"candidate {self.name!r}: reinvest sets its own area; accepted: no hold or area_of "
                             "with reinvest")
        return self

    @property
    def relative(self) -> bool:
        """A ratio (or ridge) candidate, built relative to the base design."""
        return self.ratio is not None or self.ridge is not None

    @property
    def knobs(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in KNOBS if getattr(self, k) is not None}


class Compare(Strict):
    """Named candidates side by side (``dse compare``): the first is the reference of the speedups."""

    hold: Hold = Field("compute", description="Ratio candidates: keep the base's peak compute, its die area, or "
                       "(score) the first candidate's score at the smallest area")
    candidates: list[Candidate] = Field(min_length=2, description="Two or more; ratio or absolute")
    samples: int = Field(256, ge=0, le=100_000, description="Monte Carlo samples of the robustness analysis "
                         "(dse.robustness; 0: none)")
    seed: int = Field(0, ge=0, description="Seed of the Monte Carlo samples")

    @model_validator(mode="after")
    def _unique(self) -> Compare:
        names = [c.name for c in self.candidates]
        if len(set(names)) != len(names):
            raise ValueError(f"candidate names repeat: {names}; accepted: distinct names")
        for i, c in enumerate(self.candidates):
            if c.area_of is not None and c.area_of not in names[:i]:
                raise ValueError(f"candidate {c.name!r}: area_of {c.area_of!r}; accepted: the name of an earlier "
                                 f"candidate ({', '.join(names[:i]) or 'none'})")
        return self


#: what-if transforms: name -> what its value is (None: a switch, written as a bare name)
TRANSFORMS: dict[str, str | None] = {
    "fuse_elementwise": None, "flash_attention": None, "winograd": None,
    "dtype": "a dtype", "weight_dtype": "a dtype", "kv_dtype": "a dtype", "sram_mib": "MiB > 0",
    "dram_part": "a DRAM part", "window": "an attention window", "op_boundaries": "a runtime",
    "keeps": "a residency",
}
TRANSFORMS_ACCEPTED = ("fuse_elementwise, flash_attention, winograd (bare names); dtype, weight_dtype, kv_dtype "
                       f"({'|'.join(get_args(Dtype))}); sram_mib (MiB > 0); dram_part "
                       f"({'|'.join(searchable_names())}); window ({{tokens: N, global_every: N, kind: sliding|chunked}} "
                       "or none); op_boundaries (overlapped|serial); keeps (tiles|step|steps: what the outermost "
                       "on-chip SRAM keeps between operators, or {LEVEL: tiles|step|steps}); a stage may also set "
                       "label")


def _residency_value(value: Any) -> bool:
    """Whether a what-if ``keeps`` value is one: ``tiles``, ``step`` or ``steps``, or a one-entry mapping of a level
    name to one of them."""
    if isinstance(value, dict):
        return len(value) == 1 and all(isinstance(k, str) and v in get_args(Keeps) for k, v in value.items())
    return value in get_args(Keeps)


def _stage(item: Any) -> dict[str, Any]:
    """One what-if stage -> ``{"label": str, transform: value, ...}``: a bare transform name, or a mapping
    of one or more transforms (``{weight_dtype: int8}``, ``{dtype: fp8, label: "fp8 everywhere"}``)."""
    if isinstance(item, str):
        if TRANSFORMS.get(item, "x") is not None:
            hint = " (give it a value: {" + item + ": ...})" if item in TRANSFORMS else ""
            raise ValueError(f"got {item!r}, an unknown transform{hint}; accepted: {TRANSFORMS_ACCEPTED}")
        return {"label": item, item: True}
    if not isinstance(item, dict) or not item:
        raise ValueError(f"accepted: a transform name or a mapping; transforms: {TRANSFORMS_ACCEPTED}")
    out: dict[str, Any] = {}
    for key, value in item.items():
        if key == "label":
            continue
        if key not in TRANSFORMS:
            raise ValueError(f"got {item!r} ({key!r}: an unknown transform); accepted: {TRANSFORMS_ACCEPTED}")
        kind = TRANSFORMS[key]
        if kind is None and value is not True:
            raise ValueError(f"got {item!r} ({key} {value!r}); accepted: {key}: true (or the bare name {key})")
        if kind == "a dtype" and value not in get_args(Dtype):
            raise ValueError(f"got {item!r} ({key} {value!r}); accepted: {key}: {', '.join(get_args(Dtype))}")
        if kind == "MiB > 0" and not (isinstance(value, int | float) and not isinstance(value, bool) and value > 0):
            raise ValueError(f"got {item!r} ({key} {value!r}); accepted: {key}: a number of MiB > 0")
        if kind == "a DRAM part" and value not in searchable_names():
            raise ValueError(f"got {item!r} ({key} {value!r}); accepted: {key}: {', '.join(searchable_names())}")
        if kind == "a residency" and not _residency_value(value):
            raise ValueError(f"got {item!r} ({key} {value!r}); accepted: {key}: tiles (an operator's tiles only), step "
                             "(also the activations between one step's operators) or steps (also the weights and KV "
                             "cache that fit, across steps), for the outermost on-chip SRAM, or {LEVEL: one of them} "
                             "for a named on-chip level")
        if kind == "a runtime" and value not in ("overlapped", "serial"):
            raise ValueError(f"got {item!r} ({key} {value!r}); accepted: {key}: overlapped (one compiled graph) or "
                             "serial (a program per operator)")
        if kind == "an attention window":
            value = _window(item, value)
        out[key] = value
    if not out:
        raise ValueError(f"a stage without a transform; accepted: {TRANSFORMS_ACCEPTED}")
    label = item.get("label") or ", ".join(k if v is True else f"{k} {_value_text(v)}" for k, v in out.items())
    return {"label": str(label), **out}


def _window(item: Any, value: Any) -> dict[str, Any] | None:
    """A what-if stage's ``window``: ``none`` (every layer attends to all keys) or the fields of an attention window
    (``dse.workloads.transformer.AttentionWindow``: tokens, global_every, kind), as a plain mapping."""
    if value is None or value == "none":
        return None
    try:
        return AttentionWindow.model_validate(value).model_dump()
    except ValidationError:
        raise ValueError(f"got {item!r} (window {value!r}); accepted: window: none or {{tokens: N > 0, global_every: "
                         "N >= 0 (0: every layer local), kind: sliding|chunked}") from None


def _value_text(v: Any) -> str:
    """A stage value in its label: a window as ``4096 sliding, every 4th layer global``; others as written."""
    if isinstance(v, dict) and "tokens" in v:
        every = f", every {v['global_every']}th layer global" if v.get("global_every") else ", every layer local"
        return f"{v['tokens']} {v.get('kind', 'sliding')}{every}"
    return "none" if v is None else str(v)


class GemmOp(Strict):
    """One GEMM: ``batch`` products [M, K] x [K, N] (A activations at ``dtype``, B weights)."""

    kind: Literal["gemm"]
    M: int = Field(gt=0)
    N: int = Field(gt=0)
    K: int = Field(gt=0)
    batch: int = Field(1, gt=0)
    dtype: Dtype = "bf16"
    weight_dtype: Dtype | None = None


class AttentionOp(Strict):
    """Scaled dot-product attention of one layer (grouped-query aware), unfused unless a stage fuses it."""

    kind: Literal["attention"]
    batch: int = Field(1, gt=0)
    heads: int = Field(gt=0)
    kv_heads: int | None = Field(None, gt=0, description="Default: heads (multi-head attention)")
    q_len: int = Field(gt=0, description="Query tokens")
    kv_len: int | None = Field(None, gt=0, description="Key/value tokens (default: q_len)")
    head_dim: int = Field(128, gt=0)
    causal: bool = True
    dtype: Dtype = "bf16"
    kv_dtype: Dtype | None = None


class ConvOp(Strict):
    """One 2-D convolution on a square image (same padding)."""

    kind: Literal["conv"]
    batch: int = Field(1, gt=0)
    resolution: int = Field(gt=0, description="Input height = width, pixels")
    c_in: int = Field(gt=0)
    c_out: int = Field(gt=0)
    k: int = Field(3, gt=0, description="Kernel side")
    stride: int = Field(1, gt=0)
    groups: int = Field(1, gt=0)
    dtype: Dtype = "bf16"


class WhatIf(Strict):
    """Staged optimisations of one workload or operator on one design (``dse whatif``); each stage applies
    its transforms on top of the previous stages."""

    workload: WorkloadEntry | None = Field(None, description="A library model at a scenario (one, no suite)")
    operator: Annotated[GemmOp | AttentionOp | ConvOp, Field(discriminator="kind")] | None = Field(
        None, description="Or one operator: kind gemm | attention | conv")
    hardware: str | None = Field(None, description="Template name or YAML path (default: the study's base)")
    stages: list[Annotated[Any, AfterValidator(_stage)]] = Field(min_length=1, description="Transforms, in order")

    @model_validator(mode="after")
    def _one_subject(self) -> WhatIf:
        if (self.workload is None) == (self.operator is None):
            raise ValueError("give exactly one of workload (a library model) or operator (gemm, attention, conv)")
        if self.workload is not None and self.workload.suite is not None:
            raise ValueError("a what-if takes one model; accepted: workload: {name: MODEL, ...}, not a suite")
        if self.workload is not None and (self.workload.plan is not None or self.workload.auto_plan):
            raise ValueError("@workload.plan@got a plan; accepted: none (a what-if runs its stages on one chip; "
                             "dse predict --chips/--tp/--pp/--dp predicts a planned workload)")
        return self


class WhatIfFile(WhatIf):
    """A what-if of its own (``dse whatif FILE``): a name, the hardware, the subject and the stages."""

    name: str = Field(pattern=NAME_PATTERN, description="Results folder name (letters, digits, _ . -; <= 64)")
    description: str = ""
    hardware: str = Field(min_length=1, description="Template name or YAML path (relative to this file)")
    output: Output = Output()


class StudyConfig(Strict):
    """A study: a base design, a workload mix, a search, and where results go."""

    name: str = Field(pattern=NAME_PATTERN, description="Study name (folder and optuna study): letters, digits, "
                      "_ . - (not first), <= 64 characters")
    description: str = ""
    base: str | None = Field(None, min_length=1, description="Hardware template name or YAML path (relative to this "
                                                            "file); default: the system's chip")
    system: str | None = Field(None, min_length=1, description="Multi-chip system template (hw_templates/systems/) or "
                                                              "YAML path: the base chip on its network; default: the "
                                                              "chip's shipped system when a workload has a plan")
    workloads: list[WorkloadEntry] | None = Field(None, min_length=1, description="One mix")
    mixes: dict[str, list[WorkloadEntry]] | None = Field(
        None, description="Several named mixes: one search per mix, then a best-ratio table across them")
    search: Search
    compare: Compare | None = Field(None, description="Candidates for `dse compare` (ratio or absolute)")
    whatif: WhatIf | None = Field(None, description="Staged optimisations for `dse whatif` (on the base design)")
    output: Output = Output()

    @model_validator(mode="after")
    def _one_kind_of_mix(self) -> StudyConfig:
        if self.base is None and self.system is None:
            raise ValueError("give base (a chip template) or system (a multi-chip system template)")
        if (self.workloads is None) == (self.mixes is None):
            raise ValueError("give exactly one of workloads (one mix) or mixes (several named mixes)")
        if self.mixes is not None:
            if not self.mixes:
                raise ValueError("mixes is empty; accepted: a mapping of mix name to a list of workloads")
            for mix, entries in self.mixes.items():
                if not entries:
                    raise ValueError(f"@mixes.{mix}@got []; accepted: a list of at least 1 workload")
                if not mix.replace("-", "").replace("_", "").isalnum():
                    raise ValueError(f"@mixes@got mix name {mix!r}; accepted: letters, digits, - and _")
        return self

    @property
    def mix_names(self) -> list[str]:
        return list(self.mixes) if self.mixes else []

    def for_mix(self, mix: str) -> StudyConfig:
        """This config narrowed to one named mix (study name ``<name>.<mix>``)."""
        if not self.mixes or mix not in self.mixes:
            raise ValueError(f"unknown mix {mix!r}; accepted: {', '.join(self.mix_names)}")
        return self.model_copy(update={"name": f"{self.name}.{mix}", "workloads": self.mixes[mix], "mixes": None})


def refuse_template(data: dict, file: str | None) -> None:
    """A hardware template (``compute`` and ``memory``, no ``search``) given where a study config is expected is one
    line saying so, not the study schema's list of missing fields."""
    if {"compute", "memory"} <= set(data) and not {"search", "workloads", "mixes"} & set(data):
        raise DseError("got a hardware template (keys compute, memory); accepted: a study config (name, base or "
                       "system, workloads or mixes, search); a template is named by a study's base: (shipped ones "
                       "live in hw_templates/)", file=file)


def config_label(config: Any) -> str:
    """How errors name a config: its path, a ``dse.Study``'s source file, or ``<mapping>`` for a dict."""
    if isinstance(config, str | Path):
        return str(config)
    source = getattr(config, "source", None)
    return str(source) if source else "<mapping>"


def load_study(path: str | Path | Mapping[str, Any] | Any) -> tuple[StudyConfig, Path]:
    """Load and validate a study config; returns it with the config's folder (to resolve paths). ``path`` is a YAML
    file, a mapping of the same keys (its paths resolve against the working folder) or a ``dse.Study`` (its data
    and overrides; its paths against its source file's folder)."""
    label = config_label(path)
    if isinstance(path, str | Path):
        path = Path(path)
        data, folder = load_yaml(path), path.parent
    elif isinstance(path, Mapping):
        data, folder = dict(path), Path.cwd()
    elif isinstance(getattr(path, "data", None), Mapping):  # a dse.Study (duck-typed: dse.batch is layers above)
        data = dict(path.data)
        folder = Path(path.source).parent if getattr(path, "source", None) else Path.cwd()
    else:
        raise DseError(f"got {type(path).__name__}; accepted: a config path, a mapping or a dse.Study", field="config")
    if not isinstance(data, dict):
        raise DseError(f"got {'an empty file' if data is None else type(data).__name__}; accepted: a mapping with keys "
                       "name, base, workloads, search", file=label)
    refuse_template(data, label)
    try:
        cfg = StudyConfig.model_validate(data)
    except ValidationError as exc:
        raise from_validation_error(exc, file=label, model=StudyConfig) from None
    return cfg, folder
