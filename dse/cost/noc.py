"""The area of the on-chip network: its routers, priced per router at the node (vectorized).

The geometry (routers, ports, link width, what its traffic gets through) comes from the template's topology in
``dse.hardware.noc``. Area, per router of P ports and W-bit links: a crossbar built as W bit-slices of P x P
crosspoints (the multiplexer crossbar of ORION 2.0, Kahng et al., DATE 2009: area grows as P^2 W) and P input
buffers::

    A_router = P^2 x W x a_xpt + P x buffer_flits x W x a_bit
    a_xpt    = XPT_7NM_UM2 x density_7nm / density_node      (a crosspoint-bit, its wiring included)
    a_bit    = FIFO_BIT_TRANSISTORS / density_node           (a buffered bit in logic cells)

Links run over the tiles on upper metal and take no die area of their own: Intel's SCC network, 24 routers of
1.32 mm^2 with 16-byte links, is "5 % of the chip area" of 567 mm^2, its routers alone (Salihundam et al., IEEE
JSSC 46(4), 2011). :data:`XPT_7NM_UM2` is the one fitted figure: the A100's on-chip interconnect, 76.44 mm^2
(LLMCompass die_area.csv), priced as a 108-port crossbar carrying its L2 bandwidth. Three published routers check it
(tests/cost/test_noc.py; docs/area_calibration.md). ``dse area`` prints each template's network.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from dse.hardware.schema import Node
from dse.hardware.templates import load_node

#: area of one crosspoint-bit at 7 nm (um^2), its share of the crossbar's wiring included: fitted so that the
#: a100-80gb template's network (a 108-port crossbar of 48-byte ports carrying its 7.31 TB/s L2 bandwidth) prices at
#: the 76.44 mm^2 of its die-shot annotation (LLMCompass ae/figure6/real_hardware/die_area.csv).
#: ``tests/cost/test_noc.py`` refits it. A 108-way multiplexer bit is ~4 transistors per input (0.04 um^2 at 7 nm):
#: a large crossbar is wire-bound, and the fit carries that
XPT_7NM_UM2 = 17.055
#: transistors of one buffered bit: a static master-slave D flip-flop (about 24, Weste & Harris, CMOS VLSI Design,
#: 4th ed., ch. 10) and its share of the read multiplexer (about 6)
FIFO_BIT_TRANSISTORS = 30.0


@lru_cache(maxsize=1)
def _reference_density() -> float:
    return load_node("7nm").logic_density_mtr_per_mm2.value


def xpt_um2(node: Node) -> float:
    """Area of one crosspoint-bit at ``node`` (um^2): XPT_7NM_UM2 x density_7nm / density_node."""
    return XPT_7NM_UM2 * _reference_density() / node.logic_density_mtr_per_mm2.value


def bit_um2(node: Node) -> float:
    """Area of one buffered bit at ``node`` (um^2): FIFO_BIT_TRANSISTORS / logic density (MTr/mm^2 = Tr/um^2)."""
    return FIFO_BIT_TRANSISTORS / node.logic_density_mtr_per_mm2.value


def noc_mm2(crosspoint_bits: np.ndarray, buffer_bits: np.ndarray, node: Node) -> np.ndarray:
    """[D] mm^2 of the routers: crosspoint-bits x a_xpt + buffered bits x a_bit."""
    return (crosspoint_bits * xpt_um2(node) + buffer_bits * bit_um2(node)) * 1e-6
