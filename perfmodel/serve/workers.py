"""The worker processes that answer requests (work.py), each one request at a time, stopped past the wall-time bound.

A question's work cannot be interrupted inside the model (a layout search over a large mixture-of-experts cluster
can run for minutes), so it runs in a process of its own that the server stops when `work.MAX_REQUEST_S` has passed,
and replaces at the next request. Processes also keep one request's uploaded hardware, and the caches it fills, out
of the server and of other requests running at the same time on other cores.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import queue
from multiprocessing.connection import Connection
from typing import Any

from perfmodel.serve import work

MAX_UPLOAD_REQUESTS = 500
"""Requests with uploads a worker answers before it is replaced: each upload's entries stay in its caches."""
LOG = logging.getLogger("perfmodel.serve")


class Worker:
    """A process that answers requests sent down a pipe, one at a time."""

    def __init__(self) -> None:
        context = multiprocessing.get_context("spawn")  # the server's threads are not forked into it
        self.pipe, theirs = context.Pipe()
        self.process = context.Process(target=_serve, args=(theirs,), name="perfmodel-serve-worker", daemon=True)
        self.process.start()
        theirs.close()
        self.uploads = 0

    def ask(self, request: tuple[str, dict[str, Any], str | None], timeout_s: float) -> work.Reply:
        """The worker's reply to `request`; TimeoutError past `timeout_s`, EOFError if the process died."""
        self.pipe.send(request)
        if not self.pipe.poll(timeout_s):
            raise TimeoutError
        reply: work.Reply = self.pipe.recv()
        return reply

    def stop(self) -> None:
        self.process.kill()
        self.process.join()
        self.pipe.close()


def _serve(pipe: Connection) -> None:
    """A worker's life: answer each request until the server closes the pipe (after a first prediction of the default
    scenario, so that the modules and caches a prediction needs are loaded before the first request)."""
    work.reply("predict", {}, None)
    while True:
        try:
            question, keywords, fmt = pipe.recv()
        except (EOFError, KeyboardInterrupt):
            return
        pipe.send(work.reply(question, keywords, fmt))


class Pool:
    """`size` workers, started when first needed; a request waits for a free one."""

    def __init__(self, size: int) -> None:
        self.idle: queue.Queue[Worker | None] = queue.Queue()
        for _ in range(size):
            self.idle.put(None)

    def start(self) -> None:
        """Start every worker now (`perfmodel serve` at start-up), so that the first requests do not wait for them."""
        for _ in range(self.idle.qsize()):
            self.idle.put(self.idle.get() or Worker())

    def ask(self, question: str, keywords: dict[str, Any], fmt: str | None = None) -> str | bytes:
        """The answer of work.answer, asked of a free worker; a refusal is raised as `work.Refused`."""
        worker = self.idle.get() or Worker()
        kept: Worker | None = worker
        try:
            reply = worker.ask((question, keywords, fmt), work.MAX_REQUEST_S)
        except (TimeoutError, EOFError, OSError) as exc:
            worker.stop()
            kept = None
            if isinstance(exc, TimeoutError):
                raise work.Refused(
                    422, f"stopped after {work.MAX_REQUEST_S:g} s, this server's bound on one request's work: ask for "
                    "fewer systems, counts or precisions, fix some of the layout (tp, pp, cp, ep), or run the CLI",
                ) from None  # fmt: skip
            raise RuntimeError("the worker answering the request stopped") from exc
        finally:
            self.idle.put(self._kept(kept, keywords))
        if reply[0] == "refused":
            raise work.Refused(*reply[1:])
        if reply[0] == "failed":
            LOG.error("perfmodel serve: %s %s failed:\n%s", question, keywords, reply[1])
            raise RuntimeError(f"perfmodel serve: {question} failed (the server's log has the traceback)")
        answered: str | bytes = reply[1]
        return answered

    @staticmethod
    def _kept(worker: Worker | None, keywords: dict[str, Any]) -> Worker | None:
        """The worker back in the pool, or None (a new one at the next request) once it has held many uploads."""
        if worker is not None and any(keywords.get(upload) for upload in work.UPLOADS):
            worker.uploads += 1
            if worker.uploads >= MAX_UPLOAD_REQUESTS:
                worker.stop()
                return None
        return worker


WORKERS = max(1, min(4, (os.cpu_count() or 2) // 2))
"""Requests answered at once: half the cores (the model is CPU-bound), at most 4."""
POOL = Pool(WORKERS)
