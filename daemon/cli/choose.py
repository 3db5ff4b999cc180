"""Which executor does a command's work: the daemon that holds the store when one runs, else this process."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from simreportd.daemon.config import Config
from simreportd.daemon.service import Daemon

from .executor import Executor
from .handover import HandedOverExecutor, running_daemon
from .local import LocalExecutor


@contextlib.asynccontextmanager
async def executor_for(config: Config, command: str, folders: Sequence[Path] = ()) -> AsyncIterator[Executor]:
    """The running daemon's executor, or a Daemon of this command's own (watching `folders`) for its length."""
    if holder := running_daemon(config):
        yield HandedOverExecutor(holder, config)
        return
    async with Daemon(config, folders=folders, command=command) as daemon, contextlib.AsyncExitStack() as lifetime:
        yield LocalExecutor(daemon, lifetime)
