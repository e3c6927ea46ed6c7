"""The on-chip network from its topology: routers, ports, links and what its traffic gets through (vectorized).

A template's ``compute.noc`` (:class:`dse.hardware.schema.Noc`) names a topology over the cores; the geometry
follows from the core count and the topology's record in ``dse.hardware.topologies`` (Dally & Towles, *Principles
and Practices of Interconnection Networks*, 2004, ch. 3)::

    mesh      x x y grid (default x = ceil(sqrt N), y = ceil(N / x)), a 5-port router per core,
              directed links 2 [(x-1) y + (y-1) x]
    torus     the same grid with wrap-around links, 4 x y directed links
    unidirectional_torus  the torus with one-way rings (Tenstorrent's NoCs), a 3-port router, 2 x y links
    ring      a 3-port router per core, 2 N directed links
    crossbar  one switch with a port per core

What the network delivers depends on the traffic (``compute.noc.traffic``). Local traffic (the default: each core
reads its own slice of the shared level, what several cores read is multicast) is bound by the cores' injection
ports, ``N W f`` per network for W-byte links at clock f. Uniform traffic (every core reads every slice alike) sends
half of it across the bisection, so the network delivers at most::

    mesh 4 min(x, y) W f   torus 8 min(x, y) W f   unidirectional torus 2 min(x, y) W f   ring 8 W f   crossbar N W f

and never more than its N injection ports. The two agree on a crossbar, a mesh of up to 16 cores, a torus of up to 64
and a ring of up to 8; a 16 x 16 mesh under uniform traffic needs links 4 times as wide as under local traffic for
the same level. The link width is the template's ``link_bytes`` or, by default (``auto``), the narrowest whole number of
bytes with which the network gets the carried bandwidth through under its traffic
(:attr:`dse.hardware.designs.DesignBatch.noc_demand`): ``W = ceil(BW / (links_carried x f x networks))``. A given
width can deliver less than the level supplies; the predictor then reads the level at what the network delivers
(:attr:`dse.hardware.designs.DesignBatch.delivered_bandwidth`). The area of the routers is priced in
``dse.cost.noc``. A single core has no network (its levels attach to it directly).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dse.hardware.schema import Hardware, Noc
from dse.hardware.topologies import TOPOLOGIES, near_square


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
    x, y = near_square(n)
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
    delivered_bps: np.ndarray  # [D] byte/s the networks together deliver under their traffic
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
    """[D] links' worth of one network's uniform-traffic throughput (x W f): the topology's record
    (``dse.hardware.topologies``: mesh 4 min(x, y), torus 8 min(x, y), ring 8, crossbar N, ...), never above the N
    injection ports."""
    return np.minimum(TOPOLOGIES[topology].uniform(n, x, y), n)


def carried_links(traffic: str, topology: str, n: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """[D] links' worth of one network's throughput (x W f) under ``traffic``: local, the N injection ports;
    uniform, :func:`uniform_links`."""
    return n if traffic == "local" else uniform_links(topology, n, x, y)


def geometry(hw: Hardware, cores: np.ndarray, demand_bps: np.ndarray, clock_hz: np.ndarray,
             link_bytes: np.ndarray) -> NocGeometry:
    """The network of ``hw`` over ``cores`` [D] at core clock ``clock_hz`` [D] (the network's own clock when the
    template gives one), its links ``link_bytes`` [D] wide or, where that is NaN, sized so that its traffic
    (``compute.noc.traffic``) gets ``demand_bps`` [D] through."""
    noc = hw.compute.noc
    topo = topology_of(hw)
    n = np.maximum(np.asarray(cores, dtype=float), 1.0)
    f = np.full_like(n, noc.clock_ghz * 1e9) if noc.clock_ghz is not None else np.asarray(clock_hz, dtype=float)
    x, y = grid(n, noc, hw.compute.cores)
    through = carried_links(noc.traffic, topo, n, x, y)
    given = np.broadcast_to(np.asarray(link_bytes, dtype=float), n.shape)
    # auto: the narrowest whole-byte link that gets the demand through under the network's traffic
    auto = np.maximum(np.ceil(np.asarray(demand_bps, dtype=float) / (through * f * noc.networks) - 1e-9), 1.0)
    w = np.where(np.isnan(given), auto, given)
    t = TOPOLOGIES[topo]
    return NocGeometry(topology=topo, routers=t.routers(n), ports=t.ports(n), link_bytes=w, links=t.links(n, x, y),
                       delivered_bps=through * w * f * noc.networks, networks=noc.networks,
                       buffer_flits=noc.buffer_flits)
