"""Parallelism plans: one chip's share of a workload, its collectives, and its memory footprint.

A :class:`Plan` splits a workload over ``chips = tp * pp * dp`` chips (Megatron-LM's 3D parallelism,
Shoeybi et al. 2019; Narayanan et al., SC 2021), with expert parallelism ``ep`` borrowed from the
data-parallel and tensor-parallel ranks for MoE layers (Lepikhin et al., GShard 2021). Ranks are
numbered tensor-parallel first, then data-parallel, then pipeline (Megatron's ``tp-ep-dp-pp`` order),
so a TP group is ``tp`` consecutive chips (inside one node when ``tp`` <= chips per node).

One chip's operator table is the model rebuilt with its shard of the weights (transformers: heads,
KV heads, FFN width and vocabulary / ``tp``; layers / ``pp``, rounded up, the slowest stage; experts
/ ``ep``) at one micro-batch of ``batch / (dp * microbatches)`` sequences, repeated ``microbatches``
times, plus collective rows:

* TP (Megatron, Shoeybi et al. 2019, Sec. 3): two all-reduces of the layer's activations
  (``tokens x hidden``) per layer in the forward pass, two more in the backward pass, one for the
  vocabulary-parallel embedding; with sequence parallelism (Korthikanti et al. 2022) each becomes a
  reduce-scatter + all-gather of the same total bytes, and the norms, dropouts and residual adds
  run on ``1/tp`` of the tokens (:func:`sequence_shard`). Full recomputation repeats the forward
  all-reduces.
* PP: one point-to-point send of the activations per micro-batch and model chunk (and one of their
  gradients in training), ``1/tp`` of them per rank with the scatter/gather optimisation (Narayanan
  et al. 2021, Sec. 4.1). Step time = ``(1 + (pp - 1) / (v m))`` x the work of ``m`` micro-batches
  (the 1F1B bubble, Sec. 2.2; ``v`` = ``interleave`` model chunks per rank, Sec. 2.2.2).
* EP: two all-to-alls per MoE layer (dispatch and combine, ``tokens x top-k x hidden``), doubled in
  training.
* DP (training): an all-reduce of the gradients (ZeRO-1/2: reduce-scatter + all-gather, the same
  bytes; ZeRO-3 adds an all-gather of the parameters in forward and backward; Rajbhandari et al.,
  SC 2020), in ``bucket_mb`` buckets overlapped with the backward pass by default except the last
  bucket, which starts when the backward pass ends (Li et al., PyTorch Distributed, VLDB 2020).

Only the transformer family has tensor, pipeline and expert sharding; every family has data
parallelism.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from dse.errors import DseError
from dse.limits import MAX_CHIPS
from dse.strict import Strict
from dse.units import DTYPE_BYTES
from dse.workloads import ops
from dse.workloads.scenario import Scenario
from dse.workloads.training import scenario_grad_dtype, state_bytes_per_param

GROUPS = ("tp", "pp", "dp", "ep")


class Overlap(Strict):
    """What share of each collective kind's time may hide behind computation: a fraction in [0, 1], or
    true (1) / false (0). With fractions ``f_i`` over collectives of time ``T_i`` and computation ``W``::

        exposed = sum_i (1 - f_i) T_i + max(0, sum_i f_i T_i - W)

    A partial value is what a framework's overlap achieves when only part of a collective can start before
    its consumer needs it, e.g. Megatron's TP communication overlap (TransformerEngine userbuffers) splits a
    GEMM into chunks and hides all but the first chunk's all-gather (Wang et al., 'Overlap communication
    with dependent computation via decomposition', ASPLOS 2023: hides most, not all, of it)."""

    tp: float | bool = Field(0.0, description="Share of TP collectives hidden behind compute (0..1 or true/false)")
    pp: float | bool = Field(0.0, description="Share of PP sends hidden behind compute (0..1 or true/false)")
    dp: float | bool = Field(1.0, description="Share of the gradient all-reduce (and FSDP gathers) hidden behind "
                             "the backward pass (DDP buckets; 0..1 or true/false)")
    ep: float | bool = Field(0.0, description="Share of MoE all-to-alls hidden behind compute (0..1 or true/false)")

    @field_validator("tp", "pp", "dp", "ep")
    @classmethod
    def _fraction(cls, v: float | bool) -> float:
        if not 0.0 <= float(v) <= 1.0:
            raise ValueError(f"got {v}; accepted: a fraction from 0 to 1, or true/false")
        return float(v)


class Plan(Strict):
    """How one workload is split over chips. Degrees multiply to ``chips``."""

    chips: int | None = Field(None, gt=0, le=MAX_CHIPS, description="Default: tp * pp * dp")
    tp: int = Field(1, gt=0, le=MAX_CHIPS, description="Tensor parallel degree")
    pp: int = Field(1, gt=0, le=MAX_CHIPS, description="Pipeline parallel degree (stages)")
    dp: int = Field(1, gt=0, le=MAX_CHIPS, description="Data parallel degree (replicas)")
    ep: int = Field(1, gt=0, le=MAX_CHIPS, description="Expert parallel degree (MoE; divides dp * tp)")
    sp: bool = Field(False, description="Sequence parallelism with TP (norms/dropout split over tp)")
    microbatches: int | None = Field(None, gt=0, description="Micro-batches per step (default: pp)")
    interleave: int = Field(1, gt=0, description="Virtual pipeline stages per rank (Megatron's interleaved 1F1B; "
                            "divides the layers per stage)")
    first_stage_layers: int | None = Field(None, gt=0, description="Layers on the first pipeline stage (the one with "
                                           "the embedding; Megatron --decoder-first-pipeline-num-layers)")
    last_stage_layers: int | None = Field(None, gt=0, description="Layers on the last pipeline stage (the one with the "
                                          "LM head and loss; Megatron --decoder-last-pipeline-num-layers)")
    bucket_mb: float = Field(25.0, gt=0, description="Data-parallel gradient bucket, MB (PyTorch DDP bucket_cap_mb "
                             "default 25): the last bucket's all-reduce starts after the backward pass, exposed")
    zero: Literal[0, 1, 2, 3] = Field(0, description="ZeRO stage: 1 shards optimizer state, 2 + gradients, 3 + weights")
    tp_per_chip: int = Field(1, gt=0, le=MAX_CHIPS, description="Tensor-parallel ranks on one chip, each on its own core "
                             "(transformers-neuronx and NxD count NeuronCores: TP 24 on the 12 Inferentia2 chips of "
                             "an inf2.48xlarge is tp 12 x tp_per_chip 2): the shards are cut over tp x tp_per_chip "
                             "ranks, each chip holds tp_per_chip of them; the all-reduce is charged over the tp chips")
    pad_heads: bool = Field(False, description="Pad the shards to the TP ranks as transformers-neuronx does: query "
                            "heads and the FFN width rounded up to a multiple of the ranks, KV heads replicated up "
                            "to one per rank, or padded with the query heads without GQA (utils.round_up_to_divisor, "
                            "utils.get_qkv_padding; dse.workloads.parallel.padded_heads); the padding runs")
    recompute: Literal["none", "minimal", "selective", "full"] = Field(
        "none", description="Activation recomputation (training; dse.workloads.training): none, minimal (MaxText's: "
        "save the weight matmuls' outputs, recompute the attention core and every elementwise op), selective "
        "(Megatron's: recompute the attention core), full (recompute each layer from its input)")
    overlap: Overlap = Field(default_factory=Overlap)
    fsdp: int | None = Field(None, gt=0, le=MAX_CHIPS,
                             description="Fully sharded data parallel degree (PyTorch FSDP FULL_SHARD, "
                             "MaxText's fsdp axis): data parallelism over fsdp chips with parameters, gradients and "
                             "optimizer state sharded, i.e. dp = fsdp with ZeRO-3 (Zhao et al., VLDB 2023); with dp a "
                             "multiple of fsdp, hybrid sharding (PyTorch HYBRID_SHARD): sharded within each group of "
                             "fsdp chips, dp / fsdp replicas of it whose gradient shards are all-reduced")

    @model_validator(mode="before")
    @classmethod
    def _fsdp(cls, data: Any) -> Any:
        """``fsdp: N`` is ``dp: N, zero: 3``; ``dp: k x N`` with it is hybrid sharding (k replicas of an N-chip
        shard group); a dp that is not a multiple of fsdp, or another ZeRO stage, is refused."""
        if not isinstance(data, dict) or data.get("fsdp") is None:
            return data
        n = data["fsdp"]
        dp = data.get("dp", n)
        if isinstance(n, int) and not isinstance(n, bool) and n < 2:
            raise ValueError(f"@fsdp@got {n}; accepted: an integer >= 2 (fsdp shards over a group of fsdp chips; one "
                             "chip shards nothing)")
        if isinstance(n, int) and isinstance(dp, int) and n > 0 and dp % n:
            fits = ", ".join(str(n * k) for k in (1, 2, 4, 8))
            groups = ", ".join(str(k) for k in range(2, dp + 1) if dp % k == 0)
            raise ValueError(f"@dp@got dp = {dp} with fsdp = {n}; accepted: an fsdp dividing dp ({groups}: fsdp shards "
                             f"within a group of fsdp chips, dp / fsdp replicas of the group), or a dp that is a "
                             f"multiple of fsdp ({fits}, ...) or unset")
        if data.get("zero", 3) != 3:
            raise ValueError(f"@zero@got zero = {data['zero']} with fsdp = {n}; accepted: zero 3 or unset (fsdp shards "
                             "parameters, gradients and optimizer state)")
        return {**data, "dp": dp, "zero": 3}

    @model_validator(mode="after")
    def _degrees_their_fields_need(self) -> Plan:
        """A field that acts over a group of ranks, given where the group has one rank, would do nothing: ZeRO (or an
        fsdp group) over dp = 1, sequence parallelism over tp = 1, uneven first/last stages with pp = 1. Refused
        rather than dropped (``zero: 2`` on tp8 printed ``tp8 zero2`` for a plan with nothing to shard)."""
        if self.zero and self.shards == 1:
            raise ValueError(f"@zero@got {self.zero} with dp = 1; accepted: 0 (ZeRO shards optimizer state, gradients "
                             "and weights over the data-parallel ranks: dp > 1)")
        if self.pad_heads and self.ranks == 1:
            raise ValueError("@pad_heads@got true with one tensor-parallel rank; accepted: false (padding rounds the "
                             "shards up to a multiple of tp x tp_per_chip > 1 ranks)")
        if self.sp and self.tp == 1:
            raise ValueError("@sp@got true with tp = 1; accepted: false (sequence parallelism splits norms and "
                             "dropout over the tensor-parallel ranks: tp > 1)")
        for key in ("first_stage_layers", "last_stage_layers"):
            if getattr(self, key) is not None and self.pp == 1:
                raise ValueError(f"@{key}@got {getattr(self, key)} with pp = 1; accepted: unset (pipeline stages: "
                                 "pp > 1)")
        if "bucket_mb" in self.model_fields_set and self.dp == 1:  # printed 'tp8 bucket100MB' and changed nothing
            raise ValueError(f"@bucket_mb@got {self.bucket_mb:g} with dp = 1; accepted: unset (the data-parallel "
                             "gradient bucket: dp > 1)")
        return self

    @model_validator(mode="after")
    def _product(self) -> Plan:
        prod = self.tp * self.pp * self.dp
        if self.chips is not None and prod != self.chips:
            rest, left = divmod(self.chips, self.tp * self.pp)
            hint = ""
            if not left and self.fsdp:  # say the data-parallel size the chips leave and the groups that divide it
                fits = ", ".join(str(k) for k in range(2, rest + 1) if rest % k == 0)
                hint = (f" (here dp = {rest}: fsdp {rest}, or for hybrid sharding fsdp dividing {rest} ({fits}) "
                        f"with dp: {rest})")
            elif not left:
                hint = f" (here dp = {rest} with tp {self.tp} x pp {self.pp} on {self.chips} chips)"
            raise ValueError(f"tp x pp x dp = {self.tp} x {self.pp} x {self.dp} = {prod}, but chips = {self.chips}; "
                             f"accepted: degrees whose product is the chip count{hint}")
        if self.ep > 1 and self.dp % self.ep:  # expert-parallel ranks are data-parallel ranks (stride tp, below)
            fits = ", ".join(str(k) for k in range(2, self.dp + 1) if self.dp % k == 0) or "none: dp = 1"
            raise ValueError(f"got ep = {self.ep}, which does not divide dp = {self.dp}; accepted: an ep dividing dp "
                             f"({fits}): the experts are split over data-parallel ranks, within each tp position")
        return self

    @property
    def n_chips(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def ranks(self) -> int:
        """Tensor-parallel ranks the shards are cut for: ``tp x tp_per_chip``."""
        return self.tp * self.tp_per_chip

    @property
    def shards(self) -> int:
        """Data-parallel ranks that share one copy of the sharded state (ZeRO / fsdp): fsdp, else dp."""
        return self.fsdp or self.dp

    @property
    def replicas(self) -> int:
        """Copies of a hybrid-sharded group (dp / fsdp; 1 without hybrid sharding)."""
        return self.dp // self.shards

    @property
    def hybrid(self) -> bool:
        return self.replicas > 1

    @property
    def m(self) -> int:
        """Micro-batches per step."""
        return self.microbatches or self.pp

    @property
    def trivial(self) -> bool:
        return self.n_chips == 1 and self.ep == 1 and self.tp_per_chip == 1

    def stride(self, group: str) -> int:
        """Chip-number distance between neighbours of a group (tp innermost, then dp/ep, then pp)."""
        return {"tp": 1, "ep": self.tp, "dp": self.tp, "fsdp": self.tp, "replicas": self.tp * self.shards,
                "pp": self.tp * self.dp}[group]

    def bubble_scale(self) -> float:
        """``1 + (pp - 1) / (v * m)``: the pipeline's fill-and-drain factor on micro-batch work.

        1F1B bubble fraction (pp - 1) / m; the interleaved schedule with ``v`` model chunks per rank
        cuts it to (pp - 1) / (v * m) (Narayanan et al., SC 2021, Sec. 2.2.2)."""
        return 1.0 + (self.pp - 1) / (self.interleave * self.m)

    def label(self) -> str:
        """Every field set away from its default, e.g. ``tp4 fsdp8 sp mb16 rc:minimal`` (``1 chip`` for none):
        the degrees, sequence parallelism, micro-batches (when not pp), interleave, ZeRO stage (implied by fsdp),
        recomputation, uneven first/last pipeline stages, the gradient bucket and the overlap switches."""
        # ZeRO-3 over the data-parallel ranks is fully sharded data parallelism whether asked as fsdp or as dp with
        # zero 3: one label for one plan ('dp16 zero3' and 'fsdp16' were the same prediction under two names)
        sharded = bool(self.fsdp) or self.zero == 3
        bits = [(f"fsdp{self.shards}" + (f" x{self.replicas}" if self.hybrid else "") if g == "dp" and sharded
                 else f"{g}{getattr(self, g)}") for g in GROUPS if getattr(self, g) > 1]
        bits += [f"x{self.tp_per_chip}/chip"] if self.tp_per_chip > 1 else []
        bits += ["padheads"] if self.pad_heads else []
        bits += ["sp"] if self.sp and self.tp > 1 else []
        bits += [f"mb{self.m}"] if self.microbatches is not None and self.microbatches != self.pp else []
        bits += [f"v{self.interleave}"] if self.interleave > 1 else []
        bits += [f"zero{self.zero}"] if self.zero and not (sharded and self.dp > 1) else []
        bits += [f"rc:{self.recompute}"] if self.recompute != "none" else []
        bits += [f"first{self.first_stage_layers}"] if self.first_stage_layers is not None else []
        bits += [f"last{self.last_stage_layers}"] if self.last_stage_layers is not None else []
        bits += [f"bucket{self.bucket_mb:g}MB"] if self.bucket_mb != 25.0 else []
        default = Overlap()
        changed = [f"{k}{'+' if v == 1 else '-' if v == 0 else f'{v:g}'}" for k, v in self.overlap.model_dump().items()
                   if v != getattr(default, k) and getattr(self, k) > 1]  # an overlap of a group of 1 acts on nothing
        bits += [f"overlap:{','.join(changed)}"] if changed else []
        return " ".join(bits) or "1 chip"


def shard_transformer(arch: Any, plan: Plan, name: str) -> Any:
    """The per-chip architecture: heads, KV heads, FFN, vocabulary / tp; layers / pp; experts / ep. With
    ``tp_per_chip`` k the shards are cut over ``tp x k`` ranks and a chip holds k of them; with ``pad_heads`` they
    are padded as :func:`padded_heads` says instead of refusing a degree that does not divide them."""
    pp, ep = plan.pp, plan.ep
    R, k = plan.ranks, plan.tp_per_chip
    H = arch.heads
    Hkv = arch.kv_heads or H
    d = arch.head_dim or arch.hidden // H
    if plan.pad_heads:
        q_rank, kv_rank = padded_heads(H, Hkv, R)
        ffn_rank = math.ceil(arch.ffn / R)
    else:
        check_divides(arch, R, name, f"tp = {R}" if k == 1 else f"tp x tp_per_chip = {plan.tp} x {k} = {R}")
        q_rank, kv_rank, ffn_rank = H // R, max(1, Hkv // R), arch.ffn // R
    if pp > arch.layers:
        raise ValueError(f"{name}: got pp = {pp}; accepted: at most its {arch.layers} layers")
    check_interleave(arch.layers, plan)
    upd: dict[str, Any] = {"heads": q_rank * k, "kv_heads": kv_rank * k, "head_dim": d, "ffn": ffn_rank * k,
                           "vocab": math.ceil(arch.vocab / R) * k, "layers": max(stage_layers(arch.layers, plan))}
    if arch.moe is not None:
        m = arch.moe
        if m.experts % ep:
            raise ValueError(f"{name}: got ep = {ep}; accepted: a divisor of its {m.experts} experts")
        if m.expert_ffn % R and not plan.pad_heads:
            raise ValueError(f"{name}: got tp = {R}, which does not divide its expert FFN width {m.expert_ffn}; "
                             f"accepted: a divisor of {m.expert_ffn}, or pad_heads (--pad-heads)")
        # each rank holds experts / ep experts and receives its share of every rank's routed tokens: T x active
        # token-expert pairs per rank whatever ep (top-k stays k; a copy, not validated: k may exceed the experts held)
        upd["moe"] = m.model_copy(update={"experts": m.experts // ep, "active": m.active,
                                          "expert_ffn": math.ceil(m.expert_ffn / R) * k,
                                          "dense_layers": m.dense_layers if pp == 1 else 0})
    elif ep > 1:
        raise ValueError(f"{name} has no experts; accepted: ep = 1")
    return arch.model_copy(update=upd)


def check_divides(arch: Any, ranks: int, name: str, got: str) -> None:
    """Refuse a TP degree (``ranks``, written ``got``) that does not divide the heads, KV heads (or is not a multiple
    of them) and FFN width: one line naming what would fit."""
    H, Hkv, tp = arch.heads, arch.kv_heads or arch.heads, ranks
    if H % tp:
        divisors = ", ".join(str(k) for k in range(1, H + 1) if H % k == 0)
        raise ValueError(f"{name}: got {got} ({H} attention heads are not divisible by it; chips given alone are "
                         f"tensor parallel); accepted: a tp dividing {H} ({divisors}), dp/pp for the other chips, or "
                         "pad_heads (--pad-heads) as transformers-neuronx pads them")
    if Hkv % tp and tp % Hkv:
        raise ValueError(f"{name}: got {got} with {Hkv} KV heads; accepted: a tp that divides {Hkv} or a multiple "
                         "of it, or pad_heads (--pad-heads)")
    if arch.ffn % tp:
        raise ValueError(f"{name}: got {got}, which does not divide its FFN width {arch.ffn}; accepted: a divisor "
                         f"of {arch.ffn}, or pad_heads (--pad-heads)")


def padded_heads(heads: int, kv_heads: int, ranks: int) -> tuple[int, int]:
    """(query heads, KV heads) per TP rank when the shards are padded to ``ranks`` as transformers-neuronx pads them
    (aws-neuron/transformers-neuronx@1ade6d7 ``utils.get_qkv_padding``, ``decoder.py``)::

        H_pad = ceil(H / R) x R                                   (round_up_to_divisor: padded query heads run)
        MHA (Hkv = H):     KV_pad = H_pad                           (K and V are padded with Q)
        Hkv divisible by R: KV_pad = Hkv                            (GQA.SHARD_OVER_HEADS)
        otherwise, replicated (GQA.REPLICATED_HEADS), ratio = H / Hkv, or R / Hkv when Hkv < R, R % Hkv = 0 and
        (H % R = 0 or H_pad - H > 0 is a multiple of Hkv), or 1 when H_pad / R = H / Hkv;
                           KV_pad = max(Hkv x ratio, R), H_pad when it reached H

    e.g. Llama 3 8B (32 heads, 8 KV heads) at TP 24: 48 query heads, 24 KV heads: 2 and 1 per rank."""
    R = ranks
    H_pad = math.ceil(heads / R) * R
    if kv_heads == heads:
        kv_pad = H_pad
    elif kv_heads % R == 0:
        kv_pad = kv_heads
    else:
        ratio = heads // kv_heads
        if kv_heads < R and R % kv_heads == 0 and (heads % R == 0 or (H_pad > heads and (H_pad - heads) % kv_heads == 0)):
            ratio = R // kv_heads
        elif H_pad * kv_heads == heads * R:
            ratio = 1
        kv_pad = max(kv_heads * ratio, R)
        kv_pad = H_pad if kv_pad == heads else kv_pad
    return H_pad // R, max(1, math.ceil(kv_pad / R))


#: per-token rows that sequence parallelism splits over the TP ranks (Korthikanti et al. 2022, Sec. 4.2.2:
#: layer norms, dropouts and residual adds run on s/t tokens per rank instead of all s on every rank)
SEQUENCE_ROWS = ("layer.norm1", "layer.norm2", "layer.residual1", "layer.residual2", "layer.dropout1",
                 "layer.dropout2", "final_norm", "embed.position")


def sequence_shard(rows: list[dict[str, Any]], plan: Plan) -> list[dict[str, Any]]:
    """With ``sp`` and ``tp`` > 1, the :data:`SEQUENCE_ROWS` (and their backward) shrink by ``tp``."""
    if not plan.sp or plan.tp == 1:
        return rows
    out = []
    for r in rows:
        if r["reuse"] == "stream" and str(r["name"]).split(".bwd")[0] in SEQUENCE_ROWS:
            r = dict(r)
            r["M"] = math.ceil(r["M"] / plan.tp)
            for k in ("flops", "bytes_read", "bytes_written", "a_bytes", "c_bytes"):
                r[k] = r[k] / plan.tp
        out.append(r)
    return out


#: rows of the last pipeline stage only (final norm, LM head, loss) and of the first only (the embedding)
HEAD_ROWS = ("final_norm", "lm_head", "classifier", "loss.")
EMBED_ROWS = ("embed.", "patch_embed")


def stage_layers(layers: int, plan: Plan) -> tuple[int, int, int]:
    """(first, middle, last) stage layer counts. Default: ``ceil(layers / pp)`` everywhere (the slowest
    stage of an even split); ``first_stage_layers`` / ``last_stage_layers`` fix those stages and the other
    stages share the rest evenly (it must divide), as Megatron-LM's uneven pipeline split does."""
    f, l_ = plan.first_stage_layers, plan.last_stage_layers
    if f is None and l_ is None:
        even = math.ceil(layers / plan.pp)
        return even, even, even
    field = "plan.first_stage_layers" if f is not None else "plan.last_stage_layers"
    if plan.pp == 1:
        raise DseError("got a stage split with pp = 1; accepted: pp > 1", field=field)
    if plan.interleave > 1:
        raise DseError(f"got an uneven split with interleave = {plan.interleave}; accepted: interleave 1", field=field)
    fixed = (f or 0) + (l_ or 0)
    others = plan.pp - (f is not None) - (l_ is not None)
    rest = layers - fixed
    if rest < 0 or (others == 0 and rest) or (others and (rest <= 0 or rest % others)):
        given = ", ".join(f"{k} {v}" for k, v in (("first", f), ("last", l_)) if v is not None)
        raise DseError(f"got {given} of {layers} layers over pp = {plan.pp}; accepted: counts that leave the other "
                       f"{others} stage{'s' if others != 1 else ''} an equal, positive share", field=field)
    mid = rest // others if others else 0
    return (f if f is not None else mid), mid, (l_ if l_ is not None else mid)


def slowest_stage(first: int, middle: int, last: int, pp: int, layer_flops: float, head_flops: float) -> str:
    """The stage that paces the pipeline by FLOPs: ``first``, ``middle`` or ``last`` (the last holds the
    LM head and loss, ``head_flops``; ties go to the last stage)."""
    cost = {"last": last * layer_flops + head_flops, "first": first * layer_flops}
    if pp > 2:
        cost["middle"] = middle * layer_flops
    return max(cost, key=lambda k: (cost[k], k == "last"))


def check_one_chip(plan: Plan) -> None:
    """A one-chip plan keeps only its recomputation policy (the step is modelled whole: no pipeline, no collective),
    so micro-batches, interleaving, a gradient bucket or overlap shares given for it would be dropped without a word:
    one line naming the field instead."""
    if not plan.trivial:
        return
    for key in ("microbatches", "interleave", "bucket_mb"):
        value, off = getattr(plan, key), Plan.model_fields[key].get_default()
        if value not in (off, None) and not (key == "microbatches" and value == 1):
            raise DseError(f"got {value} on 1 chip; accepted: {'unset' if off is None else off} (it acts on a pipeline "
                           "or over data-parallel ranks: a plan of several chips)", field=f"plan.{key}")
    if plan.overlap != Plan.model_fields["overlap"].get_default(call_default_factory=True):
        raise DseError("got overlap shares on 1 chip; accepted: the default (one chip has no collective to hide)",
                       field="plan.overlap")


def check_overlap(plan: Plan) -> None:
    """An overlap share for a collective kind the plan does not run (``tp``, ``pp`` or ``ep`` of 1: no such
    collective) would act on nothing: one line naming it instead of a label that shows it. (``dp`` is hidden by
    default, 1, so its share is not checked.)"""
    for kind in ("tp", "pp", "ep"):
        share = float(getattr(plan.overlap, kind))
        if share > 0 and getattr(plan, kind) == 1:
            raise DseError(f"got overlap {kind} = {share:g} with {kind} = 1; accepted: an overlap share for a collective "
                           f"the plan runs ({kind} > 1)", field=f"plan.overlap.{kind}")


def check_interleave(layers: int, plan: Plan) -> None:
    """Interleaving splits each stage's layers into ``v`` equal model chunks (Megatron-LM requires
    layers divisible by pp x v) and runs the micro-batches in groups of ``pp`` per model chunk, so their number must
    be a multiple of pp (Megatron-core's interleaved 1F1B: a group of micro-batches per virtual stage in
    [pp, m], pp by default, and a remainder of 0 or at least pp, else 'dependency bubbles';
    HabanaAI/Megatron-LM@13c28de megatron/core/pipeline_parallel/schedules.py,
    forward_backward_pipelining_with_interleaving). The bubble ``(pp - 1) / (v m)`` (:meth:`Plan.bubble_scale`,
    Narayanan et al., SC 2021) holds only there: with fewer micro-batches than stages a micro-batch still passes
    the stages one after another. A one-line ``DseError`` naming ``plan.interleave`` otherwise."""
    v = plan.interleave
    if v == 1:
        return
    if plan.pp == 1:
        raise DseError(f"got {v} with pp = 1; accepted: 1 (interleaving needs pipeline stages, pp > 1)",
                       field="plan.interleave")
    if plan.m % plan.pp:
        raise DseError(f"got {v} with {plan.m} micro-batch{'es' if plan.m > 1 else ''} on pp = {plan.pp}; accepted: 1, "
                       f"or micro-batches a multiple of pp (the interleaved schedule runs them in groups of pp)",
                       field="plan.interleave")
    per = layers // plan.pp
    if layers % plan.pp:
        raise DseError(f"got {v}; accepted: 1 ({layers} layers do not split evenly over pp = {plan.pp})",
                       field="plan.interleave")
    if per % v:
        divisors = ", ".join(str(k) for k in range(1, per + 1) if per % k == 0)
        raise DseError(f"got {v}; accepted: a divisor of the {per} layers per stage ({divisors})",
                       field="plan.interleave")


def collective(name: str, coll: str, S: float, group: str, plan: Plan, count: float, scale: float) -> dict[str, Any]:
    """A collective operator row: ``S`` bytes (see ``dse.predict.network``) over ``group``'s ranks."""
    n = getattr(plan, group)
    return ops._row(name=name, kind="collective", unit="network", reuse="stream", dtype="fp32", dtype_a="fp32",
                    flops=0.0, bytes_read=0.0, bytes_written=0.0, count=int(round(count)), coll=coll,
                    net_bytes=float(S), group=n, stride=plan.stride(group),
                    overlap=getattr(plan.overlap, "dp" if group in ("fsdp", "replicas") else group),
                    scale=scale)


def collectives(arch: Any, plan: Plan, facts: dict[str, Any], sc: Scenario, training: bool) -> list[dict[str, Any]]:
    """Collective rows of one chip for one step (transformer family). The activations they move (tensor-parallel
    all-reduces, sequence-parallel scatters and gathers, pipeline sends) are in the scenario's ``activation_dtype``
    (default ``dtype``), as the memory accounting counts them: an fp8 GEMM writes its output in the activation dtype
    (Transformer Engine's fp8 ``Linear`` returns bf16; Intel Neural Compressor's patched fp8 linear on Gaudi
    dequantizes its output to bf16), so a row-parallel block's all-reduce sums bf16, not fp8."""
    b = DTYPE_BYTES[sc.activation_dtype or sc.dtype]
    T = facts["tokens"]  # tokens per micro-batch on this chip
    h = arch.hidden
    L = arch.layers  # already per stage
    m, bs = plan.m, plan.bubble_scale()
    passes = 2 if training else 1
    rows: list[dict[str, Any]] = []
    act = T * h * b
    if plan.tp > 1:
        # full recomputation runs each layer's forward again, all-reduces included (Korthikanti et al. 2022, Sec. 5)
        redo = 1 if (training and plan.recompute == "full") else 0
        # row-parallel outputs reduced per layer: attention's and the MLP's, or their sum once in a parallel block
        # (TransformerArch.parallel_block; gpt-neox's gpt_j_residual)
        blocks = 1 if getattr(arch, "parallel_block", False) else 2
        n = blocks * L * (passes + redo) * m
        if plan.sp:  # each all-reduce becomes a reduce-scatter + an all-gather (Korthikanti et al. 2022, Sec. 4.2.2)
            # training keeps only the split input of each linear block and all-gathers it again in the
            # backward pass before the weight-gradient GEMM (Sec. 4.2.2, last paragraph): two more per layer
            regather = blocks * L * m if (training and redo == 0) else 0
            rows.append(collective("tp.layer_reduce_scatter", "reduce_scatter", act, "tp", plan, n, bs))
            rows.append(collective("tp.layer_all_gather", "all_gather", act, "tp", plan, n + regather, bs))
        else:
            rows.append(collective("tp.layer_all_reduce", "all_reduce", act, "tp", plan, n, bs))
        rows.append(collective("tp.embedding_all_reduce", "all_reduce", act, "tp", plan, passes * m, bs))
    if plan.pp > 1:
        # each of the v model chunks of a rank sends its output on (and its input gradient back). With TP
        # the scatter/gather optimisation sends 1/tp of the activation per rank and all-gathers it inside
        # the receiving node (Narayanan et al., SC 2021, Sec. 4.1); with SP it is already split.
        sends = passes * m * plan.interleave
        rows.append(collective("pp.send_activations", "p2p", act / plan.tp, "pp", plan, sends, bs))
        if plan.tp > 1 and not plan.sp:
            rows.append(collective("pp.gather_activations", "all_gather", act, "tp", plan, sends, bs))
    if plan.ep > 1 and arch.moe is not None:
        moe_layers = arch.moe.moe_layers(L)
        a2a = T * arch.moe.active * h * b
        rows.append(collective("ep.all_to_all", "all_to_all", a2a, "ep", plan, 2 * moe_layers * passes * m, bs))
    return rows + gradient_rows(plan, facts, sc, training)


def gradient_rows(plan: Plan, facts: dict[str, Any], sc: Scenario, training: bool) -> list[dict[str, Any]]:
    """DP (training, any family): the gradients' reduction once per step, in the step's gradient dtype
    (``dse.workloads.training.gradient_dtype``: fp32 for a bf16 Megatron-style step). Without ZeRO an all-reduce
    (PyTorch DDP, Megatron-LM DDP); with ZeRO-1/2 a reduce-scatter of the gradients (each rank updates its
    shard) and an all-gather of the updated weights in their own dtype (Megatron-LM's distributed optimizer:
    'reduce-scatter ... all-gather', docs/source/api-guide/dist_optimizer.md; DeepSpeed ZeRO stage 1/2); under
    ZeRO-3 / FSDP the reduce-scatter plus the weights' all-gathers in forward and backward. With hybrid sharding
    (fsdp < dp) these run within each fsdp group, and the replicas then all-reduce their 1/fsdp gradient shards
    (PyTorch HYBRID_SHARD: reduce-scatter in the shard group, all-reduce across replica groups; Zhao et al., VLDB
    2023, Sec. 3.2.2).

    Micro-batches: a rank that keeps only its shard of the gradients (ZeRO-2, ZeRO-3 / FSDP) reduce-scatters every
    micro-batch's gradients in that micro-batch's backward (DeepSpeed's stage 2 reduces its buckets at every
    micro-step; PyTorch FSDP outside ``no_sync()``, whose docs say ``no_sync`` keeps the unsharded gradients instead),
    and ZeRO-3 / FSDP, which frees the gathered weights after each use, gathers them again in every micro-batch's
    forward and backward (DeepSpeed ZeRO-3's per-module fetch and release; FSDP's ``reshard_after_forward``): ``m``
    reduce-scatters and ``2 m`` all-gathers a step. ZeRO-0/1 accumulate the full gradients locally and reduce once."""
    if plan.dp == 1 or not training or not facts.get("params"):
        return []
    grads = facts["params"] * DTYPE_BYTES[scenario_grad_dtype(sc)]
    weights = facts["params"] * DTYPE_BYTES[sc.weight_dtype or sc.dtype]
    group = "fsdp" if plan.hybrid else "dp"
    rows = []
    if plan.shards > 1 and plan.zero >= 1:  # each rank updates its shard: the gradients are reduce-scattered
        # ZeRO-2/3 keep only their gradient shard, so they reduce every micro-batch's; ZeRO-1 accumulates, reduces once
        rows = bucketed_gradients("dp.gradient_reduce_scatter", grads, group, plan, "reduce_scatter",
                                  times=plan.m if plan.zero >= 2 else 1)
        if plan.zero == 3:  # the weights gathered in every micro-batch's forward and backward
            rows.append(collective("dp.zero3_param_all_gather", "all_gather", weights, group, plan, 2 * plan.m, 1.0))
        else:  # the updated weights gathered once
            rows.append(collective("dp.param_all_gather", "all_gather", weights, group, plan, 1, 1.0))
    elif plan.shards > 1:
        rows = bucketed_gradients("dp.gradient_all_reduce", grads, group, plan)
    if plan.hybrid:
        rows += bucketed_gradients("dp.replica_all_reduce", grads, "replicas", plan, shard=plan.shards)
    return rows


def bucketed_gradients(name: str, grads: float, group: str, plan: Plan,
                       coll: str = "all_reduce", shard: int = 1, times: int = 1) -> list[dict[str, Any]]:
    """Bucketed gradient collective rows (all-reduce by default) over ``group`` (PyTorch DDP, Li et al., VLDB 2020;
    Megatron-LM DDP): each bucket's collective starts when its gradients are ready and overlaps the rest of the backward pass
    (as plan.overlap.dp says); the last bucket only starts when the backward pass ends, so it is always exposed.
    ``coll="reduce_scatter"``: ZeRO-3 / FSDP, where each rank keeps its own gradient shard, so the step moves
    3 x the parameters' bytes (this reduce-scatter plus the forward and backward all-gathers) against plain data
    parallelism's 2 x (Rajbhandari et al., "ZeRO", SC 2020, Sec. 7.2.2: "1.5x of the baseline DP").
    ``shard``: each rank moves 1/shard of every bucket (hybrid sharding's all-reduce across replicas runs on the
    rank's shard of each bucket after the shard group's reduce-scatter, so its exposed last bucket is 1/shard of one).
    ``times``: the collective runs once per micro-batch (ZeRO-2/3), each in its micro-batch's backward, so only the
    last micro-batch's last bucket waits for the step's end."""
    last = min(grads, plan.bucket_mb * 1e6)
    rows = [collective(f"{name}.last_bucket", coll, last / shard, group, plan, 1, 1.0)]
    rows[0]["overlap"] = 0.0
    if times * grads > last:  # the rest, with the earlier micro-batches' whole reductions, hidden behind the backward
        rows.append(collective(name, coll, (times * grads - last) / shard, group, plan, 1, 1.0))
    return rows


#: optimizer rows each data-parallel rank runs on its own 1/dp of the parameters, by the ZeRO stage that shards
#: what they touch: the update and the fp16 unscale from stage 1 (optimizer state), the gradient zeroing from 2
OPTIMIZER_SHARDS = (("optimizer.adamw", 1), ("optimizer.unscale", 1), ("optimizer.zero_grad", 2))


def shard_optimizer(rows: list[dict[str, Any]], plan: Plan) -> list[dict[str, Any]]:
    """With ZeRO and ``dp`` > 1, each rank updates only its partition: the optimizer rows of
    :data:`OPTIMIZER_SHARDS` shrink by ``dp`` (elements, FLOPs, bytes). Rajbhandari et al., SC 2020, Sec. 5.1
    (P_os): "each data parallel process only updates the optimizer states corresponding to its partition", then
    all-gathers the updated parameters (the reduce-scatter + all-gather already charged as the gradient
    all-reduce's bytes). DeepSpeed's stage 1/2 optimizer steps its flat partition only (deepspeed/runtime/zero/
    stage_1_and_2.py, ``step``)."""
    if plan.zero == 0 or plan.shards == 1:
        return rows
    out = []
    for r in rows:
        name = str(r["name"])
        if any(name == n and plan.zero >= z for n, z in OPTIMIZER_SHARDS):
            r = dict(r)
            r["M"] = max(1, math.ceil(r["M"] / plan.shards))
            for k in ("flops", "bytes_read", "bytes_written", "a_bytes", "c_bytes"):
                if k in r:
                    r[k] = r[k] / plan.shards
        out.append(r)
    return out


def per_microbatch(rows: list[dict[str, Any]], plan: Plan) -> list[dict[str, Any]]:
    """Repeat micro-batch work ``m`` times under the bubble factor; the optimizer runs once per step."""
    out = []
    for r in rows:
        r = dict(r)
        if not str(r["name"]).startswith("optimizer."):
            r["count"] = r["count"] * plan.m
            r["scale"] = plan.bubble_scale()
        out.append(r)
    return out


# ------------------------------------------------------------------------------- memory footprint
def transformer_memory(arch: Any, plan: Plan, facts: dict[str, Any], sc: Scenario, training: bool) -> dict[str, float]:
    """Bytes per chip: weights, gradients, optimizer state, KV cache, activations.

    Training activations per layer and micro-batch follow Korthikanti et al. 2022 (Table 2) for a
    GPT block, ``s*b*h*(34 + 5*a*s/h)`` bytes at 16 bit: with TP ``10 + 24/t``, with TP + SP
    ``34/t``; the ``5as/h`` score term is gone with flash attention or selective recomputation; full
    recomputation keeps only the layer input ``2*s*b*h`` (``/t`` with SP); minimal keeps the layer input and
    the weight matmuls' outputs of Table 2's tensors (q, k, v ``6sbh``, the output projection's ``2sbh``, the
    MLP's first ``8sbh`` and second ``2sbh``: ``20`` per ``sbh``; with TP ``6 + 14/t``, with SP ``20/t``).
    1F1B keeps ``min(m, pp)`` micro-batches in flight. Mixed-precision AdamW keeps fp32 master weights and two moments (12
    bytes per parameter; Rajbhandari et al. 2020; 4, two bf16 moments, with ``optimizer_dtype: bf16``; autocast's fp32
    parameters and the casts saved for the backward as weights and 8 bytes of state instead,
    ``dse.workloads.training.state_bytes_per_param``), sharded over
    dp by ZeRO-1, gradients (in the step's gradient dtype, ``dse.workloads.training.gradient_dtype``: 4 bytes for a bf16
    Megatron-style step, whose footprint is then Megatron-LM's 18 bytes per parameter) by ZeRO-2,
    weights by ZeRO-3. Activations are counted in the scenario's ``activation_dtype`` (default ``dtype``)."""
    ab = DTYPE_BYTES[sc.activation_dtype or sc.dtype]  # the activations between kernels
    wb = DTYPE_BYTES[sc.weight_dtype or sc.dtype]
    P = float(facts["params"])
    h, L, t = arch.hidden, arch.layers, plan.tp
    T = float(facts["tokens"])
    mem: dict[str, float] = {}
    if training:
        mem |= training_state_bytes(P, sc, plan, float(facts.get("expert_params") or 0))
        heads = arch.heads  # already per TP rank
        s = facts.get("seq") or 1
        score = 0.0 if (sc.fused_attention or plan.recompute != "none") else 5.0 * heads * s / h  # 5as/(ht)
        if plan.recompute == "full":
            per_tok = 2.0 / (t if plan.sp else 1)
        elif plan.recompute == "minimal":  # layer input 2, q/k/v 6/t, out-proj output 2, MLP up 8/t, MLP down output 2
            per_tok = 20.0 / t if plan.sp else 6.0 + 14.0 / t
        elif plan.sp:
            per_tok = 34.0 / t + score
        else:
            per_tok = 10.0 + 24.0 / t + score
        mem["activations"] = L * min(plan.m, plan.pp) * T * h * per_tok * ab / 2.0
    else:
        mem["weights"] = float(facts.get("weight_bytes") or P * wb)  # inference: ZeRO is refused, nothing sharded
        gated = arch.activation in ("swiglu", "geglu")
        mem["activations"] = 2.0 * T * max(h, arch.ffn * (2 if gated else 1)) * ab
        if arch.kind == "decoder":
            kvb = DTYPE_BYTES[sc.kv_dtype or sc.dtype]
            tokens = (facts.get("context") or 0) + (facts.get("seq") or 0)
            batch = facts["batch"]
            if arch.mla is not None:
                per = (arch.mla.kv_lora_rank + arch.mla.qk_rope_head_dim) * kvb
            else:
                per = 2 * (arch.kv_heads or arch.heads) * (arch.head_dim or h // arch.heads) * kvb
            n_global, n_local = arch.layer_split()  # a local layer's cache is a rolling buffer of its window
            held = n_global * tokens + (n_local * min(tokens, arch.window.tokens) if n_local else 0)
            mem["kv_cache"] = float(held * batch * per)
    return mem


def training_state_bytes(P: float, sc: Scenario, plan: Plan, expert_params: float = 0.0) -> dict[str, float]:
    """Bytes per chip of a training step's ``weights``, ``gradients`` and ``optimizer`` state for ``P`` parameters
    (per parameter: :func:`dse.workloads.training.state_bytes_per_param` and the step's gradient dtype). ZeRO shards
    them over the data-parallel ranks of one copy (``plan.shards``: fsdp when hybrid; Rajbhandari et al. 2020): the
    optimizer state from stage 1, the gradients from stage 2, the weights at stage 3. Under expert parallelism a
    routed expert (``expert_params`` of the ``P``) has dp / ep data-parallel replicas where the dense weights have dp,
    and ZeRO shards each over its own replicas (Megatron-core's expert-data-parallel group; DeepSpeed-MoE)."""
    held, state = state_bytes_per_param(sc, plan.recompute)
    z = plan.shards
    pe = expert_params if plan.ep > 1 else 0.0
    ze = max(1, z // plan.ep)

    def sharded(stage: int) -> float:  # parameters per chip counted once, each part over its own replicas
        return (P - pe) / (z if plan.zero >= stage else 1) + pe / (ze if plan.zero >= stage else 1)

    return {"weights": held * sharded(3), "gradients": DTYPE_BYTES[scenario_grad_dtype(sc)] * sharded(2),
            "optimizer": state * sharded(1)}


def generic_memory(rows: list[dict[str, Any]], facts: dict[str, Any], sc: Scenario, plan: Plan,
                   training: bool) -> dict[str, float]:
    """Bytes per chip for non-transformer families: weights from the parameter count, the largest
    operator's working set as inference activations; training keeps every forward output, and its weights, gradients
    and optimizer state shard by ZeRO stage as a transformer's do (:func:`training_state_bytes`; the op table's
    optimizer step shards the same)."""
    P = float(facts.get("params") or 0)
    mem: dict[str, float] = {}
    if training:
        fwd = [r for r in rows if not str(r["name"]).endswith(".bwd") and ".bwd." not in str(r["name"])
               and not str(r["name"]).startswith("optimizer.")]
        mem |= training_state_bytes(P, sc, plan)
        mem["activations"] = float(sum((r["c_bytes"] or r["bytes_written"]) * r["count"] for r in fwd if not r.get("fused")))
    else:
        mem["weights"] = P * DTYPE_BYTES[sc.weight_dtype or sc.dtype]
        mem["activations"] = float(max((r["bytes_read"] + r["bytes_written"] for r in rows), default=0.0))
    return mem
