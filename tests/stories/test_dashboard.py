"""The dashboard in headless Chromium against a daemon ingesting a live simulated run."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import anyio
import pytest

from simreportd.daemon.service import Daemon

from ..browser import Chromium, chromium_path
from ..conftest import TIMEOUT, make_config
from ..fake_llm import FakeLLM
from ..processes import cli

pytestmark = [pytest.mark.anyio, pytest.mark.slow,
              pytest.mark.skipif(chromium_path() is None, reason="needs Debian's chromium (.ci/run installs it)")]
ARTIFACTS = Path(__file__).parents[1] / "artifacts"

STATE = """(() => ({
  sections: document.querySelectorAll('.report-section').length,
  pending: document.querySelectorAll('.pending-section').length,
  simulationRunning: [...document.querySelectorAll('#simulations .status')].some(e => e.textContent !== 'completed'),
  chartDrawn: [...document.querySelectorAll('#simulations img.chart')].some(i => i.complete && i.naturalWidth > 0),
  traceSteps: document.querySelectorAll('#trace .step').length,
  rejections: document.querySelectorAll('#trace .kind.rejection').length,
  interviewOpen: document.getElementById('interview').classList.contains('open'),
  live: document.getElementById('conn').className === 'live',
  blockquotes: document.querySelectorAll('article blockquote').length,
  navigations: performance.getEntriesByType('navigation').length,
  hash: location.hash,
  selected: document.querySelector('#reports .item.selected')?.dataset.report,
  listMeta: document.querySelector('#reports .item .meta')?.textContent,
  reportMeta: [...document.querySelectorAll('article .meta')].map(e => e.textContent).join(' | '),
  observationTables: document.querySelectorAll('#trace .observed table').length,
  fullJson: [...document.querySelectorAll('#trace .observed details pre')].filter(p => JSON.parse(p.textContent)).length,
}))()"""
ASK = """(() => { document.getElementById('chat-question').value = 'Who changed their mind?';
  document.getElementById('chat-ask').click(); return document.getElementById('chat-ask').disabled; })()"""
CHAT = """(() => ({
  open: document.getElementById('chat').classList.contains('open'),
  asked: [...document.querySelectorAll('#chat-log .asked')].map(e => e.textContent),
  answers: [...document.querySelectorAll('#chat-log .chat-answer')].map(e => e.textContent),
  progress: document.getElementById('chat-progress').textContent,
}))()"""
CHART_TICKS = """fetch(document.querySelector('#simulations img.chart').src).then(r => r.text()).then(svg =>
  (svg.match(/text-anchor="end" font-size="11">\\d+</g) || []).length)"""


async def test_sections_trace_chart_and_interview_box_appear_without_a_reload(tmp_path: Path) -> None:
    seen: list[dict] = []
    simulator = None
    try:
        with FakeLLM(latency_s=0.12) as llm:
            config = make_config(tmp_path, server={"port": 0}, watch={"roots": [tmp_path / "sims"],
                                                                      "rescan_seconds": 0.2},
                                 llm={"provider": "openai", "base_url": llm.base_url, "model": "scripted"})
            async with Daemon(config) as daemon:
                task = asyncio.create_task(daemon.run(serve=True))
                with anyio.fail_after(TIMEOUT):
                    await daemon.serving.wait()
                assert daemon.server is not None
                async with Chromium(tmp_path / "profile") as browser:
                    await browser.goto(f"http://127.0.0.1:{daemon.server.port}/")
                    # The run starts once the page is up, so a loaded machine's slow browser start cannot
                    # outlast it (the chart must be seen while the run is ingested).
                    simulator = cli("simulate", str(tmp_path / "sims" / "sim_live"), "--agents", "12", "--rounds", "6",
                                    "--live", "--round-seconds", "0.4")
                    deadline = time.monotonic() + TIMEOUT * 2
                    while True:
                        state = await browser.evaluate(STATE)  # None while the page is still loading
                        if state is not None:
                            seen.append(state)
                        if state and state["sections"] >= 3 and not state["pending"] and state["interviewOpen"] \
                                and state["traceSteps"]:
                            break
                        assert time.monotonic() < deadline, f"dashboard never completed: {seen[-1]}"
                        await asyncio.sleep(0.1)
                    await asyncio.sleep(0.5)  # let the last trace fetch land before the picture
                    await browser.screenshot(ARTIFACTS / "dashboard.png")
                    seen.append(await browser.evaluate(STATE))
                    ticks = await browser.evaluate(CHART_TICKS, wait=True)
                    report_id = seen[-1]["selected"]
                    await browser.goto("about:blank")
                    await browser.goto(f"http://127.0.0.1:{daemon.server.port}/#/reports/{report_id}")  # a bookmark
                    bookmarked = None
                    while not (bookmarked and bookmarked.get("selected") == report_id and bookmarked.get("sections", 0) >= 3):
                        assert time.monotonic() < deadline, f"the bookmarked report never showed: {bookmarked}"
                        await asyncio.sleep(0.1)
                        bookmarked = await browser.evaluate(STATE)
                    chat_before = await browser.evaluate(CHAT)
                    disabled_while_asking = await browser.evaluate(ASK)
                    chat = await browser.evaluate(CHAT)
                    while not chat["answers"]:
                        assert time.monotonic() < deadline, f"the chat never answered: {chat}"
                        await asyncio.sleep(0.1)
                        chat = await browser.evaluate(CHAT)
                    await browser.screenshot(ARTIFACTS / "dashboard-chat.png")
                    chat_requests = [r for r in llm.requests if "follow-up questions" in r["messages"][0]["content"]]
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
    finally:
        if simulator is not None:
            simulator.terminate()
            simulator.wait(timeout=TIMEOUT)
    final = seen[-1]
    assert final["hash"] == f"#/reports/{report_id}" and bookmarked["hash"] == final["hash"]
    assert "sim_live (generation 1)" in final["listMeta"] and "scripted" in final["listMeta"]
    assert "sim_live" in final["reportMeta"] and "tokens" in final["reportMeta"]
    assert final["observationTables"] >= 3 and final["fullJson"] >= 3
    assert ticks >= 3, "the activity chart's y-axis has fewer than three labelled gridlines"
    assert any(s["simulationRunning"] and s["chartDrawn"] for s in seen), "no chart while the run was ingested"
    assert any(0 < s["sections"] < final["sections"] for s in seen), "sections did not arrive one by one"
    assert final["navigations"] == 1 and final["live"] and final["blockquotes"] >= 3
    assert (ARTIFACTS / "dashboard.png").stat().st_size > 10_000
    assert chat_before["open"] and not chat_before["answers"] and disabled_while_asking
    assert chat["asked"] == ["Who changed their mind?"] and len(chat["answers"]) == 1 and not chat["progress"]
    assert "tools: " in chat["answers"][0] and "checked against the evidence" in chat["answers"][0]
    assert chat_requests and "Who changed their mind?" in json.dumps(chat_requests[-1]["messages"])


async def test_the_page_opens_on_the_list_and_lists_every_run_of_a_simulation(tmp_path: Path, small_sim: Path) -> None:
    """A daemon with a written report: `/` shows the list, no report chosen for the reader; a restarted run's
    earlier generation is listed beside the newest."""
    from simreportd.simulator.simulate import simulate

    from ..daemon.test_server import Running, server_config

    async with Running(server_config(tmp_path), [small_sim]) as running:
        await running.daemon.reports.wait(await running.daemon.reports.request(small_sim.name))
        simulate(small_sim, agents=12, rounds=3, seed=4, restart=True)  # a force restart: generation 2
        await running.daemon.watcher.rescan()
        await running.daemon.views.wait_for(await running.daemon.store.last_position(), timeout=TIMEOUT)
        async with Chromium(tmp_path / "profile") as browser:
            await browser.goto(f"http://{running.base}/")
            deadline, page = time.monotonic() + TIMEOUT, None
            while not (page and page["reports"] and page["runs"] == 2):
                assert time.monotonic() < deadline, f"the lists never showed: {page}"
                await asyncio.sleep(0.1)
                page = await browser.evaluate("""(() => ({reports: document.querySelectorAll('#reports .item').length,
                    runs: document.querySelectorAll('#simulations .item').length, hash: location.hash,
                    hint: document.getElementById('report').textContent,
                    earlier: document.querySelectorAll('#simulations .item.earlier').length}))()""")
    assert page["hash"] == "" and "Choose a report" in page["hint"] and page["earlier"] == 1
