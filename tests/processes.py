"""Real processes for the kill -9 tests: start, wait for a condition, kill, restart."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio

from .conftest import PYTHON, TIMEOUT

STARTED: list[subprocess.Popen] = []  # killed after each test by conftest, whatever the test did


def cli(*args: str, cwd: Path | None = None) -> subprocess.Popen:
    """`simreportd ARGS` as a child process, its output kept out of the test's way."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    log = tempfile.NamedTemporaryFile(prefix="simreportd-", suffix=".log", delete=False)  # a pipe could fill up
    process = subprocess.Popen([PYTHON, "-m", "simreportd", *args], cwd=cwd, env=env,
                               stdout=subprocess.DEVNULL, stderr=log)
    process.log_path = Path(log.name)  # type: ignore[attr-defined]
    log.close()
    STARTED.append(process)
    return process


def serving(status: str) -> str:
    """The URL a daemon's systemd STATUS line says it serves."""
    return re.search(r"serving (http://[^ /]+/)", status).group(1)


def reap() -> None:
    """Kill every child a test left running, and remove the log files of all of them."""
    while STARTED:
        process = STARTED.pop()
        if process.poll() is None:
            process.kill()
            process.wait(timeout=TIMEOUT)
        process.log_path.unlink(missing_ok=True)  # type: ignore[attr-defined]


def wait_until(condition: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
    """Poll `condition` until it holds; fail the test with `what` if it never does."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


async def await_until(condition: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
    """`wait_until` on the event loop: poll `condition` without blocking it; fail the test with `what` if it
    never holds."""
    with anyio.move_on_after(timeout):
        while not condition():
            await anyio.sleep(0.02)
        return
    raise AssertionError(f"timed out waiting for {what}")


def kill9(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=TIMEOUT)


def count(db: Path, sql: str, params: tuple = ()) -> int:
    """A count from an SQLite file that may not exist yet or be mid-write."""
    if not db.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return int(conn.execute(sql, params).fetchone()[0] or 0)
        finally:
            conn.close()
    except sqlite3.OperationalError:
        return 0


class NotifySocket:
    """A datagram socket standing in for systemd's $NOTIFY_SOCKET."""

    def __init__(self, path: Path) -> None:
        import socket

        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(TIMEOUT)

    def __enter__(self) -> NotifySocket:
        os.environ["NOTIFY_SOCKET"] = str(self.path)
        return self

    def __exit__(self, *exc: object) -> None:
        os.environ.pop("NOTIFY_SOCKET", None)
        self.sock.close()
        self.path.unlink(missing_ok=True)

    def wait_for(self, field: str) -> list[str]:
        """Messages received until one contains `field` (e.g. READY=1)."""
        seen = []
        while True:
            message = self.sock.recv(4096).decode()
            seen.append(message)
            if field in message.split("\n"):
                return seen


def takes_sigterm(process: subprocess.Popen) -> bool:
    """Whether the process has installed its SIGTERM handler (simreportd's entry does it first thing).

    Before that, SIGTERM meets the default action and ends the interpreter, whatever its
    code would do: no program in any language can act on a signal before it has started.
    """
    try:
        fields = dict(line.split(":\t", 1) for line in Path(f"/proc/{process.pid}/status").read_text().splitlines()
                      if ":\t" in line)
    except OSError:
        return False
    return bool(int(fields.get("SigCgt", "0"), 16) & (1 << (signal.SIGTERM - 1)))
