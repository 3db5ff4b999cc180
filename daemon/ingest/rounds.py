"""Which MiroFish round an OASIS database row belongs to, when the databases are all a folder holds
(docs/formats.md#oasis-databases).

Twitter's `trace.created_at` is OASIS's clock, which counts environment steps: `env.step` moves it by one
(oasis `environment/env.py:196-198`). MiroFish's runner steps the environment in round 0 only when the config
has seed posts (`backend/scripts/run_parallel_simulation.py:1171-1207`), and in round r (1..N) only when some
agent is drawn active (:1228-1251), which needs an agent whose `active_hours` hold the round's simulated hour
and whose `activity_level` is above 0 (:1040-1085). So the k-th step is the k-th round that can step. A round
that could have stepped but drew no agent cannot be told from the databases: the rounds after it read one
early. Reddit's `created_at` is a scaled wall-clock time: its rounds stay a guess by `minutes_per_round`.
Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import values

# MiroFish's defaults where its config is silent (run_parallel_simulation.py:1047-1071 and 1214-1216)
ACTIVE_HOURS = range(8, 23)
PEAK_HOURS, OFF_PEAK_HOURS = (9, 10, 11, 14, 15, 20, 21, 22), (0, 1, 2, 3, 4, 5)


@dataclass(frozen=True)
class RoundClock:
    """How a database row's `created_at` turns into its round: `stepped` are the rounds that step the
    environment, in order (empty: unknown, the clock is the round); `minutes_per_round` paces Reddit's."""

    minutes_per_round: int = 60
    stepped: tuple[int, ...] = ()

    def round_of_step(self, step: int) -> int:
        """The round of Twitter's k-th environment step (beyond the rounds foreseen: one a step)."""
        if not self.stepped or step < 0:
            return max(0, step)
        if step < len(self.stepped):
            return self.stepped[step]
        return self.stepped[-1] + step - len(self.stepped) + 1


UNKNOWN = RoundClock()  # no config: the clock is the round


def clock_of(config: dict[str, Any], total_rounds: int = 0) -> RoundClock:
    """The round clock of a simulation_config.json; `total_rounds` (run_state.json's, which a runner's
    `--max-rounds` cuts) overrides the config's hours."""
    time_config = _dict(config.get("time_config"))
    minutes = _whole(time_config.get("minutes_per_round"), 30)
    total = total_rounds or _whole(time_config.get("total_simulation_hours"), 72) * 60 // minutes
    agents = [a for a in config.get("agent_configs") or [] if isinstance(a, dict)]
    awake = _awake_hours(agents, time_config)
    seeded = bool(_dict(config.get("event_config")).get("initial_posts"))
    rounds = [r for r in range(1, min(total, 1_000_000) + 1) if (r - 1) * minutes // 60 % 24 in awake]
    return RoundClock(minutes, (0,) * seeded + tuple(rounds))


def _awake_hours(agents: list[dict[str, Any]], time_config: dict[str, Any]) -> set[int]:
    """The simulated hours in which a round can draw an agent."""
    most = _number(time_config.get("agents_per_hour_max"), 20)
    most = max(most, _number(time_config.get("agents_per_hour_min"), 5))
    awake: set[int] = set()
    for agent in agents:
        if _number(agent.get("activity_level"), 0.5) <= 0:
            continue
        hours = agent.get("active_hours")
        awake.update(h for h in (hours if isinstance(hours, list) else ACTIVE_HOURS) if isinstance(h, int))
    return {h for h in awake if int(most * _multiplier(h, time_config)) >= 1}


def _multiplier(hour: int, time_config: dict[str, Any]) -> float:
    if hour in _hours(time_config.get("peak_hours"), PEAK_HOURS):
        return _number(time_config.get("peak_activity_multiplier"), 1.5)
    if hour in _hours(time_config.get("off_peak_hours"), OFF_PEAK_HOURS):
        return _number(time_config.get("off_peak_activity_multiplier"), 0.3)
    return 1.0


def _hours(value: Any, default: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(h for h in value if isinstance(h, int)) if isinstance(value, list) else default


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _number(value: Any, default: float) -> float:
    """A number of the config, bounded so that no product of two overflows; else MiroFish's default."""
    found = values.number(value)
    return float(found) if found is not None and abs(found) < 1e9 else default


def _whole(value: Any, default: int) -> int:
    """A positive whole number of the config, else MiroFish's default."""
    found = values.int64(value)
    return found if found is not None and 0 < found < 10**9 else default
