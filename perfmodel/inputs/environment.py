"""What perfmodel reads from its environment besides files: SOURCE_DATE_EPOCH, the one date its outputs carry.

reproducible-builds.org's convention: seconds since 1970-01-01 UTC, ASCII digits only; a malformed value is an
error, not silently ignored (a build that asked for a fixed date and got the current one is not reproducible).
"""

from __future__ import annotations

import datetime
import os

from perfmodel.errors import PerfmodelError, shown

LATEST_EPOCH_S = 253_402_300_799
"""9999-12-31T23:59:59Z: the last second a four-digit year (ISO 8601, zip, PDF and XLSX dates) can carry."""


def source_date() -> datetime.datetime | None:
    """SOURCE_DATE_EPOCH as an aware UTC time, None when it is unset or empty; one line when it is not ASCII digits
    or is past year 9999."""
    text = os.environ.get("SOURCE_DATE_EPOCH", "")
    if not text:
        return None
    allowed = f"allowed: seconds since 1970-01-01 UTC, ASCII digits, at most {LATEST_EPOCH_S:,} (year 9999)"
    if not (text.isascii() and text.isdigit()) or len(text) > len(str(LATEST_EPOCH_S)):
        raise PerfmodelError(f"environment variable SOURCE_DATE_EPOCH: '{shown(text)}' is not a time; {allowed}")
    if int(text) > LATEST_EPOCH_S:
        raise PerfmodelError(f"environment variable SOURCE_DATE_EPOCH: {text} is past year 9999; {allowed}")
    return datetime.datetime.fromtimestamp(int(text), tz=datetime.UTC)
