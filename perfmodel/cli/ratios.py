"""`perfmodel ratios`: the seed's MLPerf v5.1 headline ratios, measured against predicted."""

from __future__ import annotations

from perfmodel.cli import cli
from perfmodel.cli.options import calibration_option, emit, table_or_json


@cli.command()
@calibration_option
@table_or_json
def ratios(calibration: str | None, fmt: str) -> None:
    """The seed's headline: Llama 3.1 405B on 512 H100 FP8, GB200 FP8, GB200 NVFP4 and GB300 NVFP4 (MLPerf Training
    v5.0/v5.1), each priced at its published layout and batch; the speed ratios 3.2x, 1.4x, 1.9x, 4.2x and "about
    2x performance per dollar", measured against predicted, with each measured figure's source row."""
    from perfmodel.fitting.seed_ratios import seed_ratios
    from perfmodel.outputs.seed_report import seed_ratios_table
    from perfmodel.physics import calibration as calibrations

    result = seed_ratios(calibrations.resolve(calibration))
    emit(result.to_dict(), fmt, lambda: seed_ratios_table(result))
