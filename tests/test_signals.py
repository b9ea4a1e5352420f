"""Signals that end perfmodel (issue 30, class 3): SIGTERM from a scheduler or `kill`, SIGHUP from a closed terminal
and SIGINT (Ctrl-C) end its worker processes and remove its temporary files; an existing output is never replaced by
a partial one."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

SWEEP = """[sweep]
models = ["llama3.1-70b", "llama3.1-405b", "llama3.1-8b"]
gpus = ["h100-sxm", "h200-sxm", "b200", "gb200", "mi355x"]
precisions = ["fp8", "bf16"]
n_gpus = [512, 1024, 2048, 4096]
"""


def _children(pid: int) -> set[int]:
    """The live processes whose parent is `pid` (Linux /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@contextlib.contextmanager
def _interruptible() -> Iterator[None]:
    """Children started inside get SIGINT at its default, as a shell starts them: a process that ignores SIGINT
    passes that on (pytest-xdist's workers do), and perfmodel keeps a signal its caller ignores ignored (as a
    nohup'ed SIGHUP). Set here, in the test's own (main) thread, around the start, not in a preexec_fn, which is
    unsafe in a process running threads (execnet's, in an xdist worker)."""
    previous = signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def _sweep_on_two_workers(tmp_path: Path, *args: str) -> Iterator[tuple[subprocess.Popen[str], set[int]]]:
    """A sweep of 120 points on two workers, running: its process and its workers' ids (killed at the end)."""
    sweep = tmp_path / "big.toml"
    sweep.write_text(SWEEP)
    command = [sys.executable, "-m", "perfmodel", "sweep", str(sweep), "--jobs", "2", "--quiet", *args]
    with _interruptible():
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        workers: set[int] = set()
        while len(workers) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
            workers = _children(proc.pid)
        assert len(workers) == 2, "the sweep never started its two workers"
        yield proc, workers
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGKILL])
def test_a_signal_to_a_sweep_ends_its_workers(tmp_path: Path, signum: int) -> None:
    """Ended while its workers price points: every worker is gone within a few seconds (killed outright, SIGKILL,
    too), the sweep exits without writing its --out file and leaves no temporary file."""
    with _sweep_on_two_workers(tmp_path, "--out", str(tmp_path / "rows.csv")) as (proc, workers):
        time.sleep(0.5)  # the workers are pricing points
        proc.send_signal(signum)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while any(map(_alive, workers)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(map(_alive, workers)), f"workers {workers} outlived their sweep"
    assert proc.returncode != 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.toml"]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")
def test_a_killed_worker_is_one_line_not_a_hang(tmp_path: Path) -> None:
    """The out-of-memory killer ends one worker: the sweep stops with one line, its other worker ended too."""
    with _sweep_on_two_workers(tmp_path, "--format", "csv") as (proc, workers):
        os.kill(min(workers), signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert err.startswith("error: a worker process ended before its points were priced") and err.count("\n") == 1
    assert not any(map(_alive, workers))


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
@pytest.mark.parametrize("existing", [False, True])
def test_a_signal_during_an_xlsx_export_leaves_no_temporary_file(tmp_path: Path, signum: int, existing: bool) -> None:
    """The signal arrives while the workbook is being written (the bytes half out): no temporary file is left, and
    an existing output (`--force`) keeps its old bytes."""
    out = tmp_path / "plan.xlsx"
    if existing:
        out.write_bytes(b"the planner's last workbook")
    script = (
        "import os, signal, sys, time\nfrom perfmodel.outputs.export import xlsx\nfrom perfmodel.cli import main\n"
        "def write(handle, *args, **kwargs):\n    handle.write(b'PK partial')\n"
        f"    os.kill(os.getpid(), {int(signum)})\n    time.sleep(20)\n"
        "xlsx.write_xlsx = write\n"
        f"main(['export', 'predict', '--out', {str(out)!r}, '--force'])\n"
    )
    with _interruptible():
        proc = subprocess.Popen(
            [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode != 0, stderr
    assert "Traceback" not in stderr, stderr
    if existing:
        assert out.read_bytes() == b"the planner's last workbook"
    assert sorted(p.name for p in tmp_path.iterdir()) == (["plan.xlsx"] if existing else [])


def test_an_ignored_sighup_stays_ignored(tmp_path: Path) -> None:
    """Under `nohup` (SIGHUP ignored) a closed terminal does not stop an export."""
    out = tmp_path / "plan.csv"
    script = (
        "import os, signal\nfrom perfmodel.outputs.atomic import write_atomic\nfrom pathlib import Path\n"
        "signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
        "def write(handle):\n    os.kill(os.getpid(), signal.SIGHUP)\n    handle.write(b'done')\n"
        f"write_atomic(Path({str(out)!r}), write)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60, text=True)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == b"done"


def test_the_handlers_are_restored(tmp_path: Path) -> None:
    """After a write the process's own handlers are back (a library must not keep its handlers)."""
    from perfmodel.outputs.atomic import write_atomic

    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    write_atomic(tmp_path / "x.csv", lambda handle: handle.write(b"x"))
    assert {s: signal.getsignal(s) for s in before} == before
    assert os.path.exists(tmp_path / "x.csv")
