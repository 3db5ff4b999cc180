"""Limits on what clients can make the daemon spend: LLM calls for chats, interviews and forced reports.

A chat question or an interview costs model calls (tokens, money, a CPU for minutes on a local
server). Each kind has one `Gate`: at most so many at once in all, so many at once per client
address, and so many a minute per client address. A forced report (MiroFish's `force_regenerate`)
costs dozens: `Regenerations` allows one per simulation per client each interval, and so many an
hour per simulation in all. Over them all, `CallBudget` holds the daemon's model calls to
`[limits] model_calls_per_minute`: a call beyond it waits, and a new chat, interview or forced
report is refused while it is spent. A request beyond a limit is refused at once with
`LimitReached` (HTTP 429 with Retry-After, a websocket `error` frame), never queued behind
the others; the refusals are logged once a period with their count, not once each.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

import anyio

from simreportd.errors import LimitReached

log = logging.getLogger("simreportd.daemon.gates")
LOG_EVERY_S = 10.0
MINUTE_S, HOUR_S = 60.0, 3600.0
FORGET_AFTER_CLIENTS = 1024


class Gate:
    """Admits a request of one kind (`name`) if the totals, the client's share and its rate allow."""

    def __init__(self, name: str, at_once: int, per_client: int, per_minute: int,
                 budget: CallBudget | None = None) -> None:
        self.name, self.at_once, self.per_client, self.per_minute = name, at_once, per_client, per_minute
        self.budget = budget
        self._running: dict[str, int] = {}
        self._recent: dict[str, deque[float]] = {}
        self._refusals = Refusals(name)

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
        if self.budget is not None:
            self.budget.check(f"{self.name}s")
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
        raise self._refusals.refused(f"too many {self.name}s: {why}; try again in {retry_after_s} s", retry_after_s)


class Refusals:
    """The refusals of one kind of request: each a LimitReached, logged once a period with their count."""

    def __init__(self, name: str) -> None:
        self.name, self.count, self.logged = name, 0, float("-inf")

    def refused(self, message: str, retry_after_s: int) -> LimitReached:
        self.count += 1
        now = time.monotonic()
        if now - self.logged >= LOG_EVERY_S:
            log.warning("%s refused: %s (%d refused since the last such line)", self.name, message, self.count)
            self.logged, self.count = now, 0
        return LimitReached(message, retry_after_s)


class Regenerations:
    """Forced reports (`force_regenerate`): of one simulation, one per client each `every_s` seconds and at
    most `per_hour` an hour in all; each also needs the model-call budget not to be spent."""

    def __init__(self, every_s: float, per_hour: int, budget: CallBudget | None = None) -> None:
        self.every_s, self.per_hour, self.budget = every_s, per_hour, budget
        self._last: dict[tuple[str, str], float] = {}  # (client, simulation) -> when it last forced one
        self._recent: dict[str, deque[float]] = {}  # simulation -> when its forced reports began, this hour
        self._refusals = Refusals("forced report")

    def admit(self, client: str, simulation_id: str) -> None:
        """Count one forced report of `simulation_id` for `client`, or raise LimitReached naming the limit."""
        now = time.monotonic()
        last = self._last.get((client, simulation_id))
        if last is not None and now - last < self.every_s:
            wait = int(last + self.every_s - now) + 1
            raise self._refusals.refused(
                f"this client forced a new report of {simulation_id} {int(now - last)} s ago; one is allowed every "
                f"{self.every_s:g} s ([limits] regenerate_every_s): read the one written, or try again in {wait} s",
                wait)
        recent = self._recent.setdefault(simulation_id, deque())
        while recent and recent[0] <= now - HOUR_S:
            recent.popleft()
        if len(recent) >= self.per_hour:
            wait = int(recent[0] + HOUR_S - now) + 1
            raise self._refusals.refused(
                f"{simulation_id} had {self.per_hour} forced reports in the last hour ([limits] "
                f"regenerations_per_hour); read the one written, or try again in {wait} s", wait)
        if self.budget is not None:
            self.budget.check("forced reports")
        recent.append(now)
        self._last[(client, simulation_id)] = now
        if len(self._last) > FORGET_AFTER_CLIENTS:
            self._last = {key: at for key, at in self._last.items() if now - at < self.every_s}
            self._recent = {sim: times for sim, times in self._recent.items() if times and times[-1] > now - HOUR_S}


class CallBudget:
    """`[limits] model_calls_per_minute` (0: none): the daemon's model calls, in all, in any sixty seconds.

    A call beyond it waits for the oldest of the minute to age out (a report being written slows down,
    it does not fail); a new chat, interview or forced report is refused while the budget is spent.
    """

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._started: deque[float] = deque()  # when the calls of the last minute started
        self._lock = anyio.Lock()
        self._refusals = Refusals("model call")

    def _prune(self, now: float) -> None:
        while self._started and self._started[0] <= now - MINUTE_S:
            self._started.popleft()

    def check(self, what: str) -> None:
        """LimitReached, naming the budget, if the last minute's calls have spent it."""
        now = time.monotonic()
        self._prune(now)
        if self.per_minute and len(self._started) >= self.per_minute:
            wait = int(self._started[0] + MINUTE_S - now) + 1
            raise self._refusals.refused(
                f"no new {what} now: the model-call budget of {self.per_minute} calls a minute ([limits] "
                f"model_calls_per_minute) is spent; try again in {wait} s", wait)

    async def acquire(self) -> None:
        """Wait until one more model call fits in the budget, and count it."""
        if not self.per_minute:
            return
        async with self._lock:  # calls start in the order they asked
            while True:
                now = time.monotonic()
                self._prune(now)
                if len(self._started) < self.per_minute:
                    self._started.append(now)
                    return
                await anyio.sleep(self._started[0] + MINUTE_S - now)
