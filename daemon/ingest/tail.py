"""Read whole lines of a growing file by byte offset, in bounded memory.

Only complete lines (ending in `\\n`) are returned: a half-written last line stays unread
until its end arrives. A line longer than the limit is returned as `too_long` with a short
excerpt, and reading goes on after its end without ever holding it whole. The last line
read carries a hash of the bytes just before its end: a file rewritten in place, with the
same inode and first line, is told apart by it before reading on (docs/architecture.md#ingest).
"""

from __future__ import annotations

import errno
import hashlib
import os
from dataclasses import dataclass
from itertools import accumulate, repeat
from pathlib import Path
from typing import BinaryIO, NamedTuple

from .inputs import ANYWHERE, Confinement, open_regular

CHUNK = 1024 * 1024  # bytes of lines per read and per append: bounds memory, keeps appends large
EXCERPT = 200
TAIL_WINDOW = 4096  # bytes before a stored offset whose hash must still match to read on


class Line(NamedTuple):
    """One whole line read (a tuple: a run makes millions, and a frozen dataclass costs 2.5 times as much)."""

    offset: int
    end: int
    raw: bytes
    too_long: bool = False
    tail: str | None = None  # set on the last line of a read: hash of the bytes before `end`


@dataclass(frozen=True, slots=True)
class FileIdentity:
    """What tells one incarnation of a file from another: inode and a hash of its first line."""

    ino: int
    size: int
    head: str


def identify(path: Path, confinement: Confinement = ANYWHERE) -> FileIdentity | None:
    """The file's identity, or None while it is missing or has no complete first line yet; `NotReadable` or
    another `OSError` for a path that cannot be read (a folder, a FIFO, a link loop, no permission)."""
    try:
        with os.fdopen(open_regular(path, confinement), "rb") as f:
            st = os.fstat(f.fileno())
            first = f.readline(64 * 1024)
    except FileNotFoundError:
        return None
    if not first.endswith(b"\n"):
        return None
    return FileIdentity(st.st_ino, st.st_size, hashlib.sha1(first).hexdigest()[:16])


def read_lines(path: Path, offset: int, max_line_bytes: int, budget: int = CHUNK,
               confinement: Confinement = ANYWHERE) -> list[Line]:
    """Complete lines starting at `offset`, about `budget` bytes of them at most; the last one with its tail."""
    return read_chunk(path, offset, max_line_bytes, budget, confinement)[0]


def read_chunk(path: Path, offset: int, max_line_bytes: int, budget: int = CHUNK,
               confinement: Confinement = ANYWHERE) -> tuple[list[Line], bytes | None]:
    """`read_lines`, and when every line is whole their bytes as one (`b"\\n".join` of their raws): what a
    chunk's checks read, cut from the read instead of joined again."""
    with os.fdopen(open_regular(path, confinement), "rb") as f:
        lines, joined = _read_lines(f, offset, max_line_bytes, budget)
        if lines:
            last = lines[-1]
            lines[-1] = Line(last.offset, last.end, last.raw, last.too_long, _tail_hash(f, last.end))
        return lines, joined


# Errors that say nothing about the file: the process is out of descriptors or memory for a moment. Taking
# them for "the bytes changed" started a new generation of a run that had not been touched.
PASSING = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.EAGAIN, errno.EINTR})


def tail_matches(path: Path, end: int, expected: str, confinement: Confinement = ANYWHERE) -> bool:
    """Whether the bytes before `end` still hash to `expected` (False when the file is gone or unreadable);
    an error that says nothing about the file (PASSING) is raised, for the check to be made again later."""
    try:
        with os.fdopen(open_regular(path, confinement), "rb") as f:
            return _tail_hash(f, end) == expected
    except OSError as exc:
        if exc.errno in PASSING:
            raise
        return False


def _tail_hash(f: BinaryIO, end: int) -> str:
    start = max(0, end - TAIL_WINDOW)
    f.seek(start)
    return hashlib.sha1(f.read(end - start)).hexdigest()[:16]


def _read_lines(f: BinaryIO, offset: int, max_line_bytes: int, budget: int) -> tuple[list[Line], bytes | None]:
    f.seek(offset)
    buf = f.read(max(budget, 1))
    parts = buf.split(b"\n")
    del parts[-1]  # after the last line end: the start of a line not read whole (or nothing)
    if parts and max(map(len, parts)) <= max_line_bytes:  # every line whole: cut in C, not a find a line
        ends = list(accumulate(map(_PLUS_ONE, map(len, parts)), initial=offset))
        return (list(map(tuple.__new__, repeat(Line), zip(ends, ends[1:], parts, repeat(False), repeat(None)))),
                buf[:ends[-1] - offset - 1])
    lines: list[Line] = []
    pos = 0
    while (nl := buf.find(b"\n", pos)) != -1:
        raw = buf[pos:nl]
        too_long = len(raw) > max_line_bytes
        lines.append(Line(offset + pos, offset + nl + 1, raw[:EXCERPT] if too_long else raw, too_long))
        pos = nl + 1
    if not lines and len(buf) == budget:
        end = _find_line_end(f, offset + len(buf))
        if end is not None:
            lines.append(Line(offset, end, buf[:EXCERPT], too_long=True))
    return lines, None


_PLUS_ONE = (1).__add__  # a line's length -> the bytes it takes with its end


def _find_line_end(f: BinaryIO, start: int) -> int | None:
    """Offset just past the next newline at or after `start`, or None if the line has not ended."""
    f.seek(start)
    position = start
    while chunk := f.read(1024 * 1024):
        nl = chunk.find(b"\n")
        if nl != -1:
            return position + nl + 1
        position += len(chunk)
    return None
