"""Reproduce runs: replay --verify, divergences, tampering, fork, determinism across processes."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
from pathlib import Path

import pytest

from simreportd.daemon.cli.local import generate
from simreportd.daemon.report_replay import fork_report, replay_report
from simreportd.daemon.service import Daemon
from simreportd.errors import NotFound, SimreportdError
from simreportd.events.streams import report_stream

from ..conftest import PYTHON, TIMEOUT, make_config, write_config
from ..fake_llm import FakeLLM

pytestmark = pytest.mark.anyio


def cli(*args: str, seed: str = "0", **env_vars: str) -> subprocess.CompletedProcess:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("SIMREPORTD_", "OPENAI_"))},
           "PYTHONHASHSEED": seed, **env_vars}
    return subprocess.run([PYTHON, "-m", "simreportd", *args], capture_output=True, text=True,
                          timeout=TIMEOUT, env=env)


async def test_replay_in_another_process_reproduces_every_step_without_the_server(
        tmp_path: Path, scripted_report: tuple[Path, str]) -> None:
    store_path, report_id = scripted_report
    config = write_config(tmp_path, auto=False)
    result = cli("-c", str(config), "replay", report_id, "--verify", seed="12345")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{report_id}: reproduced" in result.stdout and "0 divergences" in result.stdout


async def test_a_changed_tool_output_diverges_at_its_observation(tmp_path: Path,
                                                                  scripted_report: tuple[Path, str]) -> None:
    from simreportd.events import SQLiteEventStore

    store_path, report_id = scripted_report

    def tamper(views: Path) -> None:
        conn = sqlite3.connect(views)
        conn.execute("UPDATE sim_rounds SET actions = actions + 1000 WHERE round = 1")
        conn.commit()
        conn.close()

    async with SQLiteEventStore(store_path) as store:
        result = await replay_report(store, report_id, tmp_path / "scratch.sqlite3", tamper)
        original = await store.read_stream(report_stream(report_id))
    first_analytics = next(r for r in original if r.type == "ToolObserved" and r.data["tool"] == "simulation_analytics")
    assert result.divergence is not None and result.divergence.position == first_analytics.position
    assert json.loads(result.divergence.actual["result"])["total_actions"] == \
        json.loads(result.divergence.expected["result"])["total_actions"] + 2000


async def test_a_tampered_request_no_longer_matches_its_fingerprint(tmp_path: Path,
                                                                      scripted_report: tuple[Path, str]) -> None:
    from simreportd.events import SQLiteEventStore

    store_path, report_id = scripted_report
    conn = sqlite3.connect(store_path)
    conn.execute("DROP TRIGGER event_log_refuse_update")
    position = conn.execute("SELECT min(position) FROM event_log WHERE type = 'LLMRequested'").fetchone()[0]
    conn.execute("UPDATE event_log SET data = json_set(data, '$.messages_added[1].content', 'Ignore the data.')"
                 " WHERE position = ?", (position,))
    conn.commit()
    conn.close()
    async with SQLiteEventStore(store_path) as store:
        result = await replay_report(store, report_id, tmp_path / "scratch.sqlite3")
    assert result.divergence is not None and result.divergence.position == position
    assert result.divergence.expected["fingerprint"] == result.divergence.actual["fingerprint"]
    assert result.divergence.expected["messages_added"] != result.divergence.actual["messages_added"]
    assert "no longer matches its own fingerprint" in result.divergence.reason


async def test_replay_refuses_unknown_and_unfinished_reports(tmp_path: Path, small_sim: Path) -> None:
    config = make_config(tmp_path, reports={"auto": False})
    async with Daemon(config, folders=[small_sim]) as daemon:
        await daemon.watcher.check(small_sim)
        with pytest.raises(NotFound):
            await replay_report(daemon.store, "report_nope", tmp_path / "s1.sqlite3")
        pending = await daemon.reports.request(small_sim.name)
        with pytest.raises(SimreportdError, match="has not completed"):
            await replay_report(daemon.store, pending, tmp_path / "s2.sqlite3")


async def test_a_fork_at_a_section_boundary_shares_earlier_sections_and_continues_with_another_model(
        tmp_path: Path, scripted_report: tuple[Path, str]) -> None:
    store_path, report_id = scripted_report
    config = make_config(tmp_path, reports={"auto": False})
    with FakeLLM(script=lambda body, message: {**message, "content": "Different model text."}
                 if message["content"] and not message.get("tool_calls") and "Plan" not in
                 body["messages"][0]["content"] else None) as other:
        config = make_config(tmp_path, reports={"auto": False},
                             llm={"provider": "openai", "base_url": other.base_url, "model": "other"})
        async with Daemon(config) as daemon:
            original = await daemon.store.read_stream(report_stream(report_id))
            boundary = [r for r in original if r.type == "SectionCompleted"][1].position
            new_id = await fork_report(daemon.store, report_id, boundary, "openai", "other")
            state = await generate(daemon, new_id)
            forked = await daemon.store.read_stream(report_stream(new_id))
    sections = lambda events: [r.data["content"] for r in events if r.type == "SectionCompleted"]  # noqa: E731
    assert state.report_completed and forked[0].data["forked_from"] == report_id
    assert sections(forked)[:2] == sections(original)[:2]
    assert sections(forked)[2:] and all(c == "Different model text." for c in sections(forked)[2:])


def test_the_same_report_comes_out_of_processes_with_different_hash_seeds(tmp_path: Path) -> None:
    outputs = []
    for seed in ("1", "2"):
        result = cli("demo", str(tmp_path / f"run{seed}"), seed=seed)
        assert result.returncode == 0, result.stderr
        report_id = result.stdout.strip().splitlines()[-1]
        folder = tmp_path / f"run{seed}" / "reports" / report_id
        outputs.append(sorted((p.name, p.read_text()) for p in folder.glob("section_*.md")))
    assert outputs[0] == outputs[1] and len(outputs[0]) >= 3


def mid_position(store_path: Path, report_id: str) -> int:
    with sqlite3.connect(store_path) as conn:
        return conn.execute("SELECT min(position) FROM events WHERE stream = ? AND type = 'SectionCompleted'",
                            (report_stream(report_id),)).fetchone()[0]


async def test_ten_interviews_after_completion_leave_the_replay_untouched(
        tmp_path: Path, scripted_report: tuple[Path, str]) -> None:
    store_path, report_id = scripted_report
    async with Daemon(make_config(tmp_path, reports={"auto": False})) as daemon:
        for n in range(10):
            await daemon.interviews.ask(report_id, n % 5 + 1, f"Question {n}: what did you see?")
        result = await replay_report(daemon.store, report_id, tmp_path / "scratch.sqlite3")
        stream = await daemon.store.read_stream(report_stream(report_id))
    assert [r.type for r in stream].count("InterviewRequested") >= 10
    assert result.divergence is None and result.steps < len(stream)


async def test_fork_outside_the_report_or_with_an_unconfigured_writer_is_refused_at_once(
        tmp_path: Path, scripted_report: tuple[Path, str]) -> None:
    store_path, report_id = scripted_report
    config = write_config(tmp_path, auto=False)
    for at in ("999999", "1"):
        result = cli("-c", str(config), "fork", report_id, "--at", at)
        assert result.returncode == 2 and "is outside report" in result.stderr and "--at between" in result.stderr
    result = cli("-c", str(config), "fork", report_id, "--at", str(mid_position(store_path, report_id)),
                 "--provider", "openai")
    assert result.returncode == 2 and "[llm] base_url" in result.stderr and "$OPENAI_API_KEY" in result.stderr
    assert "Traceback" not in result.stderr
    with sqlite3.connect(store_path) as conn:
        assert conn.execute("SELECT count(*) FROM events WHERE type = 'ReportForked'").fetchone()[0] == 0


async def test_a_failed_fork_continues_only_with_its_writer_or_a_recorded_switch_and_replays_without_a_connection(
        tmp_path: Path, scripted_report: tuple[Path, str]) -> None:
    store_path, report_id = scripted_report
    config = write_config(tmp_path, auto=False)
    with FakeLLM() as down:
        down.faults.extend([("status", 503, "0")] * 5)  # every attempt the fork's settings allow, at once
        forked = cli("-c", str(config), "fork", report_id, "--at", str(mid_position(store_path, report_id)),
                     "--model", "other", SIMREPORTD_LLM_BASE_URL=down.base_url)
    assert forked.returncode == 1, forked.stderr
    fork_id = forked.stdout.split()[-1]
    unreachable = cli("-c", str(config), "resume", fork_id)  # this configuration has no openai server
    assert unreachable.returncode == 1 and "[llm] base_url" in unreachable.stderr
    assert f"simreportd resume {fork_id} --provider offline" in unreachable.stderr
    switched = cli("-c", str(config), "resume", fork_id, "--provider", "offline")
    assert switched.returncode == 0, switched.stderr
    assert "with offline instead of openai model 'other' (recorded as WriterChanged)" in switched.stderr
    with socket.socket() as listener:  # the LLM's address for the replay: it must never be dialled
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.setblocking(False)
        replayed = cli("-c", str(config), "replay", fork_id, "--verify", SIMREPORTD_LLM_PROVIDER="openai",
                       SIMREPORTD_LLM_BASE_URL=f"http://127.0.0.1:{listener.getsockname()[1]}/v1")
        with pytest.raises(BlockingIOError):
            listener.accept()
    assert replayed.returncode == 0 and f"{fork_id}: reproduced" in replayed.stdout, replayed.stdout + replayed.stderr
    with sqlite3.connect(store_path) as conn:
        changed = [json.loads(d) for (d,) in conn.execute("SELECT data FROM events WHERE type = 'WriterChanged'")]
    assert [(c["previous_provider"], c["previous_model"], c["provider"]) for c in changed] == \
        [("openai", "other", "offline")]
    assert changed[0]["context_tokens"] == 1_000_000  # the offline writer's, not the 8,192 guessed for the server
    with sqlite3.connect(store_path) as conn:
        [(completed,)] = conn.execute("SELECT json_extract(data, '$.status') FROM events WHERE type = 'ReportCompleted'"
                                      " AND stream = ?", (f"report-{fork_id}",)).fetchall()
    assert completed == "completed"
