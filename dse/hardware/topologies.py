"""On-chip network topologies as a table: one ``Topology`` record each (``compute.noc.topology``).

A record says, over ``N`` cores on an ``x x y`` grid (a grid topology) or on none, how many routers one network
has, how many ports each router has, how many directed links join them and how many links' worth of throughput
uniform traffic gets through (every core reading every slice of the shared level alike; the network then delivers
``uniform x W x f`` per network for W-byte links at clock f, never more than its N injection ports; local traffic,
``compute.noc.traffic``'s default, gets the N ports through on any topology, ``dse.hardware.noc``). Formulas:
Dally & Towles, *Principles and Practices of Interconnection Networks*, 2004, ch. 3 (bisection and channel load).
``dse.hardware.noc`` builds the geometry from the record, ``dse.cost.noc`` prices its routers. Adding a topology is
one record in :data:`TOPOLOGIES`; the schema accepts its name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Arr = np.ndarray


@dataclass(frozen=True)
class Topology:
    """One topology: per network, ``routers(n)``, ``ports(n)`` per router, ``links(n, x, y)`` directed links and
    ``uniform(n, x, y)`` links' worth of uniform-traffic throughput; ``grid``: laid out on an x x y grid
    (``compute.noc.grid`` applies); ``min_cores``: the fewest cores it is built over."""

    name: str
    grid: bool
    min_cores: int
    routers: Callable[[Arr], Arr]
    ports: Callable[[Arr], Arr]
    links: Callable[[Arr, Arr, Arr], Arr]
    uniform: Callable[[Arr, Arr, Arr], Arr]
    source: str


def near_square(n: Arr | list[int]) -> tuple[Arr, Arr]:
    """[D] (x, y) of the near-square grid over ``n`` cores: x = ceil(sqrt n), y = ceil(n / x) (no empty row)."""
    n = np.asarray(n, dtype=float)
    x = np.ceil(np.sqrt(n) - 1e-9)
    return x, np.ceil(n / x - 1e-9)


def _per_core(n: Arr) -> Arr:
    """A router per core, none for a single core (its levels attach to it directly)."""
    return n * (n > 1)


TOPOLOGIES: dict[str, Topology] = {t.name: t for t in (
    Topology("mesh", True, 1, _per_core, lambda n: np.full_like(n, 5.0),
             lambda n, x, y: 2.0 * ((x - 1) * y + (y - 1) * x), lambda n, x, y: 4.0 * np.minimum(x, y),
             "2-D mesh, a 5-port router per core (four neighbours and the core); bisection 2 min(x, y) links per "
             "direction, half of uniform traffic crosses it: 4 min(x, y)"),
    Topology("torus", True, 1, _per_core, lambda n: np.full_like(n, 5.0),
             lambda n, x, y: 4.0 * x * y, lambda n, x, y: 8.0 * np.minimum(x, y),
             "2-D torus, the mesh with wrap-around links: twice its bisection, 8 min(x, y)"),
    Topology("unidirectional_torus", True, 1, _per_core, lambda n: np.full_like(n, 3.0),
             lambda n, x, y: 2.0 * x * y, lambda n, x, y: 2.0 * np.minimum(x, y),
             "2-D torus whose rings run one way (a 3-port router: the next node in x, in y, and the core), as each "
             "of Tenstorrent's two NoCs (NOC0 +x +y, NOC1 -x -y: tenstorrent/tt-isa-documentation WormholeB0/NoC; "
             "tt-metal data_movement intro_to_dm.md): a packet travels (k-1)/2 hops of a ring instead of k/4 over "
             "half as many links, a quarter of the two-way torus, 2 min(x, y)"),
    Topology("ring", False, 3, _per_core, lambda n: np.full_like(n, 3.0),
             lambda n, x, y: 2.0 * n, lambda n, x, y: np.full_like(n, 8.0),
             "two-way ring, a 3-port router per core; bisection 2 links per direction: 8"),
    Topology("crossbar", False, 1, lambda n: (n > 1).astype(float), lambda n: n,
             lambda n, x, y: 2.0 * n * (n > 1), lambda n, x, y: n,
             "one switch with a port per core (a GPU's SMs to its L2 slices, NVIDIA A100 whitepaper): every port "
             "at once, N"),
)}
#: the accepted names, in table order
NAMES: tuple[str, ...] = tuple(TOPOLOGIES)
#: the topologies that take a grid
GRID_NAMES: tuple[str, ...] = tuple(n for n, t in TOPOLOGIES.items() if t.grid)

#: topologies a package's dies of one kind may be joined in (``package.dies[].d2d_topology``): the mesh and the ring,
#: whose uniform throughput is bisection-bound (a die's own bytes cross no link, as they cross no bisection; a
#: torus of dies has no package layout, a crossbar counts a node's own bytes through its switch)
DIE_NAMES: tuple[str, ...] = ("mesh", "ring")


def traversals(name: str, n: Arr) -> Arr:
    """[D] link traversals per byte of uniform traffic over ``n`` nodes joined in topology ``name``: its directed
    links over the links' worth uniform traffic gets through, ``links(n, x, y) / uniform(n, x, y)`` on the
    near-square grid. On a ring or torus every link carries the same load, so this is the remote share times the
    mean hops (2 x 2 mesh: 8 / 8 = 1 = 3/4 x 4/3); on a larger mesh the bisection binds first and it counts a
    little more than the mean hops (4 x 4: 3 against 2.5). 0 for one node; a ring of fewer than 3 nodes is the mesh
    (a line of 2)."""
    n = np.asarray(n, dtype=float)
    x, y = near_square(n)
    mesh = TOPOLOGIES["mesh"]
    links, uni = mesh.links(n, x, y), mesh.uniform(n, x, y)
    if name == "ring":  # per design: a ring where it has 3 nodes or more
        ring = TOPOLOGIES["ring"]
        big = n >= ring.min_cores
        links, uni = np.where(big, ring.links(n, x, y), links), np.where(big, ring.uniform(n, x, y), uni)
    return np.where(n > 1, links / np.maximum(uni, 1e-30), 0.0)
