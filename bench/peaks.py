"""Peak resident memory of every process a bench runs, read from Linux's /proc while they run.

Used by bench/all.py; also run by hand on any command: `python bench/peaks.py simreportd report SIM_DIR --wait`
prints the peak RSS of the command and of its fold child.

This process's peak is exact for a phase: its high-water mark (VmHWM) is reset when the phase starts and read
when it ends. Its children (a daemon's fold child, a CLI command and the fold child it starts) are found by
walking /proc and their high-water marks read every `EVERY_S` until the phase ends: a child that grows in the
last interval before it exits is under-read by that growth. getrusage's ru_maxrss is no help for children: a
child forked from a big process counts the parent's pages as its own until it execs, so a 60 MB command
started by a 250 MB bench reads 250 MB (so did this script's fold-child row before /proc was read).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from types import TracebackType

EVERY_S = 0.05
FOLD_CHILD = "simreportd.daemon.fold_child"
HWM = re.compile(r"^VmHWM:\s+(\d+) kB", re.MULTILINE)
RSS = re.compile(r"^VmRSS:\s+(\d+) kB", re.MULTILINE)
TICKS = os.sysconf("SC_CLK_TCK")


def high_water_mb(pid: int) -> float | None:
    """The process's peak resident memory so far in MB, or None once it has gone."""
    return status_mb(pid, HWM)


def resident_mb(pid: int) -> float | None:
    """The process's resident memory now in MB, or None once it has gone."""
    return status_mb(pid, RSS)


def status_mb(pid: int, field: re.Pattern[str]) -> float | None:
    try:
        found = field.search(Path(f"/proc/{pid}/status").read_text())
    except OSError:
        return None
    return int(found.group(1)) / 1024 if found else None


def cpu_seconds(pid: int) -> float | None:
    """The process's CPU time so far (user and system, every thread) in seconds, or None once it has gone: what
    getrusage cannot say of a child still running (a daemon's fold child, a daemon the bench started)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime and stime, fields 14 and 15 of proc(5)


def children(pid: int) -> list[int]:
    """The process's children (every thread's), or none once it has gone."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return []
    found = []
    for task in tasks:
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def role(pid: int) -> str:
    """What a child process is: a daemon's fold child, or the command the bench started ("command")."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "gone"
    return "fold child" if FOLD_CHILD.encode() in argv else "command"


class Peaks:
    """The peak RSS in MB of this process and of every process under it while the `with` block runs,
    keyed by role ("this process", "fold child", "command"): the largest of each role."""

    def __init__(self) -> None:
        self.mb: dict[str, float] = {}
        self.started_mb = 0.0  # this process's resident memory when the block started: the peak's floor
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> Peaks:
        Path("/proc/self/clear_refs").write_text("5")  # resets this process's VmHWM to its RSS now
        self.started_mb = resident_mb(os.getpid()) or 0.0
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
        self._note("this process", high_water_mb(os.getpid()))

    def _poll(self) -> None:
        while not self._stop.wait(EVERY_S):
            pending = children(os.getpid())
            while pending:
                pid = pending.pop()
                self._note(role(pid), high_water_mb(pid))
                pending += children(pid)

    def _note(self, name: str, mb: float | None) -> None:
        if mb is not None and name != "gone":
            self.mb[name] = max(mb, self.mb.get(name, 0.0))


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit("usage: python bench/peaks.py COMMAND [ARGUMENTS...]")
    with Peaks() as peaks:
        code = subprocess.run(sys.argv[1:], check=False).returncode
    for name, mb in peaks.mb.items():
        if name != "this process":
            print(f"peak RSS, the {name}: {mb:.0f} MB")
    sys.exit(code)


if __name__ == "__main__":
    main()
