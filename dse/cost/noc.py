"""The on-chip network from its topology: routers, ports, link width and clock, priced per router (vectorized).

A template's ``compute.noc`` (:class:`dse.hardware.schema.Noc`) names a topology over the cores; the geometry
follows from the core count (Dally & Towles, *Principles and Practices of Interconnection Networks*, 2004, ch. 3)::

    mesh      x x y grid (default x = ceil(sqrt N), y = ceil(N / x)), a 5-port router per core,
              directed links 2 [(x-1) y + (y-1) x]
    torus     the same grid with wrap-around links, 4 x y directed links
    ring      a 3-port router per core, 2 N directed links
    crossbar  one switch with a port per core

Uniform traffic (every core reads every slice of the shared level alike) sends half of it across the bisection,
so the network delivers at most (per network, W bytes per link per direction, clock f)::

    mesh 4 min(x, y) W f     torus 8 min(x, y) W f     ring 8 W f     crossbar N W f

and never more than its injection ports, N W f. The link width is the template's ``link_bytes`` or, by default,
one core's share of the traffic the network carries (:func:`dse.cost.area.noc_bandwidth`) per clock and
network, rounded up to whole bytes: each core's port is as wide as its share, which a near-neighbour placement
uses in full and uniform traffic in part (``dse area`` prints both: ``carries_tbps`` and ``uniform_tbps``).

Area, per router of P ports and W-bit links: a crossbar built as W bit-slices of P x P crosspoints (the
multiplexer crossbar of ORION 2.0, Kahng et al., DATE 2009: area grows as P^2 W) and P input buffers::

    A_router = P^2 x W x a_xpt + P x buffer_flits x W x a_bit
    a_xpt    = XPT_7NM_UM2 x density_7nm / density_node      (a crosspoint-bit, its wiring included)
    a_bit    = FIFO_BIT_TRANSISTORS / density_node           (a buffered bit in logic cells)

A single core has no network (its levels attach to it directly). Links run over the tiles on upper metal and take
no die area of their own: Intel's SCC network, 24 routers of 1.32 mm^2 with 16-byte links, is "5 % of the chip
area" of 567 mm^2, its routers alone (Salihundam et al., IEEE JSSC 46(4), 2011). :data:`XPT_7NM_UM2` is the one
fitted figure: the A100's on-chip interconnect, 76.44 mm^2 (LLMCompass die_area.csv), priced as a 108-port
crossbar carrying its L2 bandwidth. Three published routers check it (tests/cost/test_noc.py; docs/area_calibration.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from dse.hardware.schema import Hardware, Noc, Node
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
#: router ports per topology: four neighbours and the core (mesh, torus), two neighbours and the core (ring)
PORTS = {"mesh": 5, "torus": 5, "ring": 3}


def topology_of(hw: Hardware) -> str:
    """The template's topology, ``auto`` resolved: crossbar for a GPU-style (simt) chip or at most 4 cores, else
    mesh."""
    topo = hw.compute.noc.topology
    if topo != "auto":
        return topo
    return "crossbar" if hw.compute.matrix.style == "simt" or hw.compute.cores <= 4 else "mesh"


def grid(cores: np.ndarray, noc: Noc, template_cores: int) -> tuple[np.ndarray, np.ndarray]:
    """[D] (x, y) of a mesh or torus: the template's ``grid`` while the design keeps its cores, else the
    near-square grid x = ceil(sqrt N), y = ceil(N / x)."""
    n = np.maximum(np.asarray(cores, dtype=float), 1.0)
    x = np.ceil(np.sqrt(n) - 1e-9)
    y = np.ceil(n / x - 1e-9)
    if noc.grid is not None:
        same = n == template_cores
        x = np.where(same, float(noc.grid[0]), x)
        y = np.where(same, float(noc.grid[1]), y)
    return x, y


@dataclass(frozen=True)
class NocGeometry:
    """One network's routers and links over ``[D]`` designs (``networks`` copies of it are built)."""

    topology: str
    routers: np.ndarray  # [D] per network
    ports: np.ndarray  # [D] ports per router
    link_bytes: np.ndarray  # [D] per direction per clock
    links: np.ndarray  # [D] directed links per network
    uniform_bps: np.ndarray  # [D] byte/s the networks together deliver under uniform traffic
    networks: int
    buffer_flits: int

    @property
    def crosspoint_bits(self) -> np.ndarray:
        """[D] crosspoint-bits over routers and networks: ports^2 x link bits per router."""
        return self.networks * self.routers * self.ports**2 * self.link_bytes * 8.0

    @property
    def buffer_bits(self) -> np.ndarray:
        """[D] input-buffer bits over routers and networks: ports x buffer_flits x link bits per router."""
        return self.networks * self.routers * self.ports * self.buffer_flits * self.link_bytes * 8.0


def uniform_links(topology: str, n: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """[D] links' worth of one network's uniform-traffic throughput (x W f): 4 min(x, y) (mesh), 8 min(x, y)
    (torus), 8 (ring), N (crossbar), never above the N injection ports."""
    k = np.minimum(x, y)
    per = {"mesh": 4.0 * k, "torus": 8.0 * k, "ring": np.full_like(n, 8.0), "crossbar": n}[topology]
    return np.minimum(per, n)


def geometry(hw: Hardware, cores: np.ndarray, demand_bps: np.ndarray, clock_hz: np.ndarray) -> NocGeometry:
    """The network of ``hw`` over ``cores`` [D] at core clock ``clock_hz`` [D] (the network's own clock when the
    template gives one), its links sized for ``demand_bps`` [D] unless the template gives ``link_bytes``."""
    noc = hw.compute.noc
    topo = topology_of(hw)
    n = np.maximum(np.asarray(cores, dtype=float), 1.0)
    f = np.full_like(n, noc.clock_ghz * 1e9) if noc.clock_ghz is not None else np.asarray(clock_hz, dtype=float)
    if noc.link_bytes is not None:
        w = np.full_like(n, float(noc.link_bytes))
    else:
        w = np.maximum(np.ceil(np.asarray(demand_bps, dtype=float) / (n * f * noc.networks) - 1e-9), 1.0)
    x, y = grid(n, noc, hw.compute.cores)
    if topo == "crossbar":
        routers, ports, links = (n > 1).astype(float), n, 2.0 * n * (n > 1)
    else:
        routers, ports = n * (n > 1), np.full_like(n, float(PORTS[topo]))
        links = {"mesh": 2.0 * ((x - 1) * y + (y - 1) * x), "torus": 4.0 * x * y, "ring": 2.0 * n}[topo]
    return NocGeometry(topology=topo, routers=routers, ports=ports, link_bytes=w, links=links,
                       uniform_bps=uniform_links(topo, n, x, y) * w * f * noc.networks, networks=noc.networks,
                       buffer_flits=noc.buffer_flits)


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
