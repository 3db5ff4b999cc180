"""What the server and the handed-over commands need of a running daemon, as a protocol.

`daemon/service.py`'s `Daemon` provides it; the server (daemon/server/) and the writing commands
(actions.py) take a `Host` instead of the Daemon itself, so neither imports service.py, which
imports the server: the imports between daemon/ modules form no circle (docs/architecture.md#layers).
"""

from __future__ import annotations

from typing import Protocol

from simreportd.agent.chat.chat_runner import ChatRunner
from simreportd.agent.report.report_runner import ReportRunner
from simreportd.events import EventLog
from simreportd.projections.runner import ProjectionRunner

from .config import Config
from .exporter import Exporter
from .gates import Gate, Regenerations
from .ingest.watcher import Watcher
from .interviews.interviewer import Interviewer
from .reports import ReportScheduler


class Host(Protocol):
    """A daemon's parts, open and running: read-only here (the daemon replaces some on a reload)."""

    @property
    def config(self) -> Config: ...

    @property
    def store(self) -> EventLog: ...

    @property
    def views(self) -> ProjectionRunner: ...

    @property
    def reports(self) -> ReportScheduler: ...

    @property
    def runner(self) -> ReportRunner: ...

    @property
    def chats(self) -> ChatRunner: ...

    @property
    def interviews(self) -> Interviewer: ...

    @property
    def watcher(self) -> Watcher: ...

    @property
    def exporter(self) -> Exporter: ...

    @property
    def chat_gate(self) -> Gate: ...

    @property
    def interview_gate(self) -> Gate: ...

    @property
    def regenerations(self) -> Regenerations: ...
