"""Ingest's own state (daemon/ingest/ingest_state.py): when a run is complete."""

from __future__ import annotations

from simreportd.daemon.ingest.ingest_state import IngestState

from ..projections.test_folds import RUN


def test_ingest_state_completes_a_run_once_every_platform_present_has_finished() -> None:
    state = IngestState("s")
    for event in RUN[:-2]:
        state.apply(event)
    assert state.completion({"twitter", "reddit"}) is None and state.completion({"twitter"}) is None
    state.apply(RUN[-2])
    assert state.completion({"twitter", "reddit"}) is None  # reddit's file is there but has not finished
    completed = state.completion({"twitter"})
    assert completed is not None and completed.platforms == ["twitter"] and completed.all_rounds_ran
    state.apply(completed)
    assert state.completion({"twitter"}) is None  # once
