"""The live environment, asked as MiroFish asks it: a stale `alive` is found out by a `ping` within
`[interview] probe_s` instead of each interview waiting out `[interview] timeout_s`; every question reaches the
environment behind MiroFish's interview prefix, once (backend/app/api/simulation.py:22-42)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from simreportd.daemon.cli.local import generate
from simreportd.daemon.interviews.rpc import INTERVIEW_PREFIX
from simreportd.daemon.service import Daemon

from ..conftest import TIMEOUT, make_config
from ..in_process import acall
from .test_server import Running

pytestmark = pytest.mark.anyio


def say_alive(folder: Path) -> None:
    (folder / "env_status.json").write_text(json.dumps({"status": "alive", "twitter_available": True,
                                                        "reddit_available": True}))


class Environment:
    """A stand-in for MiroFish's command loop (run_parallel_simulation.py:560-601): the oldest command first,
    an unknown command answered `failed`; every command it took is kept in `taken`."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.taken, self.stop = folder, [], threading.Event()
        (folder / "ipc_commands").mkdir(exist_ok=True)
        (folder / "ipc_responses").mkdir(exist_ok=True)

    def serve(self) -> None:
        while not self.stop.wait(0.02):
            pending = sorted((self.folder / "ipc_commands").glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
            for path in pending:
                command = json.loads(path.read_text(encoding="utf-8"))
                self.taken.append(command)
                self._answer(command)
                path.unlink()

    def _answer(self, command: dict[str, Any]) -> None:
        kind, args = command["command_type"], command["args"]
        reply: dict[str, Any] = {"command_id": command["command_id"], "status": "completed", "error": None}
        if kind == "interview":
            reply["result"] = {"agent_id": args["agent_id"], "response": "live: still against it",
                               "platform": args.get("platform") or "reddit"}
        elif kind == "batch_interview":
            reply["result"] = {"results": {f"reddit_{i['agent_id']}": {"response": "live: no change"}
                                           for i in args["interviews"]}}
        else:
            reply.update(status="failed", result=None, error=f"unknown command type: {kind}")
        tmp = self.folder / "ipc_responses" / ".reply.tmp"
        tmp.write_text(json.dumps(reply), encoding="utf-8")
        os.replace(tmp, self.folder / "ipc_responses" / f"{command['command_id']}.json")


@pytest.fixture
def environment(small_sim: Path) -> Iterator[Environment]:
    env = Environment(small_sim)
    thread = threading.Thread(target=env.serve, daemon=True)
    thread.start()
    yield env
    env.stop.set()
    thread.join(TIMEOUT)


async def test_a_stale_alive_is_found_out_by_a_ping_not_by_waiting_out_the_interview(
        tmp_path: Path, small_sim: Path) -> None:
    say_alive(small_sim)  # run_state.json knows no pid: only asking tells a live environment from a stale file
    config = make_config(tmp_path, reports={"auto": False}, interview={"timeout_s": 3600.0, "probe_s": 0.3})
    async with Daemon(config, folders=[small_sim]) as daemon:
        await daemon.watcher.check(small_sim)
        report_id = await daemon.reports.request(small_sim.name)
        with anyio.fail_after(TIMEOUT):  # an interview that waited the hour out would fail here
            await generate(daemon, report_id)
            answer = await daemon.interviews.ask(report_id, 1, "Still there?")
    assert answer["mode"] == "persona" and answer["note"] == ""  # known silent: no second ping
    assert not list((small_sim / "ipc_commands").glob("*.json"))  # the ping was withdrawn, nothing else sent


async def test_a_live_environment_answers_a_ping_then_every_question_carries_the_prefix_once(
        tmp_path: Path, small_sim: Path, environment: Environment) -> None:
    say_alive(small_sim)
    config = make_config(tmp_path, reports={"auto": False}, interview={"timeout_s": TIMEOUT, "probe_s": TIMEOUT})
    async with Daemon(config, folders=[small_sim]) as daemon:
        await daemon.watcher.check(small_sim)
        report_id = await daemon.reports.request(small_sim.name)
        await generate(daemon, report_id)
        plain = await daemon.interviews.ask(report_id, 1, "你还反对吗？")
        prefixed = await daemon.interviews.ask(report_id, 2, INTERVIEW_PREFIX + "你还反对吗？")
    kinds = [c["command_type"] for c in environment.taken]
    assert kinds[0] == "ping" and kinds.count("ping") == 1  # answered once (refused): it reads its commands
    assert plain["mode"] == prefixed["mode"] == "live" and plain["answer"] == "live: still against it"
    prompts = [c["args"]["prompt"] for c in environment.taken if c["command_type"] == "interview"] + \
        [i["prompt"] for c in environment.taken if c["command_type"] == "batch_interview" for i in c["args"]["interviews"]]
    assert len(prompts) >= 3 and all(p.startswith(INTERVIEW_PREFIX) and p.count(INTERVIEW_PREFIX) == 1 for p in prompts)
    assert prompts[:2] == [INTERVIEW_PREFIX + "你还反对吗？"] * 2
    assert plain["question"] == "你还反对吗？"  # what is recorded is the question as asked


async def test_mirofish_interview_routes_reach_the_live_environment_with_the_prefix_once(
        tmp_path: Path, small_sim: Path, environment: Environment) -> None:
    """Step 5's survey (`POST /api/simulation/interview/batch`) as MiroFish's frontend sends it: the question
    without the prefix, which MiroFish's backend adds (backend/app/api/simulation.py:2368)."""
    say_alive(small_sim)
    config = make_config(tmp_path, reports={"auto": False}, server={"port": 0},
                         interview={"timeout_s": TIMEOUT, "probe_s": TIMEOUT})
    async with Running(config, [small_sim]) as running:
        report_id = await running.daemon.reports.request(small_sim.name)
        await running.daemon.reports.wait(report_id)
        await running.daemon.views.wait_for(await running.daemon.store.last_position(), timeout=TIMEOUT)
        status, batch, _ = await acall(running.base, "/api/simulation/interview/batch", {
            "simulation_id": small_sim.name, "interviews": [{"agent_id": 1, "prompt": "你怎么看？"},
                                                            {"agent_id": 2, "prompt": INTERVIEW_PREFIX + "你怎么看？"}]})
    assert status == 200 and batch["success"] is True, batch
    results = batch["data"]["result"]["results"]
    assert {k: (v["response"], v["mode"]) for k, v in results.items()} == \
        {"reddit_1": ("live: still against it", "live"), "reddit_2": ("live: still against it", "live")}
    asked = sorted(c["args"]["prompt"] for c in environment.taken if c["command_type"] == "interview")
    assert asked == [INTERVIEW_PREFIX + "你怎么看？"] * 2
