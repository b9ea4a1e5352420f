"""What the user asks for: the scenario (TOML and flags), the model zoo, precision recipes, the hardware catalogue
and the MLPerf benchmark rules. Nothing here models time; it is validated, resolved input for the physics."""

PRECISIONS = ("bf16", "fp8", "mxfp8", "nvfp4", "mxfp4")
"""The precision recipes (inputs/precision.py RECIPES), in one place: here, which the CLI imports anyway, so that its
--precision choice does not import the hardware catalogue."""
FP8_RECIPE_NAMES = ("tensorwise", "rowwise", "delayed")
"""Every FP8 scaling recipe some stack's knob takes (torchao's precision.FP8_RECIPES, Megatron's
precision.TE_FP8_RECIPES; each stack accepts its own: inputs/stacks.py knob_problem), here for the same reason."""
