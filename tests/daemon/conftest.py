"""The daemon layer's tests run in this process: a test that needs a real one belongs in tests/stories."""

from __future__ import annotations

import subprocess
from typing import Any

import anyio
import pytest


@pytest.fixture(autouse=True)
def no_process_started(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail a test of this layer that starts a process (a daemon, a command, a fold child), at once: through
    anyio, as the daemon starts its fold child, or through subprocess."""
    def refuse(args: Any, *rest: Any, **options: Any) -> None:
        raise AssertionError(f"a daemon-layer test started a process ({args!r}): move it to tests/stories")

    async def refuse_async(args: Any, *rest: Any, **options: Any) -> None:
        refuse(args)

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(anyio, "open_process", refuse_async)
