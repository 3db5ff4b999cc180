"""Every read model the daemon keeps, in the order they are folded."""

from __future__ import annotations

from .projection import Projection
from .report import ReportView
from .simulation import SimulationModel
from .trace import TraceView


def projections() -> list[Projection]:
    return [SimulationModel(), ReportView(), TraceView()]
