"""The hardware description: one pydantic model per block, strict (``extra="forbid"``).

A template (``hw_templates/*.yaml``) is a :class:`Hardware`; a process node
(``hw_templates/nodes/*.yaml``) is a :class:`Node`. Every block carries a ``source`` that names where
its numbers came from; node coefficients carry a source each. Fields carry their unit in the name;
the ``*_si`` helpers convert to SI base units (byte, byte/s, FLOP/s, second).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from dse.hardware.collectives import LIBRARIES
from dse.hardware.d2d import D2D, D2D_NAMES
from dse.hardware.dram_parts import GENERATION, generation_names
from dse.hardware.memory_kinds import KIND, STACK_SOURCES, MemoryKind, infer_kind, kind_of
from dse.hardware.topologies import DIE_NAMES as DIE_TOPOLOGIES
from dse.hardware.topologies import GRID_NAMES as GRID_TOPOLOGIES
from dse.hardware.topologies import NAMES as TOPOLOGY_NAMES
from dse.hardware.topologies import TOPOLOGIES, near_square
from dse.limits import (
    MAX_ARRAY_SIDE,
    MAX_ASPECT_RATIO,
    MAX_BANDWIDTH_GBPS,
    MAX_BANDWIDTH_TBPS,
    MAX_CAPACITY_GB,
    MAX_CAPACITY_GIB,
    MAX_CAPACITY_MIB,
    MAX_CLOCK_GHZ,
    MAX_CORES,
    MAX_DIE_AREA_MM2,
    MAX_DIES,
    MAX_DRAM_STACKS,
    MAX_LINK_GBPS,
    MAX_LINKS,
    MAX_NOC_BUFFER_FLITS,
    MAX_NOC_LINK_BYTES,
    MAX_NOC_NETWORKS,
    MAX_OVERHEAD_US,
    MAX_PACKAGE_USD,
    MAX_PEAK_TFLOPS,
    MAX_POWER_W,
    MAX_REGISTER_KIB,
    MAX_STACK_CAPACITY_GB,
)
from dse.strict import Strict
from dse.units import BLOCK_FORMATS, DTYPES, GIB, MATRIX_OP_KINDS, MIB, TERA, Dtype, GemmKernelStructure

Fraction = float  # documented alias: 0 < x <= 1
#: a dense peak in TFLOP/s (the > 0 check is the unit's validator's, which names the dtype)
Peak = Annotated[float, Field(le=MAX_PEAK_TFLOPS)]
#: one side of a GEMM output tile
TileSide = Annotated[int, Field(le=MAX_ARRAY_SIDE)]


class ComputeUnit(Strict):
    """One kind of execution unit (the MAC arrays, or the vector/SIMD units)."""

    kind: Literal["matrix", "vector"] = Field(description="matrix: GEMM/conv/attention; vector: the rest")
    peak_tflops: dict[Dtype, Peak] = Field(
        description="Dense peak per dtype in TFLOP/s (TOP/s for ints), all cores together, no sparsity."
    )
    array_rows: int = Field(1, gt=0, le=MAX_ARRAY_SIDE, description="MAC-array rows (M-side tile of one pass); 1 for "
                            "vector units")
    array_cols: int = Field(1, gt=0, le=MAX_ARRAY_SIDE, description="MAC-array columns (N-side tile of one pass)")
    style: Literal["simt", "systolic"] = Field(
        "simt", description="Area and energy model of a matrix unit: systolic = priced per processing element "
        "(PE area and energy from the node); simt = GPU-style tensor cores priced per TFLOP/s (whole-SM fit). "
        "Vector units are always simt")
    efficiency: float = Field(1.0, gt=0, le=1, description="Achievable fraction of peak on large shapes")
    dtype_efficiency: dict[Dtype, float] = Field(
        default_factory=dict, description="Achievable fraction of peak_tflops[dtype] where a dtype's measured "
        "GEMMs reach a different fraction than `efficiency` (e.g. a library's fp8 kernels); other dtypes use "
        "`efficiency`. Kept as a ratio to `efficiency`, so a design or calibration that scales `efficiency` "
        "scales these too")
    cta_tiles: list[tuple[TileSide, TileSide]] | None = Field(
        None, description="Output tiles (M x N per core) a GEMM library picks among (e.g. CUTLASS's sm80 tensor-op "
        "set); when set, a GEMM/conv's array fill is the best tile-and-wave (and split-K) efficiency over them "
        "(dse.predict.tiles) instead of the array_rows x array_cols quantization")
    gemm_kernel: GemmKernelStructure = Field(
        "one_tile", description="How the chip's GEMM library covers the output tiles (with cta_tiles): one_tile (one "
        "tile per CTA: its epilogue runs after its mainloop with the matrix unit idle, sm80 libraries) or persistent "
        "(CTAs loop over tiles and overlap one tile's epilogue with the next one's mainloop, sm90 libraries); a "
        "workload's gemm_kernel overrides it (dse.workloads.ops.GemmKernel)")
    dataflow: Literal["output_stationary", "weight_stationary"] = Field(
        "output_stationary", description="What stays in the MAC array while the other operands stream "
        "(dse.predict.roofline.array_fill): output_stationary (an M x N output tile per pass, K streams: M and N are "
        "quantized to rows x cols) or weight_stationary (a K x N weight tile per pass, M activation rows stream "
        "through it, the next tile loading behind them: K and N are quantized, and fewer than `rows` streamed rows "
        "leave the array waiting on the weight load, TPU MXU)")
    stream_rows: TileSide | None = Field(
        None, gt=0, description="weight_stationary only: the fewest streamed rows that hide the next weight tile's "
        "load (an operator streaming fewer fills M / stream_rows of the array). Default array_rows (shifting a tile in "
        "takes a cycle a row, TPU MXU); NeuronCore-v2's TensorE loads the next stationary tile in the background and "
        "issues a MultiplyMoving every max(N, 64) cycles: 64")
    conv_lowering: Literal["im2col", "taps"] = Field(
        "im2col", description="How a convolution reaches the MAC arrays (dse.predict.roofline.array_fill): im2col "
        "(one GEMM contracting over C_in x kh x kw: cuDNN's implicit GEMM, XLA) or taps (one matmul per kernel tap, "
        "contracting over the input channels alone and accumulating the taps in place: an array whose contraction must "
        "sit on the partition dimension, NeuronCore's TensorE, fills C_in of its rows, 3 of 128 on an RGB stem)")
    array_shapes: list[tuple[TileSide, TileSide]] | None = Field(
        None, description="Geometries (rows x cols) the MAC arrays can be configured into, op by op, each of "
        "array_rows x array_cols MACs (Gaudi 2's MME: 256x256, 128x512 and 512x128); an op's array fill is the best "
        "over them, as the graph compiler picks the geometry per GEMM. Default: array_rows x array_cols only")
    runs: list[str] | None = Field(
        None, description="Matrix-op kinds (gemm, conv, attention) this unit can execute. Each such op runs on the unit "
        "that finishes it first among those able to (the MAC arrays at their fill, the vector units at their peak), "
        "as NPU graph compilers place work (Gaudi MME vs TPC, TPU MXU vs VPU, Neuron TensorE vs VectorE). Default: "
        "all of them on both units; [] on the vector unit keeps every matrix op on the MAC arrays")
    unpacks: list[Dtype] = Field(
        default_factory=list, description=f"Block-scaled storage formats ({', '.join(BLOCK_FORMATS)}) the matrix unit's "
        "operand path converts to its compute format on the way in, each operand on its own (Tensix's unpackers), so "
        "weights stored in them beside wider activations need no dequantization kernel: the .dequant row of such a "
        "GEMM costs no time. Default none: a dequantization kernel on the vector units")
    area_modes: list[Dtype] | None = Field(
        None, description="The modes of peak_tflops that have processing elements of their own and so size the MAC "
        "arrays (dse.cost.area: the costliest of them); every other mode runs in several passes over those PEs and "
        "adds none (Groq's TSP builds each fp16 MAC from int8 cells, a quarter of the int8 rate). Default: every mode")
    source: str = Field(min_length=3, description="Where the peaks, geometry and efficiency come from")

    @model_validator(mode="after")
    def _positive_peaks(self) -> ComputeUnit:
        if self.area_modes is not None and (not self.area_modes or not set(self.area_modes) <= set(self.peak_tflops)):
            raise ValueError(f"@area_modes@got {self.area_modes}; accepted: a non-empty list of the unit's peak_tflops "
                             f"modes ({', '.join(self.peak_tflops)})")
        for dt in self.unpacks:
            if self.kind != "matrix" or dt not in BLOCK_FORMATS:
                raise ValueError(f"@unpacks@got {dt!r}{'' if self.kind == 'matrix' else ' on the vector unit'}; "
                                 f"accepted: on the matrix unit, block-scaled formats ({', '.join(BLOCK_FORMATS)})")
        if self.kind == "matrix" and self.runs is not None and not self.runs:
            raise ValueError(f"runs is []: the matrix unit would run no op kind; accepted: a non-empty list of "
                             f"{', '.join(MATRIX_OP_KINDS)}")
        for k in self.runs or ():
            if k not in MATRIX_OP_KINDS:
                raise ValueError(f"runs has {k!r}; accepted: a list of {', '.join(MATRIX_OP_KINDS)}")
        if self.stream_rows is not None and self.dataflow != "weight_stationary":
            raise ValueError(f"@stream_rows@got {self.stream_rows} with dataflow {self.dataflow}; accepted: stream_rows "
                             "only with dataflow: weight_stationary")
        for r, c in self.array_shapes or ():
            if self.kind != "matrix" or r * c != self.array_rows * self.array_cols:
                raise ValueError(f"@array_shapes@got {r}x{c}; accepted: on the matrix unit, geometries of array_rows "
                                 f"x array_cols = {self.array_rows * self.array_cols} MACs")
        if not self.peak_tflops:
            raise ValueError(f"peak_tflops is empty; accepted: a mapping of dtype ({', '.join(DTYPES)}) to > 0")
        for dt, v in self.peak_tflops.items():
            if not v > 0:
                raise ValueError(f"peak_tflops.{dt} = {v}; accepted: a number > 0")
        for dt, v in self.dtype_efficiency.items():
            if not 0 < v <= 1:
                raise ValueError(f"dtype_efficiency.{dt} = {v}; accepted: a fraction in (0, 1]")
        for m, n in self.cta_tiles or ():
            if not (m > 0 and n > 0):
                raise ValueError(f"cta_tiles has [{m}, {n}]; accepted: [M, N] pairs of integers > 0")
        return self


class Noc(Strict):
    """The on-chip network that carries the cores' traffic to the shared levels (``dse.cost.noc`` prices it)."""

    topology: Literal[("auto", *TOPOLOGY_NAMES)] = Field(  # type: ignore[valid-type]
        "auto", description="mesh or torus (a router per core on a 2-D grid, 5 ports), unidirectional_torus (one-way "
        "rings on the grid, 3 ports: each of Tenstorrent's two NoCs), ring (a router per core, 3 ports) or crossbar "
        "(one switch with a port per core); dse.hardware.topologies lists them. auto: crossbar for a GPU-style (simt) "
        "chip, whose SMs reach the L2 through a crossbar (NVIDIA A100 whitepaper), and for at most 4 cores; else mesh")
    grid: list[Annotated[int, Field(gt=0, le=MAX_CORES)]] | None = Field(
        None, description="grid topologies only (mesh, torus, unidirectional_torus): [x, y] routers; x * y must hold "
        "the cores with no empty row. Default: the near-square grid ceil(sqrt(cores)) x ceil(cores / that)")
    link_bytes: float | None = Field(
        None, gt=0, le=MAX_NOC_LINK_BYTES, description="Link width, bytes per direction per clock (the flit). Default: "
        "the narrowest whole-byte link with which the network gets the outermost shared on-chip level's bandwidth "
        "(main memory's when every on-chip level is per core) through under its traffic. A given width that gets less "
        "through slows that level in the predictor (local traffic: N W f over N cores; uniform: mesh 4 min(x, y) W f "
        "per network, torus 8 min(x, y) W f, ring 8 W f, crossbar N W f)")
    traffic: Literal["local", "uniform"] = Field(
        "local", description="How the cores reach the carried level. local (default): the compiler gives each core "
        "its own slice of the shared level and multicasts what several read, so each core's share crosses its own "
        "port and a few neighbouring links (tt-metal's DRAM-sharded matmuls read each core's bank next to it; IBM "
        "NorthPole's partial sums move between adjacent cores, Modha et al., Science 2023): the network delivers its "
        "N injection ports, N W f. uniform: every core reads every slice alike, half of the traffic crosses the "
        "bisection (Dally & Towles 2004, ch. 3), the worst case a mesh of many cores pays for in wide links")
    clock_ghz: float | None = Field(None, gt=0, le=MAX_CLOCK_GHZ, description="Network clock (default: the cores')")
    networks: int = Field(1, ge=1, le=MAX_NOC_NETWORKS, description="Parallel physical networks (Tenstorrent 2, "
                          "Piton 3), each with its own routers and links")
    buffer_flits: int = Field(
        4, ge=1, le=MAX_NOC_BUFFER_FLITS, description="Input buffer per router port, flits. Default 4: a credit-based "
        "link runs at full rate only when a port buffers its credit round trip, about 4 cycles for a 1-cycle link and "
        "router (Dally & Towles, Principles and Practices of Interconnection Networks, 2004, ch. 13)")
    source: str | None = Field(None, description="Where the topology and widths come from")


class Compute(Strict):
    """Cores, clock and the two unit kinds."""

    cores: int = Field(gt=0, le=MAX_CORES, description="Cores (SMs, TensorCores, NPU cores) sharing the outer levels")
    reserved_cores: int = Field(
        0, ge=0, le=MAX_CORES, description="Cores the runtime keeps for itself (command dispatch), which run no "
        "operator: operators compute on cores - reserved_cores of them (the peaks stay the chip's). Tenstorrent's "
        "tt-metal computes on an 8x8 worker grid of a Wormhole n150's 72 Tensix and 13x10 of a Blackhole p150's 140")
    spare_cores: int = Field(
        0, ge=0, le=MAX_CORES, description="Cores on the die beyond `cores`, fused off for yield (harvesting: A100 "
        "enables 108 of GA100's 128 SMs): the area prices them with their matrix and vector units and per-core "
        "memory levels, the yield counts a die good with up to this many faulty cores (dse.cost.cost."
        "harvested_yield); peaks, bandwidths and the predictor see `cores` only. In a multi-die package, spread "
        "evenly over the dies that hold the matrix units")
    spare_granule_cores: int = Field(
        1, ge=1, le=MAX_CORES, description="Cores fused off together, the unit a harvested die loses to a fault "
        "(NVIDIA: a TPC of 2 SMs; a Tenstorrent n150: a row of 8 Tensix): the yield's tiles are groups of this many "
        "cores, and spare_cores and the cores on the die are whole groups")
    clock_ghz: float = Field(gt=0, le=MAX_CLOCK_GHZ, description="Clock the peaks assume, GHz")
    energy_clock_ghz: float | None = Field(
        None, gt=0, le=MAX_CLOCK_GHZ, description="Clock (GHz) at which the node's energy coefficients hold for this "
        "chip, its nominal-voltage clock: at clock_ghz the on-chip energy per operation and per byte is x (clock_ghz / "
        "energy_clock_ghz)^2 (dse.hardware.energy.dvfs_factor). Default: clock_ghz. dse writes it into a design whose "
        "clock it changed (best_design.yaml), so the file reproduces the study's power")
    register_kib_per_core: float = Field(
        gt=0, le=MAX_REGISTER_KIB, description="Register file / accumulator storage per core (KiB): reuse capacity "
        "inside level 0; on the die of every core, spares included, at the node's cache density (simt register "
        "files) or scratchpad density (systolic accumulators; dse.cost.area)"
    )
    launch_overhead_us: float = Field(
        0.0, ge=0, le=MAX_OVERHEAD_US, description="Fixed time per operator launch/sync (us): the overhead ceiling"
    )
    dispatch: Literal["kernels", "static"] = Field(
        "kernels", description="How operators reach the units: kernels (a host, a runtime or a compiled graph launches "
        "each operator on the cores, and launch_overhead_us is that launch, ramp and drain) or static (a statically "
        "scheduled chip that launches nothing: the compiler times every instruction, as on the Groq TSP, Abts et al., "
        "ISCA 2020, and launch_overhead_us is the pipeline fill of its instruction stream). A calibration shared by "
        "several chips (dse calibrate's leave-one-chip-out) pools the launch overhead only among chips of one dispatch")
    op_boundaries: Literal["overlapped", "serial"] = Field(
        "overlapped", description="What a scratchpad NPU's runtime does between two operators "
        "(dse.predict.pipeline): overlapped (a graph compiler loads the next operator's first blocks while this one "
        "computes and drains its last outputs behind the next one: XLA, Neuron, SynapseAI graph mode; only a lone "
        "operator, a kernel benchmark, and an eager framework's operators pay its software pipeline's fill and "
        "drain) or serial (every operator is its own program that starts with empty buffers and ends with its last "
        "store, as tt-metal runs them: every GEMM and convolution pays its first block's load or compute and its last "
        "block's store)")
    graph_kernel_us: float | None = Field(
        None, ge=0, le=MAX_OVERHEAD_US,
        description="Fixed device time of one kernel of a captured graph (CUDA graph) whose bytes stay on chip (us): "
        "the launch, ramp and drain of its grid. A kernel that streams main memory pays launch_overhead_us, the "
        "difference being its memory pipeline's ramp and drain, in proportion to the share of its bytes that "
        "cross the main memory (dse.predict.roofline.overhead_times). Default: launch_overhead_us for every kernel")
    eager_overhead_us: float = Field(
        10.0, ge=0, le=MAX_OVERHEAD_US,
        description="Host time to dispatch one operator from an eager framework (us): an operator of a "
        "workload run with execution: eager takes at least this long. Default 10 us, low confidence: PyTorch's "
        "operator micro-benchmarks time ~3.3 us for a trivial CUDA op through the C++ dispatcher alone "
        "(pytorch/pytorch PR #32194), Python and autograd bookkeeping add to it")
    sync_overhead_us: float = Field(
        0.0, ge=0, le=MAX_OVERHEAD_US,
        description="Extra time of one host-synchronised call timed on its own (us): added to "
        "measurements taken that way (validation rows with timing=isolated), never to a workload"
    )
    causal_attention: Literal["skip", "compute"] = Field(
        "skip", description="How the chip's fused attention kernel runs a causal mask: skip (its key loop stops at "
        "the diagonal, FlashAttention-2's n_block_max: the masked key blocks cost nothing) or compute (QK^T and PV run "
        "over every key block and the mask is applied in a triangular softmax: the matrix work of a causal prefill is "
        "the non-causal one, dse.predict.roofline.array_fill); a template that sets compute says its source")
    matrix: ComputeUnit
    vector: ComputeUnit
    noc: Noc = Field(default_factory=Noc, description="The on-chip network (topology, link width, clock)")
    source: str = Field(min_length=3)

    @model_validator(mode="after")
    def _kinds(self) -> Compute:
        self._noc_fits()
        if self.reserved_cores >= self.cores:
            raise ValueError(f"@reserved_cores@got {self.reserved_cores}; accepted: fewer than the {self.cores} cores")
        if self.matrix.kind != "matrix" or self.vector.kind != "vector":
            raise ValueError("compute.matrix must have kind: matrix and compute.vector kind: vector")
        if self.matrix.runs is not None and self.vector.runs is not None:
            lost = [k for k in MATRIX_OP_KINDS if k not in self.matrix.runs and k not in self.vector.runs]
            if lost:
                raise ValueError(f"no unit runs {', '.join(lost)} (matrix.runs {self.matrix.runs}, vector.runs "
                                 f"{self.vector.runs}); accepted: every one of {', '.join(MATRIX_OP_KINDS)} on at least "
                                 "one unit")
        if self.vector.style != "simt":
            raise ValueError(f"vector.style = {self.vector.style!r}; accepted: simt (only compute.matrix may be "
                             "systolic)")
        return self

    def _noc_fits(self) -> None:
        """A grid holds the cores with no empty row, and only a mesh or torus has one; a ring needs 3 cores."""
        noc = self.noc
        if noc.grid is not None:
            if len(noc.grid) != 2:
                raise ValueError(f"@noc.grid@got {noc.grid}; accepted: [x, y], two whole numbers, e.g. "
                                 f"{grid_for(self.cores)}")
            x, y = noc.grid
            if noc.topology not in GRID_TOPOLOGIES:
                raise ValueError(f"@noc.grid@got {noc.grid} with topology {noc.topology}; accepted: a grid only for "
                                 f"topology {', '.join(GRID_TOPOLOGIES)}")
            if x * y < self.cores or (y - 1) * x >= self.cores:
                raise ValueError(f"@noc.grid@got {noc.grid} for {self.cores} cores; accepted: [x, y] with x * y >= "
                                 f"{self.cores} and no empty row, e.g. {grid_for(self.cores)}")
        least = TOPOLOGIES[noc.topology].min_cores if noc.topology in TOPOLOGIES else 1
        if self.cores < least:
            raise ValueError(f"@noc.topology@got {noc.topology} for {self.cores} cores; accepted: {noc.topology} for "
                             f"{least} or more cores, crossbar or mesh")


def grid_for(cores: int) -> list[int]:
    """The near-square grid over ``cores`` as a template writes it (``dse.hardware.topologies.near_square``)."""
    x, y = near_square([cores])
    return [int(x[0]), int(y[0])]


#: share of a shared cache that keeps data re-read across kernels (``MemoryLevel.resident_fraction``'s default for a
#: cache): gpu-benches' L2 sweep on an A100-80GB holds its L2-resident plateau up to ~28 MB of the 40 MB L2, beyond
#: which the data set leaves the near L2 partition and reads fall to the DRAM plateau (github.com/te42kyfo/gpu-benches
#: @3088b33 gpu-l2-cache/a100_80.txt; docs/reference/measured_calibration.csv), 28 / 40 = 0.7
DEFAULT_CACHE_RESIDENT = 0.7


#: how far a main-memory level's bandwidth may sit from a whole number of stacks (published aggregate figures are
#: rounded: TPU v5e's 819 GB/s is 2 x 409.6)
STACK_SLACK = 0.005


#: what an on-chip level keeps between operators (``MemoryLevel.keeps``; the what-if ``keeps`` stage reads it too)
Keeps = Literal["tiles", "step", "steps"]


class MemoryLevel(Strict):
    """One level of the memory hierarchy, listed from the compute outward."""

    name: str = Field(min_length=1)
    kind: str = Field(
        description="What the level is (dse.hardware.memory_kinds.KINDS): sram: on chip; dram: off chip (HBM, GDDR, "
        "LPDDR). Optional in a template: a level without it takes dse.hardware.memory_kinds.infer_kind")
    capacity_mib: float | None = Field(None, gt=0, le=MAX_CAPACITY_MIB, description="Total capacity, MiB (give one "
                                       "capacity_*)")
    capacity_gib: float | None = Field(None, gt=0, le=MAX_CAPACITY_GIB, description="Total capacity, GiB")
    capacity_gb: float | None = Field(None, gt=0, le=MAX_CAPACITY_GB, description="Total capacity, decimal GB (1e9 "
                                      "bytes)")
    instances: int = Field(1, gt=0, le=MAX_CORES, description="Private copies (e.g. per core); capacity is split evenly")
    reuse_group: int = Field(
        1, gt=0, le=MAX_CORES,
        description="Private copies whose tiles are shared by multicast, so the next level out sees their "
        "pooled capacity as one reuse buffer (Hopper thread-block clusters of 2 SMs with TMA multicast: 2)")
    bandwidth_tbps: float | None = Field(None, gt=0, le=MAX_BANDWIDTH_TBPS, description="Aggregate bandwidth, TB/s "
                                         "(1e12 byte/s)")
    bandwidth_gbps: float | None = Field(None, gt=0, le=MAX_BANDWIDTH_GBPS, description="Aggregate bandwidth, GB/s "
                                         "(1e9 byte/s)")
    efficiency: float = Field(1.0, gt=0, le=1, description="Achievable fraction of bandwidth")
    write_bandwidth_tbps: float | None = Field(
        None, gt=0, le=MAX_BANDWIDTH_TBPS,
        description="Bytes per second the level absorbs when written, TB/s, where it differs from its read bandwidth. "
        "Reads and writes share the level's port, so an op's time there is reads / (bandwidth x efficiency) + "
        "writes / (write bandwidth x efficiency) (dse.predict.traffic.write_weighted); a design that resizes the "
        "level keeps the ratio. Default: the bandwidth (a written byte costs what a read one does)")
    stack_bandwidth_gbps: float | None = Field(
        None, gt=0, le=MAX_LINK_GBPS, description="DRAM only: bandwidth of one stack/channel (GB/s); sets the PHY "
        "count for area, and the bandwidth must be a whole number of them. Default: the rated stack of the level's "
        "`generation` (HBM3 819.2, GDDR6 64 per x32 device); an HBM main memory naming neither is refused (it would "
        "buy no PHY); board DRAM without a part (LPDDR, DDR) is then one channel of the level's bandwidth"
    )
    stack_capacity_gb: float | None = Field(
        None, gt=0, le=MAX_STACK_CAPACITY_GB,
        description="DRAM only: capacity of one stack/channel (decimal GB); a design bought as N whole "
        "stacks holds N x this. Default: the level's capacity over its stacks, ceil(bandwidth / stack_bandwidth)")
    generation: str | None = Field(
        None, description="Off-chip levels only: the DRAM part family (dse.hardware.dram_parts.GENERATIONS: "
        f"{', '.join(generation_names('dram'))} for kind dram; {', '.join(generation_names('ddr'))} for kind ddr), "
        "whose energy per byte the level's traffic pays. Default: the node file's figure for the kind (the generation "
        "typical of that node)")
    organization: Literal["cache", "scratchpad"] = Field(
        "cache", description="SRAM only: cache (tags, crossbar, periphery; priced at the node's cache density) or "
        "scratchpad (software-managed SRAM macros; the node's macro density). Default: scratchpad on a chip of "
        "systolic MAC arrays (compute.matrix.style systolic), cache otherwise")
    resident_fraction: float | None = Field(
        None, gt=0, le=1, description="On-chip SRAM that keeps tensors (keeps step or steps): the fraction of its "
        "capacity that holds tensors between operators and across steps (dse.predict.traffic residency). Default: 1 "
        "for a scratchpad (the compiler places every tensor), DEFAULT_CACHE_RESIDENT for a cache")
    keeps: Keeps | None = Field(
        None, description="On-chip SRAM: what the level keeps (dse.predict.traffic residency): tiles "
        "(an operator's tiles only: every tensor between operators lives in main memory, as a JAX/XLA program's "
        "arrays live in a TPU's HBM and its VMEM holds a kernel's blocks), step (also the activations between the "
        "operators of one step, placed by the graph compiler), steps (also, from one step to the next, the weights "
        "and KV cache that fit and a one-kernel step's inputs and outputs, as whole-model-on-chip machines run: Groq "
        "TSP, Graphcore IPU). Default: steps for a cache (its lines outlive a kernel or a launch), step for a "
        "scratchpad shared by all cores, tiles for a level with a copy per core; a per-core scratchpad that says step "
        "or steps keeps tensors across its cores' copies together (distributed on-chip memory: tt-metal's sharded L1 "
        "tensors, IBM NorthPole), a per-core cache only tiles")
    source: str = Field(min_length=3)

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, v: str) -> str:
        if v not in KIND:  # the registry as it is now (a test may add a record)
            raise ValueError(f"accepted: one of {', '.join(KIND)}")
        return v

    @model_validator(mode="after")
    def _one_each(self) -> MemoryLevel:
        for group in (("capacity_mib", "capacity_gib", "capacity_gb"), ("bandwidth_tbps", "bandwidth_gbps")):
            given = [(f, getattr(self, f)) for f in group if getattr(self, f) is not None]
            if len(given) != 1:
                field = given[1][0] if given else group[0]
                got = " and ".join(f"{f}={v:g}" for f, v in given) or "none of them"
                raise ValueError(f"@{field}@got {got}; accepted: exactly one of {', '.join(group)}")
        self._stack_from_part()
        self._whole_stacks()
        self._buyable_stacks()
        self._known_generation()
        self._keeps_where_kept()
        return self

    def _stack_from_part(self) -> None:
        """A level bought in stacks (HBM) or channels (GDDR) that names its part but not ``stack_bandwidth_gbps`` buys
        the part's rated stack (:class:`dse.hardware.dram_parts.StackPart`: HBM3 819.2 GB/s, GDDR6 64 GB/s per x32
        device). Board DRAM without a part (LPDDR, DDR) keeps its documented rule: the template's bandwidth is one
        channel; a main memory of HBM naming neither is refused (``Hardware._hierarchy``)."""
        if self.stack_bandwidth_gbps is not None or self.spec.area not in ("dram_phy", "ddr_phy"):
            return
        known = GENERATION.get(self.generation) if self.generation else None  # an unknown one: _known_generation
        part = known.stack if known is not None and known.kind == self.kind else None
        if part is not None:
            self.__dict__["stack_bandwidth_gbps"] = part.stack_gbps  # frozen model: the one derived default

    def _stack_missing(self, at: str) -> str:
        """The refusal of an HBM level with neither a stack bandwidth nor a part, ``@at@...``."""
        rated = ", ".join(f"{g} {GENERATION[g].stack.stack_gbps:g}" for g in generation_names(self.kind)
                          if GENERATION[g].stack is not None)
        return (f"@{at}@missing on {self.name!r}, the main memory (kind {self.kind}: bought in stacks, each a PHY and "
                f"controller on the die); accepted: GB/s of one stack, or a generation whose rated stack it takes "
                f"({rated} GB/s)")

    def _keeps_where_kept(self) -> None:
        """``keeps`` and ``resident_fraction`` name on-chip SRAM that can hold a tensor between operators: not a main
        memory (everything is kept there), and of a level with a copy per core only a scratchpad, whose tensors the
        compiler places across the copies; a per-core cache (a GPU's L1) keeps nothing the next kernel can count on."""
        for name in ("keeps", "resident_fraction"):
            value = getattr(self, name)
            if value is None or (name == "keeps" and value == "tiles"):
                continue
            if self.off_chip:
                raise ValueError(f"@{name}@got {value!r} on {self.name!r}, an off-chip level; accepted: only on-chip "
                                 "SRAM keeps tensors between operators (main memory holds every tensor anyway)")
            if self.tiles_only:
                raise ValueError(f"@{name}@got {value!r} on {self.name!r}, a cache with {self.instances} per-core "
                                 "copies; accepted: tiles, or organization scratchpad (a compiler places tensors "
                                 "across per-core scratchpads; a per-core cache keeps nothing across kernels)")
        if self.resident_fraction is not None and self.kept == "tiles":
            why = "keeps: tiles" if self.keeps else f"a level with {self.instances} per-core copies keeps tiles by default"
            raise ValueError(f"@resident_fraction@got {self.resident_fraction:g} on {self.name!r}, which keeps no "
                             f"tensor between operators ({why}); accepted: with keeps: step or steps")

    def _known_generation(self) -> None:
        """A level's ``generation`` is a registered DRAM part of the level's own kind (``dse.hardware.dram_parts``)."""
        accepted = generation_names(self.kind)
        if self.generation is None or self.generation in accepted:
            return
        if not accepted:
            raise ValueError(f"@generation@got {self.generation!r}; accepted: none (kind {self.kind} is not DRAM)")
        known = GENERATION.get(self.generation)
        if known:
            raise ValueError(f"@generation@got {self.generation!r} (a part of kind {known.kind}, not {self.kind}); "
                             f"accepted: one of {', '.join(accepted)}")
        others = "; ".join(f"{', '.join(generation_names(k))} (kind {k})" for k in ("dram", "ddr") if k != self.kind)
        raise ValueError(f"@generation@got {self.generation!r}; accepted: one of {', '.join(accepted)}; {others}; "
                         "or none (the node file's figure for the kind: LPDDR and DDR parts have no record, so a "
                         "level of them is kind ddr without a generation)")

    def _buyable_stacks(self) -> None:
        """A level bought in stacks (or channels) names a part one could buy (the kind's ``max_stack_gbps`` and
        ``stack_gb``, :data:`dse.hardware.memory_kinds.STACK_SOURCES`), and its capacity is what its stacks hold:
        ``capacity = stacks x stack_capacity_gb`` where that is given (a design bought as N stacks holds N x it, so
        the template's own stack count must hold what the template says). A capacity below a whole stack's holds
        (H200: 141 GB of 6 x 24 GB) stands: a per-stack capacity is checked only within the kind's range."""
        spec = self.spec
        if self.stack_bandwidth_gbps is None or spec.max_stack_gbps is None or spec.stack_gb is None:
            return
        unit = "channel" if spec.area == "ddr_phy" else "stack"
        if self.stack_bandwidth_gbps > spec.max_stack_gbps:
            raise ValueError(f"@stack_bandwidth_gbps@got {self.stack_bandwidth_gbps:g} GB/s per {unit} of kind "
                             f"{self.kind}; accepted: at most {spec.max_stack_gbps:g} GB/s (STACK_SOURCES: "
                             f"{STACK_SOURCES[self.kind]})")
        stacks = self.stacks
        cap_gb = self.capacity_bytes / 1e9
        field = next(f for f in ("capacity_mib", "capacity_gib", "capacity_gb") if getattr(self, f) is not None)
        if self.stack_capacity_gb is not None:
            held = stacks * self.stack_capacity_gb
            if abs(cap_gb - held) > STACK_SLACK * held:
                raise ValueError(f"@{field}@got {cap_gb:g} GB on {stacks} {unit}s of stack_capacity_gb "
                                 f"{self.stack_capacity_gb:g} ({held:g} GB); accepted: {held:g} GB, or "
                                 f"stack_capacity_gb {cap_gb / stacks:g}")
            return
        lo, hi = spec.stack_gb
        per = cap_gb / stacks
        if not lo <= per <= hi:
            raise ValueError(f"@{field}@got {cap_gb:g} GB on {stacks} {unit}s = {per:g} GB per {unit}; accepted: "
                             f"{lo:g}-{hi:g} GB per {unit} ({lo * stacks:g}-{hi * stacks:g} GB; STACK_SOURCES: "
                             f"{STACK_SOURCES[self.kind]})")

    def _whole_stacks(self) -> None:
        """A main-memory level bought in stacks (or channels) delivers a whole number of them: ``bandwidth = n x
        stack_bandwidth``. A design built from knobs rounds up to whole stacks (``DesignBatch.with_knobs``), so a
        template between two counts would be one chip in ``dse hardware`` and another in a study or the explorer."""
        if self.stack_bandwidth_gbps is None or self.spec.area not in ("dram_phy", "ddr_phy"):
            return
        field = "bandwidth_tbps" if self.bandwidth_tbps is not None else "bandwidth_gbps"
        bw = self.bandwidth_bps / 1e9
        n = bw / self.stack_bandwidth_gbps
        whole = self.stacks
        if abs(n - whole) <= STACK_SLACK * whole:
            return
        up = max(1, math.ceil(n))
        rated = "" if "stack_bandwidth_gbps" in self.model_fields_set else f" ({self.generation}'s rated stack)"
        raise ValueError(f"@{field}@got {bw:g} GB/s = {n:.3g} stacks of {self.stack_bandwidth_gbps:g} GB/s{rated}; "
                         f"accepted: a whole number of stacks ({up} x {self.stack_bandwidth_gbps:g} = "
                         f"{up * self.stack_bandwidth_gbps:g} GB/s), or stack_bandwidth_gbps {bw / up:g} for {up} "
                         f"stacks at a lower pin rate")

    @property
    def stacks(self) -> int:
        """The whole stacks (or channels) the bandwidth buys, ``max(1, round(bandwidth / stack_bandwidth_gbps))``
        (``_whole_stacks`` holds the template to a whole number of them); 1 without a stack bandwidth."""
        if self.stack_bandwidth_gbps is None:
            return 1
        return max(1, round(self.bandwidth_bps / 1e9 / self.stack_bandwidth_gbps))

    @property
    def spec(self) -> MemoryKind:
        """The record of this level's kind (off-chip, energy, area and cost class, search knob)."""
        return kind_of(self.kind)

    @property
    def off_chip(self) -> bool:
        return self.spec.off_chip

    @property
    def tiles_only(self) -> bool:
        """Whether the level can keep nothing but an operator's tiles: a cache with a copy per core (a GPU's L1),
        whose lines no later kernel can count on; a per-core scratchpad keeps what the compiler places in it."""
        return self.instances > 1 and self.organization != "scratchpad"

    @property
    def resident_share(self) -> float:
        """Fraction of the level that keeps tensors between operators and across steps: 0 off chip and where the
        level keeps only tiles, the default for a level with a private copy per core (a tensor's producer and
        consumer may split it over the cores differently, and a GPU's L1 is not kept across kernels); else
        ``resident_fraction``, by default 1 for a scratchpad and :data:`DEFAULT_CACHE_RESIDENT` for a cache. A per-core
        scratchpad that says ``keeps: step`` or ``steps`` keeps tensors in all its copies together (distributed
        on-chip memory), the whole capacity counted once."""
        if self.off_chip or self.kept == "tiles":
            return 0.0
        if self.resident_fraction is not None:
            return self.resident_fraction
        return 1.0 if self.organization == "scratchpad" else DEFAULT_CACHE_RESIDENT

    @property
    def kept(self) -> str:
        """What the level keeps between operators (``keeps``; default tiles for a level with a copy per core, else
        steps for a cache and step for a scratchpad)."""
        if self.keeps is not None:
            return self.keeps
        if self.instances > 1:
            return "tiles"
        return "steps" if self.organization == "cache" else "step"

    @property
    def keeps_across_steps(self) -> bool:
        """Whether tensors stay in the level from one step to the next (``keeps: steps``)."""
        return self.kept == "steps"

    @property
    def capacity_bytes(self) -> float:
        if self.capacity_mib is not None:
            return self.capacity_mib * MIB
        if self.capacity_gib is not None:
            return self.capacity_gib * GIB
        return float(self.capacity_gb) * 1e9  # type: ignore[arg-type]

    @property
    def bandwidth_bps(self) -> float:
        if self.bandwidth_tbps is not None:
            return self.bandwidth_tbps * TERA
        return float(self.bandwidth_gbps) * 1e9  # type: ignore[arg-type]

    @property
    def write_ratio(self) -> float:
        """Time of a written byte over a read one at this level, ``bandwidth / write_bandwidth`` (1 by default)."""
        if self.write_bandwidth_tbps is None:
            return 1.0
        return self.bandwidth_bps / (self.write_bandwidth_tbps * TERA)


class Network(Strict):
    """Chip-to-chip links (their area and SerDes energy; network ceilings come with multi-chip systems)."""

    links: int = Field(ge=0, le=MAX_LINKS, description="Links per chip")
    link_bandwidth_gbps: float = Field(gt=0, le=MAX_LINK_GBPS, description="Per link, per direction, GB/s")
    collective_library: Literal[LIBRARIES] = Field(  # type: ignore[valid-type]
        "nccl", description="Collective library of the chip's software stack (its default system's protocols; "
                            "dse.hardware.collectives.PROTOCOLS)")
    collective_engine: Literal["offload", "compute_core"] = Field(
        "offload", description="What executes the chip's collectives: offload, engines beside the compute (DMA and "
        "link engines, a GPU's few NCCL SMs, TPU7x's SparseCores), so a plan's overlap may hide them behind "
        "computation; compute_core, the compute core itself (XLA's continuation fusions on a TPU v4-v6e TensorCore), "
        "which then hides none of their time (dse.predict.hides_collectives)")
    source: str = Field(min_length=3)


#: what a die of a multi-die package can hold besides memory levels (``dse.cost.area.COMPONENTS`` less
#: ``sram``, which each level's name places, and ``d2d``, which every die of a multi-die package has)
DIE_PARTS: tuple[str, ...] = ("matrix", "vector", "noc", "dram_phy", "serdes", "fixed")


class DieGroup(Strict):
    """One kind of die in a multi-die package (``package.dies``): how many, at which node, what it holds."""

    name: str = Field(min_length=1)
    count: int = Field(1, ge=1, le=MAX_DIES, description="Identical dies of this kind in the package; they share "
                       "what the kind holds equally (searchable: ``package.dies.<name>.count``)")
    node: str | None = Field(None, description="Process node file of this die (default: the template's "
                             "process_node), e.g. 6nm for an IO die beside 5nm compute dies")
    holds: list[str] = Field(default_factory=list, description="Area parts this die kind holds: matrix, vector, "
                             "noc, dram_phy (PHYs and controllers), serdes, fixed, and memory level names (their "
                             "SRAM); a part no die names goes to the first die kind")
    d2d_link: str = Field("ucie-advanced", description="Die-to-die link kind of this die (dse.hardware.d2d: "
                          "ucie-standard, ucie-advanced, hybrid-bond)")
    d2d_topology: str = Field("mesh", description="How the dies of this kind are joined to each other: mesh (on a "
                              "near-square grid; 2 dies: one link, 4: a 2 x 2 square) or ring (dse.hardware.topologies."
                              "DIE_NAMES); bytes between dies that are not neighbours cross several links "
                              "(dse.hardware.topologies.traversals)")
    d2d_bandwidth_tbps: float = Field(0.0, ge=0, le=MAX_BANDWIDTH_TBPS, description="Die-to-die bandwidth of "
                                      "each die, both directions together (TB/s): sets its D2D PHY area and edge, and "
                                      "caps the levels whose bytes cross it (DesignBatch.d2d_ceiling); 0: not given, "
                                      "no PHY priced and no cap (searchable: ``package.dies.<name>.d2d_bandwidth_tbps``)")
    stacked_on: str | None = Field(None, description="The die kind this one is bonded on top of (a hybrid-bond "
                                   "link): it takes no interposer area of its own")
    published_area_mm2: float | None = Field(None, gt=0, le=MAX_DIE_AREA_MM2,
                                             description="Public area of one such die, to check the model")
    source: str = Field(min_length=3)


class Package(Strict):
    """Die shape and package limits (the shoreline check of ``dse.cost.area``), and the dies of a multi-die
    package (``dies``; none: one die holds everything)."""

    aspect_ratio: float = Field(1.0, gt=0, le=MAX_ASPECT_RATIO,
                                description="Die long side / short side (1 = square); the edge "
                                "length that holds DRAM PHYs and SerDes follows from area and this ratio")
    max_dram_stacks: int | None = Field(None, gt=0, le=MAX_DRAM_STACKS,
                                        description="DRAM stacks the package/interposer holds "
                                        "(default: the node's max_dram_stacks)")
    dies: list[DieGroup] | None = Field(None, min_length=1, description="The package's die kinds (compute dies, "
                                        "IO dies); none: a single die")
    fixed_mm2: float | None = Field(None, ge=0, le=MAX_DIE_AREA_MM2,
                                    description="Die area of control, host IO and everything the model does not "
                                    "itemise, mm2, on the die that holds the fixed block (default: the node's "
                                    "fixed_mm2, A100's 40 mm2 'other'; an edge NPU's host interface and control "
                                    "are a few mm2): say its source in the package's source")
    package_usd: float | None = Field(None, ge=0, le=MAX_PACKAGE_USD,
                                      description="Substrate and assembly of one package, USD (default: the node's "
                                      "package_usd, 21 USD, ttm-cas's starter figure; an edge part's small BGA, or a "
                                      "large flip-chip package, says its own in the package's source)")
    source: str = Field(min_length=3)

    @model_validator(mode="after")
    def _dies(self) -> Package:
        if not self.dies:
            return self
        names = [g.name for g in self.dies]
        if len(set(names)) != len(names):
            raise ValueError(f"@dies@got die names {names}; accepted: unique die names")
        for i, g in enumerate(self.dies):
            link = D2D.get(g.d2d_link)
            if link is None:
                raise ValueError(f"@dies.{i}.d2d_link@got {g.d2d_link!r}; accepted: {', '.join(D2D_NAMES)}")
            if g.d2d_topology not in DIE_TOPOLOGIES:
                raise ValueError(f"@dies.{i}.d2d_topology@got {g.d2d_topology!r}; accepted: {', '.join(DIE_TOPOLOGIES)}")
            stacked = link.integration == "stacked"
            if stacked and g.stacked_on not in names:
                raise ValueError(f"@dies.{i}.stacked_on@got {g.stacked_on!r}; accepted: the name of another die "
                                 f"kind ({', '.join(n for n in names if n != g.name)}) for a {g.d2d_link} die")
            if g.stacked_on is not None and (not stacked or g.stacked_on == g.name):
                raise ValueError(f"@dies.{i}.stacked_on@got {g.stacked_on!r} with d2d_link {g.d2d_link!r}; "
                                 "accepted: stacked_on only with a stacked link (hybrid-bond), on another die kind")
        under = {g.name: g.stacked_on for g in self.dies}
        for i, g in enumerate(self.dies):  # a chain of stacked_on must end on a die that sits on the package
            seen, at = [g.name], g.stacked_on
            while at is not None:
                if at in seen:
                    chain = " on ".join([*seen, at])
                    raise ValueError(f"@dies.{i}.stacked_on@got a cycle ({chain}); accepted: stacks that end on a die "
                                     "kind on the package (its stacked_on left out)")
                seen.append(at)
                at = under.get(at)
        return self


class Published(Strict):
    """Public figures of a real chip, used to check the area and power models (not by the models)."""

    die_area_mm2: float | None = Field(None, gt=0, le=MAX_DIE_AREA_MM2)
    tdp_w: float | None = Field(None, gt=0, le=MAX_POWER_W)
    chip_power_limit_w: float | None = Field(
        None, gt=0, le=MAX_POWER_W,
        description="The chip's own power limit (its core rail), where the vendor publishes one apart from a board "
        "TDP that also feeds DRAM, IO and conversion losses (W)")
    source: str = Field(min_length=3)


def default_organization(data: Mapping[str, Any]) -> str | None:
    """The organization of an SRAM level that does not say its own, from a template's raw data: ``scratchpad`` on a
    chip of systolic MAC arrays, whose compiler places every tensor in software-managed SRAM (TPU VMEM and CMEM,
    Gaudi 2's SRAM, Trainium's SBUF, Tenstorrent's Tensix L1, the Groq TSP: every shipped systolic template but one
    says so), else None (the field's own default, ``cache``, a GPU's L1 and L2)."""
    compute = data.get("compute")
    matrix = compute.get("matrix") if isinstance(compute, Mapping) else None
    style = matrix.get("style") if isinstance(matrix, Mapping) else None
    return "scratchpad" if style == "systolic" else None


class Hardware(Strict):
    """A chip: compute, an ordered memory hierarchy (inner to outer), and its process node."""

    name: str = Field(min_length=1)
    description: str = ""
    process_node: str = Field(description="Name of a node file in hw_templates/nodes/, e.g. 7nm")
    reference_dtype: Dtype = Field("bf16", description="Dtype whose matrix peak is 'the' peak (ratio, area)")
    compute: Compute
    memory: list[MemoryLevel] = Field(min_length=1)
    network: Network | None = None
    power_limit_w: float | None = Field(
        None, gt=0, le=MAX_POWER_W,
        description="Board power cap (W): an operator whose modelled power exceeds it runs at a lower "
        "clock (dse.predict.power_cap); e.g. an A100 capped at 330 W")
    package: Package | None = None
    published: Published | None = None
    calibrated_on: list[str] = Field(
        default_factory=list, description="Validation rows (ids) this template's numbers were fitted on, written by dse "
        "calibrate: dse validate counts them in sample (fitted), never as a check of the fit")
    source: str = Field(min_length=3, description="Overall provenance of this template")

    @model_validator(mode="before")
    @classmethod
    def _infer_kinds(cls, data: Any) -> Any:
        """A memory level given without ``kind`` takes :func:`dse.hardware.memory_kinds.infer_kind`; an SRAM level
        without ``organization`` on a chip of systolic MAC arrays is a scratchpad (:func:`default_organization`)."""
        if not isinstance(data, dict) or not isinstance(data.get("memory"), list):
            return data
        levels, org = data["memory"], default_organization(data)
        if all(not isinstance(m, dict) or ("kind" in m and (org is None or m["kind"] != "sram" or "organization" in m))
               for m in levels):
            return data  # every level says what it would be given (a dumped template): nothing to fill
        filled = [{**m, "kind": infer_kind(str(m.get("name", "")), i, len(levels))}
                  if isinstance(m, dict) and "kind" not in m else m for i, m in enumerate(levels)]
        if org is not None:
            filled = [{**m, "organization": org} if isinstance(m, dict) and m.get("kind") == "sram"
                      and "organization" not in m else m for m in filled]
        return {**data, "memory": filled}

    @model_validator(mode="after")
    def _hierarchy(self) -> Hardware:
        names = [m.name for m in self.memory]
        if len(set(names)) != len(names):
            raise ValueError(f"@memory@got level names {names}; accepted: unique memory level names")
        off = [m.off_chip for m in self.memory]
        if any(off) and not all(off[off.index(True):]):
            kinds = [f"{m.name}: {m.kind}" for m in self.memory]
            raise ValueError(f"@memory@got levels {kinds} (inner to outer); accepted: every on-chip level inside "
                             "(listed before) every off-chip level")
        if self.reference_dtype not in self.compute.matrix.peak_tflops:
            from dse.units import fallback_dtype

            if fallback_dtype(self.reference_dtype, self.compute.matrix.peak_tflops) is None:
                modes = ", ".join(self.compute.matrix.peak_tflops)
                raise ValueError(f"@reference_dtype@got {self.reference_dtype!r}; accepted: a mode of the matrix unit "
                                 f"({modes}) or a dtype that falls back to one")
        main = self.offchip_level
        if main.off_chip and main.spec.area == "dram_phy" and main.stack_bandwidth_gbps is None:
            # without stacks the die would buy no PHY, controller or shoreline for it: its bandwidth free in area
            raise ValueError(main._stack_missing(f"memory.{self.offchip_index}.stack_bandwidth_gbps"))
        m, c = self.compute.matrix, self.compute
        for i, lv in enumerate(self.memory):  # private copies sit one per core or one per group of whole cores
            if not lv.off_chip and lv.instances > 1 and c.cores % lv.instances:
                divisors = ", ".join(str(k) for k in range(1, c.cores + 1) if c.cores % k == 0)
                raise ValueError(f"@memory.{i}.instances@got {lv.instances} copies of {lv.name!r} over {c.cores} cores; "
                                 f"accepted: a divisor of the cores ({divisors}): one copy per core or per group of "
                                 "whole cores (MI300X: one L2 per 38-CU die)")
        if m.style == "systolic":  # a systolic array is buildable: peak = cores x rows x cols x arrays x 2 x clock
            one = c.cores * m.array_rows * m.array_cols * 2.0 * c.clock_ghz * 1e9
            arrays = self.peak_flops / one
            if round(arrays) < 1 or abs(arrays / round(arrays) - 1.0) > 0.02:
                raise ValueError(
                    f"@compute.matrix.peak_tflops@got {self.peak_flops / TERA:g} TFLOP/s {self.reference_dtype}, "
                    f"{arrays:.3g} arrays per core; accepted: cores x array_rows x array_cols x N x 2 x clock_ghz "
                    f"for a whole number N of arrays per core ({c.cores} x {m.array_rows} x {m.array_cols} x N x 2 x "
                    f"{c.clock_ghz:g} GHz = N x {one / TERA:.4g} TFLOP/s), within 2 %")
        self._die_parts()
        self._spare_cores()
        return self

    def _spare_cores(self) -> None:
        """Spare cores spread evenly over the dies that hold the matrix units (each such die its own share), in whole
        groups of ``spare_granule_cores``."""
        spare, group, cores = self.compute.spare_cores, self.compute.spare_granule_cores, self.compute.cores
        if spare and (spare % group or (cores + spare) % group):
            raise ValueError(f"@compute.spare_granule_cores@got {group} with {spare} spare of {cores + spare} cores on "
                             "the die; accepted: a group size that divides both (the die fuses off whole groups)")
        holder = self.die_groups[self.matrix_die] if self.die_groups else None
        if spare and holder is not None and spare % holder.count:
            raise ValueError(f"@compute.spare_cores@got {spare} over {holder.count} {holder.name!r} dies; accepted: a "
                             f"multiple of {holder.count} (each die that holds the matrix units has its own spares)")

    def _die_parts(self) -> None:
        """Each die kind holds known parts (DIE_PARTS or an on-chip memory level), none held twice."""
        if not self.die_groups:
            return
        levels = [m.name for m in self.memory if m.spec.area == "sram"]
        accepted = [*DIE_PARTS, *levels]
        seen: dict[str, str] = {}
        for i, g in enumerate(self.die_groups):
            for part in g.holds:
                if part not in accepted:
                    raise ValueError(f"@package.dies.{i}.holds@got {part!r}; accepted: {', '.join(accepted)}")
                if part in seen:
                    raise ValueError(f"@package.dies.{i}.holds@got {part!r}, already held by die {seen[part]!r}; "
                                     "accepted: each part on one die kind")
                seen[part] = g.name

    # Convenience views in SI units -------------------------------------------------------------
    @property
    def die_groups(self) -> list[DieGroup]:
        """The package's die kinds (``package.dies``); ``[]`` for a single die."""
        return list(self.package.dies) if self.package is not None and self.package.dies else []

    @property
    def die_holdings(self) -> list[frozenset[str]]:
        """The parts each die kind holds (``DIE_PARTS`` and SRAM level names); what no die names goes to the
        first kind. A single-die template: one kind holding everything."""
        every = [*DIE_PARTS, *(m.name for m in self.memory if m.spec.area == "sram")]
        dies = self.die_groups
        if not dies:
            return [frozenset(every)]
        named = {p for g in dies for p in g.holds}
        return [frozenset(g.holds) | (frozenset(p for p in every if p not in named) if i == 0 else frozenset())
                for i, g in enumerate(dies)]

    @property
    def matrix_die(self) -> int:
        """Index of the die kind that holds the matrix units (:attr:`die_holdings`; 0 for a single die)."""
        return next(i for i, h in enumerate(self.die_holdings) if "matrix" in h)

    def spare_step(self, dies: Any = None) -> Any:
        """The step of a valid spare-core count: whole ``spare_granule_cores`` groups, the same share on each of the
        ``dies`` (a count or an array of counts; default: the template's) that hold the matrix units
        (:meth:`_spare_cores`): ``lcm(group, dies)``."""
        import numpy as np

        if dies is None:
            dies = self.die_groups[self.matrix_die].count if self.die_groups else 1
        return np.lcm(self.compute.spare_granule_cores, np.asarray(dies).astype(int))

    @property
    def peak_flops(self) -> float:
        """Matrix peak at ``reference_dtype`` in FLOP/s (falls back to the next wider native mode)."""
        from dse.units import fallback_dtype

        mode = fallback_dtype(self.reference_dtype, self.compute.matrix.peak_tflops)
        return self.compute.matrix.peak_tflops[mode] * TERA  # type: ignore[index]

    @property
    def offchip_index(self) -> int:
        """Index of the main memory: the innermost level whose kind is off-chip (the one the die's PHYs drive),
        or the outermost level of a chip with no off-chip level (an SRAM-only chip)."""
        return next((i for i, m in enumerate(self.memory) if m.off_chip), len(self.memory) - 1)

    @property
    def offchip_level(self) -> MemoryLevel:
        """The main memory level (:attr:`offchip_index`): the roofline's bandwidth, the footprint's capacity."""
        return self.memory[self.offchip_index]

    @property
    def dram(self) -> MemoryLevel:
        """The main memory level (the old name of :attr:`offchip_level`)."""
        return self.offchip_level

    @property
    def ridge_flop_per_byte(self) -> float:
        """Compute:bandwidth ratio = peak FLOP/s / main-memory byte/s (the ridge point)."""
        return self.peak_flops / self.offchip_level.bandwidth_bps


class Coefficient(Strict):
    """One sourced model coefficient: the value used, its unit, where it came from, how sure we are."""

    value: float = Field(ge=0)
    unit: str
    source: str = Field(min_length=3)
    confidence: Literal["high", "medium", "low", "derived"] = "medium"
    range: tuple[float, float] | None = Field(None, description="Spread between sources, if known")


class DtypeCoefficient(Strict):
    """A sourced coefficient per dtype (e.g. energy per FLOP, area factor of a MAC mode)."""

    values: dict[Dtype, float]
    unit: str
    source: str = Field(min_length=3)
    confidence: Literal["high", "medium", "low", "derived"] = "medium"

    @model_validator(mode="after")
    def _non_negative(self) -> DtypeCoefficient:
        for dt, v in self.values.items():
            if not v >= 0:
                raise ValueError(f"values.{dt} = {v}; accepted: a number >= 0")
        return self


class Node(Strict):
    """Process-node coefficients for area (``dse.cost.area``), cost (``dse.cost.cost``) and power
    (``dse.cost.power``). Every coefficient carries its source and a confidence tag."""

    name: str
    description: str = ""
    # area
    logic_density_mtr_per_mm2: Coefficient
    calibration_clock_ghz: Coefficient
    matrix_mm2_per_tflops: Coefficient
    matrix_dtype_area_factor: DtypeCoefficient
    vector_mm2_per_tflops: Coefficient
    systolic_pe_um2: DtypeCoefficient
    systolic_control_fraction: Coefficient
    sram_bitcell_um2: Coefficient
    cache_mm2_per_mib: Coefficient
    scratchpad_mm2_per_mib: Coefficient
    dram_phy_mm2_per_stack: Coefficient
    dram_controller_mm2_per_stack: Coefficient
    ddr_phy_mm2_per_channel: Coefficient
    serdes_mm2_per_link: Coefficient
    fixed_mm2: Coefficient
    reticle_limit_mm2: Coefficient
    # shoreline and package
    hbm_edge_mm_per_stack: Coefficient
    serdes_edge_mm_per_link: Coefficient
    io_edge_reserve_mm: Coefficient
    max_dram_stacks: Coefficient
    # energy and power
    energy_pj_per_flop: DtypeCoefficient
    energy_pj_per_flop_systolic: DtypeCoefficient
    energy_pj_per_byte_register: Coefficient
    energy_pj_per_byte_sram_local: Coefficient
    energy_pj_per_byte_sram_global: Coefficient
    energy_pj_per_byte_dram: Coefficient
    energy_pj_per_byte_ddr: Coefficient
    energy_pj_per_byte_serdes: Coefficient
    leakage_fraction: Coefficient
    # cost
    wafer_cost_usd: Coefficient
    defect_density_per_cm2: Coefficient
    yield_alpha: Coefficient
    dram_usd_per_gb: Coefficient
    ddr_usd_per_gb: Coefficient
    package_usd: Coefficient
    interposer_usd_per_mm2: Coefficient
    dram_stack_footprint_mm2: Coefficient

    @model_validator(mode="after")
    def _ranges(self) -> Node:
        for name in ("logic_density_mtr_per_mm2", "calibration_clock_ghz", "cache_mm2_per_mib", "matrix_mm2_per_tflops",
                     "scratchpad_mm2_per_mib", "sram_bitcell_um2", "wafer_cost_usd", "yield_alpha", "reticle_limit_mm2",
                     "hbm_edge_mm_per_stack", "max_dram_stacks"):
            if not getattr(self, name).value > 0:
                raise ValueError(f"{name}.value = {getattr(self, name).value}; accepted: a number > 0")
        pe = self.systolic_pe_um2.values
        if "bf16" not in pe:
            raise ValueError("systolic_pe_um2.values needs bf16 (the reference PE); accepted: dtype -> um2 > 0")
        for dt, v in {**pe, **self.energy_pj_per_flop_systolic.values}.items():
            if not v > 0:
                raise ValueError(f"systolic_pe_um2/energy_pj_per_flop_systolic {dt} = {v}; accepted: a number > 0")
        if not self.leakage_fraction.value < 1:
            raise ValueError(f"leakage_fraction.value = {self.leakage_fraction.value}; accepted: 0 <= x < 1")
        return self

    def coefficients(self) -> list[tuple[str, str, str, str, str]]:
        """(name, value, unit, confidence, source) for every coefficient, for reports."""
        rows = []
        for name in type(self).model_fields:
            c = getattr(self, name)
            if isinstance(c, Coefficient):
                rows.append((name, f"{c.value:g}", c.unit, c.confidence, c.source))
            elif isinstance(c, DtypeCoefficient):
                vals = ", ".join(f"{k} {v:g}" for k, v in c.values.items())
                rows.append((name, vals, c.unit, c.confidence, c.source))
        return rows
