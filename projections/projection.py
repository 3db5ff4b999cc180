"""What a projection is: a pure fold from events to parameterised SQL writes on its own tables.

`apply(event)` touches no connection: it says which writes the event implies, and the
runner performs them, with the checkpoint, in one transaction (docs/architecture.md#read-models).
Tests can fold events into an in-memory database without the event store.
"""

from __future__ import annotations

import itertools
import operator
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Protocol, TypeVar

from simreportd.events.codec import Recorded, RecordedRow
from simreportd.events.models import DomainEvent

Write = tuple[str, tuple[Any, ...]]
Run = tuple[str, list[tuple[Any, ...]]]  # a statement and its rows of parameters: one `executemany`
Handler = TypeVar("Handler")


def by_type_name(table: Mapping[type[DomainEvent], Handler]) -> dict[str, Handler]:
    """A handler table keyed by event class, re-keyed by the type name a `Recorded` carries.

    Tables are written with the event classes so that a misspelt event is an import error,
    not a handler that silently never runs.
    """
    return {cls.TYPE: handler for cls, handler in table.items()}


class Projection(Protocol):
    """A read model: its tables, the event types it folds, and the fold itself."""

    @property
    def name(self) -> str: ...

    @property
    def schema(self) -> str: ...

    @property
    def tables(self) -> tuple[str, ...]: ...

    @property
    def extra_tables(self) -> tuple[str, ...]:
        """Dropped on rebuild but not digested (e.g. FTS indexes)."""
        ...

    @property
    def deferred_indexes(self) -> tuple[str, ...]:
        """Indexes of `schema` that only queries use, not `apply`: left out while the read model is folded
        from empty and created once it has caught up."""
        ...

    @property
    def types(self) -> frozenset[str]:
        """The event types `apply` folds: the runner reads only these."""
        ...

    def apply(self, recorded: Recorded) -> Iterable[Write]:
        """The writes that fold `recorded` into this read model."""
        ...


def index_names(schema: str) -> list[str]:
    """The indexes `schema` creates, in its order."""
    return re.findall(r"CREATE INDEX IF NOT EXISTS (\w+) ON ", schema)


def index_statement(schema: str, name: str) -> str:
    """The statement in `schema` that creates the index `name`."""
    found = re.search(rf"CREATE INDEX IF NOT EXISTS {re.escape(name)} ON [^;]+;", schema)
    if found is None:
        raise ValueError(f"the schema creates no index {name!r} (as CREATE INDEX IF NOT EXISTS)")
    return found.group(0)


def row_runs(projection: Projection, rows: list[RecordedRow]) -> Iterable[Run]:
    """The writes that fold a batch of plain rows, as runs of one statement: the projection's `apply_rows` if it
    has one (the fold of every action, which builds them as runs), else `batch_writes` of the rows made
    `Recorded` (the few events of reports)."""
    apply_rows = getattr(projection, "apply_rows", None)
    if apply_rows is not None:
        return apply_rows(rows)  # type: ignore[no-any-return]
    return runs_of(batch_writes(projection, [Recorded(*row) for row in rows]))


def runs_of(writes: Iterable[Write]) -> Iterator[Run]:
    """Writes in order as runs: each run of the same statement one `Run`."""
    for sql, run in itertools.groupby(writes, key=operator.itemgetter(0)):
        yield sql, [params for _, params in run]


def batch_writes(projection: Projection, batch: list[Recorded]) -> Iterable[Write]:
    """The writes that fold a batch: the projection's `apply_batch` if it has one, else `apply` on each."""
    apply_batch = getattr(projection, "apply_batch", None)
    if apply_batch is not None:
        return apply_batch(batch)  # type: ignore[no-any-return]
    return (write for recorded in batch for write in projection.apply(recorded))
