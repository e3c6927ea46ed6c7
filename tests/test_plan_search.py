"""dse.plan_search: every plan of a workload on N chips, predicted at once; the fastest that fits."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dse
from dse.cli import main
from dse.errors import DseError
from dse.plan_search import best_plan, no_fit_reason
from dse.workloads.plans import candidates, divisors

TRAIN_7B = {"phase": "training", "batch": 16, "seq": 2048, "dtype": "bf16"}


@pytest.fixture(scope="module")
def wl7():
    return dse.workload("llama2-7b", **TRAIN_7B)


@pytest.fixture(scope="module")
def search7(wl7):
    return best_plan(wl7, "dgx-h100", 8)


def test_candidates_cover_the_degrees_that_divide_the_chips(wl7):
    c = candidates(wl7, 16, per_node=8)
    assert {k["tp"] for k in c} == {1, 2, 4, 8}  # TP stays inside the 8-chip node
    assert all(k["tp"] * k["pp"] * k["dp"] == 16 for k in c)
    assert {k["recompute"] for k in c} == {"none", "minimal", "selective", "full"}
    assert {k["zero"] for k in c if k["dp"] > 1} == {0, 1, 2, 3} and {k["zero"] for k in c if k["dp"] == 1} == {0}
    assert all(16 // k["dp"] % k["microbatches"] == 0 and k["microbatches"] >= k["pp"] for k in c)
    assert {k["sp"] for k in c if k["tp"] > 1} == {False, True} and not any(k["sp"] for k in c if k["tp"] == 1)
    held = candidates(wl7, 16, per_node=8, tp=2, zero=1, recompute="full")
    assert held and all((k["tp"], k["zero"], k["recompute"]) == (2, 1, "full") for k in held)
    assert divisors(12) == [1, 2, 3, 4, 6, 12]


def test_moe_models_get_expert_parallel_candidates():
    wl = dse.workload("mixtral-8x7b", phase="training", batch=8, seq=1024)
    eps = {k["ep"] for k in candidates(wl, 8, per_node=8)}
    assert eps == {1, 2, 4, 8}


def test_best_plan_ties_or_beats_a_hand_grid_predicted_one_by_one(wl7, search7):
    """The search's winner against plans predicted independently (dse.predict per plan, not the batched call)."""
    assert search7.best is not None and search7.prediction.fits
    best_t = search7.prediction.time_s
    assert best_t == pytest.approx(search7.table["time_s"].iloc[0], rel=1e-9)
    fits = 0
    for tp, pp, zero, rec, mb in itertools.product((1, 2, 4, 8), (1, 2, 4, 8), (0, 1, 3), ("none", "selective", "full"),
                                                   (8, 16)):
        if tp * pp > 8 or 8 % (tp * pp) or (pp > 1 and mb < pp):
            continue
        dp = 8 // (tp * pp)
        if 16 % dp or (16 // dp) % mb or (dp == 1 and zero):
            continue
        if (tp, pp, zero, rec, mb) != (tp, pp, zero, "none", mb) and (tp + pp + mb) % 3:  # a third of the variants
            continue
        p = dse.predict(dse.workload("llama2-7b", plan={"tp": tp, "pp": pp, "dp": dp, "zero": zero, "recompute": rec,
                                                        "microbatches": mb}, **TRAIN_7B), "dgx-h100")
        if p.fits:
            fits += 1
            assert best_t <= p.time_s * (1 + 1e-9), (tp, pp, dp, zero, rec, mb)
    assert fits >= 10


def test_the_table_is_fastest_first_and_says_what_fits(search7):
    t = search7.table
    fit = t[t["fits"]]
    assert (fit["time_s"].diff().dropna() >= -1e-9 * fit["time_s"].iloc[0]).all()  # equal times may swap
    assert (fit["memory_gb"] <= search7.capacity_gb).all()
    assert (t.loc[~t["fits"] & (t["error"] == ""), "memory_gb"] > search7.capacity_gb).all()
    assert "best" in repr(search7) and "\n" not in repr(search7)


def test_fixed_fields_are_held(wl7):
    r = best_plan(wl7, "dgx-h100", 8, tp=2, recompute="full")
    assert (r.best.tp, r.best.recompute) == (2, "full")
    assert set(r.table["tp"]) == {2}


def test_per_core_ranks_and_padding_are_held_in_every_candidate() -> None:
    """An inf2.48xlarge plan: TP over NeuronCores (two per chip) with transformers-neuronx's padding, held by every
    candidate; the best is tensor parallel over the 12 chips (32 heads padded to 48 over 24 ranks)."""
    wl = dse.workload("llama3-8b", phase="decode", batch=1, context=2048)
    r = best_plan(wl, "inferentia2", 12, tp_per_chip=2, pad_heads=True)
    assert (r.best.tp, r.best.tp_per_chip, r.best.pad_heads) == (12, 2, True)
    assert set(r.table["tp_per_chip"]) == {2} and r.table["fits"].all()
    with pytest.raises(DseError, match=r"got tp_per_chip=0; accepted: a positive integer"):
        best_plan(wl, "inferentia2", 12, tp_per_chip=0)


def test_bad_input_is_one_line(wl7):
    with pytest.raises(DseError, match=r"accepted: tp dividing 8 \(1, 2, 4, 8\)"):
        best_plan(wl7, "dgx-h100", 8, tp=3)
    with pytest.raises(DseError, match="accepted: tp, pp"):
        best_plan(wl7, "dgx-h100", 8, shards=8)
    with pytest.raises(DseError, match=r"accepted: fsdp dividing 8 \(1, 2, 4, 8\)") as e:
        best_plan(wl7, "dgx-h100", 8, fsdp=3)
    assert e.value.field == "fsdp"
    with pytest.raises(DseError, match="accepted: zero 3 or unset") as e:
        best_plan(wl7, "dgx-h100", 8, fsdp=4, zero=1)
    assert e.value.field == "zero"
    with pytest.raises(DseError, match=r"got zero=5; accepted: 0, 1, 2 or 3"):  # said 'no candidate'
        best_plan(wl7, "dgx-h100", 8, zero=5)
    with pytest.raises(DseError, match=r"got sp with tp=1; accepted: sp with tp > 1"):
        best_plan(wl7, "dgx-h100", 8, tp=1, sp=True)
    with pytest.raises(DseError, match=r"no candidate with interleave=2"):
        best_plan(dse.workload("llama2-7b", phase="training", batch=1), "dgx-h100", 8, interleave=2)
    with pytest.raises(DseError, match="already has a plan"):
        best_plan(dse.workload("llama2-7b", plan={"tp": 2}, **TRAIN_7B), "dgx-h100", 8)


def test_hybrid_sharding_is_searched_with_its_shard_group_inside_a_node(wl7):
    """ZeRO 3 is tried fully sharded and hybrid (PyTorch HYBRID_SHARD): a shard group of fsdp ranks that fits one node
    with its TP ranks, replicated across the groups; nothing else gets an fsdp."""
    c = candidates(wl7, 16, per_node=8)
    hybrid = [k for k in c if "fsdp" in k]
    assert all(k["zero"] == 3 and 1 < k["fsdp"] < k["dp"] and k["dp"] % k["fsdp"] == 0 and k["fsdp"] * k["tp"] <= 8
               for k in hybrid)
    assert {k["fsdp"] for k in hybrid if k["tp"] == 1} == {2, 4, 8}
    assert {k["fsdp"] for k in hybrid if k["tp"] == 2} == {2, 4}
    assert not any(k["tp"] == 8 for k in hybrid)  # 8-way TP fills the node: no room for a shard group
    held = candidates(wl7, 16, per_node=8, fsdp=4)
    assert held and all(k["zero"] == 3 and k.get("fsdp", k["dp"]) == 4 for k in held)


def test_a_hybrid_plan_is_predicted_as_the_same_plan_built_by_hand(wl7):
    r = best_plan(wl7, "dgx-h100", 16, tp=1, pp=1, fsdp=4, recompute="none")
    assert r.best.hybrid and (r.best.shards, r.best.replicas) == (4, 4) and r.best.label().startswith("fsdp4 x4")
    assert set(r.table["fsdp"]) == {4}
    by_hand = dse.predict(dse.workload("llama2-7b", plan={"chips": 16, "dp": 16, "fsdp": 4,
                                                           "microbatches": r.best.m}, **TRAIN_7B), "dgx-h100")
    assert r.prediction.time_s == pytest.approx(by_hand.time_s, rel=1e-9)
    # within a node the shard group's gathers stay on NVLink; its state is 4x a fully sharded plan's
    full = best_plan(wl7, "dgx-h100", 16, tp=1, pp=1, zero=3, recompute="none", microbatches=r.best.m)
    t = full.table
    plain = t[(t["fsdp"] == 16) & t["error"].eq("")].iloc[0]
    assert r.table["memory_gb"].iloc[0] > plain["memory_gb"]


def test_a_torus_places_hybrid_groups_on_whole_axes_and_slices():
    """Two v6e-256 slices: a shard group of one slice (256 ranks, both axes) replicated over the data-centre network
    is placed, as is a 16-rank group on one axis; groups of 2..8 ranks would split an axis and are rows with their
    reason, as are the replica groups that would split one."""
    wl = dse.workload("llama3-70b", phase="training", batch=512, seq=8192)
    r = best_plan(wl, "tpu-v6e-pod", 512, tp=1, pp=1, recompute="full", microbatches=1)
    t = r.table.set_index("label")
    assert t.loc["fsdp256 x2 rc:full", "fits"] and t.loc["fsdp256 x2 rc:full", "error"] == ""
    assert t.loc["fsdp16 x32 rc:full", "error"] == "" and t.loc["fsdp16 x32 rc:full", "time_s"] > 0
    for bad in ("fsdp2 x256 rc:full", "fsdp8 x64 rc:full", "fsdp128 x4 rc:full"):
        assert "whole dimensions of the torus" in t.loc[bad, "error"] and not t.loc[bad, "fits"]
    assert r.best.label() in {"fsdp512 rc:full", "fsdp256 x2 rc:full"}


def test_the_cli_holds_and_shows_the_shard_group(capsys):
    assert main(["plan", "llama2-7b", "dgx-h100", "--chips", "16", "--phase", "training", "--batch", "16", "--seq",
                 "2048", "--tp", "1", "--pp", "1", "--fsdp", "8", "--recompute", "none", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "fsdp" in out.splitlines()[0] and "best: fsdp8 x2" in out
    assert main(["plan", "llama2-7b", "dgx-h100", "--chips", "16", "--phase", "training", "--batch", "16",
                 "--fsdp", "5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: fsdp: got fsdp=5 with 16 chips")


def test_no_plan_fits_says_the_smallest_footprint():
    r = best_plan(dse.workload("llama2-70b", phase="training", batch=8, seq=2048), "dgx-h100", 2)
    assert r.best is None and r.prediction is None
    assert "exceeds the chip's 85.9 GB" in no_fit_reason(r)  # 80 GiB


def test_cli(capsys):
    assert main(["plan", "llama2-7b", "dgx-h100", "--chips", "8", "--phase", "training", "--batch", "16", "--seq",
                 "2048", "--top", "3", "--tp", "2", "--recompute", "none"]) == 0
    out = capsys.readouterr().out
    assert "candidate plans of llama2-7b[training b16 s2048" in out and "best: tp2" in out
    assert main(["plan", "llama2-70b", "dgx-h100", "--chips", "2", "--phase", "training", "--batch", "8", "--zero",
                 "3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --chips: no plan fits")


def test_the_cli_plans_serving_with_its_lengths(capsys):
    """dse plan had no --input-len/--output-len, so phase serving (which dse.best_plan plans) was refused."""
    assert main(["plan", "llama2-70b", "dgx-h100", "--chips", "8", "--phase", "serving", "--batch", "32",
                 "--input-len", "1024", "--output-len", "256", "--top", "2", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "candidate plans of llama2-70b[serving b32 in1024 out256" in out and "best: tp8" in out
    # a serving pass is said as one (it said 'per step'), with what it gives a user, as dse predict says it
    assert "s per pass (prefill of the batch's prompts + output_len decode steps)" in out
    assert "tokens_per_s" in out.splitlines()[0].split()  # the table gives each plan's output tokens/s too
    assert re.search(r"^serving: [\d.]+ output tokens/s, TTFT [\d.]+ ms, TPOT [\d.]+ ms", out, re.M)


def test_one_chip_has_one_plan_and_it_is_the_best_when_it_fits(capsys):
    """On one chip the only plan is the trivial one: when the workload fits, it is the best (it came back as None,
    which the CLI read as 'no plan fits', a 14 GB model 'exceeding' an 80 GB chip)."""
    r = best_plan(dse.workload("llama2-7b", phase="decode"), "h100-sxm", 1)
    assert r.best is not None and r.best.trivial and r.prediction is not None and r.table["fits"].all()
    assert main(["plan", "llama2-7b", "h100-sxm", "--chips", "1", "--phase", "decode"]) == 0
    assert "best: 1 chip" in capsys.readouterr().out
    assert best_plan(dse.workload("llama2-70b", phase="training", batch=8), "h100-sxm", 1).best is None


def test_a_torus_pod_searches_past_the_plans_it_cannot_place() -> None:
    """On a 4x8 slice of a TPU v5e pod a group of 2 fills no whole dimension (a group of 4 takes the 4-long one):
    those candidates are rows with their reason, and the search still returns the fastest plan it can place."""
    wl = dse.workload("llama2-7b", phase="training", batch=32, seq=512)
    r = best_plan(wl, "tpu-v5e-pod", 32, recompute="none", zero=1)  # 65 candidates of the 1444 (15 s -> 0.3 s)
    unplaced = r.table[r.table["error"].str.contains("whole dimensions of the torus")]
    assert len(unplaced) and (unplaced["tp"] == 2).any() and not unplaced["fits"].any()
    assert ((r.table["tp"] == 4) & (r.table["error"] == "")).any()  # tp 4 on the 4-long axis is placed
    assert r.best is not None and r.prediction.time_s > 0


def test_a_chip_yaml_is_planned_with_its_own_numbers(tmp_path) -> None:
    """dse plan on a copy of npu-7nm with twice the cores (its file name and template name unchanged) planned the stock
    npu-7nm, and on a renamed copy or a study's best_design.yaml failed ('unknown hardware template'): the system was
    rebuilt from the chip's name."""
    import yaml

    data = dse.hardware("npu-7nm").model_dump(mode="python", exclude_none=True)
    data["compute"]["cores"] *= 2
    for unit in ("matrix", "vector"):
        data["compute"][unit]["peak_tflops"] = {k: v * 2 for k, v in data["compute"][unit]["peak_tflops"].items()}
    (tmp_path / "same").mkdir()
    same, renamed = tmp_path / "same" / "npu-7nm.yaml", tmp_path / "mynpu.yaml"
    same.write_text(yaml.safe_dump(data))
    renamed.write_text(yaml.safe_dump({**data, "name": "mynpu"}))
    wl = dse.workload("llama2-7b", **TRAIN_7B)
    stock = best_plan(wl, "npu-7nm", 8, tp=1, pp=1, zero=3, recompute="none", microbatches=1)
    for path in (same, renamed):
        r = best_plan(wl, str(path), 8, tp=1, pp=1, zero=3, recompute="none", microbatches=1)
        by_hand = dse.predict(dse.workload("llama2-7b", plan={"chips": 8, "dp": 8, "zero": 3, "microbatches": 1},
                                           **TRAIN_7B), dse.hardware(str(path)))
        assert r.prediction.time_s == pytest.approx(by_hand.time_s, rel=1e-9)
        assert r.prediction.time_s < 0.8 * stock.prediction.time_s  # twice the compute


def test_the_cli_takes_every_scenario_flag_dse_predict_takes(capsys):
    """dse plan took 8 scenario flags (no --framework, --grad-dtype, --activation-dtype, ...), so a plan of an XLA or
    fp8 step could only be searched through the API; it now shares dse predict's scenario flags, and they reach the
    workload it plans."""
    from dse.cli import SCENARIO_FLAGS, build_parser

    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    plan_dests = {a.dest for a in sub.choices["plan"]._actions}
    predict_dests = {a.dest for a in sub.choices["predict"]._actions}
    assert set(SCENARIO_FLAGS) <= plan_dests and set(SCENARIO_FLAGS) <= predict_dests
    assert main(["plan", "llama2-7b", "dgx-h100", "--chips", "8", "--phase", "training", "--batch", "16", "--seq",
                 "2048", "--framework", "xla", "--grad-dtype", "fp32", "--tp", "1", "--pp", "1", "--top", "1",
                 "--quiet"]) == 0
    assert "llama2-7b[training b16 s2048 bf16 fw:xla grad_dtype:fp32]" in capsys.readouterr().out


def test_the_table_shows_an_error_column_only_when_a_shown_row_has_one(capsys):
    """On a v5e slice some candidates cannot be placed, so the whole table has errors, but the fastest rows shown
    built: their table had an empty error column (and trailing spaces)."""
    assert main(["plan", "llama2-7b", "tpu-v5e-pod", "--chips", "32", "--phase", "training", "--batch", "32", "--seq",
                 "512", "--recompute", "none", "--zero", "1", "--top", "2", "--quiet"]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert "error" not in header.split() and header == header.rstrip()


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=5000))
def test_divisors_are_every_divisor_ascending(n):
    """The sqrt(n) trial division returns what testing every k <= n does."""
    assert divisors(n) == [k for k in range(1, n + 1) if n % k == 0]


@pytest.mark.parametrize("chips", [2**62, 2**20 + 1, 0, True])
def test_a_chip_count_past_the_limit_is_one_line_at_once(chips, capsys):
    """The fuzz corpus's ``dse plan ... --chips 4611686018427387904`` ran past its 30 s (the divisors of 2^62 by
    trial up to n); a count beyond dse.limits.MAX_CHIPS (2^20) is refused before any search, and so is a plan's."""
    with pytest.raises(DseError, match=r"accepted: a whole number of chips from 1 to 1048576"):
        best_plan("llama2-7b", "dgx-h100", chips)
    if chips is not True and chips > 0:
        assert main(["plan", "llama2-7b", "dgx-h100", "--chips", str(chips)]) == 2
        assert capsys.readouterr().err.strip().splitlines()[-1].startswith("error: chips: got ")
        with pytest.raises(DseError, match=r"plan.chips: got .*accepted: a number <= 1048576"):
            dse.predict("llama2-7b", "h100-sxm", chips=chips, dp=chips)


def test_placing_a_search_asks_each_group_once_and_gives_each_candidate_its_own_answer() -> None:
    """dse.predict.network.placed keeps each (collective, ranks, stride) group's answer for the whole search (the
    1608 plans of LLaMA-2-70B on 32 H100 share a few dozen groups: 2.3 -> 0.15 s); every candidate still gets what
    placement_error gives it alone, on a torus where some groups cannot be placed."""
    from dse.plan_search import _resolve
    from dse.predict import network
    from dse.workloads.plans import expand

    wl = dse.workload("llama2-7b", phase="training", batch=32, seq=512)
    sysm, _ = _resolve("tpu-v5e-pod", 32)
    wls, _, errors = expand(wl, candidates(wl, 32, per_node=sysm.network[0].size, recompute="none", zero=1))
    kept, errs = network.placed(wls, errors, sysm)
    alone = iter([network.placement_error(w, sysm) for w in wls])
    assert errs == [e if e else next(alone) for e in errors]
    assert any("whole dimensions of the torus" in e for e in errs) and len(kept) == sum(e == "" for e in errs)
    calls = []
    real = network.variant_coefficients
    try:
        network.variant_coefficients = lambda *a, **k: calls.append(a[:4]) or real(*a, **k)
        network.placed(wls, errors, sysm)
    finally:
        network.variant_coefficients = real
    assert len(calls) == len(set(calls))  # each group asked once
