"""What a projection is: a pure fold from events to parameterised SQL writes on its own tables.

`apply(event)` touches no connection: it says which writes the event implies, and the
runner performs them, with the checkpoint, in one transaction (DESIGN.md section 1, rule 4).
Tests can fold events into an in-memory database without the event store.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from simreportd.events.codec import Recorded

Write = tuple[str, tuple[Any, ...]]


class Projection(Protocol):
    """A read model: its tables, the event types it folds, and the fold itself."""

    name: str
    schema: str
    tables: tuple[str, ...]
    extra_tables: tuple[str, ...]  # dropped on rebuild but not digested (e.g. FTS indexes)
    types: frozenset[str]

    def apply(self, recorded: Recorded) -> Iterable[Write]:
        """The writes that fold `recorded` into this read model."""
        ...
