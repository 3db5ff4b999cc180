"""What a user meets after the demo works, through the real CLI: one report per request, quiet progress,
errors that name what to fix, help on every option."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simreportd.simulator.simulate import simulate

from .conftest import write_config
from .fake_llm import FakeLLM
from .test_cli import simreportd

pytestmark = pytest.mark.slow


def openai_config(root: Path, base_url: str, auto: bool = True) -> Path:
    """A config whose writer is the OpenAI-compatible server at `base_url`, failing at its first error."""
    return write_config(root, f'[llm]\nprovider = "openai"\nbase_url = "{base_url}"\nmodel = "scripted"\n'
                              'max_retries = 0\n', auto=auto)


def failed_report(root: Path) -> tuple[Path, str]:
    """A completed run whose report failed (its server answered 503): (config.toml, the report's id)."""
    simulate(root / "sims" / "sim_one", agents=12, rounds=4, seed=3)
    with FakeLLM() as llm:
        llm.unavailable_for = lambda body: True
        config = openai_config(root, llm.base_url)
        result = simreportd("-c", str(config), "report", str(root / "sims" / "sim_one"), "--wait")
    assert result.returncode == 1 and "failed during" in result.stderr, result.stderr
    return config, result.stdout.strip().splitlines()[-1]


def reports_in(config: Path) -> list[str]:
    status = simreportd("-c", str(config), "status", "--json")
    return [r["report_id"] for r in json.loads(status.stdout)["reports"]]


def test_resume_without_a_daemon_writes_only_the_report_resumed(tmp_path: Path) -> None:
    config, report_id = failed_report(tmp_path)
    resumed = simreportd("-c", str(config), "resume", report_id, "--provider", "offline")
    assert resumed.returncode == 0, resumed.stderr
    assert reports_in(config) == [report_id]  # no automatic report of the run started beside it
    assert resumed.stdout.strip() == report_id
