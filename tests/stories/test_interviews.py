"""Interviews: live over the file RPC, persona when the environment is stopped, stale or silent."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from simreportd.daemon.cli.local import generate
from simreportd.daemon.interviews import rpc as interview_rpc
from simreportd.daemon.service import Daemon
from simreportd.errors import InterviewLocked, RPCFailed, UsageError
from simreportd.events.streams import report_stream
from simreportd.simulator.simulate import simulate

from ..conftest import TIMEOUT, make_config
from ..processes import cli, wait_until

pytestmark = pytest.mark.anyio


def set_environment(folder: Path, status: str, pid: int | None) -> None:
    (folder / "env_status.json").write_text(json.dumps({"status": status, "twitter_available": True,
                                                        "reddit_available": True}))
    state = json.loads((folder / "run_state.json").read_text())
    (folder / "run_state.json").write_text(json.dumps({**state, "process_pid": pid}))


async def report_with_interviews(config, folder: Path) -> tuple[list, Daemon]:
    daemon = Daemon(config, folders=[folder])
    await daemon.__aenter__()
    await daemon.watcher.check(folder)
    report_id = await daemon.reports.request(folder.name)
    await generate(daemon, report_id)
    return await daemon.store.read_stream(report_stream(report_id)), daemon


async def test_a_report_interviews_a_live_simulation_and_records_every_answer(tmp_path: Path) -> None:
    folder = tmp_path / "sims" / "sim_live"
    simulator = cli("simulate", str(folder), "--agents", "10", "--rounds", "3", "--live", "--round-seconds", "0.05")
    try:
        await asyncio.to_thread(wait_until, lambda: (folder / "env_status.json").exists(), "the live phase")
        config = make_config(tmp_path, reports={"auto": False}, interview={"timeout_s": TIMEOUT})
        events, daemon = await report_with_interviews(config, folder)
        report_id = events[0].data["report_id"]
        answer = await daemon.interviews.ask(report_id, 2, "Would you vote for it?")
        after = await daemon.store.read_stream(report_stream(report_id))
        await daemon.__aexit__()
    finally:
        simulator.terminate()
        simulator.wait(timeout=TIMEOUT)
    answered = [e.data for e in events if e.type == "InterviewAnswered"]
    assert answered and all(a["mode"] == "live" for a in answered)
    assert all("Speaking as a" in a["answer"] for a in answered)
    [observed] = [json.loads(e.data["result"]) for e in events
                  if e.type == "ToolObserved" and e.data["tool"] == "interview_agents"]
    assert observed["mode"] == "live" and len({i["agent"]["stance"] for i in observed["interviews"]}) > 1
    assert [e.data["live_environment"] for e in events if e.type == "InterviewUnlocked"] == [True]
    assert answer["mode"] == "live" and "Speaking as a" in answer["answer"]
    assert [e.type for e in after[-2:]] == ["InterviewRequested", "InterviewAnswered"]
    assert not list((folder / "ipc_commands").glob("*.json")) and not list((folder / "ipc_responses").glob("*"))


@pytest.mark.parametrize("status, pid, note", [
    ("stopped", None, "not running"),
    ("alive", 2**22 + 4321, "not running"),  # stale: its simulator is gone
    ("alive", os.getpid(), "did not answer within"),  # alive, but nobody reads the commands
], ids=["stopped", "stale", "unanswered"])  # ids without the pid: every xdist worker collects the same names
async def test_without_a_live_environment_answers_come_in_persona_and_say_so(
        tmp_path: Path, small_sim: Path, status: str, pid: int | None, note: str) -> None:
    set_environment(small_sim, status, pid)
    config = make_config(tmp_path, reports={"auto": False}, interview={"timeout_s": 0.5})
    events, daemon = await report_with_interviews(config, small_sim)
    await daemon.__aexit__()
    [observed] = [json.loads(e.data["result"]) for e in events
                  if e.type == "ToolObserved" and e.data["tool"] == "interview_agents"]
    assert observed["mode"] == "persona" and note in observed["note"]
    answered = [e.data for e in events if e.type == "InterviewAnswered"]
    assert answered and all(a["mode"] == "persona" and a["answer"].startswith("[persona") for a in answered)
    assert all(e.data["mode"] == "persona" for e in events if e.type == "InterviewRequested")
    assert [e.type for e in events][-1] == "InterviewUnlocked"


async def test_an_environment_that_did_not_answer_counts_as_gone_until_its_status_is_written_anew(
        tmp_path: Path, small_sim: Path) -> None:
    """A stale `alive` with a live pid (nobody reads the commands): the report waits the timeout out once, then
    every interview goes to persona without sending a command, until env_status.json is written again."""
    set_environment(small_sim, "alive", os.getpid())
    config = make_config(tmp_path, reports={"auto": False}, interview={"timeout_s": 0.5})
    events, daemon = await report_with_interviews(config, small_sim)
    try:
        notes = [json.loads(e.data["result"])["note"] for e in events
                 if e.type == "ToolObserved" and e.data["tool"] == "interview_agents"]
        after_silence = await daemon.interviews.ask("sim_small", 1, "Still there?")
        set_environment(small_sim, "alive", os.getpid())  # a simulator wrote it anew: asked again
        (small_sim / "env_status.json").write_text((small_sim / "env_status.json").read_text() + " ")
        asked_again = await daemon.interviews.ask("sim_small", 1, "Now?")
    finally:
        await daemon.__aexit__()
    assert "did not answer within" in notes[0] and all("not running" in note for note in notes[1:])
    assert after_silence["mode"] == "persona" and after_silence["note"] == ""  # no command sent, no wait
    assert asked_again["mode"] == "persona" and "did not answer within" in asked_again["note"]


async def test_user_interviews_are_refused_before_unlock_and_answered_after(tmp_path: Path, small_sim: Path) -> None:
    config = make_config(tmp_path, reports={"auto": False})
    async with Daemon(config, folders=[small_sim]) as daemon:
        await daemon.watcher.check(small_sim)
        report_id = await daemon.reports.request(small_sim.name)
        with pytest.raises(InterviewLocked, match="unlock when it completes"):
            await daemon.interviews.ask(report_id, 1, "Anything?")
        await generate(daemon, report_id)
        for agent, question in ((2**70, "Anything?"), (1, ""), (1, "?" * 5000)):  # refused before SQLite or a prompt
            with pytest.raises(UsageError):
                await daemon.interviews.ask("sim_small", agent, question)
        answer = await daemon.interviews.ask("sim_small", 1, "What did you post about?")
        events = await daemon.store.read_stream(report_stream(report_id))
    assert answer["report_id"] == report_id and answer["mode"] == "persona"
    assert answer["answer"] in {e.data["answer"] for e in events if e.type == "InterviewAnswered"}


async def test_the_cli_refuses_a_locked_interview_with_exit_2(tmp_path: Path, small_sim: Path) -> None:
    from ..conftest import write_config
    from .test_cli import simreportd

    config = make_config(tmp_path, reports={"auto": False})
    async with Daemon(config, folders=[small_sim]) as daemon:
        await daemon.watcher.check(small_sim)
        report_id = await daemon.reports.request(small_sim.name)
    result = await asyncio.to_thread(simreportd, "-c", str(write_config(tmp_path, auto=False)), "interview",
                                     report_id, "--agent", "1", "hello?")
    assert result.returncode == 2, result.stderr
    assert "is not finished (planning the outline; a running daemon writes it: `simreportd run`" in result.stderr
    assert "interviews unlock when it completes" in result.stderr


async def test_rpc_waits_through_a_half_written_response_and_reports_a_failed_one(tmp_path: Path) -> None:
    folder = tmp_path / "sim_rpc"
    simulate(folder, agents=4, rounds=1, seed=1)

    async def responder(status: str) -> None:
        commands = folder / "ipc_commands"
        while not list(commands.glob("*.json")):
            await asyncio.sleep(0.01)
        command = json.loads(next(commands.glob("*.json")).read_text())
        target = folder / "ipc_responses" / f"{command['command_id']}.json"
        target.write_text('{"command_id": "' + command["command_id"] + '", "sta')  # half a file
        await asyncio.sleep(0.3)
        target.write_text(json.dumps({"command_id": command["command_id"], "status": status,
                                      "result": {"agent_id": 1, "response": "hello"}, "error": "boom"}))

    helper = asyncio.create_task(responder("completed"))
    assert await interview_rpc.call(folder, "interview", {"agent_id": 1, "prompt": "?"}, TIMEOUT) == \
        {"agent_id": 1, "response": "hello"}
    await helper
    for leftover in (folder / "ipc_commands").glob("*.json"):
        leftover.unlink()
    helper = asyncio.create_task(responder("failed"))
    with pytest.raises(RPCFailed, match="failed.*boom"):
        await interview_rpc.call(folder, "interview", {"agent_id": 1, "prompt": "?"}, TIMEOUT)
    await helper
