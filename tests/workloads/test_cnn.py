"""dse.workloads.cnn: layer lists and block macros expand to the operators, shapes and parameters by hand."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from dse.units import repo_root
from dse.workloads.cnn import CNNArch, build
from dse.workloads.scenario import Scenario


def _build(layers: list[dict], *, hw: int = 8, c: int = 3, **sc) -> tuple[pd.DataFrame, dict]:
    arch = CNNArch.model_validate({"input": {"height": hw, "width": hw, "channels": c}, "layers": layers})
    rows, facts = build(arch, Scenario(**sc), "toy")
    return pd.DataFrame(rows), facts


def _shipped(name: str) -> CNNArch:
    data = yaml.safe_load(Path(repo_root() / "workloads" / f"{name}.yaml").read_text())
    return CNNArch.model_validate(data["arch"])


def test_conv_bn_relu_pool_fc_by_hand() -> None:
    df, facts = _build([{"op": "conv", "out": 4, "k": 3}, {"op": "avgpool", "global": True}, {"op": "fc", "out": 10}],
                       batch=2, dtype="fp32")
    assert df["name"].tolist() == ["l0.conv3x3", "l0.conv3x3.bn", "l0.conv3x3.relu", "l1.avgpool", "l2.fc"]
    conv, bn, relu, pool, fc = (df.iloc[i] for i in range(5))
    assert conv["flops"] == 2 * (2 * 8 * 8) * 4 * 27  # same padding keeps 8x8
    assert bn["flops"] == 2 * (2 * 8 * 8 * 4) and relu["flops"] == 2 * 8 * 8 * 4
    assert pool["flops"] == 64 * (2 * 4) and pool["bytes_read"] == 2 * 8 * 8 * 4 * 4
    assert (fc["M"], fc["N"], fc["K"]) == (2, 10, 4)
    # conv weights 4*3*9 + BN scale/shift 2*4 + FC 4*10 + bias 10
    assert facts == {"phase": "forward", "batch": 2, "resolution": 8, "params": 108 + 8 + 50}


def test_fused_inference_folds_batch_norm_into_the_conv_and_fuses_the_activation() -> None:
    df, facts = _build([{"op": "conv", "out": 4, "k": 3}], fuse_elementwise=True)
    # BN folded into the weights, the activation run in the conv's epilogue (TensorRT layer fusion)
    assert df["name"].tolist() == ["l0.conv3x3"] and facts["params"] == 108 + 8
    trained, _ = _build([{"op": "conv", "out": 4, "k": 3}], fuse_elementwise=True, phase="training")
    assert trained["name"].str.endswith(".bn").any()  # training keeps batch norm


def test_bottleneck_with_stride_projects_the_shortcut() -> None:
    df, facts = _build([{"op": "bottleneck", "mid": 8, "out": 32, "stride": 2}], hw=16, c=16)
    names = df["name"].tolist()
    assert names[:1] == ["l0.bottleneck0.conv1x1a"] and "l0.bottleneck0.downsample" in names
    down = df[df["name"] == "l0.bottleneck0.downsample"].iloc[0]
    assert (down["M"], down["N"], down["K"]) == (8 * 8, 32, 16)  # 1x1 stride 2 on the 16x16x16 input
    add = df[df["name"] == "l0.bottleneck0.add"].iloc[0]
    assert add["bytes_read"] == 2 * 8 * 8 * 32 * 2  # two bf16 inputs of 8x8x32
    # 1x1 (16->8) + 3x3 (8->8) + 1x1 (8->32) + projection (16->32), each with BN
    assert facts["params"] == 16 * 8 + 2 * 8 + 8 * 8 * 9 + 2 * 8 + 8 * 32 + 2 * 32 + 16 * 32 + 2 * 32


def test_identity_blocks_add_without_projection() -> None:
    df, _ = _build([{"op": "basic", "out": 8, "repeats": 2}], c=8)
    assert not df["name"].str.contains("downsample").any()
    assert df["name"].str.endswith(".add").sum() == 2


def test_inverted_residual_skips_expand_at_ratio_one_and_adds_only_on_same_shape() -> None:
    df, _ = _build([{"op": "inverted_residual", "expand": 1, "out": 16},
                    {"op": "inverted_residual", "expand": 6, "out": 16, "stride": 1}], c=16)
    names = df["name"].tolist()
    assert "l0.invres0.expand" not in names and "l1.invres0.expand" in names
    expand = df[df["name"] == "l1.invres0.expand"].iloc[0]
    assert expand["N"] == 96
    assert "l0.invres0.add" in names and "l1.invres0.add" in names
    dw = df[df["name"] == "l1.invres0.dw3x3"].iloc[0]
    assert dw["unit"] == "vector" and dw["batch"] == 96


def test_squeeze_excite_reads_the_block_and_scales_it() -> None:
    df, _ = _build([{"op": "inverted_residual", "expand": 4, "out": 8, "se": 0.25, "se_on": "expanded",
                     "se_divisor": 8}], c=8)
    fc1 = df[df["name"] == "l0.invres0.se.fc1"].iloc[0]
    assert (fc1["M"], fc1["N"], fc1["K"]) == (1, 8, 32)  # 0.25 x 32 = 8, a multiple of 8
    scale = df[df["name"] == "l0.invres0.se.scale"].iloc[0]
    assert scale["bytes_read"] == (8 * 8 * 32 + 32) * 2


def test_unet_up_concatenates_the_saved_skip_and_errors_without_one() -> None:
    df, _ = _build([{"op": "conv", "out": 8, "k": 3}, {"op": "save"}, {"op": "maxpool", "k": 2, "stride": 2},
                    {"op": "conv", "out": 16, "k": 3}, {"op": "up", "out": 8}, {"op": "conv", "out": 8, "k": 3}])
    up = df[df["name"] == "l4.upconv2x2"].iloc[0]
    assert (up["M"], up["N"], up["K"]) == (4 * 4, 4 * 8, 16)
    last = df[df["name"] == "l5.conv3x3"].iloc[0]
    assert last["K"] == (8 + 8) * 9 and last["M"] == 64  # back at 8x8 with the skip's 8 channels added
    with pytest.raises(ValueError, match="toy: layer 0 \\(up\\) has no saved activation"):
        _build([{"op": "up", "out": 8}])
    with pytest.raises(ValueError, match="toy: layer l0 \\(concat\\) has no saved activation"):
        _build([{"op": "concat"}])


def test_cnn_rejects_a_language_model_phase() -> None:
    with pytest.raises(ValueError, match=r"toy is a CNN; accepted phase: forward, training \(got decode\)"):
        _build([{"op": "conv", "out": 4, "k": 3}], phase="decode")


def test_resolution_rescales_the_shipped_resnet50_and_batch_scales_flops_linearly() -> None:
    arch = _shipped("resnet50")
    rows224, facts = build(arch, Scenario(batch=1), "resnet50")
    assert facts["params"] == 25_557_032  # torchvision resnet50 num_params (docs/reference/model_flops.csv)
    macs = sum(r["flops"] * r["count"] for r in rows224 if r["unit"] == "matrix") / 2
    assert macs / 1e9 == pytest.approx(4.09, abs=0.005)  # torchvision 'GFLOPS' 4.09 (= GMACs)
    rows4, _ = build(arch, Scenario(batch=4), "resnet50")
    f1 = sum(r["flops"] * r["count"] for r in rows224)
    assert sum(r["flops"] * r["count"] for r in rows4) == pytest.approx(4 * f1)
    rows448, f448 = build(arch, Scenario(batch=1, resolution=448), "resnet50")
    conv = sum(r["flops"] for r in rows448 if r["kind"] == "conv") / sum(r["flops"] for r in rows224 if r["kind"] == "conv")
    assert conv == pytest.approx(4.0, rel=1e-3) and f448["resolution"] == 448


def test_training_batch_norm_reads_its_input_twice_and_its_backward_moves_five_passes() -> None:
    layers = [{"op": "conv", "out": 4, "k": 3}]
    fwd, _ = _build(layers, batch=2, dtype="fp16")
    train, _ = _build(layers, batch=2, dtype="fp16", phase="training")
    e = 2 * 8 * 8 * 4 * 2  # elements x 2 bytes
    inf_bn = fwd.set_index("name").loc["l0.conv3x3.bn"]
    tr = train.set_index("name")
    assert (inf_bn["bytes_read"], inf_bn["bytes_written"]) == (e, e)
    assert (tr.loc["l0.conv3x3.bn", "bytes_read"], tr.loc["l0.conv3x3.bn", "bytes_written"]) == (2 * e, e)
    bwd = tr.loc["l0.conv3x3.bn.bwd"]
    assert bwd["bytes_read"] + bwd["bytes_written"] == 5 * e  # reduce (dy, x) + elemt (dy, x -> dx)
    # the ReLU is no statistics op: one read, one write either way
    assert tr.loc["l0.conv3x3.relu", "bytes_read"] == e


@pytest.mark.parametrize("dtype, transposes", [("fp16", True), ("tf32", True), ("bf16", True), ("fp32", False)])
def test_nchw_tensor_core_convs_transpose_in_and_out(dtype: str, transposes: bool) -> None:
    layers = [{"op": "conv", "out": 4, "k": 3, "stride": 2}]
    nhwc, _ = _build(layers, batch=2, dtype=dtype)
    nchw, _ = _build(layers, batch=2, dtype=dtype, memory_format="nchw")
    assert not nhwc["name"].str.contains("to_nhwc|to_nchw").any()
    names = nchw["name"].tolist()
    if not transposes:  # fp32 convolutions run on CUDA cores, which take NCHW as is
        assert names == nhwc["name"].tolist()
        return
    assert names[:3] == ["l0.conv3x3.to_nhwc", "l0.conv3x3", "l0.conv3x3.to_nchw"]
    b = 2 if dtype in ("fp16", "bf16") else 4
    t_in, t_out = nchw.iloc[0], nchw.iloc[2]
    assert t_in["bytes_read"] == t_in["bytes_written"] == 2 * 8 * 8 * 3 * b  # the input, 8x8x3
    assert t_out["bytes_read"] == t_out["bytes_written"] == 2 * 4 * 4 * 4 * b  # the stride-2 output, 4x4x4
    assert t_in["flops"] == 0


def test_depthwise_convs_need_no_layout_transpose() -> None:
    df, _ = _build([{"op": "conv", "out": 4, "k": 3}, {"op": "conv", "out": 4, "k": 3, "groups": 4}],
                   batch=2, dtype="fp16", memory_format="nchw")
    assert df["name"].str.endswith(".to_nhwc").sum() == 1


def test_channels_last_speeds_up_resnet50_amp_training_about_as_reported() -> None:
    """MosaicML Composer's Channels Last method card: NHWC 'accelerates ResNet-50 on ImageNet by about 30 %
    on NVIDIA V100 and A100'. Nothing is fitted on it: the NCHW / NHWC step-time ratio of ResNet-50 AMP
    training at batch 256 on an A100 lands within 1.2 .. 1.45 (the model: 1.37)."""
    import dse

    t = {f: dse.predict(dse.workload("resnet50", phase="training", batch=256, dtype="fp16", execution="eager",
                                     memory_format=f), "a100-80gb").time_s for f in ("nhwc", "nchw")}
    assert 1.2 < t["nchw"] / t["nhwc"] < 1.45


def test_conv_weights_are_held_weights_so_residency_reads_them_from_dram_when_they_do_not_fit():
    """A conv's B is its weights (``held: weights``, as a GEMM's): on a scratchpad NPU whose SRAM cannot keep
    ResNet-152's 116 MB of weights, every step reads the rest from DRAM (the convs were activations: the whole pass
    read 3.1 MB from HBM); with the weights fitting, a second step reads almost none of them."""
    import dse

    p = dse.predict(dse.workload("resnet152", batch=1, dtype="bf16"), "npu-7nm")
    o = p.ops
    conv = o[o["kind"] == "conv"]
    assert (conv["held"] == "weights").all() and (conv["held_bytes"] == conv["b_bytes"]).all()
    weights = float((conv["b_bytes"] * conv["count"]).sum())
    hbm = float((o["traffic_hbm_bytes"] * o["count"]).sum())
    sram = dse.hardware("npu-7nm").memory[1].capacity_bytes
    assert hbm >= weights - sram  # what does not fit in the global SRAM comes from HBM each step


def test_an_optable_gemm_of_two_activations_holds_nothing():
    from dse.workloads.importers import workload_from_description

    desc = {"name": "t", "family": "optable", "source": "test", "arch": {"ops": [
        {"op": "gemm", "name": "qk", "M": 128, "N": 128, "K": 64, "batch": 8, "weights": False},
        {"op": "gemm", "name": "proj", "M": 128, "N": 512, "K": 512}]}}
    ops = workload_from_description(desc).ops.set_index("name")
    assert ops.loc["qk", "held"] == "" and ops.loc["qk", "held_bytes"] == 0
    assert ops.loc["proj", "held"] == "weights" and ops.loc["proj", "held_bytes"] == ops.loc["proj", "b_bytes"] > 0
