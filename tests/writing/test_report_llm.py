"""Whole reports through a scripted OpenAI-compatible server over real HTTP, with faults."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import anyio
import pytest

from simreportd.agent.report.state import ReportState
from simreportd.daemon.cli.local import generate, running
from simreportd.daemon.config import Config
from simreportd.daemon.service import Daemon
from simreportd.events.streams import report_stream
from simreportd.projections.chart import activity_rows, activity_svg
from simreportd.projections.export import load_report, render
from simreportd.projections.sqlite import connect_views

from ..conftest import make_config
from ..fake_llm import FakeLLM

pytestmark = pytest.mark.anyio


def llm_config(tmp_path: Path, base_url: str, **llm: object) -> Config:
    return make_config(tmp_path, llm={"provider": "openai", "base_url": base_url, "model": "scripted",
                                      "timeout_s": 2.0, "max_retries": 2, "retry_backoff_s": 0.01, **llm},
                       reports={"auto": False})


async def report_once(config: Config, folder: Path) -> tuple[Daemon, str, object]:
    async with Daemon(config, folders=[folder]) as daemon:
        await daemon.watcher.check(folder)
        report_id = await daemon.reports.request(folder.name)
        state = await generate(daemon, report_id)
        events = await daemon.store.read_stream(report_stream(report_id))
    return daemon, report_id, (state, events)


def types(events: list) -> list[str]:
    return [e.type for e in events]


@pytest.mark.parametrize("protocol", ["native", "text"])
async def test_full_report_through_each_protocol_matches_its_export(tmp_path: Path, small_sim: Path,
                                                                   protocol: str) -> None:
    with FakeLLM() as llm:
        config = llm_config(tmp_path, llm.base_url, tool_protocol=protocol)
        _, report_id, (state, events) = await report_once(config, small_sim)
    assert state.report_completed and state.failed is None
    assert types(events).count("SectionCompleted") == len(state.outline.sections) >= 3
    assert all(r.data["protocol"] == protocol for r in events if r.type == "LLMRequested")
    if protocol == "native":
        assert any("tools" in body for body in llm.requests)
    else:
        assert not any("tools" in body for body in llm.requests)
    folder = config.reports.output_dir / report_id
    conn = connect_views(config.store.path.with_name("events-views.sqlite3"))
    report = load_report(conn, report_id)
    assert report is not None
    fresh = activity_svg(activity_rows(conn, report["simulation_id"], report["generation"]),
                         f"Actions per round: {report['simulation_id']}")
    expected = render(report, fresh)  # the export's chart was made once and kept; it is this one
    conn.close()
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == expected
    for done in (e for e in events if e.type == "SectionCompleted"):
        assert (folder / f"section_{done.data['section_index']:02d}.md").read_text().endswith(
            done.data["content"].strip() + "\n")


async def test_auto_protocol_falls_back_to_text_when_the_server_refuses_tools(tmp_path: Path,
                                                                               small_sim: Path) -> None:
    with FakeLLM() as llm:
        llm.refuse_tools = True
        config = llm_config(tmp_path, llm.base_url, tool_protocol="auto")
        _, _, (state, events) = await report_once(config, small_sim)
    chosen = [e.data for e in events if e.type == "ToolProtocolChosen"]
    assert [c["protocol"] for c in chosen] == ["native", "text"]
    assert "refused tools" in chosen[1]["reason"]
    assert state.report_completed


@pytest.mark.parametrize("fault", [("status", 500), ("status", 429, "0"), ("hang", 3.5), ("invalid_json",),
                                   ("empty_choices",)], ids=["500", "429", "timeout", "invalid-json", "no-choices"])
async def test_a_transient_fault_is_retried_and_recorded(tmp_path: Path, small_sim: Path, fault: tuple) -> None:
    with FakeLLM() as llm:
        llm.faults.append(fault)
        _, _, (state, events) = await report_once(llm_config(tmp_path, llm.base_url), small_sim)
    failed = [e.data for e in events if e.type == "LLMFailed"]
    assert len(failed) == 1 and failed[0]["attempt"] == 1
    assert state.report_completed
    retried = [e.data for e in events if e.type == "LLMResponded" and e.data["call_id"] == failed[0]["call_id"]]
    assert retried[0]["attempt"] == 2


async def test_retry_after_is_recorded_from_a_429(tmp_path: Path, small_sim: Path) -> None:
    with FakeLLM() as llm:
        llm.faults.append(("status", 429, "0.2"))
        _, _, (state, events) = await report_once(llm_config(tmp_path, llm.base_url), small_sim)
    [failed] = [e.data for e in events if e.type == "LLMFailed"]
    assert failed["kind"] == "rate_limited" and failed["retry_after_s"] == 0.2


async def test_persistent_failure_fails_resumably_and_resume_completes(tmp_path: Path, small_sim: Path) -> None:
    with FakeLLM() as llm:
        config = llm_config(tmp_path, llm.base_url)
        llm.faults.extend([("status", 503)] * 3)
        _, report_id, (state, events) = await report_once(config, small_sim)
        assert state.failed is not None and state.failed.resumable
        assert types(events).count("LLMFailed") == 3
        progress = json.loads((config.reports.output_dir / report_id / "progress.json").read_text())
        assert progress["status"] == "failed" and progress["progress"] == -1
        async with Daemon(config) as daemon:
            await daemon.reports.resume(report_id)
            state = await generate(daemon, report_id)
    assert state.report_completed


async def test_connection_refused_fails_resumably_then_resumes_once_the_server_is_up(
        tmp_path: Path, small_sim: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = llm_config(tmp_path, f"http://127.0.0.1:{port}/v1", max_retries=1)
    _, report_id, (state, events) = await report_once(config, small_sim)
    assert state.failed is not None and "connection" in state.failed.error
    with FakeLLM(port=port):
        async with Daemon(config) as daemon:
            await daemon.reports.resume(report_id)
            state = await generate(daemon, report_id)
    assert state.report_completed


async def test_two_reports_at_once_keep_their_events_and_files_apart(tmp_path: Path, small_sim: Path) -> None:
    from simreportd.simulator.simulate import simulate

    other = simulate(tmp_path / "sims" / "sim_other", agents=10, rounds=5, seed=4)
    with FakeLLM() as llm:
        config = llm_config(tmp_path, llm.base_url)
        async with Daemon(config, folders=[small_sim, tmp_path / "sims" / "sim_other"]) as daemon:
            await daemon.watcher.rescan()
            ids = [await daemon.reports.request(name) for name in ("sim_small", "sim_other")]
            states: dict[str, ReportState] = {}

            async def wait(report_id: str) -> None:
                states[report_id] = await daemon.reports.wait(report_id)

            async with running(daemon):
                async with anyio.create_task_group() as tasks:
                    for report_id in ids:
                        tasks.start_soon(wait, report_id)
                await daemon.views.wait_for(await daemon.store.last_position(), timeout=60)
                for report_id in ids:
                    await daemon.exporter.export(report_id)
            states_in_order = [states[i] for i in ids]
            streams = [await daemon.store.read_stream(report_stream(i)) for i in ids]
    assert all(s.report_completed for s in states_in_order)
    for report_id, events in zip(ids, streams):
        assert {e.data["report_id"] for e in events} == {report_id}
        log_lines = (config.reports.output_dir / report_id / "agent_log.jsonl").read_text().splitlines()
        assert {json.loads(line)["report_id"] for line in log_lines} == {report_id}
    assert other.simulation_id
