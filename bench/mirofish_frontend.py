"""MiroFish's own frontend against simreportd, in headless Chromium: what a MiroFish user sees.

Run by hand (CI cannot fetch MiroFish; its code is AGPL-3.0 and is never copied here):

    git clone https://github.com/666ghj/MiroFish && cd MiroFish/frontend && npm ci
    VITE_API_BASE_URL=http://127.0.0.1:3300 npx vite build
    python bench/mirofish_frontend.py MiroFish/frontend/dist shots/ [--scripted]

It writes a finished simulation, has simreportd write its report (the offline writer), serves
the built frontend with docs/deploy/nginx-mirofish.conf on port 3300 (nginx from Debian), opens
`/report/<id>` and `/interaction/<id>`, waits until the outline and every section title are on
the page, scrolls to each tool panel, asks the chat panel a question, and saves a screenshot of
each view. With `--scripted`, the report is written by a model over HTTP (the test suite's
scripted OpenAI-compatible server, slowed to 0.4 s a reply) and asked for through MiroFish's
own `POST /api/report/generate`; the report page is opened at once and a screenshot is saved
each time another section appears, then the finished views as above.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import nullcontext
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent))
from tests.browser import Chromium  # noqa: E402 (the suite's DevTools client, run from the repository)
from tests.fake_llm import FakeLLM  # noqa: E402 (the suite's scripted OpenAI-compatible server)

FRONT = 3300
ROOT = Path(__file__).parent.parent


def run(*args: str, cwd: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "simreportd", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)
    if done.returncode:
        raise SystemExit(f"simreportd {' '.join(args)} failed: {done.stderr[-2000:]}")
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return json.loads(answer.read())


def wait_for(condition, what: str, timeout: float = 120) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.5)


def start_nginx(work: Path, dist: Path, port: int) -> subprocess.Popen:
    block = (ROOT / "docs/deploy/nginx-mirofish.conf").read_text()
    block = block.replace("127.0.0.1:8765", f"127.0.0.1:{port}").replace("127.0.0.1:3000", f"127.0.0.1:{FRONT}") \
        .replace("/srv/mirofish/frontend/dist", str(dist.resolve()))
    (work / "site.conf").write_text(block)
    (work / "nginx-temp").mkdir(exist_ok=True)
    (work / "nginx.conf").write_text(
        f"daemon off; master_process off; pid {work}/nginx.pid; error_log {work}/nginx-error.log;\nevents {{}}\n"
        "http {\n include /etc/nginx/mime.types;\n access_log off;\n"
        + "".join(f" {k}_temp_path {work}/nginx-temp/{k};\n" for k in ("client_body", "proxy", "fastcgi", "uwsgi",
                                                                       "scgi"))
        + f" include {work}/site.conf;\n}}\n")
    return subprocess.Popen(["/usr/sbin/nginx", "-p", str(work), "-c", str(work / "nginx.conf")])


async def page_text(browser: Chromium) -> str:
    return str(await browser.evaluate("document.body.innerText"))


async def shoot(browser: Chromium, url: str, path: Path, must_show: list[str], timeout: float = 120) -> str:
    """Open `url`, wait until every string of `must_show` is on the page, save a screenshot; the page's text."""
    await browser.goto(url)
    deadline = time.monotonic() + timeout
    while True:
        text = await page_text(browser)
        missing = [s for s in must_show if s not in text]
        if not missing or time.monotonic() > deadline:
            break
        await asyncio.sleep(1)
    await browser.screenshot(path)
    print(f"{path}: {'shows everything asked' if not missing else 'MISSING ' + repr(missing)}")
    return text


async def views(report_id: str, shots: Path, titles: list[str]) -> None:
    base = f"http://127.0.0.1:{FRONT}"
    with tempfile.TemporaryDirectory() as profile:
        async with Chromium(Path(profile)) as browser:
            await browser.call("Emulation.setDeviceMetricsOverride", width=1600, height=1400, deviceScaleFactor=1,
                               mobile=False)
            await shoot(browser, f"{base}/interaction/{report_id}", shots / "interaction.png", titles[:1])
            await shoot(browser, f"{base}/report/{report_id}", shots / "report.png", titles)
            print("timeline:", await browser.evaluate(
                "document.querySelectorAll('.timeline-item').length + ' steps, '"
                " + document.querySelectorAll('.result-wrapper').length + ' tool results'"))
            for tool in ("insight_forge", "interview_agents", "panorama_search", "quick_search"):
                await panel(browser, tool, shots / f"panel-{tool}.png")
            await chat(browser, f"{base}/interaction/{report_id}", shots / "chat.png")


async def panel(browser: Chromium, tool: str, path: Path) -> None:
    """Scroll the agent log to the first result of `tool` and save a screenshot of its panel."""
    found = await browser.evaluate(f"(() => {{ const e = document.querySelector('.result-{tool}');"
                                   " if (!e) return ''; e.scrollIntoView({block: 'center'}); return e.innerText; })()")
    await asyncio.sleep(0.5)
    await browser.screenshot(path)
    print(f"{path}: {tool} panel " + (f"shows {len(found)} characters" if found else "NOT FOUND"))


async def chat(browser: Chromium, url: str, path: Path) -> None:
    """Ask the Report Agent tab of the interaction view one question and save the answer's screenshot."""
    await browser.goto(url)
    await asyncio.sleep(3)
    print("chat:", await browser.evaluate("""(async () => {
        const tab = [...document.querySelectorAll('button.tab-pill')].find(b => b.innerText.includes('Report Agent'));
        if (!tab) return 'no Report Agent tab';
        tab.click();
        await new Promise(r => setTimeout(r, 300));
        const box = document.querySelector('textarea.chat-input');
        if (!box) return 'no chat input';
        box.value = 'Which camp was largest, and who spoke for it?';
        box.dispatchEvent(new Event('input', {bubbles: true}));
        box.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true}));
        return 'asked';
    })()""", wait=True))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not await browser.evaluate(
            "[...document.querySelectorAll('.chat-message.assistant')].some(m => m.innerText.length > 80)"):
        await asyncio.sleep(1)
    await browser.screenshot(path)
    answer = await browser.evaluate("[...document.querySelectorAll('.chat-message.assistant')]"
                                    ".map(m => m.innerText).join(' | ')")
    print(f"{path}: the chat panel after one question; answer: {str(answer)[:300]!r}")


async def live(report_id: str, shots: Path) -> None:
    """The report page opened as the report starts: a screenshot each time another section is shown."""
    base = f"http://127.0.0.1:{FRONT}"
    with tempfile.TemporaryDirectory() as profile:
        async with Chromium(Path(profile)) as browser:
            await browser.call("Emulation.setDeviceMetricsOverride", width=1600, height=1400, deviceScaleFactor=1,
                               mobile=False)
            await browser.goto(f"{base}/report/{report_id}")
            while not await browser.evaluate("document.body !== null && document.body.innerText.includes('MIROFISH')"):
                await asyncio.sleep(0.2)
            shown, deadline = -1, time.monotonic() + 600
            while time.monotonic() < deadline:
                done = await browser.evaluate("document.body.innerText.includes('Report Generation Complete')")
                count = await browser.evaluate("document.querySelectorAll('.section-tag.completed').length")
                if count != shown:
                    shown = count
                    await browser.screenshot(shots / f"live-{count}.png")
                    print(f"{shots / f'live-{count}.png'}: {count} section(s) shown while the report is written")
                if done:
                    return
                await asyncio.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dist", type=Path, help="MiroFish's built frontend (frontend/dist)")
    parser.add_argument("shots", type=Path, help="where the screenshots go")
    parser.add_argument("--scripted", action="store_true", help="a model over HTTP writes the report, watched live")
    args = parser.parse_args()
    args.shots.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, (FakeLLM(latency_s=0.4) if args.scripted else nullcontext()) as llm:
        work = Path(tmp)
        run("simulate", str(work / "sims" / "sim_frontend"), "--agents", "24", "--rounds", "10", "--seed", "11", cwd=work)
        port = 8799
        writer = f'[llm]\nprovider = "openai"\nbase_url = "{llm.base_url}"\nmodel = "scripted"\n' if llm else ""
        (work / "config.toml").write_text(f'[store]\npath = "state/events.sqlite3"\n[watch]\nroots = ["sims"]\n'
                                          f'[reports]\noutput_dir = "reports"\nauto = false\n[server]\nport = {port}\n'
                                          + writer)
        report_id = "" if llm else run("-c", "config.toml", "report", "sims/sim_frontend", "--wait", cwd=work)
        daemon = subprocess.Popen([sys.executable, "-m", "simreportd", "-c", "config.toml", "run"], cwd=work,
                                  stderr=subprocess.DEVNULL)
        nginx = start_nginx(work, args.dist, port)
        try:
            wait_for(lambda: _up(f"http://127.0.0.1:{FRONT}/api/report/list"), "simreportd behind nginx")
            if llm:
                report_id = post(f"http://127.0.0.1:{FRONT}/api/report/generate",
                                 {"simulation_id": "sim_frontend"})["data"]["report_id"]
                asyncio.run(live(report_id, args.shots))
            report = get(f"http://127.0.0.1:{FRONT}/api/report/{report_id}")["data"]
            titles = [report["outline"]["title"], *[s["title"] for s in report["outline"]["sections"]]]
            asyncio.run(views(report_id, args.shots, titles))
        finally:
            nginx.terminate()
            daemon.terminate()
            daemon.wait(timeout=30)


def post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.loads(answer.read())


def _up(url: str) -> bool:
    try:
        return bool(get(url).get("success"))
    except OSError:
        return False


if __name__ == "__main__":
    main()
