"""Transformer training rows: dropout (dse.workloads.transformer)."""

import pytest

import dse
from dse.errors import DseError


def _bytes(wl, prefix: str) -> float:
    o = wl.ops[wl.ops["name"].str.startswith(prefix)]
    return float(((o["bytes_read"] + o["bytes_written"]) * o["count"]).sum())


def test_dropout_adds_masks_and_the_attention_probability_pass() -> None:
    kw = dict(phase="training", batch=2, seq=1024, fused_attention=False)
    base = dse.workload("gpt3-1.3b", **kw)
    drop = dse.workload("gpt3-1.3b", dropout=0.1, **kw)
    assert drop.bytes > base.bytes
    # fused bias-dropout-add: only the 1-byte mask is extra, written forward and read back in backward,
    # for both dropouts of each of the 24 layers (same shape: one merged row)
    assert _bytes(drop, "layer.dropout") == pytest.approx(2 * 1024 * 2048 * 24 * 2 * (1 + 1))
    flash = dse.workload("gpt3-1.3b", phase="training", batch=2, seq=1024, dropout=0.1)
    assert _bytes(flash, "layer.attention.dropout") == 0.0  # flash attention fuses it
    assert _bytes(drop, "layer.attention.dropout") > 0


def test_dropout_outside_training_is_one_line() -> None:
    with pytest.raises(DseError) as exc:
        dse.workload("gpt3-1.3b", phase="prefill", dropout=0.1)
    assert "\n" not in str(exc.value) and "dropout: got 0.1" in str(exc.value) and "accepted: 0" in str(exc.value)
