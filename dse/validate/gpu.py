"""Accelerator spec query: read an NVIDIA GPU's name, clocks, memory and power limit from
``nvidia-smi`` and match it to the shipped template of the same part.

``nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.memory,memory.total,power.limit
--format=csv,noheader,nounits`` prints one line per GPU; :func:`parse_nvidia_smi` reads that text
(tests use recorded outputs: these machines have no GPU). The template keeps the part's published
dense peaks (nvidia-smi reports no FLOP/s); the queried memory size and power limit are written
into it and the queried clocks into its description.
"""

from __future__ import annotations

import shutil
import subprocess

from dse.errors import DseError
from dse.hardware.schema import Hardware
from dse.hardware.templates import load_hardware

QUERY = "name,clocks.max.sm,clocks.max.memory,memory.total,power.limit"
COMMAND = ["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits"]

#: (substring of the reported name, template); first match wins
PARTS = [("A100", "a100-80gb"), ("H100", "h100-sxm"), ("V100", "v100-sxm")]


def query_nvidia_smi() -> str:
    """Run nvidia-smi; a machine without it is a one-line error."""
    if shutil.which("nvidia-smi") is None:
        raise DseError("nvidia-smi not found (no NVIDIA GPU or driver here); accepted: --from-file with a recorded "
                       f"output of: {' '.join(COMMAND)}")
    return subprocess.run(COMMAND, capture_output=True, text=True, check=True, timeout=30).stdout


def parse_nvidia_smi(text: str) -> list[dict[str, float | str]]:
    """One dict per GPU line: name, sm_clock_mhz, mem_clock_mhz, memory_mib, power_limit_w."""
    gpus = []
    for n, line in enumerate(filter(None, (x.strip() for x in text.splitlines())), start=1):
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 5:
            raise DseError(f"line {n}: {len(parts)} fields; accepted: {QUERY} (csv, noheader, nounits)")
        name, *nums = parts
        try:
            sm, mem, mib, pw = (float(x) for x in nums)
        except ValueError:
            raise DseError(f"line {n}: non-numeric field in {nums}; accepted: --format=csv,noheader,nounits") from None
        gpus.append({"name": name, "sm_clock_mhz": sm, "mem_clock_mhz": mem, "memory_mib": mib, "power_limit_w": pw})
    if not gpus:
        raise DseError("no GPU lines in the nvidia-smi output")
    return gpus


def template_for(gpu: dict) -> Hardware:
    """The shipped template of the same part, with the queried memory size and power limit."""
    name = str(gpu["name"])
    match = next((t for key, t in PARTS if key in name.upper()), None)
    if match is None:
        raise DseError(f"no shipped template for GPU {name!r}; accepted parts: {', '.join(k for k, _ in PARTS)}")
    hw = load_hardware(match)
    data = hw.model_dump(mode="python", exclude_none=True)
    data["name"] = f"{match}-queried"
    data["description"] = (f"{name} as nvidia-smi reports it: max SM clock {gpu['sm_clock_mhz']:.0f} MHz, memory clock "
                           f"{gpu['mem_clock_mhz']:.0f} MHz, {gpu['memory_mib']:.0f} MiB, power limit "
                           f"{gpu['power_limit_w']:.0f} W; peaks from the shipped {match} template")
    dram = data["memory"][-1]
    for key in ("capacity_mib", "capacity_gib", "capacity_gb"):
        dram.pop(key, None)
    dram["capacity_mib"] = float(gpu["memory_mib"])
    dram["source"] += "; capacity from nvidia-smi memory.total"
    if data.get("published"):
        data["published"]["tdp_w"] = float(gpu["power_limit_w"])
        data["published"]["source"] += "; tdp_w = nvidia-smi power.limit"
    return Hardware.model_validate(data)
