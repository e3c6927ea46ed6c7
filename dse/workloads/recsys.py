"""Recommenders: embedding gathers (bytes without FLOPs) around small MLPs.

* DLRM (Naumov et al. 2019; MLPerf config): bottom MLP on dense features, one lookup (or a pooled
  bag) per sparse feature, pairwise dot-product interaction of the 1 + tables vectors (a batched GEMM
  ``[n, d] x [d, n]`` per sample), top MLP on [bottom output, upper triangle of the dots].
* DCN-v2 (Wang et al. 2021): cross layers ``x_{l+1} = x0 * (W x_l + b) + x_l`` on the concatenated
  embeddings and dense features, in parallel with a deep MLP.
* Wide & Deep (Cheng et al. 2016): a wide linear model over the sparse features plus a deep MLP on
  their embeddings.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from dse.limits import MAX_LAYERS, MAX_POOLING, MAX_TABLE_ROWS, MAX_TABLES, MAX_WIDTH
from dse.strict import Strict
from dse.workloads import ops
from dse.workloads.scenario import Scenario
from dse.workloads.training import step_kernels, training_step

#: one MLP layer's width
Width = Annotated[int, Field(gt=0, le=MAX_WIDTH)]


class RecsysArch(Strict):
    model: Literal["dlrm", "dcn", "wide_deep"]
    dense_features: int = Field(ge=0, le=MAX_WIDTH)
    tables: int = Field(gt=0, le=MAX_TABLES, description="Sparse features (embedding tables)")
    embedding_dim: int = Field(gt=0, le=MAX_WIDTH)
    rows_per_table: int = Field(gt=0, le=MAX_TABLE_ROWS, description="Rows of each table (parameter count only)")
    lookups_per_table: int = Field(1, gt=0, le=MAX_POOLING, description="Pooling factor: rows gathered per table per "
                                   "sample")
    bottom_mlp: list[Width] = Field(default_factory=list, description="DLRM bottom MLP widths after the input")
    top_mlp: list[Width] = Field(default_factory=list, description="Top / deep MLP widths")
    cross_layers: int = Field(0, ge=0, le=MAX_LAYERS, description="DCN cross layers")


def _mlp(rows: list, prefix: str, B: int, width: int, sizes: list[int], dt: str) -> tuple[int, int]:
    params = 0
    for i, w in enumerate(sizes):
        rows.append(ops.gemm(f"{prefix}.fc{i}", B, w, width, dtype=dt))
        rows.append(ops.streaming(f"{prefix}.relu{i}", kind="elementwise", elems=B * w, flops_per_elem=1.0, dtype=dt))
        params += width * w + w
        width = w
    return width, params


def build(arch: RecsysArch, sc: Scenario, name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    if sc.phase not in (None, "forward", "training"):
        raise ValueError(f"{name} is a recommender; accepted phase: forward, training (got {sc.phase})")
    B, dt, d = sc.batch, sc.dtype, arch.embedding_dim
    rows: list[dict[str, Any]] = []
    params = arch.tables * arch.rows_per_table * d
    rows.append(ops.embedding("embeddings.gather", tokens=B * arch.tables * arch.lookups_per_table, dim=d, dtype=dt))
    if arch.lookups_per_table > 1:
        rows.append(ops.streaming("embeddings.pool", kind="reduce", elems=B * arch.tables * d,
                                  flops_per_elem=arch.lookups_per_table, dtype=dt,
                                  read_bytes=B * arch.tables * arch.lookups_per_table * d * ops.DTYPE_BYTES[dt]))
    if arch.model == "dlrm":
        width, p = _mlp(rows, "bottom", B, arch.dense_features, arch.bottom_mlp, dt)
        params += p
        n = arch.tables + 1
        rows.append(ops.gemm("interaction.dots", n, n, d, dtype=dt, weight_dtype=dt, batch=B, kind="gemm", held=""))
        top_in = width + n * (n - 1) // 2
    elif arch.model == "dcn":
        x0 = arch.dense_features + arch.tables * d
        for i in range(arch.cross_layers):
            rows.append(ops.gemm(f"cross{i}", B, x0, x0, dtype=dt))
            rows.append(ops.streaming(f"cross{i}.combine", kind="elementwise", elems=B * x0, inputs=3,
                                      flops_per_elem=3.0, dtype=dt))
            params += x0 * x0 + x0
        top_in = x0
    else:
        rows.append(ops.embedding("wide.gather", tokens=B * arch.tables, dim=1, dtype=dt))
        params += arch.tables * arch.rows_per_table
        top_in = arch.dense_features + arch.tables * d
    out, p = _mlp(rows, "top", B, top_in, arch.top_mlp, dt)
    params += p
    if sc.phase == "training":
        dense = params - arch.tables * arch.rows_per_table * d
        # embedding updates are sparse: optimizer state over dense weights
        rows = training_step(rows, dense, dt, **step_kernels(sc))
    return rows, {"phase": sc.phase or "forward", "batch": B, "params": params}
