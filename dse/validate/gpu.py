"""Accelerator spec query: read an NVIDIA GPU's name, clocks, memory and power limit from
``nvidia-smi`` and match it to the shipped template of the same part.

``nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.memory,memory.total,power.limit
--format=csv,noheader,nounits`` prints one line per GPU; :func:`parse_nvidia_smi` reads that text, or
the full ``nvidia-smi -q`` report (tests use recorded outputs: these machines have no GPU). The
template keeps the part's published dense peaks (nvidia-smi reports no FLOP/s); the queried memory
size and power limit (as ``power_limit_w``, so a capped board derates) are written into it and the
queried clocks into its description.
"""

from __future__ import annotations

import math
import shutil
import subprocess

from dse.errors import DseError
from dse.hardware.schema import Hardware
from dse.hardware.templates import hardware_from_mapping, load_hardware
from dse.limits import MAX_CAPACITY_MIB, MAX_POWER_W

QUERY = "name,clocks.max.sm,clocks.max.memory,memory.total,power.limit"
COMMAND = ["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits"]

#: (substring of the reported name, template); first match wins
PARTS = [("A100", "a100-80gb"), ("H100", "h100-sxm"), ("H200", "h200"), ("B200", "b200"), ("V100", "v100-sxm")]
#: board names of parts whose SM count, clocks, memory bandwidth or power differ from the SXM templates above (an
#: H100 PCIe has 114 SMs and HBM2e at 2.0 TB/s against the SXM's 132 and 3.35 TB/s): no shipped template stands for them
OTHER_BOARDS = ("PCIE", "NVL")
#: below this much memory an A100 is the 40 GB part (40960 MiB), whose HBM2 runs 1.555 TB/s against the 80 GB's 2.039
A100_40GB_BELOW_MIB = 60_000


def query_nvidia_smi() -> str:
    """Run nvidia-smi; a machine without it is a one-line error."""
    if shutil.which("nvidia-smi") is None:
        raise DseError("nvidia-smi not found (no NVIDIA GPU or driver here); accepted: --from-file with a recorded "
                       f"output of: {' '.join(COMMAND)}")
    return subprocess.run(COMMAND, capture_output=True, text=True, check=True, timeout=30).stdout


def _q_value(block: list[str], section: str, key: str) -> str | None:
    """The value of ``key`` inside the indented ``section`` of one GPU's ``nvidia-smi -q`` block."""
    inside = False
    depth = 0
    for line in block:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if stripped.split(":")[0].strip() == section and ":" not in stripped.rstrip(":")[len(section):]:
            inside, depth = True, indent
            continue
        if inside:
            if indent <= depth and stripped:
                inside = False
                continue
            name, _, value = stripped.partition(":")
            if name.strip() == key:
                return value.strip()
    return None


def parse_nvidia_smi_q(text: str) -> list[dict[str, float | str]]:
    """The same fields from a full ``nvidia-smi -q`` report (one block per ``GPU xxxx:..`` header)."""
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("GPU ") and ":" in line[4:]:
            blocks.append([])
        elif blocks:
            blocks[-1].append(line)
    gpus = []
    for n, block in enumerate(blocks, start=1):
        name = next((ln.split(":", 1)[1].strip() for ln in block if ln.strip().startswith("Product Name")), None)
        fields = {"sm_clock_mhz": _q_value(block, "Max Clocks", "SM"),
                  "mem_clock_mhz": _q_value(block, "Max Clocks", "Memory"),
                  "memory_mib": _q_value(block, "FB Memory Usage", "Total"),
                  "power_limit_w": _q_value(block, "GPU Power Readings", "Current Power Limit")
                  or _q_value(block, "Power Readings", "Power Limit")}
        try:
            nums = {k: float(str(v).split()[0]) for k, v in fields.items()}
        except (ValueError, IndexError, AttributeError):
            missing = [k for k, v in fields.items() if not v or not str(v).split()[0].replace(".", "").isdigit()]
            raise DseError(f"GPU {n}: no {', '.join(missing)} in the nvidia-smi -q report; accepted: a full "
                           "'nvidia-smi -q' output or the --query-gpu CSV") from None
        gpus.append({"name": name or "?", **nums})
    if not gpus:
        raise DseError("no 'GPU ...' block in the nvidia-smi -q report")
    return gpus


def parse_nvidia_smi(text: str) -> list[dict[str, float | str]]:
    """One dict per GPU: name, sm_clock_mhz, mem_clock_mhz, memory_mib, power_limit_w, from the
    ``--query-gpu`` CSV or from a full ``nvidia-smi -q`` report."""
    if "NVSMI LOG" in text or "Product Name" in text:
        return parse_nvidia_smi_q(text)
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
        raise DseError(f"got {len(text.splitlines())} line(s) and no GPU line; accepted: the output of {' '.join(COMMAND)}")
    return gpus


def template_for(gpu: dict) -> Hardware:
    """The shipped template of the same part, with the queried memory size and power limit."""
    name = str(gpu["name"])
    match = next((t for key, t in PARTS if key in name.upper()), None)
    board = next((b for b in OTHER_BOARDS if b in name.upper().replace("-", "").replace(" ", "")), None)
    if match is None or board is not None:
        why = f" (a {board} board: other SMs, clocks, bandwidth and power than the SXM template)" if board else ""
        raise DseError(f"no shipped template for GPU {name!r}{why}; accepted parts: "
                       f"{', '.join(k for k, _ in PARTS)} (SXM boards)")
    if match == "a100-80gb" and float(gpu["memory_mib"]) < A100_40GB_BELOW_MIB:
        match = "a100-40gb"
    _check_queried(gpu)
    hw = load_hardware(match)
    data = hw.model_dump(mode="python", exclude_none=True)
    data["name"] = f"{match}-queried"
    data["description"] = (f"{name} as nvidia-smi reports it: max SM clock {gpu['sm_clock_mhz']:.0f} MHz, memory clock "
                           f"{gpu['mem_clock_mhz']:.0f} MHz, {gpu['memory_mib']:.0f} MiB, power limit "
                           f"{gpu['power_limit_w']:.0f} W; peaks from the shipped {match} template")
    dram = data["memory"][hw.offchip_index]
    for key in ("capacity_mib", "capacity_gib", "capacity_gb"):
        dram.pop(key, None)
    dram["capacity_mib"] = float(gpu["memory_mib"])
    dram["source"] += "; capacity from nvidia-smi memory.total"
    if data.get("published"):
        data["published"]["tdp_w"] = float(gpu["power_limit_w"])
        data["published"]["source"] += "; tdp_w = nvidia-smi power.limit"
    if gpu["power_limit_w"] > 0:  # the board's cap: a capped card (e.g. an A100 at 330 W) derates
        data["power_limit_w"] = float(gpu["power_limit_w"])
    return hardware_from_mapping(data)


#: (nvidia-smi field, key, highest, how the error says it) of each queried value: the memory and the power limit are
#: written into the template (dse.limits bounds a level's capacity and a power); the clocks go into its description
QUERIED = (("clocks.max.sm", "sm_clock_mhz", math.inf, "MHz"),
           ("clocks.max.memory", "mem_clock_mhz", math.inf, "MHz"),
           ("memory.total", "memory_mib", MAX_CAPACITY_MIB, f"MiB, at most {MAX_CAPACITY_MIB:.0f} (16 PiB)"),
           ("power.limit", "power_limit_w", MAX_POWER_W, f"W, at most {MAX_POWER_W:.0f}"))


def _check_queried(gpu: dict) -> None:
    """Each queried number finite and in range (memory > 0, the rest >= 0), else a one-line error naming the
    nvidia-smi field: nothing out of range reaches the template."""
    for field, key, high, unit in QUERIED:
        v = float(gpu[key])
        positive = key in ("memory_mib", "sm_clock_mhz", "mem_clock_mhz")  # a part that reports a 0 MHz clock is not one
        if not (math.isfinite(v) and (v > 0 if positive else v >= 0) and v <= high):
            raise DseError(f"got {v:g}; accepted: a finite number {'>' if positive else '>='} 0 {unit}",
                           field=f"GPU {gpu['name']}: {field}")
