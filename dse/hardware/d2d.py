"""Die-to-die link kinds: one record per kind, the only place that says what a die-to-die link costs.

Each die kind of a multi-die package (``package.dies`` of a template) names the link it attaches by
(``package.dies[].d2d_link``). Each record says, per die and per unit of die-to-die bandwidth (both
directions together, as the UCIe figures are quoted):

* ``gbps_per_mm2``: bandwidth per mm^2 of PHY and bumps (the die area the link takes,
  ``dse.cost.area``);
* ``gbps_per_mm``: bandwidth per mm of die edge (the shoreline the link takes; ``None`` for
  face-to-face 3D bonding, which uses the die's area, not its edge);
* ``pj_per_bit``: energy per bit crossing (``dse.cost.power``);
* ``bond_yield``: the fraction of assemblies that survive bonding one die (``dse.cost.cost``);
* ``integration``: ``organic`` (2D on a substrate: no interposer), ``interposer`` (2.5D) or ``stacked``
  (3D: bonded on top of another die, ``stacked_on``, taking no interposer area of its own).

Adding a kind is one record in :data:`D2D_LINKS` with its sources; ``tests/hardware/test_d2d.py``
checks every record.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class D2DLink:
    """What one kind of die-to-die link costs (see the module docstring)."""

    name: str
    gbps_per_mm2: float
    gbps_per_mm: float | None
    pj_per_bit: float
    bond_yield: float
    integration: str  # "organic" (2D on a substrate), "interposer" (2.5D), "stacked" (3D)
    description: str
    source: str


_UCIE = ("UCIe 1.0 key performance targets (D. Das Sharma, 'Universal Chiplet Interconnect Express (UCIe): Building an "
         "open chiplet ecosystem', UCIe Consortium white paper, 2022; the same table in the Hot Chips 2023 UCIe tutorial): "
         "standard package 28-224 GB/s per mm of shoreline, 22-125 GB/s per mm2, 0.5 pJ/b; advanced package 165-1317 "
         "GB/s/mm, 188-1350 GB/s/mm2 (1.35 TB/s/mm2 at a 45 um bump pitch), 0.25 pJ/b; the upper ends are 32 GT/s. "
         "Energy above 16 GT/s 0.6 / 0.3 pJ/b and 3D hybrid bonding 0.01-0.05 pJ/b up to 300 TB/s/mm2: Das Sharma, "
         "IEEE Hot Interconnects 2025 (dev.convergedigest.com/?p=104749)")
_ACTUARY = ("bond yield per die bonded, compounding over the dies: Chiplet Actuary (Y. Feng and K. Ma, DAC 2022; "
            "Yinxiao-Feng/chiplet-actuary@b85c29f parameter.ini: organic substrate 0.99, 2.5D silicon interposer 0.95)")

D2D_LINKS: tuple[D2DLink, ...] = (
    D2DLink("ucie-standard", gbps_per_mm2=125.0, gbps_per_mm=224.0, pj_per_bit=0.6, bond_yield=0.99,
            integration="organic",
            description="UCIe-S class: dies side by side on an organic substrate (2D MCM, 100-130 um bumps)",
            source=_UCIE + "; " + _ACTUARY),
    D2DLink("ucie-advanced", gbps_per_mm2=1350.0, gbps_per_mm=1317.0, pj_per_bit=0.3, bond_yield=0.95,
            integration="interposer",
            description="UCIe-A class: dies side by side on a silicon interposer or bridge (2.5D: CoWoS-S/-L, EMIB; "
            "25-55 um bumps); NVIDIA NV-HBI and AMD Infinity Fabric AP are priced as this class (their PHY areas "
            "are not public), and a bridge package as an interposer (no public bridge price was found)",
            source=_UCIE + "; " + _ACTUARY),
    D2DLink("hybrid-bond", gbps_per_mm2=300_000.0, gbps_per_mm=None, pj_per_bit=0.05, bond_yield=0.95,
            integration="stacked",
            description="3D hybrid bonding (SoIC class, < 10 um pitch): a die bonded face to face on another "
            "(MI300's XCDs on their IODs); no edge and no interposer footprint of its own",
            source=_UCIE + "; bond yield 0.95 per die: hybrid bonding die-to-wafer in UMN-ZhaoLab/3D-Carbon@6e21f69 "
            "parameters/configs/bonding_yield.json (Chiplet Actuary has no 3D case)"),
)
D2D: dict[str, D2DLink] = {k.name: k for k in D2D_LINKS}
D2D_NAMES: tuple[str, ...] = tuple(D2D)
