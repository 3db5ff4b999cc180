"""Stream names: one stream per simulation, one per report and one per chat, named here and nowhere else."""

from __future__ import annotations

REPORT_PREFIX = "report-"
SIMULATION_PREFIX = "simulation-"
CHAT_PREFIX = "chat-"


def report_stream(report_id: str) -> str:
    return REPORT_PREFIX + report_id


def simulation_stream(simulation_id: str) -> str:
    return SIMULATION_PREFIX + simulation_id


def simulation_id_of(stream: str) -> str:
    """The simulation a simulation stream belongs to: its name says it, so an action's data need not."""
    if not stream.startswith(SIMULATION_PREFIX):
        raise ValueError(f"{stream!r} is not a simulation stream")
    return stream.removeprefix(SIMULATION_PREFIX)


def is_report_stream(stream: str) -> bool:
    return stream.startswith(REPORT_PREFIX)


def report_id_of(stream: str) -> str:
    """The report a report stream belongs to: its name says it, so no event needs decoding to tell."""
    if not is_report_stream(stream):
        raise ValueError(f"{stream!r} is not a report stream")
    return stream.removeprefix(REPORT_PREFIX)


def chat_stream(chat_id: str) -> str:
    """A conversation about a completed report: its own stream, so the report's never changes."""
    return CHAT_PREFIX + chat_id
