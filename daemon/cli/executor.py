"""What a CLI command asks of whoever does its work, in one interface: `Executor`.

A command is written once against it. `choose.py` picks the executor: the daemon that holds the store, when
one runs (`HandedOverExecutor`, handover.py), else a Daemon of the command's own (`LocalExecutor`, local.py).
Both do the work through `daemon/actions.py`, so the two cases cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from simreportd.daemon.rebuild import Rebuilt
from simreportd.projections.standing import Standing

Frame = dict[str, Any]
OnStep = Callable[[Frame], None]


class Asker(Protocol):
    """One chat, asked a question at a time."""

    async def open(self) -> str:
        """Open (or check) the chat; its id."""
        ...

    async def ask(self, question: str, on_step: OnStep) -> Frame:
        """The `chat_answer` frame that is `done`, for one question."""
        ...


class Executor(Protocol):
    """The operations of the CLI's commands, whoever performs them."""

    writes_at_once: bool  # a report asked for is written at once (by the running daemon), waited for or not
    served_at: str | None  # the URL of the running daemon's dashboard, if one serves the store

    async def ingest(self, folder: Path, until_complete: bool) -> str:
        """Ingest a simulation folder (and, `until_complete`, follow its run to the end); its simulation id."""
        ...

    async def request_report(self, folder: Path, force: bool, provider: str | None, model: str | None,
                             written_now: bool) -> tuple[str, str]:
        """The report of the folder's run, as `ReportScheduler.ensure`: (its id, `new`, `running` or `completed`)."""
        ...

    async def request_demo_report(self, folder: Path, provider: str | None, model: str | None) -> tuple[str, str]:
        """The demo's report: (its id, `new` or `completed` when an earlier demo wrote it)."""
        ...

    async def resume(self, report_id: str, provider: str | None, model: str | None,
                     overrides: dict[str, Any]) -> str:
        """Resume a failed report; the line saying which writer continues it."""
        ...

    async def fork(self, report_id: str, at: int, provider: str | None, model: str | None) -> str:
        """A new report sharing `report_id`'s history up to `at`; its id."""
        ...

    async def rebuild(self) -> Rebuilt:
        """Fold the read models again from the log; digests before and after."""
        ...

    async def interview(self, target: str, agent_id: int, question: str, platform: str | None) -> dict[str, Any]:
        """An agent's answer (`agent_id`, `mode`, `note`, `answer`)."""
        ...

    async def export(self, report_id: str, into: Path) -> Path:
        """Write the report's MiroFish folder into `into`; the folder."""
        ...

    async def follow(self, report_id: str) -> Standing:
        """The report written to its end, its progress printed; where it stands then."""
        ...

    async def state(self, report_id: str) -> Standing:
        """Where the report stands (standing.py's rule, as every other reader of a report)."""
        ...

    def asker(self, report_id: str, chat_id: str | None) -> Asker:
        """A chat about the report (a new one, or `chat_id` continued)."""
        ...
