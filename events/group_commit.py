"""Group commit, shared by every backend (docs/architecture.md#group-commit).

`EventLog` (log.py) queues each caller's append as a `Pending`; its writer task takes a group of them
at once (`gather_group`), and the backend commits the group in one transaction. Which appends of a
group succeed, and at which positions and versions, is decided here by `plan_group`, the same for
every backend, so each keeps exactly the same guarantees; the backend writes the planned rows and
hands the outcomes back to their callers with `settle`.

A planned row is the tuple `ROW_COLUMNS` names, the order every backend inserts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from simreportd.errors import ConcurrencyConflict, DuplicateEventMismatch

from .batch import EventBatch, raw_ids
from .codec import Encoded, encode
from .contract import AppendResult, NewEvent
from .ids import id_text
from .positions import Position

MAX_GROUP_APPENDS = 1024
ROW_COLUMNS = ("position", "event_id", "stream", "version", "type", "schema_version", "recorded_at", "data", "meta")

Row = tuple[Any, ...]
Outcome = AppendResult | Exception


@dataclass(slots=True)
class Pending:
    """One caller's append, waiting in the writer's queue for its outcome."""

    stream: str
    events: Sequence[NewEvent]  # a list, or an `EventBatch` (batch.py) that the SQLite store writes as columns
    expected_version: int | None
    outcome: Outcome | None = None

    def settle(self, outcome: Outcome) -> None:
        """Record the outcome once: a later one (a failure after success was known) is ignored."""
        if self.outcome is None:
            self.outcome = outcome


class Replan(Exception):
    """An optimistic plan (made from cached versions) needs checking against the database."""


def gather_group(first: Pending, queue: MemoryObjectReceiveStream[Pending]) -> list[Pending]:
    """`first` and every append already waiting behind it, up to MAX_GROUP_APPENDS."""
    group = [first]
    while len(group) < MAX_GROUP_APPENDS:
        try:
            group.append(queue.receive_nowait())
        except (anyio.WouldBlock, anyio.EndOfStream):
            break
    return group


def settle(group: list[Pending], outcomes: list[Outcome]) -> None:
    """Give each append of a committed group its outcome (what `plan_group` returned)."""
    for pending, outcome in zip(group, outcomes, strict=True):
        pending.settle(outcome)


def written(group: list[Pending], outcomes: list[Outcome]) -> tuple[int, set[str]] | None:
    """The first position a committed group wrote and every type it holds (more than it wrote: a conflicting
    append's too), or None when it wrote nothing."""
    firsts = [o.positions[0] for o in outcomes if isinstance(o, AppendResult) and not o.duplicate and o.positions]
    if not firsts:
        return None
    types: set[str] = set()
    for pending in group:
        events = pending.events
        types.update(events.types if type(events) is EventBatch else (new.event.type_name for new in events))
    return min(firsts), types


RowsFor = Callable[[Pending, int, int, str], list[Row]]


def plan_group(group: list[Pending], versions: dict[str, int], known: dict[Any, tuple[int, int]],
               head: int, rows_for: RowsFor | None = None, id_key: Callable[[str | bytes], Any] = id_text,
               keep_known: bool = True) -> tuple[list[Row], list[Outcome]]:
    """Decide which appends of a group succeed and at which positions: the rows to insert and one outcome
    per append.

    `versions` holds every stream of the group at its current version and is updated; `known` maps event
    ids already stored (as `id_key` makes them) to their (position, version) (a backend may pass {} and
    replan on a UNIQUE violation); `head` is the highest position committed. A conflicting append fails
    alone. Without `keep_known`, `known` is the group's own: the last append's ids, which no later one can
    repeat, are not added (a big batch is often a group of one). `rows_for(pending, position, version,
    recorded_at)` makes an append's rows, its first at the position and version after those given:
    `ROW_COLUMNS` unless a backend stores another shape.
    """
    recorded_at = datetime.now(UTC).isoformat(timespec="microseconds")
    rows: list[Row] = []
    outcomes: list[Outcome] = []
    make = rows_for or full_rows
    last = None if keep_known else group[-1]
    placed = head  # the last position planned: a backend's `rows_for` may keep an append's rows as columns
    for pending in group:
        outcome = _plan_one(pending, versions, known, placed, id_key, pending is not last)
        if isinstance(outcome, AppendResult) and not outcome.duplicate:
            rows.extend(make(pending, placed, outcome.version - len(pending.events), recorded_at))
            placed += len(pending.events)
        outcomes.append(outcome)
    return rows, outcomes


def full_rows(pending: Pending, position: int, version: int, recorded_at: str) -> list[Row]:
    """An append's rows as `ROW_COLUMNS` names them, every fact in every row (PostgreSQL, memory)."""
    rows = []
    meta: tuple[Mapping[str, Any] | None, str] = (None, "{}")  # `caused` gives a batch one meta: encoded once
    for new in pending.events:
        event = new.event
        position, version = position + 1, version + 1
        if new.meta is not meta[0]:
            meta = (new.meta, encode_meta(new.meta))
        rows.append((position, id_text(new.raw_id), pending.stream, version, event.type_name,
                     event.SCHEMA_VERSION, recorded_at, event.data if type(event) is Encoded else encode(event),
                     meta[1]))
    return rows


def encode_meta(meta: Mapping[str, Any]) -> str:
    """An event's meta as stored: sorted keys, "{}" for none."""
    return json.dumps(dict(meta), sort_keys=True) if meta else "{}"


def _plan_one(
    pending: Pending,
    versions: dict[str, int],
    known: dict[Any, tuple[int, int]],
    head: int,
    id_key: Callable[[str | bytes], Any],
    remember: bool = True,
) -> Outcome:
    """The result of one append, or the error it gets; updates `versions` and, if `remember`, `known`."""
    ids = [id_key(i) for i in raw_ids(pending.events)] if known or remember else []
    if known and not known.keys().isdisjoint(ids):
        seen = [known[i] for i in ids if i in known]
        if len(seen) != len(ids):
            return DuplicateEventMismatch(pending.stream, [id_text(i) for i in ids if i in known])
        return AppendResult(pending.stream, tuple(Position(p) for p, _ in seen), max(v for _, v in seen),
                            duplicate=True)
    stream, current = pending.stream, versions[pending.stream]
    if pending.expected_version is not None and pending.expected_version != current:
        return ConcurrencyConflict(stream, pending.expected_version, current)
    count = len(pending.events)
    if remember:
        known.update(zip(ids, zip(range(head + 1, head + count + 1), range(current + 1, current + count + 1),
                                  strict=True), strict=True))
    versions[stream] = current + count
    # Position is a NewType: the ints are Positions already, no call an event to say so.
    positions = cast(tuple[Position, ...], tuple(range(head + 1, head + count + 1)))
    return AppendResult(stream, positions, current + count)
