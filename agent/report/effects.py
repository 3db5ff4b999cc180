"""What the sans-I/O agent core asks its runner to do: the effects `core.decide` returns.

The runner performs each one and appends what came back (docs/architecture.md#sans-io-core-and-runner).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simreportd.events.models import DomainEvent, LLMRequested, ToolCalled


@dataclass(frozen=True)
class Emit:
    """Append these events; no outside world needed."""

    events: tuple[DomainEvent, ...]


@dataclass(frozen=True)
class GatherContext:
    """Gather the simulation's statistics, requirement and samples for the report (`ContextGathered`)."""

    simulation_id: str
    generation: int


@dataclass(frozen=True)
class CallLLM:
    """Send `messages` for the recorded request `request`, after waiting `delay_s`."""

    request: LLMRequested
    messages: list[dict[str, Any]]
    attempt: int
    delay_s: float


@dataclass(frozen=True)
class RunTool:
    """Run the recorded tool call against the read models."""

    call: ToolCalled


@dataclass(frozen=True)
class SampleStatements:
    """Choose up to `cap` of the run's statements for the model to label (`StatementsSampled`), with the
    stances it may answer."""

    simulation_id: str
    generation: int
    cap: int
    stances: tuple[str, ...]


@dataclass(frozen=True)
class UnlockInterviews:
    """The report is complete: open the simulation's agents to interviews."""

    simulation_id: str


@dataclass(frozen=True)
class Stop:
    """Nothing more to do for this report, and why."""

    reason: str



Effect = Emit | GatherContext | SampleStatements | CallLLM | RunTool | UnlockInterviews | Stop


def lane(effect: Effect) -> int:
    """The lane an effect belongs to: its section, or 0 for the report's own steps."""
    if isinstance(effect, CallLLM):
        return effect.request.section_index
    if isinstance(effect, RunTool):
        return effect.call.section_index
    return 0


def emit(*events: DomainEvent) -> Emit:
    """Append these events: the effect of a decision that needs no outside world."""
    return Emit(tuple(events))
