"""dse.hardware.schema: strict blocks, SI views, and one-line errors naming file, field, value and what is accepted."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

import dse
from dse.cli import main
from dse.errors import DseError
from dse.hardware.schema import MemoryLevel
from dse.hardware.templates import hardware_from_mapping, load_node
from tests.hardware.far import with_far_level

NPU = dse.hardware("npu-7nm")
BASE = NPU.model_dump(mode="python", exclude_none=True)


def _error(mutate) -> str:
    data = copy.deepcopy(BASE)
    mutate(data)
    with pytest.raises(DseError) as ei:
        hardware_from_mapping(data, file="chip.yaml")
    msg = str(ei.value)
    assert "\n" not in msg
    return msg


def test_si_views_of_a_memory_level_follow_the_unit_in_the_field_name() -> None:
    def level(**kw) -> MemoryLevel:
        return MemoryLevel(name="m", kind="dram", source="test", **kw)

    assert level(capacity_mib=3, bandwidth_tbps=2).capacity_bytes == 3 * 2**20
    assert level(capacity_gib=2, bandwidth_tbps=2).capacity_bytes == 2 * 2**30
    assert level(capacity_gb=80, bandwidth_gbps=2039).capacity_bytes == 80e9
    assert level(capacity_gb=80, bandwidth_gbps=2039).bandwidth_bps == 2039e9
    assert level(capacity_gb=80, bandwidth_tbps=3.35).bandwidth_bps == 3.35e12


def test_hardware_views_peak_ridge_and_outermost_level() -> None:
    assert NPU.peak_flops == pytest.approx(275.2512e12)
    assert NPU.dram.name == "hbm"
    assert NPU.ridge_flop_per_byte == pytest.approx(275.2512e12 / 1638.4e9)
    v100 = dse.hardware("v100-sxm")  # no bf16 tensor mode: the peak falls back to fp16
    assert v100.peak_flops == 125e12


def test_blocks_are_frozen() -> None:
    with pytest.raises(Exception, match="frozen"):
        NPU.compute.cores = 48  # type: ignore[misc]


@pytest.mark.parametrize(("mutate", "expected"), [
    (lambda d: d["memory"][0].__setitem__("bandwidth_tbps", -1),
     "chip.yaml: memory.0.bandwidth_tbps: got -1; accepted: a number > 0"),
    (lambda d: d["compute"].__setitem__("clock_ghz", True),
     "chip.yaml: compute.clock_ghz: got True; accepted: a number, not true/false"),
    (lambda d: d["compute"]["matrix"].__setitem__("efficiency", float("nan")),
     "chip.yaml: compute.matrix.efficiency: got nan; accepted: a finite number"),
    (lambda d: d["compute"]["matrix"].__setitem__("efficiency", 1.5),
     "chip.yaml: compute.matrix.efficiency: got 1.5; accepted: a number <= 1"),
    (lambda d: d["memory"][0].__setitem__("kind", "flash"),
     "chip.yaml: memory.0.kind: got 'flash'; accepted: one of sram, dram"),
    (lambda d: d["compute"].pop("cores"), "chip.yaml: compute.cores: missing; this field is required"),
    (lambda d: d.__setitem__("process_node", "1nm"), "chip.yaml: process_node: got '1nm'; accepted: one of 12nm, 16nm"),
    # a name too long to be a file name was a traceback (OSError: File name too long), a path another node's file
    (lambda d: d.__setitem__("process_node", "a" * 300), "chip.yaml: process_node: got 'aaaaaaaa"),
    (lambda d: d.__setitem__("process_node", "../nodes/7nm"),
     "chip.yaml: process_node: got '../nodes/7nm'; accepted: one of 12nm"),
    (lambda d: d["compute"]["matrix"].__setitem__("unpacks", ["int4"]),
     "chip.yaml: compute.matrix.unpacks: got 'int4'; accepted: on the matrix unit, block-scaled formats (bfp8, bfp4"),
    (lambda d: d["compute"]["vector"].__setitem__("unpacks", ["bfp8"]),
     "chip.yaml: compute.vector.unpacks: got 'bfp8' on the vector unit; accepted: on the matrix unit"),
    (lambda d: d["compute"].__setitem__("op_boundaries", "pipelined"),
     "chip.yaml: compute.op_boundaries: got 'pipelined'; accepted: one of 'overlapped' or 'serial'"),
    (lambda d: d["compute"]["matrix"].__setitem__("area_modes", ["fp32"]),
     "chip.yaml: compute.matrix.area_modes: got ['fp32']; accepted: a non-empty list of the unit's peak_tflops modes"),
])
def test_a_bad_template_field_is_one_line_naming_file_field_value_and_accepted(mutate, expected: str) -> None:
    assert _error(mutate).startswith(expected)


def test_an_unknown_key_lists_the_keys_of_its_block() -> None:
    msg = _error(lambda d: d["compute"].__setitem__("clock_mhz", 1400))
    assert msg == ("chip.yaml: compute.clock_mhz: unknown key (did you mean 'clock_ghz' or 'energy_clock_ghz'?); "
                   "accepted: one of causal_attention, clock_ghz, cores, "
                   "dispatch, eager_overhead_us, energy_clock_ghz, graph_kernel_us, launch_overhead_us, matrix, noc, "
                   "op_boundaries, register_kib_per_core, reserved_cores, source, spare_cores, spare_granule_cores, "
                   "sync_overhead_us, vector")


@pytest.mark.parametrize(("mutate", "words"), [
    (lambda d: d["compute"]["matrix"]["peak_tflops"].__setitem__("bf16", 0), "peak_tflops.bf16 = 0"),
    (lambda d: d["compute"]["vector"].__setitem__("style", "systolic"), "only compute.matrix may be systolic"),
    (lambda d: d["memory"].reverse(), "accepted: every on-chip level inside (listed before) every off-chip level"),
    (lambda d: d["memory"][1].__setitem__("name", "local"), "accepted: unique memory level names"),
    (lambda d: d.__setitem__("reference_dtype", "fp32"), "reference_dtype: got 'fp32'; accepted: a mode of the matrix unit"),
    (lambda d: d["memory"][0].__setitem__("capacity_gib", 1),
     "memory.0.capacity_gib: got capacity_mib=12 and capacity_gib=1; accepted: exactly one of capacity_mib"),
    (lambda d: d["memory"][0].pop("bandwidth_tbps"), "memory.0.bandwidth_tbps: got none of them; "
                                                    "accepted: exactly one of bandwidth_tbps, bandwidth_gbps"),
    (lambda d: d["compute"]["matrix"].__setitem__("dtype_efficiency", {"fp8": 1.2}),
     "dtype_efficiency.fp8 = 1.2; accepted: a fraction in (0, 1]"),
])
def test_cross_field_rules_reject_inconsistent_templates(mutate, words: str) -> None:
    assert words in _error(mutate)


@pytest.mark.parametrize("bandwidth_gbps, ok", [(1638.4, True), (1640.0, True), (1536.0, False), (1843.2, False)])
def test_main_memory_is_whole_stacks(bandwidth_gbps: float, ok: bool) -> None:
    """A DRAM level bought in stacks delivers a whole number of them (published aggregates rounded by up to 0.5 %
    pass: TPU v5e's 819 GB/s is 2 x 409.6); between two counts the template is one line saying both ways out, since
    a design built from it (a study's, the explorer's) rounds up to whole stacks while the template says less."""
    def mutate(d):
        hbm = d["memory"][-1]
        hbm.pop("bandwidth_tbps", None)
        hbm["bandwidth_gbps"] = bandwidth_gbps

    if ok:
        data = copy.deepcopy(BASE)
        mutate(data)
        assert hardware_from_mapping(data, file="chip.yaml").memory[-1].bandwidth_gbps == bandwidth_gbps
        return
    n = bandwidth_gbps / 409.6
    msg = _error(mutate)
    assert msg.startswith(f"chip.yaml: memory.2.bandwidth_gbps: got {bandwidth_gbps:g} GB/s = {n:.3g} stacks of 409.6 "
                          "GB/s; accepted: a whole number of stacks"), msg
    assert f"stack_bandwidth_gbps {bandwidth_gbps / (int(n) + 1):g} for {int(n) + 1} stacks" in msg


def test_two_capacities_name_the_field_and_what_is_accepted() -> None:
    msg = _error(lambda d: d["memory"][0].__setitem__("capacity_gib", 1))
    assert "accepted:" in msg and "{" not in msg


def test_the_cli_prints_error_file_field_and_exits_2(tmp_path: Path, capsys) -> None:
    data = copy.deepcopy(BASE)
    data["memory"][2]["bandwidth_gbps"] = 0
    path = tmp_path / "chip.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["hardware", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {path}: memory.2.bandwidth_gbps: got 0; accepted: a number > 0.0"


def test_shipped_nodes_validate_and_list_every_coefficient_with_a_source() -> None:
    node = load_node("7nm")
    rows = node.coefficients()
    names = [r[0] for r in rows]
    assert "sram_bitcell_um2" in names and "energy_pj_per_flop" in names and "wafer_cost_usd" in names
    assert all(len(r[4]) >= 3 for r in rows)
    assert len(rows) == len(type(node).model_fields) - 2  # all but name and description
    bad = node.model_dump(mode="python")
    bad["leakage_fraction"]["value"] = 1.0
    with pytest.raises(ValueError, match="leakage_fraction.value = 1.0; accepted: 0 <= x < 1"):
        type(node).model_validate(bad)


def test_the_main_memory_is_the_innermost_off_chip_level_by_kind_not_the_last() -> None:
    h100 = dse.hardware("h100-sxm")
    far = with_far_level(h100)
    assert far.memory[-1].name == "far" and far.offchip_index == 2 and far.offchip_level.name == "hbm"
    assert far.dram.name == "hbm" and far.ridge_flop_per_byte == h100.ridge_flop_per_byte


def test_an_on_chip_level_outside_an_off_chip_one_is_refused() -> None:
    msg = _error(lambda d: d["memory"].__setitem__(slice(None), [d["memory"][0], d["memory"][2], d["memory"][1]]))
    assert msg.startswith("chip.yaml: memory: got levels ['local: sram', 'hbm: dram', 'global: sram']")
    assert msg.endswith("accepted: every on-chip level inside (listed before) every off-chip level")


def test_a_level_without_kind_takes_the_inferred_one() -> None:
    data = copy.deepcopy(BASE)
    for m in data["memory"]:
        m.pop("kind")
    assert hardware_from_mapping(data, file="chip.yaml") == NPU


@pytest.mark.parametrize(("mutate", "expected"), [
    (lambda d: d["compute"].__setitem__("clock_ghz", 1410),  # MHz written as GHz
     "chip.yaml: compute.clock_ghz: got 1410; accepted: a number <= 10.0"),
    (lambda d: d["compute"].__setitem__("cores", 2**20 + 1),
     "chip.yaml: compute.cores: got 1048577; accepted: a number <= 1048576"),
    (lambda d: d["compute"]["matrix"].__setitem__("array_rows", 8192),
     "chip.yaml: compute.matrix.array_rows: got 8192; accepted: a number <= 4096"),
    (lambda d: d["compute"]["matrix"]["peak_tflops"].__setitem__("bf16", 2e6),
     "chip.yaml: compute.matrix.peak_tflops.bf16: got 2000000.0; accepted: a number <= 1000000.0"),
    (lambda d: d["memory"][2].__setitem__("capacity_gb", 80e9),  # bytes written as GB
     "chip.yaml: memory.2.capacity_gb: got 80000000000.0; accepted: a number <= 10000000.0"),
    (lambda d: d["memory"][1].__setitem__("bandwidth_tbps", 4e12),  # byte/s written as TB/s
     "chip.yaml: memory.1.bandwidth_tbps: got 4000000000000.0; accepted: a number <= 1000000.0"),
    (lambda d: d["network"].__setitem__("links", 10**6),
     "chip.yaml: network.links: got 1000000; accepted: a number <= 4096"),
])
def test_a_dimension_beyond_its_physical_limit_is_one_line(mutate, expected: str) -> None:
    assert _error(mutate) == expected


def test_a_template_beyond_a_limit_exits_2_through_the_cli_and_every_shipped_one_loads(tmp_path: Path, capsys) -> None:
    data = copy.deepcopy(BASE)
    data["compute"]["clock_ghz"] = 2100.0
    path = tmp_path / "chip.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["hardware", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {path}: compute.clock_ghz: got 2100.0; accepted: a number <= 10.0\n"
    assert main(["hardware"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in dse.list_hardware())


MI300X = dse.hardware("mi300x").model_dump(mode="python", exclude_none=True)


@pytest.mark.parametrize(("mutate", "expected"), [
    (lambda d: d["package"]["dies"][1].__setitem__("node", "1nm"),
     "chip.yaml: package.dies.1.node: got '1nm'; accepted: one of 12nm"),
    (lambda d: d["package"]["dies"][0].__setitem__("d2d_link", "foo"),
     "chip.yaml: package.dies.0.d2d_link: got 'foo'; accepted: ucie-standard, ucie-advanced, hybrid-bond"),
    (lambda d: d["package"]["dies"][0].pop("stacked_on"),
     "chip.yaml: package.dies.0.stacked_on: got None; accepted: the name of another die kind (iod)"),
    (lambda d: d["package"]["dies"][0]["holds"].append("hbm"),
     "chip.yaml: package.dies.0.holds: got 'hbm'; accepted: matrix, vector, noc, dram_phy, serdes, fixed, lds, l2"),
    (lambda d: d["package"]["dies"][0]["holds"].append("infinity_cache"),
     "chip.yaml: package.dies.1.holds: got 'infinity_cache', already held by die 'xcd'"),
    (lambda d: d["package"]["dies"][1].__setitem__("stacked_on", "xcd"),
     "chip.yaml: package.dies.1.stacked_on: got 'xcd' with d2d_link 'ucie-advanced'"),
    (lambda d: d["package"]["dies"][0].__setitem__("count", 0),
     "chip.yaml: package.dies.0.count: got 0; accepted: a number >= 1"),
    (lambda d: d["package"]["dies"][1].__setitem__("name", "xcd"),
     "chip.yaml: package.dies: got die names ['xcd', 'xcd']; accepted: unique die names"),
])
def test_a_bad_die_list_is_one_line_naming_the_die_field(mutate, expected: str) -> None:
    data = copy.deepcopy(MI300X)
    mutate(data)
    with pytest.raises(DseError) as ei:
        hardware_from_mapping(data, file="chip.yaml")
    msg = str(ei.value)
    assert "\n" not in msg and msg.startswith(expected), msg


@pytest.mark.parametrize(("mutate", "words"), [
    # 0.5 GB on 4 HBM stacks: 0.125 GB a stack, below any HBM part
    (lambda m: (m.pop("capacity_gb", None), m.pop("capacity_gib", None), m.pop("capacity_mib", None),
                m.__setitem__("capacity_gb", 0.5)),
     "capacity_gb: got 0.5 GB on 4 stacks = 0.125 GB per stack; accepted: 1-64 GB per stack (4-256 GB"),
    # a stack capacity that the level's own stacks do not hold
    (lambda m: m.__setitem__("stack_capacity_gb", 64.0), "on 4 stacks of stack_capacity_gb 64 (256 GB); accepted: 256 GB"),
    # board DRAM at an HBM stack's rate per 32-bit channel: no such part
    (lambda m: m.__setitem__("kind", "ddr"),
     "stack_bandwidth_gbps: got 409.6 GB/s per channel of kind ddr; accepted: at most 192 GB/s"),
])
def test_main_memory_names_parts_one_could_buy(mutate, words: str) -> None:
    """A new user's npu-7nm variants were accepted with 0.5 GB over 4 HBM stacks, a stack_capacity_gb its stacks do
    not hold (a study's design of the same 4 stacks then held another capacity than the template), and board DRAM
    channels at 409.6 GB/s each (100 Gb/s a pin): each is one line naming the field and what a part can be."""
    assert words in _error(lambda d: mutate(d["memory"][-1]))


def test_private_copies_sit_one_per_core_or_per_group_of_whole_cores() -> None:
    """16 copies of a per-core level over 24 cores were accepted and changed nothing: one line naming the divisors."""
    def mutate(d):
        lv = next(m for m in d["memory"] if m.get("instances", 1) > 1)
        lv["instances"] = d["compute"]["cores"] - 1 if d["compute"]["cores"] > 2 else 3
    msg = _error(mutate)
    assert ".instances: got" in msg and "accepted: a divisor of the cores" in msg


@pytest.mark.parametrize(("mutate", "expected"), [
    (lambda d: d["memory"][2].__setitem__("keeps", "step"),
     "chip.yaml: memory.2.keeps: got 'step' on 'hbm', an off-chip level; accepted: only on-chip SRAM keeps tensors"),
    (lambda d: d["memory"][2].__setitem__("resident_fraction", 0.5),
     "chip.yaml: memory.2.resident_fraction: got 0.5 on 'hbm', an off-chip level; accepted: only on-chip SRAM"),
    (lambda d: d["memory"][0].__setitem__("resident_fraction", 0.5),
     "chip.yaml: memory.0.resident_fraction: got 0.5 on 'local', which keeps no tensor between operators (a level "
     "with 24 per-core copies keeps tiles by default); accepted: with keeps: step or steps"),
    (lambda d: d["memory"][1].update(resident_fraction=0.5, keeps="tiles"),
     "chip.yaml: memory.1.resident_fraction: got 0.5 on 'global', which keeps no tensor between operators (keeps: "
     "tiles); accepted: with keeps: step or steps"),
    (lambda d: d["memory"][0].update(keeps="steps", organization="cache"),
     "chip.yaml: memory.0.keeps: got 'steps' on 'local', a cache with 24 per-core copies; accepted: tiles, or "
     "organization scratchpad"),
])
def test_keeps_names_only_storage_that_can_keep_a_tensor(mutate, expected: str) -> None:
    """``keeps`` and ``resident_fraction`` were silently ignored on a main memory and on a per-core level; a per-core
    scratchpad may now keep tensors across its copies, and the rest says why it cannot in one line."""
    assert _error(mutate).startswith(expected)


def test_a_per_core_level_keeps_tiles_unless_a_scratchpad_says_more() -> None:
    local = NPU.memory[0]  # npu-7nm's 24 per-core scratchpads, no keeps: tiles, nothing kept between operators
    assert local.instances == 24 and local.kept == "tiles" and local.resident_share == 0.0
    kept = local.model_copy(update={"keeps": "step"})
    assert kept.kept == "step" and kept.resident_share == 1.0 and not kept.keeps_across_steps
    assert local.model_copy(update={"keeps": "steps", "resident_fraction": 0.5}).resident_share == 0.5


def test_an_npu_sram_level_without_an_organization_is_a_scratchpad() -> None:
    """A user's systolic-array template that did not say ``organization`` got a GPU's cache: priced at cache
    density, kept across steps like an L2, and no GEMM software pipeline. On a chip of systolic arrays it is now a
    scratchpad (every shipped systolic template but Gaudi 3, whose SRAM is a hardware-managed cache, says so); a
    GPU-style (simt) chip keeps the cache; a level that says its own keeps it."""
    data = copy.deepcopy(BASE)
    for m in data["memory"]:
        m.pop("organization", None)
    npu = hardware_from_mapping(data, file="chip.yaml")
    assert [m.organization for m in npu.memory if m.kind == "sram"] == ["scratchpad", "scratchpad"]
    data["compute"]["matrix"]["style"] = "simt"
    assert [m.organization for m in hardware_from_mapping(data, file="chip.yaml").memory
            if m.kind == "sram"] == ["cache", "cache"]
    data = copy.deepcopy(BASE)
    data["memory"][1]["organization"] = "cache"
    assert hardware_from_mapping(data, file="chip.yaml").memory[1].organization == "cache"
    assert dse.hardware("gaudi3").memory[0].organization == "cache"


def test_a_main_memory_naming_its_part_buys_the_parts_rated_stacks_and_one_naming_neither_is_refused() -> None:
    """A template written from scratch with `generation: hbm3` and no `stack_bandwidth_gbps` bought no HBM stack:
    `dse area` priced its 3.2 TB/s with 0 mm2 of PHY and controller. The part's rated stack is now the default, so the
    bandwidth must be whole stacks of it, and HBM naming neither is refused on the one level the die's PHYs drive."""
    from dse.cost.area import area
    from dse.hardware.designs import DesignBatch

    def hbm(**kw) -> dict:
        data = copy.deepcopy(BASE)
        main_level = data["memory"][-1]
        main_level.pop("stack_bandwidth_gbps")
        main_level.update(kw)
        return data

    derived = hardware_from_mapping(hbm(generation="hbm3", bandwidth_gbps=3276.8, capacity_gb=96), file="c.yaml")
    assert derived.dram.stack_bandwidth_gbps == 819.2 and derived.dram.stacks == 4
    explicit = hardware_from_mapping(hbm(generation="hbm3", bandwidth_gbps=3276.8, capacity_gb=96,
                                         stack_bandwidth_gbps=819.2), file="c.yaml")
    a, b = area(DesignBatch.from_hardware(derived)), area(DesignBatch.from_hardware(explicit))
    assert a.parts["dram_phy"][0] == b.parts["dram_phy"][0] > 0 and a.total_mm2 == b.total_mm2
    with pytest.raises(DseError) as ei:
        hardware_from_mapping(hbm(generation="hbm3", bandwidth_gbps=3200.0, capacity_gb=96), file="c.yaml")
    assert str(ei.value).startswith("c.yaml: memory.2.bandwidth_gbps: got 3200 GB/s = 3.91 stacks of 819.2 GB/s (hbm3's "
                                    "rated stack); accepted: a whole number of stacks (4 x 819.2 = 3276.8 GB/s)")
    with pytest.raises(DseError) as ei:
        hardware_from_mapping(hbm(generation=None), file="c.yaml")
    msg = str(ei.value)
    assert msg.startswith("c.yaml: memory.2.stack_bandwidth_gbps: missing on 'hbm', the main memory") and "\n" not in msg
    assert "hbm3 819.2" in msg
    gddr = dse.hardware("tt-n150").model_dump(mode="python", exclude_none=True)
    gddr["memory"][-1].pop("stack_bandwidth_gbps")
    gddr["memory"][-1].pop("stack_capacity_gb", None)
    gddr["memory"][-1]["bandwidth_gbps"] = 384.0  # 6 GDDR6 channels at the part's rated 64 GB/s
    assert hardware_from_mapping(gddr, file="c.yaml").dram.stacks == 6
