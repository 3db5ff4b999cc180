"""One writer daemon per store (docs/architecture.md#one-writer-per-store): an exclusive lock file beside the SQLite store.

The lock is an `flock` on `<store>.lock`, held for the life of the process that writes (the
daemon, or a CLI command when no daemon runs); the kernel drops it when the process dies,
even by kill -9, so a stale file never blocks anyone. The file's text says who holds it and,
once the daemon listens, where, so other commands can hand their work over to it.
"""

from __future__ import annotations

import fcntl
import json
import os
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from simreportd.errors import StoreLocked
from simreportd.events.store import read_only_or


@dataclass(frozen=True)
class Holder:
    """Who holds a store's lock: pid, since when, the command, and the URL it serves (if any)."""

    pid: int
    since: str
    command: str
    url: str | None = None

    def describe(self) -> str:
        serving = f", serving {self.url}" if self.url else ""
        return f"pid {self.pid} (simreportd {self.command} since {self.since}{serving})"


def lock_path(store_path: Path) -> Path:
    return store_path.with_name(store_path.name + ".lock")


class StoreLock:
    """The exclusive lock of one store; `acquire` raises StoreLocked naming the holder."""

    def __init__(self, store_path: Path) -> None:
        self.store_path, self.path = store_path, lock_path(store_path)
        self._fd: int | None = None
        self._holder: Holder | None = None

    def acquire(self, command: str) -> None:
        """Take the lock or raise StoreLocked; a folder that cannot be written is StoreReadOnly (exit 2)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise read_only_or(exc, self.store_path) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = read_holder(self.store_path)
            who = holder.describe() if holder else "another process"
            raise StoreLocked(f"the store {self.store_path} is in use by {who}; stop it first, or use "
                              "another [store] path") from None
        self._fd = fd
        self._write(Holder(os.getpid(), datetime.now(UTC).isoformat(timespec="seconds"), command))

    def advertise(self, url: str) -> None:
        """Record the URL the holder serves, for commands that hand their work over."""
        if self._holder is not None:
            self._write(Holder(self._holder.pid, self._holder.since, self._holder.command, url))

    def release(self) -> None:
        """Drop the lock (safe to call twice); the file stays, empty, so no one races on its inode."""
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = self._holder = None

    def _write(self, holder: Holder) -> None:
        assert self._fd is not None
        data = json.dumps(asdict(holder)).encode()
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)
        self._holder = holder


def read_holder(store_path: Path) -> Holder | None:
    """The live holder of the store's lock, or None when no process holds it."""
    path = lock_path(store_path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _parse_holder(os.pread(fd, 4096, 0))
        fcntl.flock(fd, fcntl.LOCK_UN)  # we could lock it: nobody holds it
        return None
    finally:
        os.close(fd)


def _parse_holder(data: bytes) -> Holder | None:
    try:
        fields = json.loads(data)
        return Holder(int(fields["pid"]), str(fields["since"]), str(fields["command"]), fields.get("url"))
    except (ValueError, KeyError, TypeError):
        return Holder(0, "?", "?")  # held, but its text is being written: someone holds it all the same
