"""Shared fixtures: the asyncio backend, timeouts from one place, real files in tmp_path."""

from __future__ import annotations

import compileall
import json
import os
import subprocess
import sys
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import anyio
import pytest

from simreportd.daemon.config import Config

# Every wait in the suite uses this bound: generous on a loaded 2-core CI machine, and a
# condition is always what ends the wait, never the clock.
TIMEOUT = float(os.environ.get("SIMREPORTD_TEST_TIMEOUT", "60"))
PYTHON = sys.executable
ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("simreportd", "events", "projections", "analysis", "agent", "daemon", "simulator")
# The folders of tests that run in this process, a folder a layer: what starts a real process is a story.
IN_PROCESS = ("events", "projections", "agent", "daemon", "writing")


# The modules whose tests run longest, mostly waiting on real processes (30 + 20 stops at random moments, three
# daemons sharing a report, kill -9 mid-report): they start the run, so the other workers' tests run beside
# them rather than after them.
LONGEST_FIRST = ("test_shutdown.py", "test_store_postgres.py", "test_kill.py")


# Reading meaning costs about 0.1 s of CPU a statement (bench/analysis_quality.py): the suite's daemons and
# commands read by wording and keywords, and the tests of the analysis (test_analysis.py, and the chat test on
# statements written anew) ask for the bundled embedder themselves.
os.environ["SIMREPORTD_EMBEDDINGS_PROVIDER"] = "off"
WITH_EMBEDDINGS = {k: v for k, v in os.environ.items() if k != "SIMREPORTD_EMBEDDINGS_PROVIDER"}
# The scripted model servers play particular models (weak, cut, echoing) through the react loop: the suite
# writes react unless a test asks for another mode; `auto`, the default, and its probe have tests of their own.
os.environ["SIMREPORTD_AGENT_MODE"] = "react"
# Their failures are played on purpose and must fail: a server that is down is waited for in tests of its own.
os.environ["SIMREPORTD_LLM_DOWN_WAIT_S"] = "0"


def pytest_configure(config: pytest.Config) -> None:
    """Write the package's bytecode once, before the workers start: the suite starts some 500 Python processes
    (daemons, commands, fold children), and where PYTHONDONTWRITEBYTECODE is set each of them would compile
    every module it imports from source again (about 0.1 s of CPU for a daemon)."""
    if not hasattr(config, "workerinput"):  # the controller only: workers and children find the files written
        for layer in LAYERS:
            compileall.compile_dir(ROOT / layer, quiet=1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the longest modules first, then the other tests that spawn real processes (marked slow), each file's
    tests still together.

    pytest-xdist (`-n` in pyproject) starts each worker on a contiguous share of this list and lets idle
    workers take tests from the end of the others' shares, so the long ones must not come last: a torture
    that starts two minutes in ends the run two minutes later than one that starts it.
    """
    for item in items:
        if "stories" in item.path.parts:  # tests/stories/ is where the tests that start real processes live
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: (first_rank(item.path.name), item.get_closest_marker("slow") is None))


def first_rank(module: str) -> int:
    return LONGEST_FIRST.index(module) if module in LONGEST_FIRST else len(LONGEST_FIRST)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def no_process_started(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail a layer's test that starts a process (a daemon, a command, a fold child) at once, through anyio as
    the daemon starts its fold child or through subprocess: it belongs in tests/stories."""
    if request.path.parent.name not in IN_PROCESS:
        return

    def refuse(args: Any, *rest: Any, **options: Any) -> None:
        raise AssertionError(f"a test of tests/{request.path.parent.name} started a process ({args!r}): "
                             "move it to tests/stories")

    async def refuse_async(args: Any, *rest: Any, **options: Any) -> None:
        refuse(args)

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(anyio, "open_process", refuse_async)


@pytest.fixture(autouse=True)
def no_leftover_processes():
    """A failing test must not leave a daemon running into the next one."""
    yield
    from .processes import reap

    reap()


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "events.sqlite3"


def make_config(tmp_path: Path, **sections: dict) -> Config:
    """A config with everything under tmp_path; `sections` override keys, e.g. llm={"model": "m"}. Its daemon
    folds in its own process (`[service] fold = "inline"`): a test of the fold child asks for one."""
    sections = {**sections, "agent": {"mode": "react", **sections.get("agent", {})},
                "service": {"fold": "inline", **sections.get("service", {})},
                "llm": {"down_wait_s": 0.0, **sections.get("llm", {})},
                "embeddings": {"provider": "off", **sections.get("embeddings", {})}}  # as the environment above says
    config = Config().with_paths(store=tmp_path / "state" / "events.sqlite3", roots=[tmp_path / "sims"],
                                 output_dir=tmp_path / "reports")
    updates = {name: getattr(config, name).model_copy(update=values) for name, values in sections.items()}
    return config.model_copy(update=updates)


def write_config(tmp_path: Path, text: str = "", auto: bool = True, parallel_sections: int = 1) -> Path:
    """A config.toml under tmp_path with relative paths and a free port, plus extra TOML (other tables)."""
    path = tmp_path / "config.toml"
    tmp_path.mkdir(parents=True, exist_ok=True)
    path.write_text('[store]\npath = "state/events.sqlite3"\n[watch]\nroots = ["sims"]\nrescan_seconds = 0.2\n'
                    f'[reports]\noutput_dir = "reports"\nauto = {str(auto).lower()}\n'
                    f'parallel_sections = {parallel_sections}\n[server]\nport = 0\n' + text,
                    encoding="utf-8")
    return path


@pytest.fixture
def small_sim(tmp_path: Path) -> Path:
    """A finished 12-agent, 6-round simulation folder at tmp_path/sims/sim_small."""
    from simreportd.simulator.simulate import simulate

    folder = tmp_path / "sims" / "sim_small"
    simulate(folder, agents=12, rounds=6, seed=3)
    return folder


@pytest.fixture
async def scripted_report(tmp_path: Path, small_sim: Path) -> tuple[Path, str]:
    """A report made through the scripted server, whose server is gone afterwards: (its store, its id)."""
    from simreportd.daemon.cli.local import generate
    from simreportd.daemon.service import Daemon

    from .fake_llm import FakeLLM

    with FakeLLM() as llm:
        config = make_config(tmp_path, llm={"provider": "openai", "base_url": llm.base_url, "model": "scripted"},
                             reports={"auto": False})
        async with Daemon(config, folders=[small_sim]) as daemon:
            await daemon.watcher.check(small_sim)
            report_id = await daemon.reports.request(small_sim.name)
            assert (await generate(daemon, report_id)).report_completed
    return config.store.path, report_id


def send_json(handler: BaseHTTPRequestHandler, value: object) -> None:
    """Answer an http.server request with `value` as JSON (the stand-in servers of the tests)."""
    body = json.dumps(value).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)
