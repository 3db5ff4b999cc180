"""MiroFish's own frontend, built from its repository, on simreportd alone with the default `[server]` settings
(but the port: the one the build calls, MiroFish's backend's 5001 when built without VITE_API_BASE_URL),
in headless Chromium: Step 4 shows a report; Step 5 lists the agents, interviews one and a survey of two,
and chats about a simulation whose report failed; no call of the page fails but the 501s of MiroFish's
orchestration.

MiroFish is AGPL-3.0 and never copied here; build it by hand and point MIROFISH_DIST at the result
(the test is skipped otherwise):

    git clone https://github.com/666ghj/MiroFish && cd MiroFish/frontend && npm ci && npx vite build
    MIROFISH_DIST=$PWD/dist python -m pytest tests/stories/test_mirofish_frontend.py

The page is served from `http://127.0.0.1:3000` (the dev server's origin, allowed by default) and
simreportd listens on the port the build calls (bench/mirofish_frontend.py's build, for its proxy on 3300,
does as well).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from simreportd.simulator.simulate import simulate

from ..browser import Chromium, chromium_path
from ..conftest import TIMEOUT, make_config
from ..daemon.test_server import Running
from ..daemon.test_simulation_ids import set_config_id
from ..fake_llm import FakeLLM

DIST = os.environ.get("MIROFISH_DIST", "")
PAGE = "http://127.0.0.1:3000"  # the frontend's dev-server origin, allowed by default


def api_port(dist: str) -> int:
    """The port of the base URL the build calls (`frontend/src/api/index.js`, baked in by vite), or 0 if it is
    not on this machine."""
    for bundle in Path(dist, "assets").glob("*.js"):
        if found := re.search(r'baseURL:"(http://[^"]+)"', bundle.read_text(errors="replace")):
            url = urlsplit(found.group(1))
            return url.port or 80 if url.hostname in ("localhost", "127.0.0.1") else 0
    return 0


API_PORT = api_port(DIST) if DIST and Path(DIST, "assets").is_dir() else 0

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(not (API_PORT and chromium_path()), reason=(
    "needs MiroFish's frontend built to call this machine (MIROFISH_DIST) and Chromium"))]


class SinglePage(SimpleHTTPRequestHandler):
    """The built frontend; any path that is no file is its index.html (its router owns the paths)."""

    def send_head(self) -> Any:
        if not Path(self.translate_path(self.path)).exists():
            self.path = "/index.html"
        return super().send_head()

    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serving(dist: str) -> Iterator[None]:
    server = ThreadingHTTPServer(("127.0.0.1", 3000), partial(SinglePage, directory=dist))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()


async def until(browser: Chromium, expression: str, what: str) -> Any:
    """The value of `expression` once it is truthy, polled; AssertionError naming `what` after TIMEOUT."""
    for _ in range(int(TIMEOUT * 4)):
        if value := await browser.evaluate(expression):
            return value
        await asyncio.sleep(0.25)
    raise AssertionError(f"the page never showed {what}: {str(await browser.evaluate('document.body.innerText'))[:500]}")


CALLS = (f"performance.getEntriesByType('resource').filter(e => e.name.includes(':{API_PORT}/'))"
         f".map(e => [e.name.split(':{API_PORT}')[1], e.responseStatus])")


async def failed_calls(browser: Chromium) -> list[list[Any]]:
    """The page's calls to simreportd that failed (a status of 0 is one the browser blocked): the 501s of MiroFish's
    orchestration are what simreportd answers on purpose."""
    return [c for c in await browser.evaluate(CALLS) if not (200 <= c[1] < 400 or c[1] == 501)]


async def type_in(browser: Chromium, selector: str, text: str, enter: bool = False) -> None:
    await browser.evaluate(f"""(() => {{ const box = document.querySelector({selector!r});
        box.value = {text!r}; box.dispatchEvent(new Event('input', {{bubbles: true}}));
        if ({'true' if enter else 'false'}) box.dispatchEvent(new KeyboardEvent('keydown', {{key: 'Enter', bubbles: true}}));
    }})()""")


async def test_mirofish_frontend_shows_a_report_interviews_agents_and_chats_without_a_report(tmp_path: Path) -> None:
    done, failing = tmp_path / "sims" / "sim_done", tmp_path / "sims" / "sim_failing"
    simulate(done, agents=12, rounds=6, seed=3)
    simulate(failing, agents=8, rounds=4, seed=5)
    set_config_id(done, "sim_4f2a9c1e7b3d")  # a copied run: the page is led by the config's id, ours by its folder
    with FakeLLM() as llm, serving(DIST):
        config = make_config(tmp_path, llm={"provider": "openai", "base_url": llm.base_url, "model": "scripted",
                                            "timeout_s": 10.0, "max_retries": 1, "retry_backoff_s": 0.01},
                             reports={"auto": False}, server={"port": API_PORT})
        async with Running(config, [done, failing]) as running:
            daemon = running.daemon
            report_id = await daemon.reports.request(done.name)
            report = await daemon.reports.wait(report_id)
            llm.faults.extend([("status", 503)] * 2)  # the second report's first request, and its one retry
            failed_id = await daemon.reports.request(failing.name)
            assert (await daemon.reports.wait(failed_id)).failed is not None
            await daemon.views.wait_for(await daemon.store.last_position(), timeout=TIMEOUT)
            assert report.outline is not None
            async with Chromium(tmp_path / "profile") as browser:
                await browser.goto(f"{PAGE}/report/{report_id}")
                for section in report.outline.sections:
                    await until(browser, f"document.body.innerText.includes({section.title!r})", section.title)
                step4 = await failed_calls(browser)

                await browser.goto(f"{PAGE}/interaction/{report_id}")
                await until(browser, "!!document.querySelector('.survey-pill')", "the survey tab")
                await browser.evaluate("document.querySelector('.survey-pill').click()")
                agents = await until(browser, "document.querySelectorAll('.agent-checkbox').length", "the agents")
                await browser.evaluate("[...document.querySelectorAll('.agent-checkbox input')].slice(0, 2)"
                                       ".forEach(box => box.click())")
                await type_in(browser, "textarea.survey-input", "What did you think of the charge?")
                await until(browser, "!document.querySelector('.survey-submit-btn').disabled", "a survey to send")
                await browser.evaluate("document.querySelector('.survey-submit-btn').click()")
                answers = await until(browser, "(() => { const cards = [...document.querySelectorAll('.result-card"
                                               " .result-answer')].map(c => c.innerText);"
                                               " return cards.length === 2 && cards; })()", "two survey answers")
                await browser.evaluate("document.querySelector('.agent-pill').click()")
                await until(browser, "!!document.querySelector('.dropdown-item')", "the agent list")
                await browser.evaluate("document.querySelectorAll('.dropdown-item')[3].click()")
                await type_in(browser, "textarea.chat-input", "Why did you post that?", enter=True)
                reply = await until(browser, "(() => { const m = document.querySelector('.chat-message.assistant"
                                             " .message-text'); return m && m.innerText; })()", "the agent's answer")
                step5 = await failed_calls(browser)

                await browser.goto(f"{PAGE}/interaction/{failed_id}")
                await until(browser, "!!document.querySelector('textarea.chat-input')", "the chat box")
                # the page learns the report's simulation from /api/report/<id> and sends the chat with it: a
                # message typed before that answer comes is sent with no simulation_id (MiroFish's backend: 400 too)
                await until(browser, "performance.getEntriesByType('resource').some(e => "
                                     "e.name.includes('/api/simulation/sim_failing'))", "the report's simulation")
                await type_in(browser, "textarea.chat-input", "Which arguments dominated?", enter=True)
                chat = await until(browser, "(() => { const m = document.querySelector('.chat-message.assistant"
                                            " .message-text'); return m && m.innerText; })()", "the chat's answer")
                failed_step5 = await failed_calls(browser)
    assert step4 == [] and step5 == [] and failed_step5 == [], (step4, step5, failed_step5)
    assert report.request is not None and report.request.simulation_id == "sim_4f2a9c1e7b3d"
    assert agents == 12 and all(a and a != "无响应" for a in answers), answers
    assert reply and "错误" not in reply and chat and "错误" not in chat, (reply, chat)
