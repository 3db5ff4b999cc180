"""The event store in memory (docs/architecture.md#the-event-store): the contract with no file and no server.

For tests of the agent, the folds and the protocol, which need a log to put events in but do not
test files or processes: they get the same writer task, group commit, subscriptions and waits as
the SQLite and PostgreSQL stores (all in `EventLog`), without a database's cost per test. Nothing
survives `close()`, and no other process can see the log, so the daemon never opens one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

from .codec import Recorded
from .group_commit import Pending, Row, plan_group, settle
from .log import EventLog
from .positions import Position


class AppendOnly(Sequence[Recorded]):
    """Every event in position order: readable as a sequence, grown only by the store, never changed.

    Assignment and deletion raise, as the databases' triggers refuse UPDATE and DELETE.
    """

    def __init__(self) -> None:
        self._items: list[Recorded] = []

    @overload
    def __getitem__(self, index: int) -> Recorded: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Recorded]: ...

    def __getitem__(self, index: int | slice) -> Recorded | Sequence[Recorded]:
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Recorded]:
        return iter(self._items)

    def __setitem__(self, index: object, value: object) -> None:
        raise TypeError("events are append-only: UPDATE refused")

    def __delitem__(self, index: object) -> None:
        raise TypeError("events are append-only: DELETE refused")

    def extend(self, recorded: Sequence[Recorded]) -> None:
        self._items.extend(recorded)


class MemoryEventStore(EventLog):
    """The event log in this process's memory; use as an async context manager, like every store."""

    where = "the in-memory event store"
    IDENTITY_EVERY_S = 0.0  # nothing can replace it

    def __init__(self) -> None:
        super().__init__()
        self.rows = AppendOnly()
        self._streams: dict[str, list[Recorded]] = {}
        self._ids: dict[str, tuple[int, int]] = {}  # event id -> (position, version): retries are found

    async def _open_connections(self) -> None:
        """Nothing to open."""

    async def _close_connections(self) -> None:
        """Nothing to close: the events stay readable in `rows`."""

    async def _commit_group(self, group: list[Pending]) -> None:
        """Plan the group and store its rows; no await in between, so the plan cannot go stale."""
        versions = {p.stream: len(self._streams.get(p.stream, ())) for p in group}
        rows, outcomes = plan_group(group, versions, self._ids, len(self.rows))
        recorded = [_recorded(row) for row in rows]
        self.rows.extend(recorded)
        for event in recorded:
            self._streams.setdefault(event.stream, []).append(event)
        self._committed_rows(rows)
        settle(group, outcomes)

    async def _read_head(self) -> Position:
        return Position(len(self.rows))

    async def read_stream(self, stream: str, after_version: int = 0, limit: int | None = None,
                          types: Sequence[str] | None = None) -> list[Recorded]:
        """Every event of `stream` with a version above `after_version`, in order (the first `limit`),
        optionally only those of some types."""
        self._check_open()
        found = [r for r in self._streams.get(stream, [])[after_version:] if types is None or r.type in types]
        return found if limit is None else found[:limit]

    async def read_all(self, after: int = 0, limit: int = 1000, types: Sequence[str] | None = None,
                       streams: Sequence[str] | None = None, until: int | None = None) -> list[Recorded]:
        """Up to `limit` events after global position `after` (and up to `until`), optionally of some
        types or streams."""
        self._check_open()
        found: list[Recorded] = []
        for recorded in self.rows[after:until]:
            if len(found) == limit:
                break
            if (types is None or recorded.type in types) and (streams is None or recorded.stream in streams):
                found.append(recorded)
        return found

    async def stream_summaries(self) -> list[tuple[str, int, int]]:
        """`(stream, version, last position)` for every stream, by stream name."""
        self._check_open()
        return [(name, len(events), events[-1].position) for name, events in sorted(self._streams.items())]


def _recorded(row: Row) -> Recorded:
    """A planned row (group_commit.ROW_COLUMNS) as it reads back."""
    position, event_id, stream, version, type_name, schema_version, recorded_at, data, meta = row
    return Recorded(position, stream, version, type_name, schema_version, event_id, recorded_at, data, meta)
