"""Measured runs against the model: reading runs and MLPerf result logs, validation (per-row error, MAPE) and the
calibration fit. It asks planning's predictions of each measured run, and writes the calibration files that physics
reads."""
