"""Stream names: one stream per simulation and one per report, named here and nowhere else."""

from __future__ import annotations

REPORT_PREFIX = "report-"
SIMULATION_PREFIX = "simulation-"


def report_stream(report_id: str) -> str:
    return REPORT_PREFIX + report_id


def simulation_stream(simulation_id: str) -> str:
    return SIMULATION_PREFIX + simulation_id


def is_report_stream(stream: str) -> bool:
    return stream.startswith(REPORT_PREFIX)
