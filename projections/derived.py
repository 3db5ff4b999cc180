"""Derived files (read models, ingest snapshots, report folders) are folds of the log: never a reason to stop.

One that is missing, corrupt or unreadable is moved aside, kept for inspection under a name that says
when (`events-views.sqlite3.corrupt-20261125T204408Z`), named in one log line, and made again from the
log. Only the event log is precious.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

log = logging.getLogger("simreportd.projections.derived")

SIDECARS = ("-wal", "-shm", "-journal")  # SQLite's files beside a database, moved with it

FileIdentity = tuple[int, int] | None  # (device, inode) of a file; None when there is none


def identity(path: Path) -> FileIdentity:
    """The (device, inode) of `path`, or None if nothing is there: a file deleted or replaced has another."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


def damaged(exc: BaseException) -> bool:
    """Whether an sqlite3 error says the file itself is bad (not a database, malformed, cannot be opened),
    rather than the moment (locked, disk full, read-only), which waiting cures."""
    if type(exc) is sqlite3.DatabaseError:  # SQLITE_NOTADB, SQLITE_CORRUPT: the subclasses are the moment's
        return True
    return isinstance(exc, sqlite3.OperationalError) and "unable to open" in str(exc)


def set_aside(path: Path, reason: str, what: str) -> Path | None:
    """Move `path` (and its SQLite sidecars) aside as `<name>.corrupt-<UTC time>`; log it in one line.
    Return where it went, or None if it was missing (its sidecars, if any, are moved all the same)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    try:
        os.replace(path, aside)
    except FileNotFoundError:
        _move_sidecars(path, aside)  # a deleted database's WAL would be taken for the new one's
        log.warning("%s %s is missing (%s); making it again from the log", what, path, reason)
        return None
    _move_sidecars(path, aside)
    log.warning("%s %s cannot be used (%s); moved aside to %s and made again from the log", what, path, reason,
                aside.name)
    return aside


def _move_sidecars(path: Path, aside: Path) -> None:
    for sidecar in SIDECARS:
        try:
            os.replace(f"{path}{sidecar}", f"{aside}{sidecar}")
        except FileNotFoundError:
            continue
