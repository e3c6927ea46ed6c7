"""The workload families: one :class:`Family` record per family, the only place a family is registered.

A model description's ``family`` names a record of :data:`FAMILIES`; the record gives the schema of its
``arch`` block, the builder that expands it into operator rows, the scenario keywords it uses, whether
``phase: inference`` means a prefill (a language model) and whether it takes tensor/pipeline/expert
parallelism. The accepted ``family`` values and the error messages are built from :data:`FAMILIES`.

Adding a family = one record here (its arch model and builder may live in a module of their own) plus
its test; see docs/architecture.md, "Extension points".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from dse.workloads import cnn, optable, recsys, sequence, transformer

#: scenario keywords every family but ``optable`` takes
COMMON = frozenset({"phase", "batch", "dtype", "fuse_elementwise", "execution", "gemm_kernel", "residency", "framework",
                    "weight_cast", "optimizer", "zero_grad", "optimizer_dtype", "grad_dtype"})

#: a builder: (validated arch, scenario, model name) -> (operator rows, facts)
Builder = Callable[[Any, Any, str], tuple[list[dict[str, Any]], dict[str, Any]]]


@dataclass(frozen=True)
class Family:
    """One workload family.

    * ``arch``: the pydantic model of the description's ``arch`` block.
    * ``build``: ``build(arch, scenario, name) -> (rows, facts)`` (one chip, no plan).
    * ``keywords``: the scenario keywords a model of the family accepts, fixed or a function of its
      ``arch`` mapping (any other keyword is an error naming these).
    * ``language_model``: ``phase: inference`` means ``prefill`` (else ``forward``); fixed or a function
      of the ``arch`` mapping.
    * ``supports_plan``: tensor, pipeline and expert parallelism (``tp``/``pp``/``ep`` > 1); every family
      takes data parallelism.
    """

    name: str
    arch: type[BaseModel]
    build: Builder
    keywords: frozenset[str] | Callable[[dict[str, Any]], frozenset[str]] = COMMON
    language_model: bool | Callable[[dict[str, Any]], bool] = False
    supports_plan: bool = False

    def accepted_keywords(self, arch: dict[str, Any]) -> frozenset[str]:
        """The scenario keywords a model with this ``arch`` mapping uses."""
        return self.keywords(arch) if callable(self.keywords) else self.keywords

    def is_language_model(self, arch: dict[str, Any]) -> bool:
        """Whether ``phase: inference`` means ``prefill`` for a model with this ``arch`` mapping."""
        return self.language_model(arch) if callable(self.language_model) else self.language_model


def _transformer_keywords(a: dict[str, Any]) -> frozenset[str]:
    """Decoders take the LLM keywords, patch models a resolution, the rest (encoders, audio) a sequence."""
    extra = {"weight_dtype", "weight_dtypes", "weight_group", "fused_attention", "attention_kernel", "attention_gqa",
             "dropout", "activation_dtype", "input_quant"}
    if a.get("kind") == "decoder":
        extra |= {"seq", "context", "kv_dtype", "kv_block", "attention_dtype", "logits", "input_len", "output_len",
                  "chunk", "serving_engine"}
    elif a.get("patch"):
        extra |= {"resolution"}
    else:
        extra |= {"seq"}  # text tokens, audio samples or frames
    return COMMON | extra


FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("transformer", transformer.TransformerArch, transformer.build, _transformer_keywords,
           language_model=lambda a: a.get("kind") == "decoder", supports_plan=True),
    Family("encdec", transformer.EncDecArch, transformer.build_encdec,
           COMMON | {"seq", "context", "fused_attention"}, language_model=True),
    Family("swin", transformer.SwinArch, transformer.build_swin,
           COMMON | {"resolution", "fused_attention", "attention_kernel"}),
    Family("cnn", cnn.CNNArch, cnn.build, COMMON | {"resolution", "memory_format"}),
    Family("rnn", sequence.RNNArch, sequence.build_rnn, COMMON | {"seq"}),
    Family("mamba", sequence.MambaArch, sequence.build_mamba, COMMON | {"seq", "context"}, language_model=True),
    Family("recsys", recsys.RecsysArch, recsys.build, COMMON),
    Family("optable", optable.OpTableArch, optable.build, frozenset({"phase", "dtype"})),
)}


def accepted_families() -> str:
    """The accepted ``family`` values as an error message says them: ``one of 'a', 'b' or 'c'``."""
    names = [repr(n) for n in FAMILIES]
    return "one of " + (", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0])


def family(name: str) -> Family:
    """The record of ``name`` (ValueError naming the accepted families when there is none)."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError(f"got {name!r}; accepted: {accepted_families()}") from None
