"""Issue 32's check as a new user runs it: six public NPU dies written as copies of npu-7nm (tests/cost/npu_copies.py)
priced by ``dse area``; docs/area_calibration.md quotes the table."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from dse.hardware.designs import DesignBatch
from dse.hardware.templates import hardware_from_mapping
from tests.cost.npu_copies import DIES, table, template

DOC = Path(__file__).parents[2] / "docs" / "area_calibration.md"


@pytest.fixture(scope="module")
def local():
    return table()


def test_every_copy_is_a_buildable_chip_with_its_published_figures() -> None:
    for name, p in DIES.items():
        hw = hardware_from_mapping(template(name), file=f"{name}.yaml")
        d = DesignBatch.from_hardware(hw)
        assert hw.compute.cores == p["cores"] and hw.process_node == p["node"]
        assert float(d.capacity[0, :2].sum()) / 2**20 == pytest.approx(p["sram_mib"], rel=1e-6)
        assert (p["dram"] is None) == (len(hw.memory) == 2)


def test_local_traffic_prices_northpoles_mesh_at_a_quarter_of_uniform_traffics(local) -> None:
    # a 16 x 16 mesh: uniform traffic crosses 4 x 16 links' worth of bisection, local traffic the 256 ports
    uniform = table("uniform")
    assert uniform.loc["northpole", "noc_mm2"] == pytest.approx(4 * local.loc["northpole", "noc_mm2"], rel=0.05)
    # the default (local) keeps the network under a third of the die; uniform traffic made it more than the die
    assert local.loc["northpole", "noc_mm2"] < local.loc["northpole", "model_mm2"] / 3
    assert uniform.loc["northpole", "noc_mm2"] > 800
    # where the bisection holds every port (a crossbar, a mesh of at most 16 cores) the two agree
    assert uniform.loc["hanguang-800", "noc_mm2"] == pytest.approx(local.loc["hanguang-800", "noc_mm2"])
    assert uniform.loc["rngd", "noc_mm2"] == pytest.approx(local.loc["rngd", "noc_mm2"])


def test_the_doc_quotes_the_table(local) -> None:
    text = DOC.read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `([a-z0-9-]+)` \(copy\) \|(?:[^|]+\|){4} ([+-]?\d+\.\d) % \|", text, re.M))
    assert sorted(rows) == sorted(DIES)
    for die, err in rows.items():
        assert float(err) == pytest.approx(local.loc[die, "err_pct"], abs=0.051), die
    err = local.err_pct.abs()
    assert f"median {err.median():.1f} %, max {err.max():.1f} %" in text
    # the measured figures (issue 32 asks median <= 15 %, max <= 30 %: not met; see the doc)
    assert np.isfinite(err).all() and err.median() < 30 and err.max() < 50


def test_a_copy_takes_the_vector_rate_its_die_publishes_and_npu_7nms_share_only_where_none_is_public() -> None:
    """The issue's rule: a copy is written from the die's published figures, npu-7nm's proportions only for what the
    die does not publish. MTIA v2 (2.76 TFLOP/s fp32, Hot Chips 2024) and Ascend 910 (2048-bit vectors per core)
    have a vector rate in their records; the other four do not and take npu-7nm's vector lanes per MAC."""
    from dse.cost.dies import load_dies
    from tests.cost.npu_copies import VECTOR_FP32_PER_MAC

    records = {d.name: d for d in load_dies()}
    for name, p in DIES.items():
        published = records[name].vector_fp32_tflops or None  # 0: the record gives no vector rate
        assert p.get("vector_fp32") == published, name
        hw = hardware_from_mapping(template(name), file=f"{name}.yaml")
        got = hw.compute.vector.peak_tflops["fp32"]
        rows, cols = p["array"]
        share = VECTOR_FP32_PER_MAC * p["cores"] * rows * cols * 2 * p["clock"] * 1e9 / 1e12
        assert got == pytest.approx(share if published is None else published), name
