"""Handler tables against the event catalogue: a misspelt or forgotten event type fails here, not silently."""

from __future__ import annotations

from simreportd.agent.chat.chat_state import HANDLERS as CHAT_STATE
from simreportd.agent.report.state import HANDLERS as REPORT_STATE
from simreportd.events.models import EVENT_TYPES, ChatEvent, ReportEvent
from simreportd.projections.catalogue import projections

NOT_FOLDED_BY_THE_REPORT = {"InterviewRequested", "InterviewAnswered", "ReportDeleted"}  # after its writing ended


def test_every_type_a_read_model_folds_is_in_the_catalogue() -> None:
    for projection in projections():
        assert projection.types, projection.name
        assert projection.types <= set(EVENT_TYPES), (projection.name, projection.types - set(EVENT_TYPES))


def test_the_report_fold_handles_every_event_of_a_report_stream() -> None:
    report_events = {name for name, cls in EVENT_TYPES.items() if issubclass(cls, ReportEvent)}
    handled = {cls.__name__ for cls in REPORT_STATE}
    assert handled <= report_events
    assert report_events - handled == NOT_FOLDED_BY_THE_REPORT


def test_every_event_type_is_folded_by_some_read_model() -> None:
    folded = set().union(*(p.types for p in projections()))
    unfolded = set(EVENT_TYPES) - folded
    # kept in the log only: a round's end (the rounds table counts actions), interviews (read from the log
    # by the interviewer), a folder's failed check (the daemon log says it; ingest retries it), chats (each
    # read from its own stream by its runner and its replay; no report view may count them), guided drafts, the
    # mode probe and stance labels (the agent's fold reads them; the section they end in carries the kept draft
    # and verdict, and the tools' results what the labels made of the camps)
    chats = {name for name, cls in EVENT_TYPES.items() if issubclass(cls, ChatEvent)}
    agent_only = {"DraftWritten", "WritingModeChosen", "StatementsSampled", "StancesLabelled"}
    assert unfolded == {"RoundEnded", "InterviewRequested", "InterviewAnswered", "IngestFailed", *chats,
                        *agent_only}, unfolded


def test_the_chat_fold_handles_every_chat_event() -> None:
    chats = {name for name, cls in EVENT_TYPES.items() if issubclass(cls, ChatEvent)}
    assert {cls.__name__ for cls in CHAT_STATE} == chats
