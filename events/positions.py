"""`Position`: a place in the log's one global order, so a signature says which of its integers is one.

Positions are gapless and in commit order, from 1; 0 is before the first event (docs/architecture.md#the-event-store).
What the store hands out is typed `Position` (`Recorded.position`, `AppendResult.positions`, `CaughtUp`,
`last_position()`); its parameters (`after=`, `until=`, `wait_for`) take any int, a Position included.
"""

from __future__ import annotations

from typing import NewType

Position = NewType("Position", int)
