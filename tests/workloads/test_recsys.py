"""dse.workloads.recsys: embedding gathers, MLPs, DLRM dot interaction and DCN cross layers by hand."""

from __future__ import annotations

import pandas as pd
import pytest

import dse
from dse.workloads.recsys import RecsysArch, build
from dse.workloads.scenario import Scenario


def _df(rows) -> pd.DataFrame:
    return pd.DataFrame(rows).set_index("name")


def test_dlrm_rows_and_parameters_by_hand() -> None:
    arch = RecsysArch(model="dlrm", dense_features=13, tables=4, embedding_dim=16, rows_per_table=1000,
                      lookups_per_table=3, bottom_mlp=[32, 16], top_mlp=[64, 1])
    rows, facts = build(arch, Scenario(batch=8, dtype="fp32"), "dlrm")
    df = _df(rows)
    g = df.loc["embeddings.gather"]
    assert g["flops"] == 0 and g["bytes_read"] == 8 * 4 * 3 * 16 * 4  # bytes without FLOPs
    pool = df.loc["embeddings.pool"]
    assert pool["flops"] == 3 * 8 * 4 * 16 and pool["bytes_read"] == g["bytes_read"]
    dots = df.loc["interaction.dots"]
    assert (dots["M"], dots["N"], dots["K"], dots["batch"]) == (5, 5, 16, 8)
    top0 = df.loc["top.fc0"]
    assert top0["K"] == 16 + 5 * 4 // 2  # bottom output + upper triangle of the 5x5 dots
    params = 4 * 1000 * 16 + (13 * 32 + 32) + (32 * 16 + 16) + (26 * 64 + 64) + (64 * 1 + 1)
    assert facts == {"phase": "forward", "batch": 8, "params": params}


def test_dcn_cross_layers_are_square_gemms_on_the_concatenated_input() -> None:
    arch = RecsysArch(model="dcn", dense_features=13, tables=2, embedding_dim=8, rows_per_table=10,
                      cross_layers=3, top_mlp=[16])
    rows, facts = build(arch, Scenario(batch=4), "dcn")
    df = _df(rows)
    x0 = 13 + 2 * 8
    assert all((df.loc[f"cross{i}", "M"], df.loc[f"cross{i}", "N"], df.loc[f"cross{i}", "K"]) == (4, x0, x0)
               for i in range(3))
    assert facts["params"] == 2 * 10 * 8 + 3 * (x0 * x0 + x0) + x0 * 16 + 16


def test_wide_and_deep_adds_a_wide_gather_and_recsys_rejects_decode() -> None:
    arch = RecsysArch(model="wide_deep", dense_features=0, tables=3, embedding_dim=4, rows_per_table=100,
                      top_mlp=[8])
    rows, facts = build(arch, Scenario(batch=2), "wd")
    df = _df(rows)
    assert df.loc["wide.gather", "bytes_read"] == 2 * 3 * 1 * 2
    assert facts["params"] == 3 * 100 * 4 + 3 * 100 + 12 * 8 + 8
    with pytest.raises(ValueError, match=r"wd is a recommender; accepted phase: forward, training \(got decode\)"):
        build(arch, Scenario(phase="decode"), "wd")


def test_shipped_dlrm_is_memory_bound_by_its_gathers() -> None:
    wl = dse.workload("dlrm-mlperf", batch=2048)
    emb = wl.ops[wl.ops["kind"] == "embedding"]
    assert (emb["flops"] == 0).all() and (emb["bytes_read"] > 0).all()
    assert wl.flops / wl.bytes < 100  # far below any accelerator's ridge
