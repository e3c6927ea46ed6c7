"""dse.workloads.sequence: LSTM/GRU recurrences and Mamba blocks by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest

import dse
from dse.workloads.scenario import Scenario
from dse.workloads.sequence import SCAN_FLOPS_PER_STATE, MambaArch, RNNArch, build_mamba, build_rnn


def _df(rows) -> pd.DataFrame:
    return pd.DataFrame(rows).set_index("name")


def test_lstm_input_projection_is_one_gemm_and_the_recurrence_s_dependent_ones() -> None:
    arch = RNNArch(cell="lstm", layers=2, hidden=64, input=32, bidirectional=True, head="classifier", num_classes=10)
    rows, facts = build_rnn(arch, Scenario(batch=4, seq=50), "lstm")
    df = _df(rows)
    inp = df.loc["l0.input_proj"]
    assert (inp["M"], inp["N"], inp["K"], inp["count"]) == (4 * 50, 4 * 64, 32, 2)  # both directions
    rec = df.loc["l0.recurrent"]
    assert (rec["M"], rec["N"], rec["K"], rec["count"]) == (4, 256, 64, 2 * 50)  # S dependent steps
    assert df.loc["l1.input_proj", "K"] == 128  # the bidirectional output of layer 0
    assert df.loc["classifier", "K"] == 128
    per_layer = [2 * (256 * 32 + 256 * 64 + 2 * 256), 2 * (256 * 128 + 256 * 64 + 2 * 256)]
    assert facts == {"phase": "forward", "batch": 4, "seq": 50, "params": sum(per_layer) + 10 * 128}


def test_gru_has_three_gates() -> None:
    rows, _ = build_rnn(RNNArch(cell="gru", layers=1, hidden=16, input=8), Scenario(seq=5), "gru")
    assert _df(rows).loc["l0.recurrent", "N"] == 48
    with pytest.raises(ValueError, match="accepted phase: forward, training"):
        build_rnn(RNNArch(cell="gru", layers=1, hidden=16, input=8), Scenario(phase="decode"), "gru")


def test_mamba_decode_reads_and_writes_the_recurrent_state() -> None:
    arch = MambaArch(layers=2, hidden=64, vocab=1000)
    rows, facts = build_mamba(arch, Scenario(batch=3, phase="decode", context=100, dtype="bf16"), "m")
    df = _df(rows)
    di, N = 128, 16
    scan = df.loc["layer.selective_scan"]
    state = 3 * di * N * 4  # fp32 state per step
    assert scan["flops"] == 3 * di * N * SCAN_FLOPS_PER_STATE
    assert scan["bytes_read"] == 3 * (2 * di + 2 * N) * 2 + di * N * 4 + state
    assert scan["bytes_written"] == 3 * di * 2 + state
    assert df.loc["layer.in_proj", "M"] == 3 and df.loc["layer.in_proj", "N"] == 2 * di
    r = math.ceil(64 / 16)
    assert df.loc["layer.x_proj", "N"] == r + 2 * N
    per_layer = 64 * 2 * di + di * 4 + di + di * (r + 2 * N) + r * di + di + di * N + di + di * 64 + 64
    assert facts["params"] == 2 * per_layer + 1000 * 64 + 64 and facts["seq"] is None and facts["context"] == 100


def test_mamba_prefill_scales_with_tokens_and_heads_only_the_last_token() -> None:
    arch = MambaArch(layers=1, hidden=32, vocab=100)
    r1, f1 = build_mamba(arch, Scenario(batch=1, phase="prefill", seq=64), "m")
    r2, _ = build_mamba(arch, Scenario(batch=1, phase="prefill", seq=128), "m")
    d1, d2 = _df(r1), _df(r2)
    assert d2.loc["layer.selective_scan", "flops"] == 2 * d1.loc["layer.selective_scan", "flops"]
    assert d1.loc["lm_head", "M"] == 1 and f1["seq"] == 64
    with pytest.raises(ValueError, match="accepted phase: prefill, decode, training"):
        build_mamba(arch, Scenario(phase="forward"), "m")


def test_shipped_models_have_the_published_parameter_counts() -> None:
    # state-spaces/mamba-130m (workloads/mamba-130m.yaml source): about 129 M parameters
    assert dse.workload("mamba-130m", phase="decode", batch=1, context=128).scenario["params"] == pytest.approx(
        129e6, rel=0.01)
    # Zaremba et al. 2014 medium LSTM: embedding 10000x650, 2 layers of 4 gates over [x, h] (+2 biases), softmax
    lstm = dse.workload("lstm-lm-medium").scenario["params"]
    assert lstm == 10000 * 650 + 2 * (4 * 650 * 1300 + 2 * 4 * 650) + 650 * 10000
