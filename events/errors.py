"""The package's error tree: one base class, structured fields, messages built from them."""

from __future__ import annotations


class SimreportdError(Exception):
    """Base class of every error simreportd raises on purpose; `exit_code` is what the CLI exits with."""

    exit_code = 1


class ConfigError(SimreportdError, ValueError):
    """The configuration file or an override is missing, unknown or invalid."""

    exit_code = 2


class UsageError(SimreportdError, ValueError):
    """The command was asked for something that cannot be done as asked; exit code 2."""

    exit_code = 2


class StoreUnusable(SimreportdError):
    """The event store file cannot be opened as a database (corrupt, not SQLite, unreadable)."""

    exit_code = 2

    def __init__(self, path: object, reason: str) -> None:
        self.path, self.reason = path, reason
        super().__init__(f"cannot use the event store {path}: {reason}. If the file is damaged, move it away and "
                         "restore a backup (`sqlite3 FILE .recover` may save its events); a new store starts empty")


class StoreFull(SimreportdError, OSError):
    """The disk holding the event store is full; nothing was written, retry once space is freed."""


class StoreLocked(SimreportdError):
    """Another simreportd process holds the store's lock (one writer daemon per store)."""

    exit_code = 2


class StoreClosed(SimreportdError, RuntimeError):
    """The event store was used after it was closed."""

    def __init__(self) -> None:
        super().__init__("the event store is closed; open a new EventStore")


class ConcurrencyConflict(SimreportdError):
    """An append expected a stream version that is no longer current."""

    def __init__(self, stream: str, expected: int, actual: int) -> None:
        self.stream, self.expected, self.actual = stream, expected, actual
        super().__init__(
            f"stream {stream!r} is at version {actual}, the append expected {expected}; "
            "read the stream again and retry"
        )


class DuplicateEventMismatch(SimreportdError):
    """An append reused some, but not all, event ids of an earlier append."""

    def __init__(self, stream: str, event_ids: list[str]) -> None:
        self.stream, self.event_ids = stream, event_ids
        super().__init__(
            f"append to {stream!r} repeats event ids {event_ids[:3]} of an earlier append but not all of them"
        )


class UnknownEventType(SimreportdError, ValueError):
    """A stored event has a type no model in this version knows."""

    def __init__(self, type_name: str, schema_version: int) -> None:
        self.type_name, self.schema_version = type_name, schema_version
        super().__init__(f"unknown event type {type_name!r} (schema v{schema_version}); upgrade simreportd")


class WaitTimeout(SimreportdError, TimeoutError):
    """A wait for a position or a condition ran out of time."""

    def __init__(self, what: str, seconds: float) -> None:
        self.what, self.seconds = what, seconds
        super().__init__(f"timed out after {seconds:g}s waiting for {what}")


class NotFound(UsageError, LookupError):
    """A report, simulation or agent the caller named does not exist (a usage error: exit code 2)."""
