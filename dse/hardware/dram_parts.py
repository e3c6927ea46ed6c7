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

Adding a generation is one record in :data:`GENERATIONS` plus its case in ``tests/hardware/test_dram_parts.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

PJ_PER_BIT_TO_J_PER_BYTE = 8.0e-12


@dataclass(frozen=True)
class DramGeneration:
    """One DRAM part family: the memory kind it is bought as (``dram``: stacks on the package, ``ddr``: chips on
    the board) and its energy per bit with the source."""

    name: str
    kind: str
    pj_per_bit: float
    source: str


GENERATIONS: tuple[DramGeneration, ...] = (
    DramGeneration("hbm2", "dram", 3.9,
                   "O'Connor et al., 'Fine-Grained DRAM: Energy-Efficient DRAM for Extreme Bandwidth Systems', MICRO "
                   "2017 (HBM2 3.9 pJ/bit); the 16 nm node file's figure, on which V100's energy per FLOP was fitted"),
    DramGeneration("hbm2e", "dram", 6.0,
                   "Micron 'Ultra-Bandwidth Solutions' memory comparison table (GDDR6 7.5, GDDR6X 7.25, HBM2E 6.0 "
                   "pJ/bit); the 7 nm node file's figure, on which A100's energy per FLOP was fitted"),
    DramGeneration("hbm3", "dram", 4.5,
                   "interpolated between HBM2E 6.0 (Micron) and HBM3E 3.9 (Samsung): no published HBM3 figure found, "
                   "confidence low; the 5 nm node file's figure, on which H100's energy per FLOP was fitted"),
    DramGeneration("hbm3e", "dram", 3.9,
                   "Samsung statement (HBM4E > 2x HBM3E's 3.9 pJ/bit); the 3 nm node file's figure"),
    DramGeneration("hbm4", "dram", 2.79,
                   "derived: HBM3E 3.9 pJ/bit (Samsung) / 1.4, SK hynix's ~40 % better power efficiency of HBM4 over "
                   "HBM3E (2025 mass-production announcement, via core-ics.com), confidence low; the 2 nm node file's"),
    DramGeneration("gddr6", "ddr", 7.5,
                   "Micron 'Ultra-Bandwidth Solutions' memory comparison table (GDDR6 7.5 pJ/bit average device "
                   "power); every node file's board-DRAM figure"),
    DramGeneration("gddr6x", "ddr", 7.25,
                   "Micron 'Ultra-Bandwidth Solutions' memory comparison table (GDDR6X 7.25 pJ/bit)"),
)
GENERATION: dict[str, DramGeneration] = {g.name: g for g in GENERATIONS}


def generation_names(kind: str | None = None) -> tuple[str, ...]:
    """The registered generations, those bought as memory kind ``kind`` where given."""
    return tuple(g.name for g in GENERATIONS if kind is None or g.kind == kind)


def energy_per_byte(name: str) -> float:
    """J per byte of generation ``name``: ``pj_per_bit x 8 x 1e-12``."""
    return GENERATION[name].pj_per_bit * PJ_PER_BIT_TO_J_PER_BYTE
