"""Signals that end the process (SIGTERM from a job scheduler or `kill`, SIGHUP from a closed terminal) as
SystemExit, so that they clean up as Ctrl-C does: `finally` blocks run, a temporary file is removed, worker
processes are stopped. Python's default for both ends the process at once, leaving all of that behind."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

ENDING = (signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def exit_on_signals() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise SystemExit(128 + signal number), the shell's exit code for a
    process the signal ended. A signal that is ignored (`nohup` ignores SIGHUP) stays ignored; only the main thread
    can set handlers, elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = {number: signal.getsignal(number) for number in ENDING}
    for number, handler in previous.items():
        if handler is not signal.SIG_IGN:
            signal.signal(number, stop)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler if handler is not None else signal.SIG_DFL)
