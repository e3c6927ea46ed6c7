"""dse.hardware.fields: the knob and field tables drive the config schema, the search space and
DesignBatch's with_knobs / with_field / searchable_fields / to_hardware."""

from __future__ import annotations

import numpy as np
import pytest

import dse
from dse.config import Candidate, Space
from dse.hardware import fields
from dse.hardware.designs import DesignBatch
from dse.search.space import base_knobs, designs_from_params
from dse.units import MIB

NPU = DesignBatch.from_hardware(dse.hardware("npu-7nm"))


def test_the_config_knobs_are_the_table() -> None:
    for model in (Space, Candidate):
        for k in fields.KNOB_TABLE:
            assert model.model_fields[k.name].description == k.description
    assert list(Space(peak_tflops={"low": 1, "high": 2}, sram_mib={"low": 1, "high": 2}).knobs()) == [
        "peak_tflops", "sram_mib"]
    with pytest.raises(ValueError, match="accepted: peak_tflops, dram_bandwidth_tbps, sram_mib, params or split"):
        Space()


def test_the_search_space_reads_the_knob_table() -> None:
    base = base_knobs(NPU)
    assert list(base) == list(fields.KNOBS)
    for k in fields.KNOB_TABLE:  # config unit x si = the DesignBatch property
        assert base[k.name] * k.si == pytest.approx(float(getattr(NPU, k.batch_arg)[0]))
    twice = designs_from_params(NPU, [{"peak_tflops": 2 * base["peak_tflops"], "sram_mib": 2 * base["sram_mib"]}])
    assert twice.peak_flops[0] == pytest.approx(2 * NPU.peak_flops[0])
    assert twice.sram_bytes[0] == pytest.approx(2 * NPU.sram_bytes[0])
    assert twice.dram_bandwidth[0] == NPU.dram_bandwidth[0]


def _paths(batch: DesignBatch) -> list[tuple[str, fields.Field, int | None]]:
    out: list[tuple[str, fields.Field, int | None]] = [(f.path, f, None) for f in fields.COMPUTE_FIELDS]
    out += [(f.path.format(level=n), f, j) for j, n in enumerate(batch.level_names) for f in fields.LEVEL_FIELDS]
    return out


def test_every_table_field_is_searchable_set_in_si_and_written_back() -> None:
    searchable = NPU.searchable_fields()
    for path, f, j in _paths(NPU):
        assert path in searchable
        old = getattr(NPU, f.attr)[0] if j is None else getattr(NPU, f.attr)[0, j]
        value = float(old / f.si) * 2 if f.write != "int" else float(round(old / f.si)) + 1
        if np.isnan(value):  # unset in the template (an auto link width): any value sets it
            value = 48.0
        if f.attr in ("matrix_eff", "vector_eff", "bw_eff"):
            value = float(old) * 0.5  # an efficiency stays <= 1
        out = NPU.with_field(path, np.array([value]))
        got = getattr(out, f.attr)[0] if j is None else getattr(out, f.attr)[0, j]
        assert got == pytest.approx(value * f.si)
        hw = out.to_hardware(0, "t").model_dump(mode="python")
        node = hw["memory"][j] if j is not None else hw
        for part in (f.path.split(".")[-1:] if j is not None else f.path.split(".")):
            node = node[part]
        assert node == pytest.approx(value, rel=1e-8), path


def test_a_field_left_out_of_the_table_is_not_searchable(monkeypatch) -> None:
    keep = {p: f for p, f in fields.COMPUTE.items() if p != "compute.launch_overhead_us"}
    monkeypatch.setattr(fields, "COMPUTE", keep)
    assert "compute.launch_overhead_us" not in NPU.searchable_fields()
    with pytest.raises(ValueError, match="cannot search 'compute.launch_overhead_us'"):
        NPU.with_field("compute.launch_overhead_us", np.array([1.0]))


def test_knob_args_and_knob_values_are_the_one_conversion_each_way() -> None:
    # buildable targets (whole cores of 11.4688 TFLOP/s, whole stacks of 409.6 GB/s, whole 128 KiB macros) come
    # back unchanged
    cols = {"peak_tflops": np.array([9, 35]) * 11.4688, "dram_bandwidth_tbps": np.array([2, 7]) * 0.4096,
            "sram_mib": np.array([16.0, 64.0]), "compute.clock_ghz": np.array([1.0, 2.0])}
    args = fields.knob_args(cols)
    assert set(args) == {"peak_flops", "dram_bandwidth", "sram_bytes"}  # other columns are not knobs
    assert args["dram_bandwidth"].tolist() == pytest.approx([0.8192e12, 2.8672e12])
    assert args["sram_bytes"].tolist() == [16 * MIB, 64 * MIB]
    d = DesignBatch.from_hardware(dse.hardware("npu-7nm")).take([0, 0]).with_knobs(**args)
    back = fields.knob_values(d)
    for name in fields.KNOBS:
        np.testing.assert_allclose(back[name], cols[name], rtol=1e-14)
    assert [k.label for k in fields.KNOB_TABLE] == ["peak compute (TFLOP/s)", "DRAM bandwidth (TB/s)",
                                                    "on-chip SRAM (MiB)"]
