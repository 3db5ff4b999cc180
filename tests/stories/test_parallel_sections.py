"""`[reports] parallel_sections = N`: sections written at once, each its own conversation, replayed exactly."""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
from collections import Counter
from pathlib import Path

import anyio
import pytest

from simreportd.agent.report import effects
from simreportd.daemon.cli.local import generate
from simreportd.daemon.config import load_config
from simreportd.daemon.report_replay import replay_report
from simreportd.daemon.service import Daemon
from simreportd.events.codec import Recorded
from simreportd.events.streams import report_stream
from simreportd.projections.export import load_report
from simreportd.projections.sqlite import connect_views

from ..conftest import PYTHON, TIMEOUT, write_config
from ..fake_llm import FakeLLM
from ..processes import count, wait_until
from ..writing.test_report_llm import llm_config, report_once
from .test_kill import kill_and_restart

pytestmark = pytest.mark.anyio


def after_outline(events: list[Recorded]) -> list[Recorded]:
    start = next(i for i, r in enumerate(events) if r.type == "OutlinePlanned")
    return events[start + 1:]


async def test_sections_run_at_once_within_max_concurrency_and_replay_exactly(tmp_path: Path,
                                                                             small_sim: Path) -> None:
    with FakeLLM(latency_s=0.2) as llm:
        config = llm_config(tmp_path, llm.base_url, max_concurrency=2)
        config = config.model_copy(update={"reports": config.reports.model_copy(update={"parallel_sections": 4})})
        daemon, report_id, (state, events) = await report_once(config, small_sim)
    assert state.report_completed and state.failed is None
    total = len(state.outline.sections)
    assert total >= 4 and state.rules.parallel_sections == 4
    writing = after_outline(events)
    first_requests = [r.data["section_index"] for r in writing if r.type == "LLMRequested"][:4]
    first_answer = next(i for i, r in enumerate(writing) if r.type == "LLMResponded")
    assert first_requests == [1, 2, 3, 4]  # four conversations opened before any answer came back
    assert all(r.type != "LLMResponded" for r in writing[:writing.index(
        next(r for r in writing if r.type == "LLMRequested" and r.data["section_index"] == 4))])
    assert first_answer > 4
    assert llm.peak_in_flight == 2  # [llm] max_concurrency holds across the sections
    completed = [r.data["section_index"] for r in events if r.type == "SectionCompleted"]
    assert sorted(completed) == list(range(1, total + 1))
    opening = next(r.data["messages_added"] for r in writing
                   if r.type == "LLMRequested" and r.data["section_index"] == 3)
    assert "written at the same time" in opening[-1]["content"]
    conn = connect_views(config.store.path.with_name("events-views.sqlite3"))
    report = load_report(conn, report_id)
    conn.close()
    assert [s["title"] for s in report["sections"]] == [s.title for s in state.outline.sections]

    async with Daemon(config) as again:
        result = await replay_report(again.store, report_id, tmp_path / "replay" / "events.sqlite3")
    assert result.divergence is None and result.steps == len(events)


async def test_parallel_report_with_the_offline_writer_matches_the_sequential_sections(tmp_path: Path,
                                                                                      small_sim: Path) -> None:
    """Sections need no text of the others: written at once, each holds what it holds written in order."""
    contents = {}
    for n in (1, 3):
        config = load_config(write_config(tmp_path / f"n{n}", auto=False, parallel_sections=n))
        _, _, (state, events) = await report_once(config, small_sim)
        assert state.report_completed and state.rules.parallel_sections == n
        contents[n] = {r.data["section_index"]: (r.data["title"], r.data["content"])
                       for r in events if r.type == "SectionCompleted"}
    assert contents[1] == contents[3]


async def test_a_failed_section_lets_the_others_record_their_answers_and_resume_continues_all(
        tmp_path: Path, small_sim: Path) -> None:
    """One section's server errors fail the report; the answers the others were waiting for are still
    recorded after the failure, and `resume` (decided from the fold, not the last event) finishes all. The
    other sections' requests are held until the failure is recorded, so they are surely still waiting then."""
    with FakeLLM(latency_s=0.1, held=True) as llm:
        llm.unavailable_for = lambda body: "Write section 2:" in json.dumps(body["messages"])
        llm.held_for = lambda body: "Write section" in json.dumps(body["messages"]) and not llm.unavailable_for(body)
        config = llm_config(tmp_path, llm.base_url, max_concurrency=3)
        config = config.model_copy(update={"reports": config.reports.model_copy(update={"parallel_sections": 3})})
        async with Daemon(config, folders=[small_sim]) as daemon:
            await daemon.watcher.check(small_sim)
            report_id = await daemon.reports.request(small_sim.name)
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(release_once_failed, daemon, report_id, llm)
                failed = await generate(daemon, report_id)
            events = await daemon.store.read_stream(report_stream(report_id))
        assert failed.failed is not None and not failed.report_completed
        at = next(i for i, r in enumerate(events) if r.type == "ReportFailed")
        assert any(r.type == "LLMResponded" for r in events[at + 1:])  # others' answers kept, not lost
        llm.unavailable_for = llm.held_for = None
        async with Daemon(config, folders=[small_sim]) as daemon:
            line = await daemon.reports.resume(report_id)
            state = await generate(daemon, report_id)
            resumed = await daemon.store.read_stream(report_stream(report_id))
    assert "Resuming report" in line
    assert state.report_completed and state.failed is None
    completed = sorted(r.data["section_index"] for r in resumed if r.type == "SectionCompleted")
    assert completed == list(range(1, len(state.outline.sections) + 1))


async def release_once_failed(daemon: Daemon, report_id: str, llm: FakeLLM) -> None:
    """Answer the held requests once the report's failure is in its stream."""
    while not any(r.type == "ReportFailed" for r in await daemon.store.read_stream(report_stream(report_id))):
        await anyio.sleep(0.02)
    llm.released.set()


def test_kill_9_during_parallel_sections_resumes_every_section(tmp_path: Path) -> None:
    from simreportd.simulator.simulate import simulate

    with FakeLLM(latency_s=0.02) as llm:
        base = tmp_path / "killed"
        simulate(base / "sims" / "sim_k", agents=12, rounds=6, seed=3)
        config = write_config(base, f'[llm]\nprovider = "openai"\nbase_url = "{llm.base_url}"\nmodel = "m"\n'
                                    "retry_backoff_s = 0.01\n", parallel_sections=3)
        db = base / "state" / "events.sqlite3"
        unlocked = "SELECT count(*) FROM events WHERE type = 'InterviewUnlocked'"
        daemon = kill_and_restart(config, db, "SELECT count(*) FROM events WHERE stream LIKE 'report-%'",
                                  random.Random(8), (4, 30), lambda: count(db, unlocked) > 0)
        wait_until(lambda: count(db, unlocked) == 1, "the report to complete")
        daemon.terminate()
        assert daemon.wait(timeout=TIMEOUT) == 0
        replayed = subprocess.run([PYTHON, "-m", "simreportd", "-c", str(config), "replay", report_of(db),
                                   "--verify"], capture_output=True, text=True, timeout=TIMEOUT)
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    conn = sqlite3.connect(db)
    sections = Counter(json.loads(d)["section_index"] for (d,) in conn.execute(
        "SELECT data FROM events WHERE type = 'SectionCompleted'"))
    responded = Counter(c for (c,) in conn.execute(
        "SELECT json_extract(data, '$.call_id') FROM events WHERE type = 'LLMResponded'"))
    total = conn.execute("SELECT json_array_length(data, '$.sections') FROM events"
                         " WHERE type = 'OutlinePlanned'").fetchone()[0]
    conn.close()
    assert sections == Counter(range(1, total + 1))  # every section completed, once
    assert set(responded.values()) == {1}  # no answer recorded twice after a restart


def report_of(db: Path) -> str:
    conn = sqlite3.connect(db)
    (report_id,) = conn.execute("SELECT json_extract(data, '$.report_id') FROM events"
                                " WHERE type = 'ReportRequested'").fetchone()
    conn.close()
    return str(report_id)


def test_lanes_of_effects() -> None:
    from simreportd.events.models import LLMRequested

    request = LLMRequested(report_id="r", call_id="llm-1", purpose="section", section_index=3, model="m",
                           params={}, protocol="native", tools=[], messages_added=[], fingerprint="f")
    assert effects.lane(effects.CallLLM(request, [], 1, 0.0)) == 3
    assert effects.lane(effects.GatherContext("sim", 1)) == 0
