"""Open simulation input files safely: regular files inside their folder, bounded reads (docs/architecture.md#untrusted-input).

A FIFO opened for reading blocks until a writer comes (a worker thread lost for ever); a
device such as /dev/zero never ends; a symlink to /etc/passwd would put that file into
rejection excerpts. So every input is opened non-blocking, checked with fstat to be a
regular file, checked to resolve inside the folder it belongs to (unless the operator
allows links out), and read with a size cap.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

MAX_SIDE_FILE = 64 * 1024 * 1024  # simulation_config.json, profiles, run_state.json, env_status.json


class NotReadable(OSError):
    """The path exists but is not a file we read: a FIFO, device, socket, link out, or too big."""


@dataclass(frozen=True)
class Confinement:
    """Where input files may resolve to: inside `folder`, or anywhere when `follow_external`."""

    folder: Path | None = None
    follow_external: bool = False

    def allows(self, path: Path) -> bool:
        """Whether `path`, with every symlink resolved, stays inside the folder."""
        if self.folder is None or self.follow_external:
            return True
        try:
            return path.resolve().is_relative_to(self.folder.resolve())
        except (OSError, RuntimeError):  # a symlink loop
            return False


ANYWHERE = Confinement()


def open_regular(path: Path, confinement: Confinement = ANYWHERE) -> int:
    """A read-only descriptor of a regular file, never blocking; `NotReadable` for anything else."""
    if not confinement.allows(path):
        raise NotReadable(f"{path.name} links outside the simulation folder; not read "
                          "(set [watch] follow_external_symlinks = true to allow it)")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotReadable(f"{path.name} is not a regular file ({_kind(mode)}); not read")
        os.set_blocking(fd, True)  # regular files never block; normal reads from here on
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes(path: Path, confinement: Confinement = ANYWHERE, limit: int = MAX_SIDE_FILE) -> bytes:
    """The whole file, or `NotReadable` when it is not a regular file or holds more than `limit` bytes."""
    with os.fdopen(open_regular(path, confinement), "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise NotReadable(f"{path.name} is larger than {limit} bytes; not read")
    return data


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a file"
