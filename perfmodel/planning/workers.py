"""Run one task over many items on worker processes or Ray tasks, results as they finish, and stop cleanly.

A sweep's points and a layouts sweep's chunks go through `spread`. Stopping is the hard part: when the caller stops
(an error, Ctrl-C, or SIGTERM and SIGHUP, which the CLI turns into SystemExit: outputs/signals.py) the workers are
ended at once rather than left to finish the queue; a worker ends with its parent however the parent ends; a worker
that dies (killed, out of memory) is one line.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, TypeVar

from perfmodel.errors import PerfmodelError
from perfmodel.inputs import catalogue

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

T = TypeVar("T")
R = TypeVar("R")


def spread(
    task: Callable[[T], R], items: Sequence[T], jobs: int = 1, executor: str = "local", address: str | None = None
) -> Iterator[tuple[int, R]]:
    """(index, task(item)) for every item, as they finish: in this process, on `jobs` processes, or as Ray tasks."""
    if executor == "ray":
        return _on_ray(task, items, address)
    if jobs > 1 and len(items) > 1:
        return _on_processes(task, items, jobs)
    return ((i, task(item)) for i, item in enumerate(items))


def _start_worker(parent: int, paths: tuple[str, ...]) -> None:
    """A worker process's start: it ends with its parent, and takes its parent's hardware catalogues."""
    _end_with(parent)
    _use_catalogues(paths)


def _use_catalogues(paths: tuple[str, ...]) -> None:
    """The user hardware catalogues the parent was given (--hardware): a worker started by spawn or forkserver
    inherits none."""
    for path in paths:
        catalogue.add(path)


PR_SET_PDEATHSIG = 1
"""prctl(2): the signal Linux sends a process when its parent ends."""


def _end_with(parent: int) -> None:
    """SIGTERM and SIGHUP end this worker (the handler a forked worker inherits from the CLI, outputs/signals.py,
    raises SystemExit, which the pool catches as the point's error and goes on to the next), and SIGTERM comes
    when `parent` ends, however it ends: a parent killed outright (SIGKILL, the out-of-memory killer) cannot stop
    its workers itself, and they would wait for points forever. Linux only, the last."""
    for number in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(number) is not signal.SIG_IGN:  # nohup's ignored SIGHUP stays ignored
            signal.signal(number, signal.SIG_DFL)
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # the parent ended before the request was made
        raise SystemExit(128 + signal.SIGTERM)


def _on_processes(task: Callable[[T], R], items: Sequence[T], jobs: int) -> Iterator[tuple[int, R]]:
    """`spread` on worker processes. When the caller stops (an error, Ctrl-C, or SIGTERM and SIGHUP turned into
    SystemExit by outputs/signals.py) the workers are ended at once and the points not yet priced dropped; a worker
    that dies (killed, out of memory) is one line."""
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    start = (os.getpid(), catalogue.added())
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(items)), initializer=_start_worker, initargs=start)
    try:
        futures = {pool.submit(task, item): i for i, item in enumerate(items)}
        for future in as_completed(futures):
            yield futures[future], future.result()
    except BrokenProcessPool:
        raise PerfmodelError(
            "a worker process ended before its points were priced (killed, or out of memory?); try fewer --jobs"
        ) from None
    finally:
        _stop(pool)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Drop the points not started and end the workers now. ProcessPoolExecutor's shutdown (and its `with` block)
    waits for every queued point, and it has no public way to end its processes before Python 3.14's
    terminate_workers: its process table it is."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join()


def _on_ray(task: Callable[[T], R], items: Sequence[T], address: str | None) -> Iterator[tuple[int, R]]:
    """Ray tasks on the cluster at `address` (a local one when None); perfmodel must be importable on its nodes."""
    try:
        import ray
    except ImportError:
        raise PerfmodelError("--executor ray needs Ray: pip install 'perfmodel[ray]'") from None
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        remote = ray.remote(task)
        pending = {remote.remote(item): i for i, item in enumerate(items)}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                yield pending.pop(ref), ray.get(ref)
    finally:
        if started:
            ray.shutdown()
