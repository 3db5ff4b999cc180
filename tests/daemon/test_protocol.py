"""The websocket protocol's pure parts (daemon/server/protocol.py): the frames an event becomes, and the error
each bad client frame gets."""

from __future__ import annotations

from typing import Any

from simreportd.daemon.server.protocol import ProtocolError, notifications, parse_message
from simreportd.events.models import (
    DomainEvent,
    InterviewUnlocked,
    LLMRequested,
    ReportFailed,
    SectionCompleted,
)
from simreportd.projections.standing import Standing, progress_for

from ..projections.test_folds import R, recorded


def frames(event: DomainEvent, sections: int = 2) -> list[dict[str, Any]]:
    [r] = recorded([event], "report-r1")
    return notifications(r, Standing(simulation_id="s", sections_total=sections).after(event))  # as the fanout


def test_notifications_announce_sections_failures_and_interviews() -> None:
    ready, status = frames(SectionCompleted(**R, section_index=1, title="One", content="x"))
    assert (ready["type"], ready["sections_total"]) == ("section_ready", 2)
    assert (status["status"], status["progress"]) == ("generating", progress_for(1, 2))
    [failed] = frames(ReportFailed(**R, stage="section", error="boom"))
    assert (failed["status"], failed["progress"], failed["error"]) == ("failed", -1, "boom")
    [unlocked] = frames(InterviewUnlocked(**R, simulation_id="s", live_environment=False))
    assert (unlocked["type"], unlocked["simulation_id"]) == ("interview_unlocked", "s")
    assert frames(LLMRequested(**R, call_id="c", purpose="section", section_index=1, model="m", fingerprint="f",
                               messages_added=[])) == []


def test_bad_client_frames_get_the_error_they_deserve() -> None:
    cases = {"not json": "bad_json", "[]": "bad_message", '{"op": "subscribe", "topics": ["x"]}': "bad_topics",
             '{"op": "subscribe", "after": -1}': "bad_after", '{"op": "launch"}': "unknown_op",
             '{"op": {}}': "bad_message", "[" * 100_000 + "]" * 100_000: "bad_json",
             '{"op": "fork", "report_id": "r", "at": -1}': "bad_request"}
    for text, code in cases.items():
        error = parse_message(text)
        assert isinstance(error, ProtocolError) and error.code == code, (text, error)
