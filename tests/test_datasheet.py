"""Datasheet tests (issue 27 item 3): every bundled accelerator and system against the published figures, and the
physics that ties the figures together.

Each expected figure is copied here from the project's datasheet notes, never from hardware_specs/: the row of
`../shared/data/accelerators.csv` (dense peaks, HBM, scale-up per direction, domain, NIC per GPU, power) and the
passage of `../shared/data/accelerators_sources.md` that gives the vendor's own figure (section numbers below; the
S-keys are its sources, listed in hardware_specs/SOURCES.md). The consistency checks re-derive figures from vendor
headlines (2:4-sparse peaks, rack totals, clocks x units) so that a wrong figure shows even when copied consistently.
"""

from __future__ import annotations

import pytest

from perfmodel.inputs.hardware import Hardware, get_accelerator, get_system, resolve
from perfmodel.inputs.hardware import accelerators as bundled_accelerators
from perfmodel.inputs.hardware import systems as bundled_systems
from perfmodel.physics.topology import build_graph
from perfmodel.planning.whatif import KNOBS, current

TB = 1e12
GIB = 2**30

# id: (dense BF16, FP8, FP4 TFLOP/s; HBM GB as printed, usable GB; HBM TB/s; scale-up GB/s per direction, GPUs per
#      scale-up domain; NIC Gb/s per GPU; board power W), then where they are published.
DATASHEETS = {
    # accelerators.csv row 'NVIDIA A100 SXM 80GB'; accelerators_sources.md section 2 'A100': BF16 312 dense (624
    # sparse), 80 GB HBM2e at 2.039 TB/s, NVLink 3 300 GB/s uni / 600 bidir (S2), DGX A100 8x 200 Gb/s HDR, 400 W.
    "a100-sxm-80gb": (312, None, None, 80, None, 2.039, 300, 8, 200, 400),
    # whole_runs_sources.md, hardware notes: 'A100 SXM4 40GB: 40 GB HBM2 at 1,555 GB/s (NVIDIA A100 datasheet, A100
    # 40GB SXM column), otherwise as the 80 GB part'.
    "a100-40gb": (312, None, None, 40, None, 1.555, 300, 8, 200, 400),
    # accelerators.csv row 'NVIDIA H100 SXM 80GB'; section 2 'H100': dense BF16 989.4, FP8 1978.9 (S8, S1); 80 GB
    # HBM3 at 3.35 TB/s; NVLink 4 450 GB/s uni / 900 bidir, domain 8 (S2); 8x ConnectX-7 400 Gb/s; 700 W.
    "h100-sxm": (989.4, 1978.9, None, 80, None, 3.35, 450, 8, 400, 700),
    # accelerators.csv row 'NVIDIA H200 SXM 141GB'; section 2 'H200': H100 compute, 141 GB HBM3e at 4.8 TB/s (S1),
    # TGP 700 W and '18x 4th Gen NVLink, 900GB/s' (S23 MLPerf system JSON), 8x 400 Gb/s.
    "h200-sxm": (989.4, 1978.9, None, 141, None, 4.8, 450, 8, 400, 700),
    # stacks_sources.md 'torchtitan' (torchtitan benchmarks/llama3_h100_202412_torchtitan.md, 'Hardware'): Grand
    # Teton's H100 'equipped with 96GB HBM2e with 2.4 TB/sec', 'the default 500W power limit', 8 GPUs 'fully
    # connected with NVLink', 'backend RDMA network with 400 Gb/s per GPU'; peaks and links the H100 SXM's.
    "h100-grand-teton": (989.4, 1978.9, None, 96, None, 2.4, 450, 8, 400, 500),
    # No H800 datasheet in the data: compute, memory and power as H100 SXM (measured_runs_sources.md 'DeepSeek-V3'
    # reads 385 TFLOP/s as ~39% of H100's BF16 dense peak); measured_runs.csv row 339 'H800 (NVLink 400GB/s, IB
    # 8x400G)' (bidirectional: 200 per direction); campaigns.md section 2 (DeepSeek-V3 section 3.1: 8 GPUs per node
    # on NVLink and NVSwitch; section 3.2.2: IB 50 GB/s = 400 Gb/s per GPU).
    "h800": (989.4, 1978.9, None, 80, None, 3.35, 200, 8, 400, 700),
    # accelerators.csv row 'NVIDIA B200 (HGX B200)'; section 2 'B200': dense FP4 9,000, FP8 4,500, BF16 2,250 (S6:
    # NVIDIA HGX table); 180 GB listed (1.44 TB per 8 GPUs), 192 GB physical; 8 TB/s; NVLink 5 900 GB/s uni, domain
    # 8; 8x ConnectX-7 400 Gb/s (S23); 1000 W (S23 'B200 TGP 1000W').
    "b200": (2250, 4500, 9000, 180, 180, 8.0, 900, 8, 400, 1000),
    # accelerators.csv row 'NVIDIA GB200 (GB200 NVL72)'; section 2 'GB200': dense FP4 10,000, FP8 5,000, BF16 2,500
    # (S8, S1); 186 GB usable (MLPerf 'GB200 186GB'); 8 TB/s; 900 GB/s uni, 72-GPU domain; 1x ConnectX-7 400 Gb/s
    # per GPU (S2, S23); 1200 W.
    "gb200": (2500, 5000, 10000, 186, 186, 8.0, 900, 72, 400, 1200),
    # accelerators.csv row 'NVIDIA B300 (HGX B300)'; section 2 'B300': dense FP4 13,500 (HGX B300 table 108 PF dense
    # per 8 GPUs), FP8 4,500, BF16 2,250 (S4, S6); 288 GB physical, ~270 GB usable in HGX (S4); 8 TB/s (S3); domain
    # 8; 8x ConnectX-8 800 Gb/s (S2); ~1,100 W (S4; section 9: the least certain power figure).
    "b300": (2250, 4500, 13500, 288, 270, 8.0, 900, 8, 800, 1100),
    # accelerators.csv row 'NVIDIA GB300 (GB300 NVL72)'; section 2 'GB300': dense FP4 15,000, FP8 5,000, BF16 2,500
    # (S3, S4, S5); 288 GB physical, ~279 GB usable (S4); 8 TB/s; 72-GPU domain; 1x ConnectX-8 800 Gb/s per GPU;
    # 1,400 W (S3, S5).
    "gb300": (2500, 5000, 15000, 288, 279, 8.0, 900, 72, 800, 1400),
    # accelerators.csv row 'AMD Instinct MI300X'; section 2 'MI300X': dense BF16 1,307.4, FP8 2,614.9 (S1 citing
    # amd.com); 192 GB HBM3, 5.3 TB/s; xGMI 448 GB/s uni all-to-all in an 8-GPU UBB (S2); 400 Gb/s typical cloud
    # NIC (section 9 item 5: not an AMD spec); 750 W.
    "mi300x": (1307.4, 2614.9, None, 192, None, 5.3, 448, 8, 400, 750),
    # accelerators.csv row 'AMD Instinct MI325X'; section 2 'MI325X': compute as MI300X, 256 GB HBM3e at 6.0 TB/s,
    # 1000 W (S13), xGMI as MI300X (S2).
    "mi325x": (1307.4, 2614.9, None, 256, None, 6.0, 448, 8, 400, 1000),
    # accelerators.csv row 'AMD Instinct MI355X'; section 2 'MI355X': dense BF16 2,516.6, FP8 5,033, MXFP4 10,066
    # (S1, S13); 288 GB HBM3e at 8 TB/s; 1,400 W (S13); xGMI 7 links of 153.6 GB/s (bidirectional) in an 8-GPU
    # mesh: 7 x 76.8 = 537.6 GB/s per direction (section 2 prints 76.5 and 535.5, an arithmetic slip).
    "mi355x": (2516.6, 5033.2, 10066.3, 288, None, 8.0, 537.6, 8, 400, 1400),
}

# id: (accelerator, GPUs per node, scale-out Gb/s per GPU, scale-up kind, GPUs of a rack a job fills).
SYSTEMS = {
    # accelerators_sources.md section 2 'A100': DGX A100 8 GPUs on NVSwitch, 8x 200 Gb/s HDR, one per GPU (S2).
    "dgx-a100": ("a100-sxm-80gb", 8, 200, "switch", None),
    "dgx-a100-40gb": ("a100-40gb", 8, 200, "switch", None),
    # whole_runs_sources.md, hardware notes: 'AWS p4d.24xlarge: 8x A100 40GB on NVSwitch, 400 Gb/s EFA per 8-GPU
    # instance (50 Gb/s per GPU)'.
    "p4d-a100-40gb": ("a100-40gb", 8, 50, "switch", None),
    # whole_runs_sources.md, hardware notes: 'Jean Zay A100 80GB partition (BLOOM): 8x A100 80GB per node, 4
    # Omni-Path 100 Gb/s links per node (50 Gb/s per GPU' (BLOOM paper, arXiv:2211.05100, section 3.4.1).
    "jean-zay-a100": ("a100-sxm-80gb", 8, 50, "switch", None),
    # section 2 'H100': DGX H100 8x ConnectX-7 400 Gb/s (S2); MODELLING.md 'Units': one NIC per GPU on DGX H100.
    "dgx-h100": ("h100-sxm", 8, 400, "switch", None),
    # stacks_sources.md 'torchtitan': 'Each host has 8 NVIDIA H100 GPUs fully connected with NVLink', '400 Gb/s per
    # GPU'.
    "grand-teton": ("h100-grand-teton", 8, 400, "switch", None),
    # campaigns.md section 1, Cluster (Llama 3 paper section 3.3.1): Grand Teton servers of 'eight GPUs', 'Both RoCE
    # and Infiniband clusters leverage 400 Gbps interconnects between GPUs'.
    "meta-h100-roce": ("h100-sxm", 8, 400, "switch", None),
    # section 2 'H200': 18x NVLink 4 on NVSwitch (S23), scale-out typically 8x 400 Gb/s.
    "dgx-h200": ("h200-sxm", 8, 400, "switch", None),
    # campaigns.md section 2, DeepSeek-V3 report sections 3.1 and 3.2.2: 8 GPUs per node, IB 50 GB/s per GPU.
    "dgx-h800": ("h800", 8, 400, "switch", None),
    # section 2 'B200': 'DGX/HGX B200: 8x ConnectX-7 400Gb/s' (S23).
    "dgx-b200": ("b200", 8, 400, "switch", None),
    # section 2 'B300': 'DGX B300 ... eight ConnectX-8 at 800Gbps' (S2).
    "dgx-b300": ("b300", 8, 800, "switch", None),
    # section 6 and MODELLING.md: 18 compute trays of 4 GPUs; section 2 'GB200': 4x ConnectX-7 per 4-GPU tray (S23
    # Crusoe system JSON); mlperf_training_llm.csv: NVIDIA's '8x NVIDIA GB200 NVL72' ran 512 GPUs, 64 per rack.
    "gb200-nvl72": ("gb200", 4, 400, "switch", 64),
    # section 6: GB300 NVL72 has GB200 NVL72's topology; section 2 'GB300': 1x ConnectX-8 800 Gb/s per GPU.
    "gb300-nvl72": ("gb300", 4, 800, "switch", 64),
    # section 2 'MI300X'/'MI325X'/'MI355X': 8-GPU UBB, fully connected by 7 xGMI links each (S2); 400 Gb/s per GPU
    # typical cloud deployment (section 9 item 5).
    "mi300x-8": ("mi300x", 8, 400, "mesh", None),
    "mi325x-8": ("mi325x", 8, 400, "mesh", None),
    "mi355x-8": ("mi355x", 8, 400, "mesh", None),
}


def test_every_bundled_part_and_system_has_a_datasheet_test() -> None:
    assert set(bundled_accelerators()) == set(DATASHEETS)
    assert set(bundled_systems()) == set(SYSTEMS)


@pytest.mark.parametrize("part", DATASHEETS)
def test_accelerator_figures_match_the_datasheet(part: str) -> None:
    bf16, fp8, fp4, hbm_gb, usable_gb, hbm_tbps, scaleup, domain, nic, power = DATASHEETS[part]
    acc = get_accelerator(part)

    def value(figure: object) -> float | None:
        return None if figure is None else figure.value  # type: ignore[attr-defined]

    found = (
        value(acc.bf16_tflops), value(acc.fp8_tflops), value(acc.fp4_tflops), value(acc.hbm_gb),
        value(acc.hbm_usable_gb), value(acc.hbm_tbps), value(acc.scaleup_gb_per_s_per_direction),
        value(acc.scaleup_domain_gpus), value(acc.nic_gbit_per_s), value(acc.power_w),
    )  # fmt: skip
    assert found == pytest.approx((bf16, fp8, fp4, hbm_gb, usable_gb, hbm_tbps, scaleup, domain, nic, power))


@pytest.mark.parametrize("system_id", SYSTEMS)
def test_system_figures_match_the_published_configuration(system_id: str) -> None:
    accelerator, per_node, nic_gbit_per_gpu, kind, job_share = SYSTEMS[system_id]
    system = get_system(system_id)
    hw = resolve(system=system_id)
    assert (system.accelerator, system.gpus_per_node.value, system.scaleup_kind) == (accelerator, per_node, kind)
    assert system.nics_per_gpu.value * hw.accelerator.nic_gbit_per_s.value == nic_gbit_per_gpu
    assert (system.ranks_per_domain.value if system.ranks_per_domain else None) == job_share


# ---- dense peaks from the vendors' own headline figures -------------------------------------------------------


@pytest.mark.parametrize(
    ("part", "fmt", "headline_tflops", "gpus", "dense_share"),
    [
        # section 2 'H100': 'NVIDIA's sheet shows 989 TF32 / 1,979 BF16 / 3,958 FP8 "with sparsity"'.
        ("h100-sxm", "bf16", 1979, 1, 0.5),
        ("h100-sxm", "fp8", 3958, 1, 0.5),
        # section 2 'GB200': 'Rack: 1,440 PF FP4 / 720 PF FP8 / 360 PF BF16 ... (sparse) = x72 of the per-GPU sparse'.
        ("gb200", "fp4", 1_440_000, 72, 0.5),
        ("gb200", "fp8", 720_000, 72, 0.5),
        ("gb200", "bf16", 360_000, 72, 0.5),
        # section 1: Blackwell Ultra FP4 dense is 3/4 of sparse: 'GB300 NVL72: 1,440 | 1,080 PF; HGX B300: 144 | 108 PF
        # for 8 GPUs'.
        ("gb300", "fp4", 1_440_000, 72, 0.75),
        ("b300", "fp4", 144_000, 8, 0.75),
        # section 2 'B200': 'NVIDIA HGX table: 18 PF sparse per 8 GPUs' (TF32), BF16 twice TF32 (S6).
        ("b200", "bf16", 2 * 18_000, 8, 0.5),
        # section 2 'MI300X': 'FP8 2,614.9 (sparse 5,229.8)'; section 2 'MI355X': BF16 'sparse 5.0' PF, FP8 'sparse
        # 10.1' PF.
        ("mi300x", "fp8", 5229.8, 1, 0.5),
        ("mi355x", "bf16", 5000, 1, 0.5),
        ("mi355x", "fp8", 10_100, 1, 0.5),
    ],
)
def test_dense_peak_is_the_vendor_headline_without_sparsity(
    part: str, fmt: str, headline_tflops: float, gpus: int, dense_share: float
) -> None:
    assert get_accelerator(part).peak_flops(fmt) == pytest.approx(headline_tflops * 1e12 / gpus * dense_share, rel=0.01)


@pytest.mark.parametrize(
    ("part", "flops_per_clock_per_unit", "clock_ghz"),
    [
        # section 2 'A100': '1410 MHz x 256 FMA x 2 x 432 TC = 311.9 TF' (4 tensor cores per SM).
        ("a100-sxm-80gb", 4 * 256 * 2, 1.41),
        # section 2 'H100': '1830e6 x 512 x 2 x 528 = 989 TF' (4 tensor cores per SM).
        ("h100-sxm", 4 * 512 * 2, 1.83),
        # section 2 'B200': '148 SM x 8192 flop/clk x 1.856 GHz'; 'GB200': '2.5 PF BF16 = 152 x 8192 x 2.008 GHz'.
        ("b200", 8192, 1.856),
        ("gb200", 8192, 2.008),
        # section 2 'MI300X': '1,307.4 = 2100 MHz x 256 FMA x 2 x 1,216 matrix cores' (4 per CU).
        ("mi300x", 4 * 256 * 2, 2.1),
    ],
)
def test_bf16_peak_is_units_times_rate_times_clock(part: str, flops_per_clock_per_unit: int, clock_ghz: float) -> None:
    acc = get_accelerator(part)
    assert acc.peak_flops("bf16") == pytest.approx(acc.sms.value * flops_per_clock_per_unit * clock_ghz * 1e9, rel=2e-3)


@pytest.mark.parametrize("part", DATASHEETS)
def test_format_ratios_follow_the_architecture(part: str) -> None:
    """FP8 runs at twice BF16 on every bundled family with FP8 (sections 1-2); FP4 at twice FP8 on Blackwell and
    CDNA4 and three times on Blackwell Ultra (section 1, 'Blackwell Ultra FP4 is 3x its FP8 rate per clock (B200:
    2x)'; section 7: 'FP4 GEMM math throughput 2x (GB200) / 3x (GB300) of FP8', S24/S29)."""
    acc = get_accelerator(part)
    fp4_over_fp8 = {"blackwell": 2, "cdna4": 2, "blackwell-ultra": 3}.get(acc.family)
    if acc.fp8_tflops is not None:
        assert acc.fp8_tflops.value == pytest.approx(2 * acc.bf16_tflops.value, rel=1e-4)
    assert (acc.fp4_tflops is None) == (fp4_over_fp8 is None)
    if acc.fp4_tflops is not None and acc.fp8_tflops is not None:
        assert acc.fp4_tflops.value == pytest.approx(fp4_over_fp8 * acc.fp8_tflops.value, rel=1e-4)


def test_each_precision_a_part_claims_has_its_peak() -> None:
    """FP8 formats need an FP8 peak, FP4 formats an FP4 one (section 7: NVFP4 and MXFP4 share the FP4 path)."""
    for acc in bundled_accelerators().values():
        needs = {"fp8": "fp8", "mxfp8": "fp8", "nvfp4": "fp4", "mxfp4": "fp4", "bf16": "bf16"}
        for precision in acc.precisions:
            assert acc.peak_flops(needs[precision]) > 0, (acc.id, precision)


# ---- memory: GB as printed are GiB; bandwidth is decimal -------------------------------------------------------


def test_hbm_capacity_is_binary() -> None:
    """HBM stacks are binary: an "80 GB" H100 has 80 GiB (5 stacks of 16 GiB); B200's 180 GB listed are its 192 GiB
    physical (8 stacks of 24 GiB) less a sixteenth (section 2 'B200', S1: 192 x 15/16 = 180)."""
    assert get_accelerator("h100-sxm").memory_bytes == 80 * GIB
    assert get_accelerator("b200").memory_bytes == 192 * 15 / 16 * GIB


@pytest.mark.parametrize("part", DATASHEETS)
def test_a_job_allocates_the_usable_figure_never_more_than_the_physical(part: str) -> None:
    """Section 3: 'For "does the model fit" use the usable figure' (B300 270 of 288 GB, GB300 279 of 288)."""
    _, _, _, hbm_gb, usable_gb, *_ = DATASHEETS[part]
    acc = get_accelerator(part)
    assert acc.memory_bytes == (usable_gb or hbm_gb) * GIB <= hbm_gb * GIB


@pytest.mark.parametrize("part", DATASHEETS)
def test_hbm_bandwidth_is_decimal(part: str) -> None:
    """Section 1: 'hbm_tbps: peak HBM bandwidth, TB/s (decimal)'."""
    assert get_accelerator(part).hbm_bytes_per_s == DATASHEETS[part][5] * TB


# ---- links: per direction, bytes for scale-up, bits for NICs ---------------------------------------------------


def _edge_bytes_per_s(hw: Hardware, a: object, b: object) -> float:
    return float(build_graph(hw).edges[a, b]["bytes_per_s"])


@pytest.mark.parametrize(
    ("system_id", "bidirectional_gb_per_s", "nic_gb_per_s"),
    [
        # MODELLING.md 'Units': 'H100/H200 NVLink 4 = 900 GB/s total = 450 GB/s per direction'; 'ConnectX-7 400 Gb/s
        # = 50 GB/s per direction'; 'Blackwell NVLink 5 = 1.8 TB/s total = 900 GB/s per direction'; 'ConnectX-8 800
        # Gb/s = 100 GB/s'.
        ("dgx-h100", 900, 50),
        ("dgx-b200", 1800, 50),
        ("gb300-nvl72", 1800, 100),
        # section 2 'A100': NVLink 3 '300 GB/s uni / 600 GB/s bidir', 200 Gb/s HDR per GPU.
        ("dgx-a100", 600, 25),
    ],
)
def test_the_network_graph_carries_one_direction_in_bytes(
    system_id: str, bidirectional_gb_per_s: float, nic_gb_per_s: float
) -> None:
    hw = resolve(system=system_id)
    gpu = ("gpu", 0, 0)
    assert _edge_bytes_per_s(hw, gpu, ("nvswitch", 0)) == bidirectional_gb_per_s / 2 * 1e9
    assert _edge_bytes_per_s(hw, gpu, ("nic", 0, 0)) == nic_gb_per_s * 1e9
    # what-if's nvlink_gbps is the figure as vendors quote it, both directions
    assert current(hw, KNOBS["nvlink_gbps"]) == bidirectional_gb_per_s


@pytest.mark.parametrize(
    ("system_id", "networking_tb_per_s"),
    [
        # section 2 'B200': 'NVIDIA HGX table "networking bandwidth 0.8 TB/s" = 8x400 Gb/s counted both directions';
        # 'B300': 'HGX table "networking bandwidth 1.6 TB/s" bidirectional' (S6).
        ("dgx-b200", 0.8),
        ("dgx-b300", 1.6),
    ],
)
def test_hgx_networking_bandwidth_is_eight_nics_both_ways(system_id: str, networking_tb_per_s: float) -> None:
    hw = resolve(system=system_id)
    per_gpu_bytes = hw.system.nics_per_gpu.value * hw.accelerator.nic_gbit_per_s.value * 1e9 / 8
    assert 2 * hw.system.gpus_per_node.value * per_gpu_bytes == pytest.approx(networking_tb_per_s * TB)


@pytest.mark.parametrize(
    ("part", "link_gb_per_s_bidirectional"),
    [
        # section 2 'MI300X': '7 links, 128 GB/s "peak link bandwidth" read as bidirectional -> 64 GB/s per direction
        # per peer, 448 GB/s uni all-to-all'; 'MI355X': '153.6 GB/s per link (read as bidir)'; 'MI325X': xGMI as MI300X.
        ("mi300x", 128),
        ("mi325x", 128),
        ("mi355x", 153.6),
    ],
)
def test_an_xgmi_mesh_is_its_seven_peer_links(part: str, link_gb_per_s_bidirectional: float) -> None:
    acc = get_accelerator(part)
    peer = acc.scaleup_peer_gb_per_s_per_direction
    assert peer is not None and peer.value == pytest.approx(link_gb_per_s_bidirectional / 2)
    peers = acc.scaleup_domain_gpus.value - 1
    assert acc.scaleup_gb_per_s_per_direction.value == pytest.approx(peers * peer.value)
    hw = resolve(acc.id)
    assert hw.system.scaleup_kind == "mesh"
    assert _edge_bytes_per_s(hw, ("gpu", 0, 0), ("gpu", 0, 1)) == pytest.approx(peer.value * 1e9)


# ---- NVL72 racks -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("system_id", "rack_hbm_tb", "rack_kw"),
    [
        # section 6: GB200 NVL72 '72 GPUs ... 18 compute trays ... ~120 kW (compute trays ~117 kW; power shelves
        # 132 kW DC), 13.4-13.5 TB HBM, 576 TB/s HBM, 130 TB/s NVLink'.
        ("gb200-nvl72", (13.4, 13.5), 132),
        # section 6: GB300 NVL72 'same topology, 1.4 kW GPUs, ... to ~135 kW; 20-21 TB HBM'; 576 TB/s (section 2).
        ("gb300-nvl72", (20, 21), 135),
    ],
)
def test_an_nvl72_rack_is_one_domain_of_18_trays(
    system_id: str, rack_hbm_tb: tuple[float, float], rack_kw: float
) -> None:
    hw = resolve(system=system_id)
    acc, gpus = hw.accelerator, hw.domain_gpus
    assert gpus == 72 == 18 * hw.system.gpus_per_node.value
    assert hw.ranks_per_domain % hw.system.gpus_per_node.value == 0  # a job takes whole trays
    usable_gb = (acc.hbm_usable_gb or acc.hbm_gb).value
    # the rack totals are the GPUs' GB as printed, summed, to 0.1 TB
    assert rack_hbm_tb[0] - 0.05 <= gpus * usable_gb / 1000 <= rack_hbm_tb[1] + 0.05
    assert gpus * acc.hbm_tbps.value == pytest.approx(576)
    assert gpus * 2 * acc.scaleup_gb_per_s_per_direction.value / 1000 == pytest.approx(130, rel=0.01)
    assert gpus * acc.power_w.value / 1000 < rack_kw  # GPUs draw less than the whole rack


@pytest.mark.parametrize(
    ("system_id", "system_kw"),
    [("dgx-b200", 14.3), ("dgx-b300", 14.5)],  # section 6: 'DGX B200 14.3 kW, DGX B300 14.5 kW per 8-GPU system' (S22)
)
def test_gpu_power_fits_the_system_power(system_id: str, system_kw: float) -> None:
    hw = resolve(system=system_id)
    assert hw.system.gpus_per_node.value * hw.accelerator.power_w.value / 1000 < system_kw


# ---- special units -----------------------------------------------------------------------------------------------


def test_blackwell_ultra_doubles_the_exponential_rate() -> None:
    """Section 4: Blackwell 5 and Blackwell Ultra 10.7 TeraExponentials/s per GPU (S4, NVIDIA's table), 'doubles SFU
    throughput' (S3, S7); Hopper's 3.9 is derived as 132 SM x 16 MUFU/clk x 1.83 GHz."""
    rate = {part: get_accelerator(part).sfu_texp_per_s for part in ("h100-sxm", "b200", "gb200", "b300", "gb300")}
    assert {p: r.value for p, r in rate.items() if r} == {
        "h100-sxm": 3.9, "b200": 5.0, "gb200": 5.0, "b300": 10.7, "gb300": 10.7,
    }  # fmt: skip
    h100 = get_accelerator("h100-sxm")
    assert h100.sfu_texp_per_s is not None
    assert h100.sfu_texp_per_s.value == pytest.approx(h100.sms.value * 16 * 1.83e9 / 1e12, abs=0.05)
