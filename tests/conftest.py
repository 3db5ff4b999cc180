"""Shared fixtures: the asyncio backend, timeouts from one place, real files in tmp_path."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# Every wait in the suite uses this bound: generous on a loaded 2-core CI machine, and a
# condition is always what ends the wait, never the clock.
TIMEOUT = float(os.environ.get("SIMREPORTD_TEST_TIMEOUT", "60"))
PYTHON = sys.executable


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "events.sqlite3"
