"""Write the 'evidence' section of the bundled calibration (fitting/evidence.py), and nothing else of it.

`perfmodel calibrate` writes the section with every fit; this adds it to a calibration fitted before, from the
bundled rows: the rows the dense fit and the MoE stage see, the forward, precision and scale protocols' held-out rows
with the axes on which they were beyond their fold's rows, and the widening powers those give. The protocols are
refitted here (from the physical defaults, as calibrate does them), so their intervals must be the file's: the
script refuses to write a section whose rows' intervals differ from the file's 'protocols' (refit first).

Run: python scripts/evidence_section.py [--write] (about 20 s); prints the widening and the held-out summary.
"""

from __future__ import annotations

import json
import sys

from perfmodel.fitting import evidence, protocols
from perfmodel.fitting.calibrate import interval
from perfmodel.fitting.runs import MOE_SOURCE, bundled_runs
from perfmodel.fitting.validation import prepare_all, validated_steadily
from perfmodel.physics import calibration


def main(write: bool) -> int:
    runs, excluded = bundled_runs()
    bundled = calibration.bundled()
    items = protocols.fitted_items(runs, excluded)
    moe_items = prepare_all([r for r in runs if r.source.startswith(MOE_SOURCE)], bundled, [])
    results = {name: protocols.evaluate(name, items) for name in evidence.PROTOCOLS}
    for name, result in results.items():
        recorded = bundled.provenance.get("protocols", {}).get(name, {}).get("interval", {})
        band = interval(result.residuals)
        if any(abs(band[k] - recorded.get(k, 0.0)) > 1e-9 for k in ("time_factor_low", "time_factor_high")):
            print(f"{name}: the bundled file's interval is not this data's: refit it first", file=sys.stderr)
            return 1
    checked = prepare_all([r for r in runs if validated_steadily(r)], bundled, [])
    section = evidence.section([*items, *checked], moe_items, results)
    print(json.dumps({k: section[k] for k in ("widening", "summary")}, indent=1))
    if write:
        document = json.loads(calibration.BUNDLED.read_text())
        document["evidence"] = section
        calibration.BUNDLED.write_text(calibration.dumps(document))
    return 0


if __name__ == "__main__":
    raise SystemExit(main("--write" in sys.argv[1:]))
