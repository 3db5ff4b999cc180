"""The progress lines `report --wait`, `resume` and `fork` print, read from typed events (daemon/cli/progress.py)."""

from __future__ import annotations

from simreportd.daemon.cli.progress import describe
from simreportd.events.codec import Recorded, encode
from simreportd.events.models import (
    DomainEvent,
    LLMFailed,
    OutlinePlanned,
    PlanningStarted,
    ReportCompleted,
    ReportForked,
    ReportRequested,
    SectionCompleted,
    ThoughtRecorded,
    ToolCalled,
    WriterChanged,
)


def line(event: DomainEvent, total: int = 5) -> str | None:
    recorded = Recorded(1, "report-r1", 1, event.type_name, event.SCHEMA_VERSION, "id-1", "2026-11-28T00:00:00Z",
                        encode(event))
    return describe(recorded, total)


def test_a_request_names_the_run_and_the_writer() -> None:
    offline = ReportRequested(report_id="r1", simulation_id="sim_a", generation=2, provider="offline")
    model = ReportRequested(report_id="r1", simulation_id="sim_a", generation=1, provider="openai", model="qwen")
    assert line(offline) == "Report r1 for sim_a (generation 2, offline)"
    assert line(model) == "Report r1 for sim_a (generation 1, openai model 'qwen')"


def test_sections_count_against_the_outline_and_say_when_degraded() -> None:
    ready = SectionCompleted(report_id="r1", section_index=2, title="Camps", content="...", tool_calls=4)
    degraded = ready.model_copy(update={"problems": ["cites nothing"]})
    assert line(ready, total=5) == "  [2/5] ready: Camps (4 tool calls)"
    assert line(degraded, total=5) == "  [2/5] degraded: Camps (4 tool calls)"
    outline = OutlinePlanned(report_id="r1", title="T", summary="S", sections=[], fallback=True)
    assert line(outline) == "Outline: T (0 sections, derived from the data)"


def test_failures_completion_and_writer_changes_are_said_in_one_line() -> None:
    failed = LLMFailed(report_id="r1", call_id="c1", attempt=3, kind="timeout", message="x" * 400)
    assert line(failed) == f"        LLM call failed (attempt 3): timeout: {'x' * 300}"
    done = ReportCompleted(report_id="r1", title="T", sections_total=5, problems=["a", "b"])
    assert line(done) == "Report completed, degraded: 2 problem(s)."
    changed = WriterChanged(report_id="r1", provider="openai", model="m2", previous_provider="offline",
                            previous_model="")
    assert line(changed) == "Continuing with openai model 'm2' instead of offline"
    fork = ReportForked(report_id="r2", forked_from="r1", at=40, provider="offline", model="")
    assert line(fork) == "Forked from r1 at position 40; continuing with offline"
    call = ToolCalled(report_id="r1", section_index=1, iteration=1, call_id="t1", tool="quick_search",
                      arguments={"query": "费用"})
    assert line(call) == '        quick_search("query": "费用")'


def test_steps_not_worth_a_line_print_nothing() -> None:
    assert line(PlanningStarted(report_id="r1")) == "Planning the outline..."
    assert line(ThoughtRecorded(report_id="r1", section_index=1, iteration=1, text="I should search")) is None
