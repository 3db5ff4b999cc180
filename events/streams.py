"""Stream names: one stream per simulation, one per report and one per chat, named here and nowhere else."""

from __future__ import annotations

REPORT_PREFIX = "report-"
SIMULATION_PREFIX = "simulation-"
CHAT_PREFIX = "chat-"


def report_stream(report_id: str) -> str:
    return REPORT_PREFIX + report_id


def simulation_stream(simulation_id: str) -> str:
    return SIMULATION_PREFIX + simulation_id


def is_report_stream(stream: str) -> bool:
    return stream.startswith(REPORT_PREFIX)


def chat_stream(chat_id: str) -> str:
    """A conversation about a completed report: its own stream, so the report's never changes."""
    return CHAT_PREFIX + chat_id
