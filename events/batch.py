"""Many events appended as one, held as the columns of their rows (docs/architecture.md#group-commit).

Ingest appends a chunk of lines at a time, thousands of events of which nearly all are actions stored as
their line: an `EventBatch` holds their types, schema versions, data and ids as lists, one meta for all, so
that the SQLite store writes its rows column by column, with no object an event on the way. Read as a
sequence, it is the `NewEvent`s it stands for (made on demand): every other backend, and a retried append,
take it so.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, overload

from .codec import Encoded
from .contract import NO_META, NewEvent
from .ids import new_event_id_bytes


class EventBatch(Sequence[NewEvent]):
    """The events of one append, as columns: `types[i]`, `versions[i]` and `datas[i]` (stored text) are the
    i-th event's, `ids[i]` its 16-byte id (made here when not given); `meta` is every event's."""

    __slots__ = ("datas", "ids", "meta", "types", "versions")

    def __init__(self, types: list[str], versions: list[int], datas: list[str],
                 meta: Mapping[str, Any] | None = None, ids: list[bytes] | None = None) -> None:
        if not len(types) == len(versions) == len(datas) or (ids is not None and len(ids) != len(datas)):
            raise ValueError("an event batch needs one type, version, data (and id) an event")
        self.types, self.versions, self.datas = types, versions, datas
        self.ids: list[bytes] = new_event_id_bytes(len(datas)) if ids is None else ids
        self.meta: Mapping[str, Any] = NO_META if meta is None else meta

    def __len__(self) -> int:
        return len(self.datas)

    @overload
    def __getitem__(self, index: int) -> NewEvent: ...

    @overload
    def __getitem__(self, index: slice) -> list[NewEvent]: ...

    def __getitem__(self, index: int | slice) -> NewEvent | list[NewEvent]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return NewEvent(Encoded(self.types[index], self.datas[index], self.versions[index]), self.ids[index],
                        self.meta)

    def __iter__(self) -> Iterator[NewEvent]:
        return (self[i] for i in range(len(self)))

    def __repr__(self) -> str:
        return f"EventBatch({len(self)} events, meta={dict(self.meta)!r})"


def raw_ids(events: Sequence[NewEvent]) -> list[str | bytes]:
    """The ids of an append's events as given (text or 16 bytes): a batch's column, else each event's."""
    if type(events) is EventBatch:
        return list(events.ids)
    return [e.raw_id for e in events]
