"""`Position`: a place in the log's one global order, so a signature says which of its integers is one.

Positions are gapless and in commit order, from 1; 0 is before the first event (docs/architecture.md#the-event-store).
What the store hands out is typed `Position` (`Recorded.position`, `AppendResult.positions`, `CaughtUp`,
`last_position()`), and so is what the read models say of themselves (`ProjectionRunner.position`, `catch_up`,
`read_checkpoint`, `digest`); `wait_for` on either takes one. The store's read parameters (`after=`, `until=`)
take any int, a Position included, as do the functions that take a number a user typed (`actions.fork`'s
`at`), which stamp it `Position` where it enters the core.
"""

from __future__ import annotations

from typing import NewType

Position = NewType("Position", int)
