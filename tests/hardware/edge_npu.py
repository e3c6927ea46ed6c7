"""A small edge NPU as a user writes it (docs/residency.md, dse area's fixed-block warning): 16 cores of 32x32
int8 arrays at 1 GHz, 4 MiB of per-core SRAM, 68 GB/s of LPDDR on board, at 4 nm; not a product."""

from __future__ import annotations

EDGE_NPU = {
    "name": "edge-npu", "process_node": "4nm", "reference_dtype": "int8", "source": "docs/residency.md example",
    "compute": {"cores": 16, "clock_ghz": 1.0, "register_kib_per_core": 16, "source": "example",
                "matrix": {"kind": "matrix", "peak_tflops": {"int8": 32.768, "bf16": 8.192}, "array_rows": 32,
                           "array_cols": 32, "style": "systolic", "source": "example"},
                "vector": {"kind": "vector", "peak_tflops": {"fp32": 1.0, "bf16": 2.0}, "source": "example"}},
    "memory": [{"name": "local", "kind": "sram", "capacity_mib": 4, "instances": 16, "organization": "scratchpad",
                "bandwidth_tbps": 4, "source": "example"},
               {"name": "dram", "kind": "ddr", "capacity_gb": 16, "bandwidth_gbps": 68, "source": "example"}],
}
