"""dse.hardware.system: network levels, chip counts, resizing, links taken from the chip, and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import dse
from dse.errors import DseError
from dse.hardware.system import (
    NetworkLevel,
    System,
    default_system,
    is_system,
    list_systems,
    load_system,
    systems_dir,
)

H100 = dse.hardware("h100-sxm")


def _level(**kw) -> dict:
    return {"name": "l0", "size": 8, "topology": "switch", "latency_us": 1.0, "efficiency": 0.8, "source": "test",
            **kw}


def test_shipped_systems_load_and_multiply_their_level_sizes() -> None:
    assert {"dgx-a100", "dgx-h100", "npu-board", "tpu-v4-pod"} <= set(list_systems())
    assert is_system("dgx-h100") and not is_system("h100-sxm")
    dgx = load_system("dgx-h100")
    assert dgx.chips == 8 and dgx.sizes == [8, 1]
    pod = load_system("tpu-v4-pod")
    assert pod.chips == 64 == 4 * 4 * 4


def test_level_zero_takes_the_chip_links_and_bidirectional_bandwidth_is_halved() -> None:
    links, bw, eff, linked = load_system("dgx-h100").level_arrays(H100)
    assert links == [18.0, 1.0]  # 18 NVLink4 links from h100-sxm.yaml, one NIC per GPU
    assert bw == [25e9, 50e9] and eff == [0.8, 0.8] and linked == [True, False]
    lv = NetworkLevel(**_level(link_bandwidth_gbps=900, links_per_chip=1, bandwidth_direction="bidirectional"))
    assert lv.per_direction(900) == 450e9
    assert NetworkLevel(**_level()).per_direction(50) == 50e9


def test_levels_carry_latency_in_seconds() -> None:
    levels = load_system("dgx-h100").network  # typed levels; NCCL's Simple ring steps: NVLink 3.4 us, network 14 us
    assert levels[0].latency_s == pytest.approx(3.4e-6) and levels[0].in_network_reduction is True
    assert levels[1].latency_s == pytest.approx(14e-6) and levels[1].topology == "switch"
    assert levels[0].collective_library == "nccl"


def test_resizing_scales_the_outer_level_or_shrinks_the_node() -> None:
    dgx = load_system("dgx-h100")
    assert dgx.resized(8) is dgx
    assert dgx.resized(64).sizes == [8, 8]
    assert dgx.resized(2).sizes == [2]
    pod = load_system("tpu-v4-pod")
    small = pod.resized(16)
    assert small.sizes == [16] and small.network[0].dims == [4, 4]
    with pytest.raises(DseError, match=r"chips: 32 chips do not fill whole dimensions of the torus \[4, 4, 4\]; "
                                       r"accepted: 4, 16, 64"):
        pod.resized(32)
    with pytest.raises(DseError, match="chips: got chips=0; accepted: a positive integer"):
        dgx.resized(0)
    with pytest.raises(DseError, match=r"12 chips do not match the topology of dgx-h100 .*divisor of 8 or a multiple of 8"):
        dgx.resized(12)


def test_resizing_a_one_level_torus_names_only_counts_it_accepts() -> None:
    with pytest.raises(DseError) as ei:
        load_system("tpu-v4-pod").resized(24)
    assert "multiple of 1" not in str(ei.value) and "accepted: 4, 16, 64" in str(ei.value)
    with pytest.raises(DseError, match="accepted: 4, 16, 64"):
        load_system("tpu-v4-pod").resized(128)


@pytest.mark.parametrize(("level", "words"), [
    (_level(topology="torus", size=64), "a torus level needs dims"),
    (_level(topology="torus", size=64, dims=[4, 4, 2]), "torus dims [4, 4, 2] multiply to 32, not size 64"),
    (_level(dims=[2, 4]), "dims apply to a torus only"),
    (_level(topology="ring", in_network_reduction=True), "in_network_reduction needs a switch topology"),
])
def test_inconsistent_levels_are_rejected(level: dict, words: str) -> None:
    with pytest.raises(ValueError) as ei:
        NetworkLevel(**level)
    assert words in str(ei.value)


def test_outer_levels_need_their_own_links_and_names_are_unique() -> None:
    with pytest.raises(ValueError, match=r"network level 1 \(l1\) needs links_per_chip and link_bandwidth_gbps"):
        System(name="s", chip="h100-sxm", source="test", network=[_level(), _level(name="l1")])
    with pytest.raises(ValueError, match="network level names must be unique"):
        System(name="s", chip="h100-sxm", source="test",
               network=[_level(), _level(links_per_chip=1, link_bandwidth_gbps=50)])


def test_a_system_yaml_with_a_bad_field_is_one_line_with_file_and_field(tmp_path: Path) -> None:
    data = yaml.safe_load((systems_dir() / "dgx-h100.yaml").read_text())
    data["network"][1]["efficiency"] = 1.2
    path = tmp_path / "sys.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(DseError) as ei:
        load_system(path)
    assert str(ei.value) == f"{path}: network.1.efficiency: got 1.2; accepted: a number <= 1.0"
    data["network"][1]["efficiency"] = 0.8
    data["chip"] = "h900"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(DseError, match="unknown hardware template 'h900'"):
        load_system(path)
    with pytest.raises(DseError, match="unknown system 'dgx-z'; accepted: dgx-a100, dgx-h100"):
        load_system("dgx-z")


def test_a_level_taking_chip_links_needs_a_chip_with_a_network_block() -> None:
    data = H100.model_dump(mode="python", exclude_none=True)
    data.pop("network")
    with pytest.raises(DseError, match="network.nvlink4: network level nvlink4 takes its links from the chip"):
        load_system("dgx-h100").level_arrays(dse.hardware(data))


def test_default_system_is_the_shipped_one_else_a_switch_over_the_chip_links() -> None:
    assert default_system(dse.hardware("npu-7nm")).name == "npu-board"
    g = default_system(dse.hardware("tpu-v5e"))  # no shipped system: one switch over the chip's links
    assert g.name == "tpu-v5e-switch" and g.chips == 8
    links, bw, _, _ = g.level_arrays(dse.hardware("tpu-v5e"))
    hw = dse.hardware("tpu-v5e")
    assert links == [float(hw.network.links)] and bw == [hw.network.link_bandwidth_gbps * 1e9]
    data = H100.model_dump(mode="python", exclude_none=True)
    data.pop("network")
    data["name"] = "h100-nolinks"
    with pytest.raises(DseError, match="system: h100-nolinks has no network block"):
        default_system(dse.hardware(data))
