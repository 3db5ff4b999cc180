"""What a daily user of the daemon meets in its third hour, through the real CLI, HTTP, websocket and Chromium:
each report with its own run's chart and interviews, watched roots named, runs announced, typed fields,
reports told apart, messages that say what happens, one language per report, ids unique per store."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import anyio
import pytest
from websockets.asyncio.client import connect

from simreportd.daemon.cli.local import generate
from simreportd.events.streams import report_stream
from simreportd.simulator.simulate import simulate

from ..browser import Chromium, chromium_path
from ..conftest import PYTHON, TIMEOUT, write_config
from ..daemon.test_server import Running, http, server_config
from ..fake_llm import FakeLLM
from ..processes import NotifySocket, await_until, cli, count, serving, wait_until

pytestmark = [pytest.mark.slow]
needs_chromium = pytest.mark.skipif(chromium_path() is None, reason="needs Debian's chromium (.ci/run installs it)")

ANSWERS = """[...document.querySelectorAll('#answers .answer')].map(e => e.textContent)"""
CHART = """(() => { const img = document.querySelector('article img.chart');
  return img && img.complete && img.naturalWidth > 0 ? img.src : null; })()"""


def simreportd(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "-m", "simreportd", *args], capture_output=True, text=True,
                          timeout=TIMEOUT * 2, cwd=cwd, env={**os.environ, **(env or {})})


@needs_chromium
@pytest.mark.anyio
async def test_a_report_shows_its_own_runs_chart_and_only_its_own_interviews(tmp_path: Path, small_sim: Path) -> None:
    async with Running(server_config(tmp_path), [small_sim]) as running:
        daemon = running.daemon
        first = await daemon.reports.request("sim_small")
        await generate(daemon, first)
        simulate(small_sim, agents=12, rounds=3, seed=4, restart=True)  # a force restart: generation 2
        await daemon.watcher.rescan()
        second = await daemon.reports.request("sim_small")
        await generate(daemon, second)
        await daemon.interviews.ask(first, 1, "What did you make of it?")
        other = await daemon.interviews.ask(second, 2, "And what about you?")
        own_answers = [r for r in await daemon.store.read_stream(report_stream(first)) if r.type == "InterviewAnswered"]
        await daemon.views.wait_for(await daemon.store.last_position(), timeout=TIMEOUT)
        exported = tmp_path / "reports" / first / "activity.svg"
        await await_until(exported.exists, "the first report's exported chart")
        base = f"http://{running.base}/api/simulations/sim_small/activity.svg"
        own, newest, beyond = [await anyio.to_thread.run_sync(http, base + query)
                               for query in ("?generation=1", "", "?generation=3")]
        async with Chromium(tmp_path / "profile") as browser:
            await browser.goto(f"http://{running.base}/#/reports/{first}")
            deadline, answers, chart = time.monotonic() + TIMEOUT, None, None
            while not (answers and chart):
                assert time.monotonic() < deadline, f"the report's page never showed: {answers} {chart}"
                await asyncio.sleep(0.1)
                answers, chart = await browser.evaluate(ANSWERS), await browser.evaluate(CHART)
            await asyncio.sleep(0.5)  # any other report's answer would have come with the history by now
            answers = await browser.evaluate(ANSWERS)
            shown = await browser.evaluate(f"fetch({json.dumps(chart)}).then(r => r.text())", wait=True)
    assert own[1] != newest[1] and shown == own[1] == exported.read_text(encoding="utf-8")
    assert "generation=1" in chart
    assert beyond[0] == 404 and "its newest is 2" in str(beyond[1])
    assert len(answers) == len(own_answers) and answers[0].startswith("agent 1"), answers  # the newest first
    assert not any(other["answer"] in shown for shown in answers)


def started_daemon(config: Path) -> tuple[subprocess.Popen, str]:
    """`simreportd run` as a real process: the process and the URL it serves."""
    with NotifySocket(config.parent / "notify.sock") as systemd:
        daemon = cli("run", "-c", str(config))
        [ready] = [m for m in systemd.wait_for("READY=1") if "READY=1" in m]
    return daemon, serving(ready)


@pytest.mark.anyio
async def test_run_names_its_roots_and_announces_each_run_on_notifications(tmp_path: Path) -> None:
    """One line a watched root, a warning for one that does not exist (and a line when it appears); a run
    being ingested is announced on `notifications`: discovered, its rounds at most once a second, completed."""
    (tmp_path / "sims").mkdir()
    config = write_config(tmp_path, auto=False)
    config.write_text(config.read_text().replace('roots = ["sims"]', 'roots = ["sims", "later"]'))
    daemon, url = started_daemon(config)
    log = daemon.log_path  # type: ignore[attr-defined]
    frames: list[tuple[float, dict]] = []
    async with connect(url.replace("http://", "ws://") + "ws") as ws:
        await ws.send(json.dumps({"op": "subscribe", "topics": ["notifications"]}))
        assert json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))["type"] == "caught_up"
        subscribed = time.monotonic()
        simulator = cli("simulate", str(tmp_path / "sims" / "sim_live"), "--agents", "12", "--rounds", "6",
                        "--live", "--round-seconds", "0.3")
        while not frames or frames[-1][1]["type"] != "simulation_completed":
            frame = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
            frames.append((time.monotonic(), frame))  # when it arrived
        simulator.terminate()
        simulator.wait(timeout=TIMEOUT)
    (tmp_path / "later").mkdir()
    wait_until(lambda: "later for simulation folders (it exists now)" in log.read_text(), "the root appearing")
    said = log.read_text()
    kinds = [frame["type"] for _, frame in frames]
    progress = [frame for _, frame in frames if frame["type"] == "simulation_progress"]
    assert kinds[0] == "simulation_discovered" and kinds[-1] == "simulation_completed", kinds
    assert frames[0][1]["simulation_id"] == "sim_live" and frames[-1][1]["all_rounds_ran"] is True
    assert progress and all(p["simulation_id"] == "sim_live" for p in progress)
    assert len(progress) <= frames[-1][0] - subscribed + 1, "more than one progress frame a second"
    for platform in ("twitter", "reddit"):
        rounds = [p["rounds"].get(platform, 0) for p in progress]
        assert rounds == sorted(rounds), progress
    assert f"INFO simreportd.daemon.ingest.watcher: watching {tmp_path / 'sims'} for simulation folders" in said
    assert f"WARNING simreportd.daemon.ingest.watcher: the watched root {tmp_path / 'later'} does not exist" in said


def test_status_tells_reports_apart_with_typed_fields_and_commands_say_what_happens(tmp_path: Path) -> None:
    simulate(tmp_path / "sims" / "sim_one", agents=12, rounds=4, seed=3)
    config = str(write_config(tmp_path, "[agent]\nmin_tool_calls = 5\n", auto=False))  # the offline writer's
    sim = str(tmp_path / "sims" / "sim_one")  # sections make fewer calls: a degraded report
    first = simreportd("-c", config, "report", sim, "--wait")
    again = simreportd("-c", config, "report", sim, "--wait")
    forced = simreportd("-c", config, "report", sim, "--wait", "--force")
    first_id, forced_id = first.stdout.split()[-1], forced.stdout.split()[-1]
    events = simreportd("-c", config, "events", "--stream", f"report-{first_id}", "--type", "OutlinePlanned")
    at = json.loads(events.stdout.splitlines()[0])["position"]
    forked_id = simreportd("-c", config, "fork", first_id, "--at", str(at)).stdout.split()[-1]
    status = simreportd("-c", config, "status").stdout.splitlines()
    typed = json.loads(simreportd("-c", config, "status", "--json").stdout)
    replayed = simreportd("-c", config, "replay", "--all").stdout
    assert "WARNING: report ready but degraded" in first.stderr and " WARNING simreportd" not in first.stderr
    assert f"The run already has report {first_id}, completed; here it is (`--force` writes a new one)" \
        in again.stderr and again.stdout.split()[-1] == first_id
    rows = {line.split()[0]: line for line in status if line.startswith("  report_")}
    assert set(rows) == {first_id, forced_id, forked_id}
    assert "(forced: written again although the run had a report)" in rows[forced_id]
    assert f"(forked from {first_id})" in rows[forked_id] and "(forked" not in rows[first_id] + rows[forced_id]
    assert len({line.index(" full ") for line in rows.values()}) == 1  # completed_degraded keeps the columns
    assert all(line.split()[5][:4] == "20" + str(time.gmtime().tm_year)[2:] for line in rows.values())  # a date
    report = typed["reports"][0]
    assert report["interview_unlocked"] is True and isinstance(report["problems"], list) and report["problems"]
    assert typed["simulations"][0]["all_rounds_ran"] is True
    assert all(replayed.count(report_id) == 1 for report_id in rows), replayed


def test_a_key_in_the_shell_keeps_the_demo_offline_and_each_store_has_its_own_report_ids(tmp_path: Path) -> None:
    """OPENAI_API_KEY set for other tools, no model configured: the demo writes offline, no network. Two demos
    (two stores, the same run's name) give their reports different ids."""
    one = simreportd("demo", str(tmp_path / "one"), cwd=tmp_path, env={"OPENAI_API_KEY": "sk-for-another-tool"})
    two = simreportd("demo", str(tmp_path / "two"), cwd=tmp_path)
    assert one.returncode == 0 and two.returncode == 0, one.stderr + two.stderr
    assert "Report ready:" in one.stderr and "openai" not in one.stderr
    assert one.stdout.split()[-1] != two.stdout.split()[-1]
    again = simreportd("demo", str(tmp_path / "one"), cwd=tmp_path)
    assert again.stdout.split()[-1] == one.stdout.split()[-1] and "already written here" in again.stderr
    served = tmp_path / "served" / "config.toml"  # a daemon on the first demo's store, on a free port
    served.parent.mkdir()
    served.write_text('[store]\npath = "../one/state/events.sqlite3"\n[watch]\nroots = ["../one/simulations"]\n'
                      '[reports]\noutput_dir = "../one/reports"\n[server]\nport = 0\n', encoding="utf-8")
    daemon, url = started_daemon(served)
    beside = simreportd("-c", str(served), "demo", str(tmp_path / "one"), cwd=tmp_path)
    daemon.terminate()
    assert daemon.wait(timeout=TIMEOUT) == 0
    assert f"See it in the dashboard: open {url}#/reports/{one.stdout.split()[-1]}" in beside.stderr, beside.stderr
    assert "run   then open" not in beside.stderr
    named = write_config(tmp_path / "named", '[llm]\nprovider = "openai"\n')
    refused = simreportd("-c", str(named), "demo", str(tmp_path / "three"), env={"OPENAI_API_KEY": "sk-x"})
    assert refused.returncode == 2 and "no model is named; set [llm] model" in refused.stderr, refused.stderr


def test_a_chinese_run_gets_chinese_live_answers_and_a_chinese_list_of_problems(tmp_path: Path) -> None:
    from simreportd.agent.findings.language import language_of
    from simreportd.simulator.interview_responder import answer

    story = simulate(tmp_path / "sims" / "sim_zh", agents=12, rounds=4, seed=2)
    assert language_of(story.scenario.requirement) == "zh"
    live = answer(story, 1, "你怎么看？", "twitter")["response"]
    assert language_of(live) == "zh" and "Speaking as" not in live, live
    config = str(write_config(tmp_path, "[agent]\nmin_tool_calls = 5\n", auto=False))
    written = simreportd("-c", config, "report", str(tmp_path / "sims" / "sim_zh"), "--wait")
    problems = json.loads(simreportd("-c", config, "status", "--json").stdout)["reports"][0]["problems"]
    assert written.returncode == 0 and problems, written.stderr
    assert all(language_of(p) == "zh" and "fewer than" not in p for p in problems), problems


def test_a_report_only_queued_says_what_writes_it(tmp_path: Path) -> None:
    """No daemon, no --wait: the report is queued; status and interview say `simreportd run` writes it."""
    simulate(tmp_path / "sims" / "sim_one", agents=12, rounds=4, seed=3)
    config = str(write_config(tmp_path, auto=False))
    queued = simreportd("-c", config, "report", str(tmp_path / "sims" / "sim_one"))
    report_id = queued.stdout.split()[-1]
    status = simreportd("-c", config, "status").stdout
    asked = simreportd("-c", config, "interview", report_id, "--agent", "1", "Still there?")
    written = simreportd("-c", config, "report", str(tmp_path / "sims" / "sim_one"), "--wait")
    assert "written when `simreportd run` starts" in queued.stderr
    assert f"  {report_id} " in status and "(waiting: `simreportd run` writes it)" in status, status
    assert asked.returncode == 2 and "a running daemon writes it: `simreportd run`" in asked.stderr, asked.stderr
    assert written.returncode == 0 and written.stdout.split()[-1] == report_id
    assert f"Report {report_id} of this run was asked for already; writing it here" in written.stderr


def test_a_report_stopped_mid_way_says_the_next_run_continues_it(tmp_path: Path) -> None:
    from .test_second_hour import openai_config

    simulate(tmp_path / "sims" / "sim_one", agents=12, rounds=4, seed=3)
    db = tmp_path / "state" / "events.sqlite3"
    with FakeLLM(latency_s=0.2) as llm:
        config = str(openai_config(tmp_path, llm.base_url, auto=False))
        writing = cli("-c", config, "report", str(tmp_path / "sims" / "sim_one"), "--wait")
        wait_until(lambda: count(db, "SELECT count(*) FROM events WHERE type = 'SectionCompleted'") > 0,
                   "a section written")
        writing.send_signal(signal.SIGTERM)
        assert writing.wait(timeout=TIMEOUT) == 0
    status = simreportd("-c", config, "status").stdout
    [row] = [line for line in status.splitlines() if line.startswith("  report_")]
    assert " generating " in row and row.endswith("(stopped mid-way: `simreportd run` continues it)"), status
