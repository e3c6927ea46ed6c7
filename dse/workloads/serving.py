"""LLM serving with continuous batching: prefill + batched decode combined into tokens/s, TTFT, TPOT.

``phase: serving`` serves ``batch`` concurrent sequences, each with a prompt of ``input_len`` tokens and
``output_len`` generated tokens, under continuous batching (Yu et al., Orca, OSDI 2022; Kwon et al.,
vLLM, SOSP 2023): a finished sequence's slot is refilled at once, so in steady state the engine runs
``output_len`` decode iterations of ``batch`` sequences for every ``batch`` prompts it prefills. One
*pass* of the workload is that cycle:

* ``prefill.*`` rows: the ``batch`` prompts (``batch x input_len`` tokens, logits of the last token);
* ``decode.*`` rows, count x ``output_len``: one decode step of ``batch`` sequences at the mean KV
  length ``input_len + output_len / 2`` (attention and KV reads grow linearly over a sequence's life,
  so the mean length gives the exact total for them); with ``kv_block`` the mean of the lengths the attention
  reads, each rounded up to a whole block (:func:`mean_read_context`).

With ``T_p`` and ``T_d`` the predicted prefill and decode times of a pass:

* output tokens/s (MLPerf Inference "Offline": tokens per second at full load) = ``batch x output_len / (T_p + T_d)``
* TPOT (mean time per output token of one sequence) = ``(T_p + T_d) / output_len``: prefills of the
  joining requests interleave with the decode iterations, so they stretch every sequence's token gaps;
* worst TPOT (the gap a running sequence sees in an iteration that prefills joining prompts) = one decode step
  plus the prefill that iteration carries. Prompts join at ``r = batch / output_len`` per iteration (a slot frees
  when its sequence has emitted ``output_len`` tokens); with chunked prefill of ``chunk`` tokens (Agrawal et al.,
  Sarathi-Serve, OSDI 2024) each prompt is spread over ``n = ceil(input_len / chunk)`` iterations (``n = 1``
  unchunked), so an iteration holds ``r n`` chunks of ``1/n`` prompt on average and ``ceil(r n)`` at most:
  ``T_d / output_len + ceil(r n) / n x T_p / batch``. It is never below the mean TPOT (``ceil(x) >= x``), and
  ``ceil(r n) = 1`` (one prompt, or one chunk, per iteration) where ``batch n <= output_len``: the stall chunking
  cuts;
* TTFT (time to first token, no queueing): a prompt's prefill spans ``n`` such iterations, each a decode step of
  the batch beside the chunks (so the weights stream once per iteration): ``n x`` worst TPOT, i.e.
  ``T_d / output_len + T_p / batch`` for a lone joining prompt unchunked. ``T_p / batch`` alone would split the
  weight reads of one prefill step over ``batch`` prompts: a lone prompt never sees that.

Chunked prefill here moves latency, not work: its throughput is that of unchunked prefill (the extra
sharing of weight reads between a chunk and the decode tokens of the same iteration is not modelled).

**Serving engine host time** (scenario ``serving_engine``, data in ``workloads/engines/NAME.yaml``). An engine
that schedules, prepares inputs and processes outputs on the host between steps, synchronously (vLLM's V0
engine without multi-step scheduling: vLLM RFC #6854, #6913), leaves the accelerators idle for

    t_host(step) = step_base + per_seq x sequences in the step

every engine step. A pass runs one prefill step of ``batch`` prompts and ``output_len`` decode steps of
``batch`` sequences, so it adds ``t_host(batch)`` to ``T_p`` and ``output_len x t_host(batch)`` to ``T_d``.
The host time does not depend on the accelerator design: it is added to the serving metrics and to the
validation of serving rows, not to the per-operator times that design scores compare. Without
``serving_engine`` no host time is charged (an engine that overlaps host and device work). A ``prefill`` or
``decode`` scenario with an engine is one engine step: it adds ``t_host(batch)`` once (what a time to first
token or a time per output token measured through the engine contains).

An engine whose framework traces the prefill op by op before the device runs it (Gaudi's lazy mode outside a
captured HPU graph: optimum-habana under ``--limit_hpu_graphs`` runs its first forward so; Intel Gaudi
documentation, 'Optimize Inference on PyTorch': the host evaluates each line of the forward and the device runs only
at ``mark_step``) also charges ``per_op_prefill x operators`` on each prefill step, ``operators`` every row of the
step's table ``count`` times (:func:`operators`); its decode steps replay captured graphs and pay none.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import Field

from dse.strict import Strict
from dse.workloads.records import load_record, record_names, records_dir

PREFILL, DECODE = "prefill.", "decode."


class Engine(Strict):
    """A serving engine's host time per engine step (``workloads/engines/NAME.yaml``)."""

    name: str = Field(min_length=1)
    description: str = Field(min_length=3)
    step_base_ms: float = Field(ge=0, le=1000, description="Host time of one engine step, any batch, ms")
    per_seq_ms: float = Field(ge=0, le=1000, description="Host time per sequence in the step, ms")
    per_op_prefill_us: float = Field(
        0.0, ge=0, le=1000, description="Host time per operator of a prefill step that the engine's framework traces "
        "op by op before the device runs it (a lazy-mode framework outside a captured graph), us; 0: none")
    source: str = Field(min_length=3, description="Where the figures come from")

    def step_s(self, sequences: int) -> float:
        """``t_host = step_base + per_seq x sequences`` in seconds."""
        return (self.step_base_ms + self.per_seq_ms * sequences) * 1e-3

    def prefill_s(self, sequences: int, operators: float) -> float:
        """Host seconds of a prefill step: ``t_host(sequences) + per_op_prefill x operators`` (the operators the
        host traces, every row of the step's table counted ``count`` times)."""
        return self.step_s(sequences) + self.per_op_prefill_us * 1e-6 * operators


def engines_dir() -> Path:
    return records_dir("engines")


def engine_names() -> list[str]:
    return record_names("engines")


@lru_cache(maxsize=32)
def load_engine(name: str) -> Engine:
    """The engine record ``workloads/engines/NAME.yaml``; an unknown name or a bad file is one ``DseError``."""
    return load_record("engines", name, Engine, "serving_engine")


def operators(rows: list[dict[str, Any]]) -> float:
    """Operators a host dispatches in a step: every row of its table ``count`` times (collectives included: the
    host issues them too)."""
    return float(sum(float(r["count"]) for r in rows))


def host_times(engine: str | None, batch: int, output_len: int, prefill_ops: float = 0.0) -> tuple[float, float]:
    """(prefill, decode) host seconds of one pass: ``t_host(batch)`` (plus the traced prefill's
    ``per_op_prefill x prefill_ops``) and ``output_len x t_host(batch)`` (module docstring); (0, 0) without an
    engine."""
    if not engine:
        return 0.0, 0.0
    e = load_engine(engine)
    return e.prefill_s(batch, prefill_ops), output_len * e.step_s(batch)


def step_host(engine: str, phase: str, batch: int, operators: float = 0.0) -> dict[str, Any]:
    """Facts of one engine step's host time for a ``prefill`` or ``decode`` step of ``batch`` sequences:
    ``t_host(batch)`` (module docstring; a prefill step also ``per_op_prefill x operators``) as ``host_prefill_s``
    or ``host_decode_s``, and the engine's name. A lone step is what a first-token latency (prefill) or a time per
    output token (decode) times when the engine runs between steps."""
    e = load_engine(engine)
    if phase == "prefill":
        return {"serving_engine": engine, "host_prefill_s": e.prefill_s(batch, operators)}
    return {"serving_engine": engine, "host_decode_s": e.step_s(batch)}


def prefixed(rows: list[dict[str, Any]], prefix: str, repeat: int = 1) -> list[dict[str, Any]]:
    """Rows renamed ``prefix + name`` with counts x ``repeat``."""
    return [{**r, "name": prefix + str(r["name"]), "count": r["count"] * repeat} for r in rows]


def mean_context(input_len: int, output_len: int) -> int:
    """KV length of the mean decode step: ``input_len + output_len / 2`` (rounded, at least 1)."""
    return max(1, int(round(input_len + output_len / 2)))


def read_context(context: int, block: int | None) -> int:
    """KV tokens a decode step's attention reads: ``block x ceil(context / block)`` with ``kv_block``, else
    ``context`` (optimum-habana's generate(): ``cache_idx = (idx + 1) x bucket_size``, ``idx = (token_idx - 1) //
    bucket_size``, the KV cache sliced to ``[:cache_idx]`` before the decode attention; huggingface/optimum-habana
    optimum/habana/transformers/generation/utils.py and models/llama/modeling_llama.py)."""
    return context if not block else block * -(-context // block)  # also elementwise over an array of contexts


def mean_read_context(input_len: int, output_len: int, block: int | None,
                      keys: Callable[[np.ndarray], np.ndarray] | None = None) -> int:
    """The mean of :func:`read_context` over a sequence's decode steps, the ``t``-th of which attends to
    ``input_len + t`` tokens (``t = 1 .. output_len``), each mapped by ``keys`` where a local layer reads only part of
    them (``dse.workloads.transformer.AttentionWindow.keys``: its window, or its chunk so far); :func:`mean_context`
    with neither. Rounded, at least 1: the attention's reads and FLOPs are linear in the keys, so the mean step gives
    their total."""
    if not block and keys is None:
        return mean_context(input_len, output_len)
    t = read_context(np.arange(input_len + 1, input_len + output_len + 1), block)
    if keys is not None:
        t = keys(t)
    return max(1, int(round(float(np.mean(t)))))


def metrics(ops: pd.DataFrame, facts: dict[str, Any], replicas: int = 1) -> dict[str, float]:
    """tokens/s, TTFT, mean and worst TPOT (seconds) from a serving prediction's per-row ``total_time_s``
    plus the engine's host time of the pass (``host_prefill_s``, ``host_decode_s`` facts); ``replicas``: the plan's
    data-parallel degree (each replica serves ``batch / replicas`` of the sequences, :func:`serving_metrics`)."""
    names = ops["name"].astype(str)
    t = ops["total_time_s"].to_numpy(dtype=float)
    t_p = float(t[names.str.startswith(PREFILL).to_numpy()].sum()) + float(facts.get("host_prefill_s", 0.0))
    t_d = float(t[names.str.startswith(DECODE).to_numpy()].sum()) + float(facts.get("host_decode_s", 0.0))
    return serving_metrics(t_p, t_d, facts["batch"], facts["input_len"], facts["output_len"], facts.get("chunk"),
                           replicas)


def serving_metrics(t_prefill: float, t_decode: float, batch: int, input_len: int, output_len: int,
                    chunk: int | None = None, replicas: int = 1) -> dict[str, float]:
    """The module docstring's formulas from the prefill and decode times of one pass (seconds), the times those of
    one replica: with ``replicas`` data-parallel copies each prefills and decodes ``b = batch / replicas``
    sequences, so a prompt's share of a prefill step is ``T_p / b`` and ``r = b / output_len`` prompts join a
    replica's iteration; tokens/s counts every replica's ``batch``."""
    cycle = t_prefill + t_decode
    step = t_decode / output_len
    b = batch / max(int(replicas), 1)  # sequences of one replica
    one_prompt = t_prefill / b
    n = math.ceil(input_len / chunk) if chunk else 1  # iterations a prompt's prefill is spread over
    chunks = math.ceil(b * n / output_len)  # ceil(r n): most chunks one iteration carries, r = b / output_len
    worst = step + chunks / n * one_prompt
    return {"tokens_per_s": batch * output_len / cycle, "ttft_s": n * worst, "tpot_s": cycle / output_len,
            "tpot_max_s": worst, "decode_step_s": step, "prefill_s": t_prefill, "decode_s": t_decode}


__all__ = ["Engine", "engine_names", "host_times", "load_engine", "mean_context", "mean_read_context", "metrics",
           "operators", "prefixed", "read_context", "serving_metrics", "step_host"]
