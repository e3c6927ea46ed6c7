"""Physical limits of every model and hardware dimension: the upper bounds the schemas check.

Each constant is the ``le=`` bound of the pydantic fields that take it (``dse.workloads.*`` architecture blocks,
``dse.workloads.scenario.Scenario``, ``dse.hardware.schema``). A limit sits well above the largest real model or
chip of its kind, so a value beyond it is a typo or a unit slip, not a design: it is refused with one line
(``FILE: FIELD: got X; accepted: a number <= LIMIT``) before any arithmetic that it could overflow.
docs/limits.md states every limit, the fields it bounds and why (tests/test_limits.py keeps the two equal).

This module imports nothing from the package, so every schema can use it.
"""

from __future__ import annotations

# -- model dimensions ------------------------------------------------------------------------------------------
#: model width (hidden size, channels, MLP and embedding widths, latent ranks): the widest public models are
#: 25,600 (Megatron-LM 1T), 18,432 (PaLM 540B) and 16,384 (Llama 3.1 405B); 2^17 is 5x the widest
MAX_WIDTH = 2**17
#: FFN inner width (dense or one expert): 102,400 (Megatron-LM 1T), 73,728 (PaLM 540B); 2^20 is 10x
MAX_FFN = 2**20
#: layers, blocks and repeats: 128 (Megatron-LM 1T), 126 (Llama 3.1 405B); ResNet-1202 (He et al. 2016) is the
#: deepest published net; 2^12 is 3x its depth
MAX_LAYERS = 2**12
#: attention heads: 160 (Megatron-LM 1T), 128 (DeepSeek-V3, Llama 3.1 405B); 2^12 is 25x
MAX_HEADS = 2**12
#: width of one head or one state channel: 256 (Gemma), 192 (DeepSeek-V3's MLA query), Mamba-2's state 256;
#: FlashAttention kernels stop at 256; 2^12 is 16x
MAX_HEAD_DIM = 2**12
#: vocabulary or classes: 262,144 (Gemma 3), 256,000 (Gemma), 21,841 (ImageNet-21k), ~3 M labels (extreme
#: classification, Amazon-3M); 2^22 (4.2 M) holds them all
MAX_VOCAB = 2**22
#: routed experts per layer: 2,048 (Switch-C), 256 (DeepSeek-V3); 2^14 is 8x Switch-C
MAX_EXPERTS = 2**14
#: kernel, stride, padding, patch and window sides: 51 (SLaK), 31 (RepLKNet), 128 (wav2vec 2.0's positional conv);
#: 2^12 is 32x
MAX_KERNEL = 2**12
#: expansion ratios (FFN, MBConv, DenseNet bottleneck, Mamba): 4 to 8 in practice; 2^8 is 32x
MAX_RATIO = 2**8
#: embedding tables of one recommender: 26 (DLRM on Criteo), hundreds to about a thousand in production
#: (Mudigere et al. 2022, ISCA); 2^16 is 64x
MAX_TABLES = 2**16
#: rows of one embedding table: 40 M (DLRM-v2 on Criteo, hashed), ~1e9 in production; 2^36 (69 G) is 69x
MAX_TABLE_ROWS = 2**36
#: rows gathered per table per sample (pooling factor): 1 to ~100 in production; 2^16 is 650x
MAX_POOLING = 2**16
#: sequences or images per pass: 65,536 images (LARS large-batch ImageNet training, You et al. 2018), 1,536
#: sequences (GPT-3's 3.2 M-token batch); 2^20 is 16x the largest
MAX_BATCH = 2**20
#: tokens of one sequence or KV cache: 16 M, above the longest public contexts (10 M, Llama 4 Scout)
MAX_TOKENS = 2**24
#: pixels per image side: 65,536 (a 4-gigapixel image), above any vision model's input
MAX_RESOLUTION = 2**16
#: one GEMM row of an operator table (M, N, K or batch): the single-operator ``gemm:MxNxK`` bound, 16 M
MAX_GEMM_DIM = 2**24
#: repeats of one operator-table row: 16 M (layers x steps)
MAX_COUNT = 2**24
#: elements of one streamed tensor (and a reduction's elements read per output): the ``copy:N`` bound, 2^50 (a
#: petabyte of int8)
MAX_ELEMS = 2**50
#: parameters of one model given as an operator table: 2^50 (1.1 quadrillion), 500x the largest public model
MAX_PARAMS = 2**50

#: chips one workload is split over (a plan's chips and each of its degrees): 9,216 (a TPU7x pod), about 100,000
#: (the largest GPU training clusters of 2024-25); 2^20 is 10x
MAX_CHIPS = 2**20

# -- hardware dimensions ---------------------------------------------------------------------------------------
#: cores of one chip (and private copies of a level): 900,000 (Cerebras WSE-3), 304 CUs (MI300X), 148 SMs (B200)
MAX_CORES = 2**20
#: on-chip network link width, bytes per direction per clock: 16 (Intel SCC), 32 (Tenstorrent Wormhole), 64
#: (Blackhole); 2^16 (a 512 kbit link) is far beyond any router
MAX_NOC_LINK_BYTES = 2**16
#: parallel physical on-chip networks: 2 (Tenstorrent), 3 (Piton, Epiphany-V), 5 (Tilera TILE64); 64 is 12x
MAX_NOC_NETWORKS = 64
#: flits of input buffer per router port: 4 (a credit round trip), 32 (Intel Teraflops: 2 lanes x 16); 2^12 is 128x
MAX_NOC_BUFFER_FLITS = 2**12
#: MAC-array side and GEMM output-tile side: 256 (TPU v4-v6e, Gaudi MME), CUTLASS tiles up to 256; 2^12 is 16x
MAX_ARRAY_SIDE = 2**12
#: clock, GHz: accelerators run 1-3 GHz, the fastest shipped logic ~6 GHz (desktop CPU boost clocks)
MAX_CLOCK_GHZ = 10.0
#: register file / accumulator storage per core, KiB: 256 (H100 SM), 2,048 (Inferentia2 core); 2^20 KiB = 1 GiB
MAX_REGISTER_KIB = 2**20
#: fixed overheads, us (launch, eager dispatch, host sync): measured 2-30 us; one second is far beyond any
MAX_OVERHEAD_US = 1e6
#: dense peak per dtype, TFLOP/s: 4,500 (B200 fp8), 125,000 (Cerebras WSE-3, sparse fp16); 1e6 is one EFLOP/s
MAX_PEAK_TFLOPS = 1e6
#: capacity of one memory level, binary units: 16 PiB (Cerebras MemoryX, the largest store behind one device,
#: holds 1.2 PB)
MAX_CAPACITY_MIB = 2.0**34
MAX_CAPACITY_GIB = 2.0**24
#: the same in decimal GB: 1e7 GB = 10 PB
MAX_CAPACITY_GB = 1e7
#: capacity of one DRAM stack or channel, decimal GB: 64 GB (HBM4 16-high), 10 TB is 150x
MAX_STACK_CAPACITY_GB = 1e4
#: aggregate bandwidth of one memory level: 1 EB/s, 50x Cerebras WSE-3's on-wafer SRAM (21 PB/s)
MAX_BANDWIDTH_TBPS = 1e6
MAX_BANDWIDTH_GBPS = 1e9
#: bandwidth of one DRAM stack/channel or one chip-to-chip link, GB/s: 2,000 (HBM4 stack), 200 (1.6 Tb/s
#: Ethernet port), 50 (NVLink 5 link per direction); 1e5 GB/s (100 TB/s) is 50x
MAX_LINK_GBPS = 1e5
#: chip-to-chip links of one chip: 24 (Gaudi 2/3 RoCE ports), 18 (H100 NVLink), 6 (TPU v4 ICI); 2^12 is 170x
MAX_LINKS = 2**12
#: DRAM stacks on one package: 8 (B200, MI300X), 16 (planned Rubin Ultra); 2^8 is 16x
MAX_DRAM_STACKS = 2**8
#: dies of one kind in a package: 8 (MI300X XCDs), 12 (planned Rubin Ultra 4 dies + 16 HBM); 2^8 is 32x
MAX_DIES = 2**8
#: die long side over short side: a reticle is 26 x 33 mm (1.27:1); 16:1 would be a 33 mm die 2 mm wide
MAX_ASPECT_RATIO = 16.0
#: die area, mm2: a 300 mm wafer is 70,686 mm2 (Cerebras WSE-3: 46,225)
MAX_DIE_AREA_MM2 = 1e5
#: one package's substrate and assembly, USD: 21 (the node files' ttm-cas starter figure); a CoWoS-L package of a
#: B200-class part is of order 1e3; 1e5 is 100x
MAX_PACKAGE_USD = 1e5
#: power, W: 1,000 (B200 TDP), 23,000 (a Cerebras CS-3 system); 1e5 W is 4x a CS-3
MAX_POWER_W = 1e5

#: the largest value each shorthand search knob's range may reach (``search.space.<knob>.high``): the bound of the
#: template field it sizes (a level's bandwidth and capacity, a unit's peak)
KNOB_MAX = {"peak_tflops": MAX_PEAK_TFLOPS, "dram_bandwidth_tbps": MAX_BANDWIDTH_TBPS, "sram_mib": MAX_CAPACITY_MIB}
