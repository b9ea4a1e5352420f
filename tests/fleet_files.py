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
