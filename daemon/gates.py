"""Limits on what clients can make the daemon spend: LLM calls for chats and interviews.

A chat question or an interview costs model calls (tokens, money, a CPU for minutes on a local
server). Each kind has one `Gate`: at most so many at once in all, so many at once per client
address, and so many a minute per client address. A request beyond a limit is refused at once
with `LimitReached` (HTTP 429 with Retry-After, a websocket `error` frame), never queued behind
the others; the refusals are logged once a period with their count, not once each.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

from simreportd.errors import LimitReached

log = logging.getLogger("simreportd.daemon.gates")
LOG_EVERY_S = 10.0
MINUTE_S = 60.0
FORGET_AFTER_CLIENTS = 1024


class Gate:
    """Admits a request of one kind (`name`) if the totals, the client's share and its rate allow."""

    def __init__(self, name: str, at_once: int, per_client: int, per_minute: int) -> None:
        self.name, self.at_once, self.per_client, self.per_minute = name, at_once, per_client, per_minute
        self._running: dict[str, int] = {}
        self._recent: dict[str, deque[float]] = {}
        self._refused, self._logged = 0, float("-inf")

    @property
    def running(self) -> int:
        return sum(self._running.values())

    @contextmanager
    def admit(self, client: str) -> Iterator[None]:
        """Hold one of the kind's places for `client` while the block runs; LimitReached if there is none."""
        self._check(client, time.monotonic())
        self._running[client] = self._running.get(client, 0) + 1
        try:
            yield
        finally:
            self._running[client] -= 1
            if not self._running[client]:
                del self._running[client]

    def _check(self, client: str, now: float) -> None:
        recent = self._recent.setdefault(client, deque())
        while recent and recent[0] <= now - MINUTE_S:
            recent.popleft()
        if self.running >= self.at_once:
            self._refuse(f"{self.at_once} {self.name}s are being answered", 5)
        if self._running.get(client, 0) >= self.per_client:
            self._refuse(f"this client has {self.per_client} {self.name}(s) being answered; wait for an answer", 5)
        if len(recent) >= self.per_minute:
            self._refuse(f"this client asked {self.per_minute} {self.name}s in the last minute",
                         int(recent[0] + MINUTE_S - now) + 1)
        recent.append(now)
        if len(self._recent) > FORGET_AFTER_CLIENTS:  # clients quiet for a minute are forgotten
            self._recent = {c: r for c, r in self._recent.items() if r and r[-1] > now - MINUTE_S}

    def _refuse(self, why: str, retry_after_s: int) -> None:
        self._refused += 1
        now = time.monotonic()
        if now - self._logged >= LOG_EVERY_S:
            log.warning("%s refused: %s (%d refused since the last such line)", self.name, why, self._refused)
            self._logged, self._refused = now, 0
        raise LimitReached(f"too many {self.name}s: {why}; try again in {retry_after_s} s", retry_after_s)
