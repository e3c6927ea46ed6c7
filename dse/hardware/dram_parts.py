"""DRAM generations: one record per part family, the energy a byte of it costs wherever the logic die is made.

A DRAM level's energy per byte belongs to the DRAM it is built from, not to the logic node of the die it feeds: a
5 nm die with HBM3E (H200) moves its bytes at HBM3E's energy and a 5 nm die with HBM2E (Gaudi 3) at HBM2E's. A
level's ``generation`` (``memory[].generation``) names its record here; a level without one takes its node file's
``energy_pj_per_byte_dram`` / ``energy_pj_per_byte_ddr``, "the generation typical of this node" (every figure here is
one of those node files' figures, so a template whose part is its node's typical one prices as before).

Energies are whole-interface figures per bit read or written (activation, column access, I/O), in pJ/bit; the
code reads them as J/byte (:func:`energy_per_byte`). The records' sources disagree in what they count: O'Connor et
al.'s HBM2 figure (MICRO 2017) is an access model's, Micron's HBM2E and GDDR6 figures a device-power table's, so
HBM2 (3.9) comes out below HBM2E (6.0), which no circuit reason explains (SK hynix announced its HBM2E as 'up to
50 % more power-efficient' than its HBM2, 2020 mass-production release); the node files' fitted GPU energies per
FLOP (A100 on HBM2E at 7 nm, V100 on HBM2 at 16 nm, H100 on HBM3 at 5 nm) were fitted with exactly these figures,
so they are kept as sourced and the spread is stated rather than smoothed.

A part bought in stacks also carries what one stack of it is (:class:`StackPart`: its rated bandwidth, the capacity
of its common stack, its interface width and its price per GB relative to the node file's HBM price), so a study can
search the part (``memory.<main>.generation: {choices: [hbm3, hbm3e, hbm4]}``): a design on another part buys whole
stacks of that part (:meth:`dse.hardware.designs.DesignBatch.with_part`), its PHYs and controllers scale with the
interface width, its bytes pay the part's energy and its gigabytes the part's price.

Adding a generation is one record in :data:`GENERATIONS` plus its case in ``tests/hardware/test_dram_parts.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PJ_PER_BIT_TO_J_PER_BYTE = 8.0e-12
#: interface bits of the unit the node files' PHY and controller areas are for, by memory kind: an HBM2E/HBM3 stack
#: (``dram_phy_mm2_per_stack``: 1024 bits) and a board-DRAM channel (``ddr_phy_mm2_per_channel``: 32 bits)
PHY_REFERENCE_BITS = {"dram": 1024, "ddr": 32}


@dataclass(frozen=True)
class StackPart:
    """One stack of a part as a design buys it: its rated bandwidth (GB/s: pin rate x interface bits / 8), the
    capacity of its common stack (decimal GB), its interface width (bits: the PHY and controller area scale with
    it) and its price per GB relative to the node file's ``dram_usd_per_gb`` (an HBM3-era price), with the source."""

    stack_gbps: float
    stack_gb: float
    io_bits: int
    price_factor: float
    source: str


@dataclass(frozen=True)
class DramGeneration:
    """One DRAM part family: the memory kind it is bought as (``dram``: stacks on the package, ``ddr``: chips on
    the board) and its energy per bit with the source."""

    name: str
    kind: str
    pj_per_bit: float
    source: str
    stack: StackPart | None = None  # None: not searchable (no sourced stack figures here)


GENERATIONS: tuple[DramGeneration, ...] = (
    DramGeneration("hbm2", "dram", 3.9,
                   "O'Connor et al., 'Fine-Grained DRAM: Energy-Efficient DRAM for Extreme Bandwidth Systems', MICRO "
                   "2017 (HBM2 3.9 pJ/bit); the 16 nm node file's figure, on which V100's energy per FLOP was fitted",
                   StackPart(307.2, 8.0, 1024, 1.0,
                             "Samsung Aquabolt HBM2: 2.4 Gb/s per pin, 307 GB/s and 8 GB (8-high 8 Gb) per stack "
                             "(Samsung Flashbolt launch, 2020, which compares against it); price per GB: no "
                             "per-generation figure found, the node file's")),
    DramGeneration("hbm2e", "dram", 6.0,
                   "Micron 'Ultra-Bandwidth Solutions' memory comparison table (GDDR6 7.5, GDDR6X 7.25, HBM2E 6.0 "
                   "pJ/bit); the 7 nm node file's figure, on which A100's energy per FLOP was fitted",
                   StackPart(410.0, 16.0, 1024, 1.0,
                             "JEDEC JESD235C (HBM2E): 3.2 Gb/s per pin, 410 GB/s per stack; Samsung Flashbolt "
                             "HBM2E 16 GB (8-high 16 Gb), 2020 launch; price per GB: no per-generation figure found, "
                             "the node file's")),
    DramGeneration("hbm3", "dram", 4.5,
                   "interpolated between HBM2E 6.0 (Micron) and HBM3E 3.9 (Samsung): no published HBM3 figure found, "
                   "confidence low; the 5 nm node file's figure, on which H100's energy per FLOP was fitted",
                   StackPart(819.2, 24.0, 1024, 1.0,
                             "JEDEC JESD238 (HBM3, 2022-01): 6.4 Gb/s per pin, 819 GB/s per stack; SK hynix's first "
                             "HBM3 in 16 and 24 GB (12-high 16 Gb) stacks; price: the node file's HBM price (LLMCompass, "
                             "Oct 2023, the HBM3 era) is this part's")),
    DramGeneration("hbm3e", "dram", 3.9,
                   "Samsung statement (HBM4E > 2x HBM3E's 3.9 pJ/bit); the 3 nm node file's figure",
                   StackPart(1228.8, 36.0, 1024, 1.2,
                             "SK hynix 12-high HBM3E mass production (2024-09-26): 36 GB (12 x 24 Gb) at 9.6 Gb/s per "
                             "pin, 1228.8 GB/s per stack; price: HBM3E debuted at about a 20 % premium over HBM3 "
                             "(TrendForce, 2025-05-22), confidence low")),
    DramGeneration("hbm4", "dram", 2.79,
                   "derived: HBM3E 3.9 pJ/bit (Samsung) / 1.4, SK hynix's ~40 % better power efficiency of HBM4 over "
                   "HBM3E (2025 mass-production announcement, via core-ics.com), confidence low; the 2 nm node file's",
                   StackPart(2048.0, 36.0, 2048, 1.56,
                             "JEDEC JESD270-4 (HBM4, 2025-04): a 2048-bit interface at up to 8 Gb/s, 2 TB/s per stack, "
                             "24 and 32 Gb layers 4- to 16-high: 36 GB is the 12-high 24 Gb stack; the doubled interface "
                             "doubles the PHY and controller (32 channels, from 16); price: more than 30 % over HBM3E's "
                             "(TrendForce, 2025-05-22), 1.2 x 1.3 = 1.56 x HBM3's, confidence low")),
    DramGeneration("gddr6", "ddr", 7.5,
                   "Micron 'Ultra-Bandwidth Solutions' memory comparison table (GDDR6 7.5 pJ/bit average device "
                   "power); every node file's board-DRAM figure",
                   StackPart(64.0, 2.0, 32, 1.0,
                             "JEDEC JESD250 (GDDR6: 8-16 Gb x16 dual-channel devices); Micron's GDDR5/GDDR6 table: "
                             "x32 per placement at 16 Gb/s = 64 GB/s; a 16 Gb device holds 2 GB; price: the node "
                             "file's board-DRAM price")),
    DramGeneration("gddr6x", "ddr", 7.25,
                   "Micron 'Ultra-Bandwidth Solutions' memory comparison table (GDDR6X 7.25 pJ/bit)",
                   StackPart(84.0, 2.0, 32, 1.0,
                             "Micron 16 Gb GDDR6X mass production (2022, GeForce RTX 3090 Ti): 21 Gb/s per pin x 32 "
                             "= 84 GB/s and 2 GB per device; price: no figure found, the node file's board-DRAM "
                             "price")),
    DramGeneration("gddr7", "ddr", 6.0,
                   "derived: GDDR6 7.5 pJ/bit (Micron) x 0.8, Samsung's GDDR7 '20 % more power efficient than GDDR6' "
                   "(2023-07 development announcement; Micron claims > 50 %), confidence low",
                   StackPart(128.0, 2.0, 32, 1.0,
                             "Samsung GDDR7 (2023-07 announcement, 2024 listing): 32 Gb/s per pin (PAM3), 128 GB/s per "
                             "x32 device, 16 Gb = 2 GB; JEDEC JESD239 allows up to 48 Gb/s; price: no figure found, "
                             "the node file's board-DRAM price")),
)
GENERATION: dict[str, DramGeneration] = {g.name: g for g in GENERATIONS}


def generation_names(kind: str | None = None) -> tuple[str, ...]:
    """The registered generations, those bought as memory kind ``kind`` where given."""
    return tuple(g.name for g in GENERATIONS if kind is None or g.kind == kind)


def energy_per_byte(name: str) -> float:
    """J per byte of generation ``name``: ``pj_per_bit x 8 x 1e-12``."""
    return GENERATION[name].pj_per_bit * PJ_PER_BIT_TO_J_PER_BYTE


def searchable_names(kind: str | None = None) -> tuple[str, ...]:
    """The parts a study can search (those with a :class:`StackPart`), of memory kind ``kind`` where given."""
    return tuple(g.name for g in GENERATIONS if g.stack is not None and (kind is None or g.kind == kind))


def code_of(name: str) -> int:
    """The index of part ``name`` in :data:`GENERATIONS` (a design batch stores a part as this code)."""
    return [g.name for g in GENERATIONS].index(name)


def part_table(attr: str, missing: float = np.nan) -> np.ndarray:
    """[P] one figure of every record by code: ``energy`` (J/byte) or a :class:`StackPart` field (``stack_bps``,
    ``stack_bytes``, ``io_factor`` = interface bits / :data:`PHY_REFERENCE_BITS` of its kind, ``price_factor``); ``missing``
    where a record has no stack figures."""
    def one(g: DramGeneration) -> float:
        if attr == "energy":
            return g.pj_per_bit * PJ_PER_BIT_TO_J_PER_BYTE
        if g.stack is None:
            return missing
        return {"stack_bps": g.stack.stack_gbps * 1e9, "stack_bytes": g.stack.stack_gb * 1e9,
                "io_factor": g.stack.io_bits / PHY_REFERENCE_BITS[g.kind], "price_factor": g.stack.price_factor}[attr]
    return np.asarray([one(g) for g in GENERATIONS], dtype=float)
