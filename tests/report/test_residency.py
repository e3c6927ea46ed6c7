"""summary.md's residency line: what stays on chip on the best design and the SRAM that keeps the next tensor."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

import dse
from dse.cli import main
from dse.hardware.designs import SRAM_MACRO_BYTES, DesignBatch
from dse.report.residency import (
    held_share,
    macro_mib,
    residency_table,
    residency_text,
    resident_level,
    room_capacity,
    workload_residency,
)
from dse.units import MIB
from tests.conftest import write_config

GPT2 = {"name": "gpt2", "phase": "decode", "batch": 1, "context": 1024}
MACRO_MIB = SRAM_MACRO_BYTES / MIB


def npu(mib: float) -> DesignBatch:
    """npu-7nm with ``mib`` of global SRAM."""
    return DesignBatch.from_hardware(dse.hardware("npu-7nm")).with_knobs(sram_bytes=np.array([mib * MIB]))


def ops_on(d: DesignBatch, wl: dict = GPT2):
    ops = dse.predict(dse.workload(**wl), d).ops
    if "act_on_chip" not in ops:
        pytest.skip("the predictor's table has no act_on_chip / held_on_chip columns yet")
    return ops


def fits_from(text: str, kind: str) -> float:
    return float(re.search(rf"{kind} fits? from ([\d,.]+) MiB", text).group(1).replace(",", ""))


def test_room_is_the_held_bytes_beside_the_largest_activation_set_that_fits() -> None:
    lives = np.array([10.0, 50.0, 10.0])
    assert room_capacity(lives, 5.0) == 5.0  # below the smallest activation set
    assert room_capacity(lives, 30.0) == 40.0  # 30 would let the 10-byte set in: 10 + 30
    assert room_capacity(lives, 45.0) == 95.0  # 10 + 45 = 55 lets the 50-byte set in: 50 + 45
    assert room_capacity(np.zeros(0), 7.0) == 7.0
    # from a present size up: at 60 bytes the 50-byte set is in and leaves 10; 30 bytes of weights need 50 + 30
    assert room_capacity(lives, 30.0, at_least=60.0) == 80.0
    assert room_capacity(lives, 5.0, at_least=60.0) == 60.0  # 60 - 50 leaves room for 5 already
    assert room_capacity(lives, 30.0, at_least=20.0) == 40.0  # 20 is below the answer from 0: the same 40
    assert macro_mib(235.8 * MIB, 1.0) == 235.875 and macro_mib(10 * MIB, 0.5) == 20.0


def test_resident_level_is_the_shared_sram_inside_the_main_memory() -> None:
    lv = resident_level(npu(32))
    assert (lv.name, lv.capacity, lv.share, lv.cache) == ("global", 32 * MIB, 1.0, False)
    assert lv.label() == "global SRAM 32 MiB"
    l2 = resident_level(DesignBatch.from_hardware(dse.hardware("h100-sxm")))
    assert l2.cache and l2.share < 1 and "% resident" in l2.label()


@pytest.mark.parametrize(("mib", "kind", "held"), [(32, "Weights", "weights"), (256, "KV cache", "kv_cache")])
def test_the_size_it_names_is_the_smallest_that_keeps_the_next_tensor(mib: float, kind: str, held: str) -> None:
    d = npu(mib)
    lv = resident_level(d)
    text = residency_text(workload_residency(ops_on(d), lv), lv)
    assert text.startswith("activations of ") and "% of operators; " in text
    assert ("% of the weights (247 MB)" in text) if mib == 32 else ("all the weights (247 MB)" in text)
    size = fits_from(text, kind)
    assert held_share(ops_on(npu(size)), held) == pytest.approx(1.0, abs=1e-12)
    assert held_share(ops_on(npu(size - MACRO_MIB)), held) < 1.0


def test_the_size_it_names_is_above_the_present_one_when_a_larger_activation_set_took_the_room() -> None:
    # resnet50 b32: at 146.75 MiB all its weights stay beside 98 % of the activations; at 161.5 MiB the largest
    # activation set moves in and 30 % of the weights stay. The summary named 146.75 MiB ("weights fit from"), below
    # the design's own size; it names the smallest size from the present one up that keeps them
    wl = {"name": "resnet50", "batch": 32, "resolution": 224, "dtype": "bf16"}
    d = npu(161.5)
    lv = resident_level(d)
    assert held_share(ops_on(d, wl), "weights") < 0.5
    size = fits_from(residency_text(workload_residency(ops_on(d, wl), lv), lv), "Weights")
    assert size > 161.5
    assert held_share(ops_on(npu(size), wl), "weights") == pytest.approx(1.0, abs=1e-12)
    assert held_share(ops_on(npu(size - MACRO_MIB), wl), "weights") < 1.0


def test_every_tensor_on_chip_says_so_and_a_cache_names_the_size_for_the_whole_step() -> None:
    d = npu(300)
    lv = resident_level(d)
    text = residency_text(workload_residency(ops_on(d), lv), lv)
    assert "all the weights (247 MB); all the KV cache (38 MB). Every tensor stays on chip." in text
    hw = DesignBatch.from_hardware(dse.hardware("h100-sxm"))
    l2 = resident_level(hw)
    wl = {"name": "resnet50", "batch": 1}
    text = residency_text(workload_residency(ops_on(hw, wl), l2), l2)
    size = fits_from(text, "Weights")
    big = hw.with_knobs(sram_bytes=np.array([size * MIB]))
    assert held_share(ops_on(big, wl), "weights") == pytest.approx(1.0)  # a cache keeps the step once it all fits


def test_summary_says_what_is_resident_on_the_best_design(tmp_path: Path) -> None:
    data = {"name": "res", "base": "npu-7nm", "workloads": [GPT2],
            "search": {"n_trials": 4, "batch_size": 4, "seed": 0, "space": {"sram_mib": {"low": 8, "high": 64}}},
            "output": {"plots": False, "heatmap_points": 4}}
    assert main(["run", str(write_config(tmp_path, data)), "--out", str(tmp_path), "--quiet", "--no-plots"]) == 0
    md = (tmp_path / "res" / "summary.md").read_text()
    if "act_on_chip" not in dse.predict(dse.workload(**GPT2), npu(32)).ops:
        pytest.skip("the predictor's table has no act_on_chip column yet")
    line = next(ln for ln in md.splitlines() if ln.startswith("- Resident on chip on the best design"))
    assert re.match(r"- Resident on chip on the best design \(global SRAM [\d.]+ MiB\): activations of \d+ % of "
                    r"operators; \d+ % of the weights \(247 MB\); KV cache: none \(38 MB\)\. Weights fit from "
                    r"235\.875 MiB of global SRAM\.$", line), line


def test_the_explorers_table_gives_each_workloads_shares_and_the_size_that_keeps_the_next_tensor() -> None:
    """dse explore's on-chip table: the shares summary.md words, in %, blank where a workload has none of a kind."""
    d = npu(32)
    wls = [dse.workload(**GPT2), dse.workload("resnet50", batch=1)]
    preds = [dse.predict(w, d) for w in wls]
    line, df = residency_table(d, preds, ["gpt2", "resnet50"])
    assert line == "resident level: global SRAM 32 MiB, kept across steps"
    lv = resident_level(d)
    assert list(df["workload"]) == ["gpt2", "resnet50"]
    for (_, row), p in zip(df.iterrows(), preds, strict=True):
        r = workload_residency(p.ops, lv)
        assert row["activations on chip (%)"] == pytest.approx(100 * r.activations)
        assert row["weights on chip (%)"] == pytest.approx(100 * r.weights)
        assert fits_from(row["next"], "weights") == fits_from(residency_text(r, lv), "Weights")
    assert df.loc[0, "KV cache on chip (%)"] == pytest.approx(0.0) and math.isnan(df.loc[1, "KV cache on chip (%)"])
    big = npu(300)
    _, all_in = residency_table(big, [dse.predict(dse.workload(**GPT2), big)], ["gpt2"])
    assert all_in.loc[0, "next"] == "every tensor stays" and all_in.loc[0, "weights on chip (%)"] == 100
    tsp = DesignBatch.from_hardware(dse.hardware("groq-tsp"))  # no DRAM: nothing to keep apart from main memory
    line, empty = residency_table(tsp, [dse.predict(dse.workload("resnet50", batch=1), tsp)], ["resnet50"])
    assert line.startswith("every tensor (no DRAM level") and empty.empty


def test_a_level_named_for_its_kind_is_not_named_twice() -> None:
    """Gaudi 2's SRAM level is called ``sram``: 'sram 48 MiB' and '... of sram.', not 'sram SRAM'."""
    d = DesignBatch.from_hardware(dse.hardware("gaudi2"))
    lv = resident_level(d)
    assert lv.label() == "sram 48 MiB" and lv.named == "sram"
    assert resident_level(npu(32)).named == "global SRAM"


def test_a_residency_policy_that_keeps_a_kind_off_chip_is_not_called_every_tensor() -> None:
    """``--residency activations`` printed 'weights: none ...; Every tensor stays on chip.': what the scenario's policy
    keeps off chip is said instead, in the text and in the explorer's next column."""
    d = npu(300)
    lv = resident_level(d)
    for policy, off in (("activations", "The weights and KV cache stay off chip by the scenario's residency: "
                                        "activations."),
                        ("weights", "The activations stay off chip by the scenario's residency: weights.")):
        ops = dse.predict(dse.workload(**GPT2, residency=policy), d).ops
        r = workload_residency(ops, lv)
        assert r.next_kind is None and residency_text(r, lv).endswith(off)
        assert "Every tensor" not in residency_text(r, lv)
    _, df = residency_table(d, [dse.predict(dse.workload(**GPT2, residency="activations"), d)], ["gpt2"])
    assert df.loc[0, "next"] == "weights and KV cache off chip (residency: activations)"
