"""What the user asks for: the scenario (TOML and flags), the model zoo, precision recipes, the hardware catalogue
and the MLPerf benchmark rules. Nothing here models time; it is validated, resolved input for the physics."""
