"""Six public NPU dies written as a new user writes them (issue 32): a copy of the npu-7nm template with the die's
published figures, everything a die does not publish kept in npu-7nm's proportions (per core and per clock).

The figures and their sources are the holdout records of ``hw_templates/calibration/area_dies.yaml`` (the same
dies, priced there as calibration records); here they go through the template path that ``dse area my.yaml``
prices (vector units, scratchpads, on-chip network, PHYs), which those records leave out. Never fitted on.
"""

from __future__ import annotations

import copy

import pandas as pd

import dse
from dse.hardware.templates import hardware_from_mapping, templates_dir
from dse.yamlio import load_yaml

MIB = 2**20
#: npu-7nm per core and clock: 24 cores at 1.4 GHz, 64x64 bf16 arrays, 512 fp32 vector lanes, 256 B/clk of local
#: SRAM, 4 TB/s of global SRAM (119 B/clk per core)
BASE_CORES, BASE_CLOCK_HZ = 24, 1.4e9
GLOBAL_BYTES_PER_CLOCK_CORE = 4.0e12 / (BASE_CORES * BASE_CLOCK_HZ)
LOCAL_BYTES_PER_CLOCK_CORE = 256.0
VECTOR_FP32_PER_MAC = 34.4064 / 275.2512  # npu-7nm's vector fp32 FLOP/s per bf16 matrix FLOP/s

#: name -> published figures (area_dies.yaml holds each source): node, cores, clock, array rows x cols, the matrix
#: modes as multiples of the array's MAC rate (1 = one MAC per PE per clock), per-core and total on-chip SRAM (MiB),
#: main memory (kind, stacks or channels, GB/s each, GB each) or None, chip-to-chip links (25 GB/s equivalents), and
#: the vector units' fp32 TFLOP/s where the die's record gives them (``vector_fp32``; else npu-7nm's share per MAC)
DIES: dict[str, dict] = {
    "maia-100": dict(area=820, node="5nm", cores=64, clock=1.526, array=(64, 64), modes={"bf16": 1},
                     local_mib=0.5, sram_mib=476.8, dram=("dram", 4, 450.0, 16), links=24),
    "hanguang-800": dict(area=709, node="12nm", cores=4, clock=0.7, array=(384, 384), modes={"int8": 1},
                         local_mib=0.5, sram_mib=183.1, dram=None, links=0),
    "northpole": dict(area=800, node="12nm", cores=256, clock=0.4, array=(32, 32), modes={"int8": 1},
                      local_mib=0.75, sram_mib=224, dram=None, links=0),
    "mtia-v2": dict(area=421, node="5nm", cores=64, clock=1.35, array=(32, 32), modes={"bf16": 1, "int8": 2},
                    local_mib=384e3 / MIB, sram_mib=268.4, dram=("ddr", 8, 25.6, 16), links=0, vector_fp32=2.76),
    "ascend-910": dict(area=456.25, node="7nm", cores=32, clock=0.977, array=(64, 64), modes={"fp16": 1, "int8": 2},
                       local_mib=0.5, sram_mib=32e6 / MIB + 16, dram=("dram", 4, 307.0, 8), links=0, vector_fp32=4.0),
    "rngd": dict(area=653, node="5nm", cores=8, clock=1.0, array=(125, 128), modes={"bf16": 1, "fp8": 2, "int8": 2},
                 local_mib=5.5, sram_mib=300, dram=("dram", 2, 768.0, 24), links=0),
}


def template(name: str) -> dict:
    """The npu-7nm mapping rewritten with die ``name``'s published figures (:data:`DIES`)."""
    p = DIES[name]
    t = copy.deepcopy(load_yaml(str(templates_dir() / "npu-7nm.yaml")))
    rows, cols = p["array"]
    clock_hz, cores = p["clock"] * 1e9, p["cores"]
    mac_tflops = cores * rows * cols * 2 * clock_hz / 1e12
    t.update(name=name, process_node=p["node"], reference_dtype=next(iter(p["modes"])))
    c = t["compute"]
    c.update(cores=cores, clock_ghz=p["clock"])
    c["matrix"].update(peak_tflops={k: v * mac_tflops for k, v in p["modes"].items()}, array_rows=rows, array_cols=cols)
    fp32 = p.get("vector_fp32", VECTOR_FP32_PER_MAC * mac_tflops)  # published where the die gives it
    c["vector"]["peak_tflops"] = {"fp32": fp32, "bf16": 2 * fp32, "fp16": 2 * fp32}
    local, glob, dram = t["memory"]
    local.update(instances=cores, capacity_mib=p["local_mib"] * cores,
                 bandwidth_tbps=LOCAL_BYTES_PER_CLOCK_CORE * cores * clock_hz / 1e12)
    glob.update(capacity_mib=p["sram_mib"] - p["local_mib"] * cores,
                bandwidth_tbps=GLOBAL_BYTES_PER_CLOCK_CORE * cores * clock_hz / 1e12)
    t["memory"] = [local, glob]
    dram.pop("generation", None)  # npu-7nm's HBM2E part does not describe the die's own DRAM: its node's typical one
    if p["dram"] is not None:
        kind, n, gbps, gb = p["dram"]
        dram.update(kind=kind, capacity_gb=n * gb, bandwidth_gbps=n * gbps, stack_bandwidth_gbps=gbps)
        if kind == "ddr":
            dram["stack_capacity_gb"] = gb
        t["memory"].append(dram)
    if p["links"]:
        t["network"]["links"] = p["links"]
    else:
        t.pop("network")
    return t


def table(traffic: str | None = None) -> pd.DataFrame:
    """One row per die: published and modelled area, the error and the network's share; ``traffic`` overrides the
    network's traffic (``compute.noc.traffic``)."""
    rows = []
    for name, p in DIES.items():
        t = template(name)
        if traffic is not None:
            t["compute"]["noc"] = {"traffic": traffic}
        a = dse.area(hardware_from_mapping(t, file=f"{name}.yaml"))
        rows.append({"die": name, "published_mm2": p["area"], "model_mm2": a.total_mm2, "noc_mm2": a.breakdown["noc"],
                     "err_pct": 100 * (a.total_mm2 / p["area"] - 1)})
    return pd.DataFrame(rows).set_index("die")
