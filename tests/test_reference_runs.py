"""Sanity against published runs: within +-25%. Hopper's are priced with the bundled calibration: its uncalibrated
GEMMs run at the measured kernels' rates (efficiency.GEMM_KERNELS), 18% above a training step's (the fitted
`gemm_sustained`), so the physical defaults alone read 27-36% fast there."""

import pytest

from perfmodel.inputs.resources import data_dir
from perfmodel.inputs.scenario import checked_scenario, load_scenario
from perfmodel.physics.calibration import bundled
from perfmodel.planning.predict import predict


def test_megatron_bridge_llama3_70b_h100_fp8() -> None:
    # ../shared/data/measured_runs.csv, row: NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md,
    # "NeMo 25.11 container", Llama3-70B, H100-SXM5-80GB, 64 GPUs, FP8-CS, seq 8192, GBS 128, MBS 1,
    # TP4 PP8 CP1 VP5, DP2, DDP: 1,602 tokens/s/GPU.
    scenario = checked_scenario(
        {
            "model": "llama3.1-70b",
            "gpu": "h100-sxm",
            "n_gpus": 64,
            "precision": "fp8",
            "parallelism": {
                "tp": 4,
                "pp": 8,
                "cp": 1,
                "vp": 5,
                "mbs": 1,
                "gbs": 128,
                "seq_len": 8192,
                "recompute": "none",
                "zero": 1,
            },
        }
    )
    predicted = predict(scenario, bundled().efficiency("hopper")).tokens_per_s_per_gpu
    assert predicted == pytest.approx(1602, rel=0.25)


def test_mlperf_v50_llama31_405b_h100_step_time() -> None:
    # ../shared/data/mlperf_training_llm.csv, row v5.0 / llama31_405b / NVIDIA / Eos-dfw (64x NVIDIA HGX H100):
    # 512 H100, FP8, TP8 PP8 CP2 VP8, MBS 1, GBS 1152; the result log's tracked training step time is 54.9 s.
    scenario = load_scenario(data_dir("scenarios") / "mlperf-405b-h100-512.toml")
    prediction = predict(scenario, bundled().efficiency("hopper"))
    assert prediction.model.vocab == 32000
    assert prediction.step_time_s == pytest.approx(54.9, rel=0.25)
    assert prediction.to_dict()["fits_in_memory"]
