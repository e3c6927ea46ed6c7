"""dse.validate.collectives: the NVSwitch levels' collective coefficients are the fit to their all-reduce rows."""

from __future__ import annotations

import pytest

from dse.hardware.system import load_system
from dse.validate.collectives import all_reduce_rows, fit_level, predicted
from dse.validate.suite import load_measurements, run_suite


@pytest.mark.parametrize(("system", "chip", "level"), [("dgx-a100", "a100-80gb", "nvlink3"),
                                                       ("dgx-h100", "h100-sxm", "nvlink4")])
def test_the_shipped_efficiency_and_pipeline_fill_are_the_fit_to_their_rows(system: str, chip: str, level: str) -> None:
    """The fit of (efficiency, pipeline_fill_mib) to the chip's 14 nccl-tests all-reduces (1 MiB-8 GiB) lands on the
    values the system file ships, and every one of those rows says it set them (fitted_into)."""
    rows = load_measurements()
    lv = load_system(system).network[0]
    assert lv.name == level
    fit = fit_level(system, chip, rows)
    assert fit.efficiency == pytest.approx(lv.efficiency, rel=2e-3)
    assert fit.pipeline_fill_mib == pytest.approx(lv.pipeline_fill_mib, rel=1e-2)
    assert fit.rms_log_error < 0.11
    mine = rows[(rows["hardware"] == chip) & rows["workload"].str.startswith("all_reduce:")]
    assert len(mine) == 14 and (mine["fitted_into"] == f"{system} network.{level}.efficiency+pipeline_fill_mib").all()


def test_a_pipeline_fill_slows_only_chunked_protocols_and_never_speeds_a_collective() -> None:
    """The fill adds ``n_1/2 / B`` to LL128 and Simple (and NVLS), not to LL: a 16 KiB all-reduce (LL) keeps its time,
    a 64 MiB one grows by about the fill at the chip's bandwidth."""
    sysm = load_system("dgx-a100")
    rows = [(16384.0, 8, 1.0), (float(64 << 20), 8, 1.0)]
    bare = predicted(sysm, "a100-80gb", 0.7152, 0.0, rows)
    filled = predicted(sysm, "a100-80gb", 0.7152, 10.37, rows)
    assert filled[0] == pytest.approx(bare[0], rel=1e-12)
    B = 12 * 25e9 * 0.7152  # 12 NVLink3 links x 25 GB/s per direction
    assert filled[1] == pytest.approx(bare[1] + 10.37 * 2**20 / B, rel=1e-6)


def test_the_h200_all_reduces_are_out_of_sample_and_land_near_h100s() -> None:
    """hgx-h200 carries dgx-h100's fitted level (the same NVLink4 switch fabric): its 14 rows set nothing and land within
    11 % from 8 MiB up, within 30 % at every size."""
    rows = load_measurements()
    h200 = rows[rows["id"].str.startswith("azure-nccl-h200-")]
    assert len(h200) == 14 and (h200["fitted_into"].fillna("") == "").all()
    assert len(all_reduce_rows(rows, "h200")) == 14
    res = run_suite(h200).set_index("id")
    big = res[[not i.endswith(("-1mib", "-2mib", "-4mib")) for i in res.index]]
    assert big["time_error_pct"].abs().max() < 11 and res["time_error_pct"].abs().max() < 30


def test_the_leave_one_out_errors_docs_quote_are_what_the_fit_gives() -> None:
    """docs/validation.md, 'Collectives': each of a chip's 14 all-reduce rows predicted by the level refitted without
    it: A100 7.7 / 40.7 %, H100 7.5 / 28.0 % (median / max |time error|)."""
    import numpy as np

    from dse.validate.collectives import leave_one_out

    rows = load_measurements()
    for system, chip, quoted in (("dgx-a100", "a100-80gb", (7.7, 40.7)), ("dgx-h100", "h100-sxm", (7.5, 28.0))):
        e = np.abs(leave_one_out(system, chip, rows))
        assert len(e) == 14 and (round(float(np.median(e)), 1), round(float(e.max()), 1)) == quoted
