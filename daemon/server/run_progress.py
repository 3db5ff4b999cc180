"""Live `simulation_progress` notifications: where a run being ingested stands, at most once a second a run
(docs/protocol.md#websocket).

The broadcaster shows each read of the log to `SimulationProgress.saw`; a run's rounds ended since its
last frame go out at once if that frame is a second old, else when it is (so the last rounds before a
pause are not held back until the run's next line). Progress is live only: a client catching up from
`after` gets each run's `simulation_discovered` and `simulation_completed`, and the read models say where
it stands (`/api/simulations`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from typing import Any, Protocol

import anyio

from simreportd.events.codec import Recorded
from simreportd.events.models import PlatformFinished, RoundEnded

from .protocol import Subscribe

EVERY_S = 1.0  # the least time between two progress frames of one run
PROGRESSING = frozenset({RoundEnded.TYPE, PlatformFinished.TYPE})


class Listener(Protocol):
    """A websocket session as progress sees it (`fanout.Session`)."""

    sub: Subscribe | None
    live: bool

    def push(self, frame: dict[str, Any]) -> None: ...


def wants(sub: Subscribe | None, simulation_id: str) -> bool:
    """Whether a subscription gets the run's notifications (a report's filter does not)."""
    return sub is not None and "notifications" in sub.topics and sub.report_id is None \
        and sub.simulation_id in (None, simulation_id)


class SimulationProgress:
    """Where each run stands (as far as this daemon has seen it live), whether that is unsent, and when each
    run's last frame went."""

    def __init__(self, listeners: Iterable[Listener]) -> None:
        self.listeners = listeners
        self.runs: dict[str, dict[str, Any]] = {}  # simulation id -> its latest frame
        self.waiting: set[str] = set()  # runs whose latest frame is not sent yet
        self.sent_at: dict[str, float] = {}
        self.due = anyio.Event()

    def saw(self, batch: list[Recorded]) -> None:
        """Note the rounds a read of the log ended; send the frames whose second has passed."""
        for recorded in batch:
            if recorded.type not in PROGRESSING:
                continue
            event = recorded.event
            assert isinstance(event, RoundEnded | PlatformFinished)
            frame = self.runs.get(event.simulation_id)
            if frame is None or frame["generation"] != event.generation:
                frame = self.runs[event.simulation_id] = {
                    "type": "simulation_progress", "simulation_id": event.simulation_id,
                    "generation": event.generation, "rounds": {}, "finished": []}
            frame["position"] = recorded.position
            if isinstance(event, RoundEnded):
                frame["rounds"][event.platform] = event.round
            elif event.platform not in frame["finished"]:
                frame["finished"].append(event.platform)
            self.waiting.add(event.simulation_id)
        if self.waiting:
            self.send_due()
            self.due.set()

    def send_due(self) -> float:
        """Send every waiting frame whose run's last frame is a second old; the seconds until the next is due."""
        now, next_in = time.monotonic(), math.inf
        for simulation_id in sorted(self.waiting):
            wait = self.sent_at.get(simulation_id, -math.inf) + EVERY_S - now
            if wait > 0:
                next_in = min(next_in, wait)
                continue
            self.waiting.discard(simulation_id)
            self.sent_at[simulation_id] = now
            frame = self.runs[simulation_id]
            for listener in list(self.listeners):
                if listener.live and wants(listener.sub, simulation_id):
                    listener.push(frame)
        return next_in

    async def run(self) -> None:
        """Send the frames held back when their second has passed, until cancelled."""
        while True:
            await self.due.wait()
            self.due = anyio.Event()
            while math.isfinite(next_in := self.send_due()):
                await anyio.sleep(next_in)
