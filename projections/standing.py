"""Where a report stands: the one rule for its status, progress and end (docs/architecture.md#read-models).

`Standing.after` folds one event of a `report-<id>` stream; every status and progress shown anywhere is
this rule's answer: the report view stores it (`STATUS_SQL` and `PROGRESS_SQL` say the same rule over the
view's columns, and a test holds the two to one table), the CLI follows a report with it, websocket frames
carry it and the exported files show it. The agent's own fold (`agent/report/state.py`) decides what to do next;
this one only what a report shows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from simreportd.events.models import (
    DomainEvent,
    InterviewUnlocked,
    OutlinePlanned,
    PlanningStarted,
    ReportCompleted,
    ReportFailed,
    ReportForked,
    ReportRequested,
    ReportResumed,
    SectionCompleted,
)

Status = Literal["pending", "planning", "generating", "completed", "completed_degraded", "failed"]
Outcome = Literal["running", "completed", "completed_degraded", "failed", "interrupted"]
COMPLETED = ("completed", "completed_degraded")
PLANNING, PLANNED, SECTIONS_SHARE = 5, 10, 85  # progress while planning, once planned; all sections' share
CHANGES = frozenset(cls.TYPE for cls in (  # the events that can change a report's status or progress
    ReportRequested, PlanningStarted, OutlinePlanned, SectionCompleted, ReportCompleted, ReportFailed, ReportResumed,
    ReportForked))


@dataclass(frozen=True)
class Standing:
    """What a report's stream says about where it stands, as facts; status and progress follow from them."""

    report_id: str = ""
    simulation_id: str = ""
    title: str = ""
    planning: bool = False  # planning started
    sections_total: int = 0
    sections_done: int = 0
    verdict: str | None = None  # ReportCompleted's status: `completed` or `completed_degraded`
    problems: tuple[str, ...] = ()
    error: str | None = None  # set by ReportFailed, cleared by a resume
    stage: str | None = None
    unlocked: bool = False  # interviews unlocked: the report's last step

    @property
    def status(self) -> Status:
        """A failure first (the agent stops on one even after its verdict), then the verdict, then how far."""
        if self.error is not None:
            return "failed"
        if self.verdict is not None:
            return "completed_degraded" if self.verdict == "completed_degraded" else "completed"
        return "generating" if self.sections_total else "planning" if self.planning else "pending"

    @property
    def progress(self) -> int:
        """5 while planning, 10 once planned, then an equal share of 85 per section; 100 once completed."""
        if self.verdict is not None:
            return 100
        if self.sections_total:
            return progress_for(self.sections_done, self.sections_total)
        return PLANNING if self.planning else 0

    @property
    def ended(self) -> bool:
        """Whether the report has nothing more to do: it failed, or it completed and unlocked interviews."""
        return self.error is not None or (self.verdict is not None and self.unlocked)

    def outcome(self, stopped: bool = False) -> Outcome:
        """How the report came out; a report neither failed nor completed is `interrupted` once its writer has
        `stopped`, else `running`."""
        if self.error is not None:
            return "failed"
        if self.verdict is not None:
            return "completed_degraded" if self.verdict == "completed_degraded" else "completed"
        return "interrupted" if stopped else "running"

    def described(self) -> str:
        """Where an unfinished report stands, in words a message can follow the report's id with, and what
        writes it on: `is not finished (2 of 4 sections done; a running daemon writes it: ...)`."""
        if self.error is not None:
            return f"failed during {self.stage} (`simreportd resume {self.report_id}` continues it)"
        done = f"{self.sections_done} of {self.sections_total} sections done" if self.sections_total \
            else "planning the outline"
        return f"is not finished ({done}; a running daemon writes it: `simreportd run`, which also continues it " \
               "after a stop)"

    def after(self, event: DomainEvent) -> Standing:
        """The standing after one more event of the report's stream."""
        handler = _AFTER.get(type(event))
        return handler(self, event) if handler is not None else self


def _requested(s: Standing, e: ReportRequested) -> Standing:
    return Standing(report_id=e.report_id, simulation_id=e.simulation_id)


def _planning(s: Standing, e: PlanningStarted) -> Standing:
    return dataclasses.replace(s, planning=True)


def _planned(s: Standing, e: OutlinePlanned) -> Standing:
    return dataclasses.replace(s, title=e.title, sections_total=len(e.sections))


def _section(s: Standing, e: SectionCompleted) -> Standing:
    return dataclasses.replace(s, sections_done=s.sections_done + 1)


def _completed(s: Standing, e: ReportCompleted) -> Standing:
    return dataclasses.replace(s, verdict=e.status, problems=tuple(e.problems))


def _failed(s: Standing, e: ReportFailed) -> Standing:
    return dataclasses.replace(s, error=e.error, stage=e.stage)


def _resumed(s: Standing, e: ReportResumed | ReportForked) -> Standing:
    return dataclasses.replace(s, error=None, stage=None)


def _unlocked(s: Standing, e: InterviewUnlocked) -> Standing:
    return dataclasses.replace(s, unlocked=True)


_AFTER: dict[type[DomainEvent], Any] = {
    ReportRequested: _requested, PlanningStarted: _planning, OutlinePlanned: _planned, SectionCompleted: _section,
    ReportCompleted: _completed, ReportFailed: _failed, ReportResumed: _resumed, ReportForked: _resumed,
    InterviewUnlocked: _unlocked}
FOLDED = frozenset(cls.TYPE for cls in _AFTER)  # the types `after` reads: the others leave a standing as it was


def standing_of(events: Iterable[DomainEvent], report_id: str = "") -> Standing:
    """Where the report whose stream holds these events stands."""
    standing = Standing(report_id=report_id)
    for event in events:
        standing = standing.after(event)
    return standing


# The same rule over the report view's columns (`planned`, `verdict`, `error`, `sections_total`,
# `completed_sections`): the view stores status and progress with these, `tests/daemon/test_standing.py` holds
# them equal to `Standing.status` and `Standing.progress` on every row of its table.
STATUS_SQL = ("CASE WHEN error IS NOT NULL THEN 'failed' WHEN verdict IS NOT NULL THEN verdict"
              " WHEN sections_total > 0 THEN 'generating' WHEN planned THEN 'planning' ELSE 'pending' END")
PROGRESS_SQL = (f"CASE WHEN verdict IS NOT NULL THEN 100 WHEN sections_total > 0 THEN {PLANNED} +"
                f" ({SECTIONS_SHARE} * completed_sections) / sections_total WHEN planned THEN {PLANNING} ELSE 0 END")


def progress_for(completed: int, total: int) -> int:
    """10 once planned, then an equal share of 85 per section; 100 only when the report completes."""
    return PLANNED + (SECTIONS_SHARE * completed) // total if total else PLANNED


def mirofish_status(status: str) -> str:
    """The status MiroFish's own files and API show: it knows no `completed_degraded` (its message says it)."""
    return "completed" if status == "completed_degraded" else status


def shown_progress(status: str, progress: int) -> int:
    """The progress MiroFish's files and API show: -1 for a failed report, as MiroFish does."""
    return -1 if status == "failed" else progress


def is_completed(row: Mapping[str, Any] | None) -> bool:
    """Whether a report view row (or None: no report) is of a completed report, degraded or not."""
    return row is not None and row["status"] in COMPLETED
