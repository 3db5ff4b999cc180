"""The event store contract (docs/architecture.md#the-event-store): what every backend provides.

`EventStore` names the operations; the values that cross it (`NewEvent` in, `AppendResult` and
`CaughtUp` out, `Recorded` from codec.py) are defined here too, so a caller that only appends and
reads needs nothing else. The backends are `SQLiteEventStore` (store.py), `PostgresEventStore`
(postgres.py) and `MemoryEventStore` (memory.py); `tests/store_contract.py` holds the suite every one
of them passes.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol, Self

from .codec import Encoded, Recorded, RecordedRow
from .ids import id_text, new_event_id, new_event_id_bytes
from .models import DomainEvent
from .positions import Position

ANY_VERSION: None = None  # `expected_version` that accepts whatever version the stream is at
# The meta of every event appended without one: one read-only mapping, so that a batch's rows see one meta by
# identity and build no dict an event, and no caller can change every such event's meta by writing to one.
NO_META: Mapping[str, Any] = MappingProxyType({})


class NewEvent:
    """An event ready to append, with the id that makes a retried append idempotent. Read-only by convention:
    one is made for every ingested line, and a frozen dataclass's `__init__` (a guarded `object.__setattr__` a
    field) is slower than the rest of planning its row. The id is its text form or its 16 bytes (ids.py)."""

    __slots__ = ("event", "meta", "raw_id")

    def __init__(self, event: DomainEvent | Encoded, event_id: str | bytes | None = None,
                 meta: Mapping[str, Any] | None = None) -> None:
        self.event = event
        self.raw_id = new_event_id() if event_id is None else event_id  # as given or made: what the store keeps
        self.meta: Mapping[str, Any] = NO_META if meta is None else meta

    @property
    def event_id(self) -> str:
        """The id in its text form, as every caller sees it."""
        return id_text(self.raw_id)

    def __repr__(self) -> str:
        return f"NewEvent({self.event!r}, {self.event_id!r}, {self.meta!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NewEvent) and (self.event, self.event_id, self.meta) == (
            other.event, other.event_id, other.meta)

    __hash__ = None  # type: ignore[assignment]


def caused(events: Sequence[DomainEvent | Encoded], correlation_id: str, causation_id: str | None = None) -> list[NewEvent]:
    """`events` with the ids that let a trace be followed across streams, in their `meta`.

    `correlation_id` names the piece of work they belong to (a report's request, an ingest batch);
    `causation_id` is the id of the event they answer (the step before, the run that completed).
    """
    meta = {"correlation_id": correlation_id, **({"causation_id": causation_id} if causation_id else {})}
    return [NewEvent(e, event_id, meta) for e, event_id in zip(events, new_event_id_bytes(len(events)), strict=True)]


@dataclass(frozen=True)
class AppendResult:
    """Where an append landed: one position per event and the stream's version after it."""

    stream: str
    positions: tuple[Position, ...]
    version: int
    duplicate: bool = False


@dataclass(frozen=True)
class CaughtUp:
    """Marker a subscription yields once it has delivered the history up to `position`."""

    position: Position


class EventStore(Protocol):
    """An append-only event log: one global order of positions, one version sequence per stream.

    Guarantees every backend keeps (the contract suite checks each): positions are gapless and in
    commit order; an append is atomic; `expected_version` (0 = a new stream, None = any) is optimistic
    concurrency, a mismatch raising ConcurrencyConflict; re-appending the same event ids writes nothing
    and returns the original positions; a subscriber sees every event after its start exactly once, in
    order. Use as an async context manager; a call after `close()` raises StoreClosed.
    """

    where: str  # named in messages: a path, a redacted database URL

    async def __aenter__(self) -> Self: ...

    async def __aexit__(self, *exc: object) -> None: ...

    async def close(self) -> None:
        """Commit what was accepted, then release every connection. Safe to call twice."""
        ...

    async def append(self, stream: str, events: Sequence[DomainEvent | Encoded | NewEvent],
                     expected_version: int | None = ANY_VERSION) -> AppendResult:
        """Append `events` to `stream` atomically, if the stream is at `expected_version`."""
        ...

    async def read_stream(self, stream: str, after_version: int = 0, limit: int | None = None,
                          types: Sequence[str] | None = None) -> list[Recorded]:
        """The events of one stream after `after_version`, in order (the first `limit`), optionally of some types."""
        ...

    def iter_stream(self, stream: str, after_version: int = 0, batch: int = 1000,
                    types: Sequence[str] | None = None) -> AsyncIterator[Recorded]:
        """`read_stream` to the end, `batch` at a time: bounded memory however long the stream."""
        ...

    async def read_all(self, after: int = 0, limit: int = 1000, types: Sequence[str] | None = None,
                       streams: Sequence[str] | None = None, until: int | None = None) -> list[Recorded]:
        """Up to `limit` events after global position `after` (and up to `until`), optionally filtered."""
        ...

    async def read_rows(self, after: int = 0, limit: int = 1000) -> list[RecordedRow]:
        """`read_all` as plain tuples (`codec.RecordedRow`), the data not parsed: a fold's read of every event."""
        ...

    async def stream_summaries(self) -> list[tuple[str, int, int]]:
        """`(stream, version, last position)` for every stream, by stream name."""
        ...

    async def last_position(self) -> Position:
        """The highest committed position (0 when empty), other processes' appends included."""
        ...

    def subscribe(self, after: int = 0, types: Sequence[str] | None = None, streams: Sequence[str] | None = None,
                  page: int = 500) -> AsyncIterator[Recorded | CaughtUp]:
        """The history after `after`, one `CaughtUp`, then live events as they commit."""
        ...

    def subscribe_batches(self, after: int = 0, types: Sequence[str] | None = None,
                          streams: Sequence[str] | None = None,
                          page: int = 500) -> AsyncGenerator[list[Recorded] | CaughtUp, None]:
        """`subscribe`, a read at a time."""
        ...

    async def wait_for(self, position: Position, timeout: float = 30.0) -> Position:
        """Return the highest position known committed once `position` is; raise WaitTimeout after `timeout`
        seconds."""
        ...
