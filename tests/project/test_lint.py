"""The codebase passes its linters: ruff over everything, mypy over the real package structure
(strict on events/, projections/, agent/ and daemon/; see pyproject.toml and .ci/typecheck)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(*command: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHON": sys.executable}  # the interpreter running the tests has the packages
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)


def test_ruff_finds_nothing() -> None:
    result = run(sys.executable, "-m", "ruff", "check", "--no-cache", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_finds_nothing() -> None:
    result = run("bash", ".ci/typecheck", "--no-incremental")
    assert result.returncode == 0, result.stdout + result.stderr
