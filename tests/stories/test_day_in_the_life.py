"""Replay, resume and fork through ordinary use: the CLI's own entry point, real files, the scripted LLM
over real HTTP, and a final replay in another process whose LLM base URL is a closed port."""

from __future__ import annotations

import logging
import os
import socket
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from simreportd.daemon.cli.main import main
from simreportd.simulator.simulate import simulate

from ..conftest import PYTHON, TIMEOUT
from ..fake_llm import FakeLLM


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Iterator:
    """Run `simreportd ARGS` in this process; return (exit code, stdout, stderr). Logging is put back after."""
    logger = logging.getLogger("simreportd")
    saved = logger.handlers[:], logger.level, logger.propagate

    def run(*args: str) -> tuple[int, str, str]:
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err

    yield run
    logger.handlers[:], logger.level, logger.propagate = saved[0], saved[1], saved[2]


def use_scripted_llm(monkeypatch: pytest.MonkeyPatch, llm: FakeLLM) -> None:
    """[llm] on the scripted server with fast retries (2 attempts per call); reports only when asked for."""
    for key, value in (("LLM_BASE_URL", llm.base_url), ("LLM_MODEL", "scripted"), ("LLM_MAX_RETRIES", "1"),
                       ("LLM_RETRY_BACKOFF_S", "0"), ("REPORTS_AUTO", "false")):
        monkeypatch.setenv(f"SIMREPORTD_{key}", value)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def positions(root: Path, report_id: str, kind: str) -> list[int]:
    with sqlite3.connect(root / "state" / "events.sqlite3") as conn:
        return [r[0] for r in conn.execute("SELECT position FROM events WHERE stream = ? AND type = ? ORDER BY position",
                                           (f"report-{report_id}", kind))]


def models_asked(root: Path, report_id: str, after: int) -> set[str]:
    with sqlite3.connect(root / "state" / "events.sqlite3") as conn:
        return {r[0] for r in conn.execute("SELECT json_extract(data, '$.model') FROM events WHERE stream = ?"
                                           " AND type = 'LLMRequested' AND position > ?", (f"report-{report_id}", after))}


def replay_all_offline(config: Path, port: int) -> subprocess.CompletedProcess:
    """`replay --all --verify` in another process, its LLM pointed at a port nothing listens on."""
    env = {**os.environ, "SIMREPORTD_LLM_PROVIDER": "openai", "SIMREPORTD_LLM_BASE_URL": f"http://127.0.0.1:{port}/v1"}
    return subprocess.run([PYTHON, "-m", "simreportd", "-c", str(config), "replay", "--all", "--verify"],
                          capture_output=True, text=True, timeout=TIMEOUT * 2, env=env)


def test_a_day_in_the_life(tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "day"
    code, out, err = cli("demo", root)
    assert code == 0, err
    scripted_env = FakeLLM().__enter__()
    use_scripted_llm(monkeypatch, scripted_env)
    demo_id, config = out.split()[-1], root / "config.toml"
    folder = tmp_path / "sim_small"
    simulate(folder, agents=12, rounds=6, seed=3)
    code, out, err = cli("-c", config, "report", folder, "--wait")
    assert code == 0, err
    report_id = out.split()[-1]
    for agent, question in ((1, "Why did you post that?"), (2, "Who convinced you?"), (3, "What now?")):
        code, out, err = cli("-c", config, "interview", report_id, "--agent", agent, question)
        assert code == 0 and out.strip(), err

    mid = positions(root, report_id, "SectionCompleted")[1]
    scripted_env.faults.extend([("status", 503)] * 2)  # the LLM is down for the fork's first call
    code, out, err = cli("-c", config, "fork", report_id, "--at", mid, "--model", "other")
    assert code == 1 and "failed" in err and "simreportd resume" in err, err
    fork_id = out.split()[-1]
    assert "continuing with openai model 'other'" in err

    port = int(scripted_env.base_url.split(":")[-1].split("/")[0])
    scripted_env.__exit__(None, None, None)  # and now it is gone
    code, out, err = cli("-c", config, "resume", fork_id)
    assert code == 1 and "cannot connect" in err and f"resume {fork_id} --provider offline" in err, err
    with FakeLLM(port=port) as back:
        code, out, err = cli("-c", config, "resume", fork_id)
    assert code == 0 and "Report ready" in err, err
    assert "openai model 'other', the writer it was written with" in err
    resumed_at = positions(root, fork_id, "ReportResumed")[-1]
    writing = [r for r in back.requests if "You answer as one simulated" not in r["messages"][0]["content"]]
    assert models_asked(root, fork_id, resumed_at) == {"other"} == {r["model"] for r in writing}
    answered = positions(root, fork_id, "LLMResponded")
    assert len(writing) == len([p for p in answered if p > resumed_at])  # every answer since came from it

    code, out, err = cli("-c", config, "rebuild")
    assert code == 0 and "CHANGED" not in out, out

    result = replay_all_offline(config, closed_port())
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {line.split()[0]: line.split()[-1] for line in result.stdout.splitlines()[1:]}  # the table, once
    assert rows == {demo_id: "reproduced", report_id: "reproduced", fork_id: "reproduced"}, result.stdout
    assert "connect" not in result.stderr.lower(), result.stderr  # no call was even tried
