"""Fleet-file pieces the fleet tests share (TOML text)."""

NEOCLOUD = """
[[offer]]
name = "neocloud"
system = "dgx-h100"
usd_per_gpu_hour = 2.5
max_gpus = 1024
lead_time_days = 0.25
"""
"""1,024 H100 to rent at $2.50 per GPU-hour, after 6 hours."""

CAMPAIGN = """
name = "tail-on-a-quarter"
model = "llama3.1-8b"
gpu = "h100-sxm"
system = "dgx-h100"
n_gpus = 128
precision = "bf16"
tokens = 100e9

[[phase]]
name = "main"
tokens = 80e9

[[phase]]
name = "tail"
tokens = 20e9
gpu_fraction = 0.25
"""
"""A made-up campaign whose last fifth of the tokens runs on a quarter of its GPUs (to whole nodes)."""

RENT = """
[[offer]]
name = "cloud"
system = "dgx-h100"
usd_per_gpu_hour = 2.5
max_gpus = {gpus}
billing = "{billing}"
"""
"""H100 to rent at $2.50 per GPU-hour from day 0: `.format(gpus=..., billing="reserved" or "on_demand")`."""
