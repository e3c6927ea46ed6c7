"""dse.workloads.optable: explicit operator rows become operator-table rows at the scenario dtype."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from dse.workloads.optable import OpTableArch, build
from dse.workloads.scenario import Scenario

ARCH = OpTableArch.model_validate({
    "params": 1234, "unknown_ops": ["CustomOp"],
    "ops": [{"op": "gemm", "name": "fc", "M": 8, "N": 1000, "K": 512, "count": 2},
            {"op": "conv", "name": "stem", "n": 1, "h": 32, "w": 32, "c_in": 3, "c_out": 16, "k": 3, "pad": 1},
            {"op": "stream", "name": "add", "elems": 4096, "flops_per_elem": 1, "read_per_elem": 2}],
})


def test_rows_carry_the_scenario_dtype_and_exact_counts() -> None:
    rows, facts = build(ARCH, Scenario(dtype="fp16"), "imported")
    fc, stem, add = rows
    assert fc["flops"] == 2 * 8 * 1000 * 512 and fc["count"] == 2 and fc["dtype"] == "fp16"
    assert fc["bytes_read"] == (8 * 512 + 512 * 1000) * 2
    assert (stem["M"], stem["N"], stem["K"]) == (32 * 32, 16, 27) and stem["flops"] == 2 * 1024 * 16 * 27
    assert add["bytes_read"] == 4096 * 2 * 2 and add["bytes_written"] == 4096 * 2 and add["flops"] == 4096
    assert facts == {"phase": "forward", "batch": None, "params": 1234, "unknown_ops": ["CustomOp"]}
    rows8, _ = build(ARCH, Scenario(dtype="int8"), "imported")
    assert rows8[0]["bytes_read"] == fc["bytes_read"] / 2


def test_rows_are_validated_strictly() -> None:
    with pytest.raises(ValidationError, match="M"):
        OpTableArch.model_validate({"ops": [{"op": "gemm", "name": "g", "M": 0, "N": 1, "K": 1}]})
    with pytest.raises(ValidationError):
        OpTableArch.model_validate({"ops": [{"op": "matmul", "name": "g"}]})
    with pytest.raises(ValidationError):
        OpTableArch.model_validate({"ops": []})
