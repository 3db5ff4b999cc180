"""Rounds from the databases alone, numbered as MiroFish numbers them (daemon/ingest/rounds.py).

The folders come from `simreportd.simulator.mirofish_folder`, which steps OASIS's clock as its runner does (round 0
only for seed posts, a round only when an agent is drawn: run_parallel_simulation.py:1171-1251); every
assertion is checked against that writer's ground truth.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from simreportd.daemon.ingest.ingestor import SimulationIngestor
from simreportd.daemon.ingest.rounds import RoundClock, clock_of
from simreportd.events.memory import MemoryEventStore
from simreportd.events.models import PlatformFinished, SimulationCompleted
from simreportd.simulator.mirofish_folder import write_mirofish

pytestmark = pytest.mark.anyio


def databases_only(folder: Path) -> None:
    for platform in ("twitter", "reddit"):
        shutil.rmtree(folder / platform)


@pytest.mark.parametrize("seeded", [True, False])
async def test_twitter_rounds_after_a_sleeping_hour_keep_their_numbers(tmp_path: Path, seeded: bool) -> None:
    folder = tmp_path / "sim_db"
    truth = write_mirofish(folder, seed=2, rounds=8, asleep=frozenset({2, 5}), seeded=seeded)  # rounds 3, 6 idle
    databases_only(folder)
    async with MemoryEventStore() as store:
        await SimulationIngestor(store, folder).check()
        events = await store.read_stream("simulation-sim_db")
    got = Counter((e.data["round"], e.data["agent_id"], e.data["action_type"]) for e in events
                  if e.type == "AgentActed" and e.data["platform"] == "twitter")
    real = Counter((a["round"], a["agent_id"], a["action_type"]) for a in truth["platforms"]["twitter"]["actions"])
    assert got == real and {r for r, _, _ in got} & {3, 6} == set()
    assert (0 in {r for r, _, _ in got}) is seeded
    finished = [e.event for e in events if e.type == PlatformFinished.TYPE]
    assert sorted((f.platform, f.all_rounds_ran, f.total_rounds) for f in finished) == \
        [("reddit", True, 8), ("twitter", True, 8)]
    completed = [e.event for e in events if e.type == SimulationCompleted.TYPE]
    assert [c.all_rounds_ran for c in completed] == [True]


def test_a_round_steps_only_in_an_hour_some_agent_is_awake_in() -> None:
    config = {"time_config": {"total_simulation_hours": 6, "minutes_per_round": 60},
              "agent_configs": [{"agent_id": 0, "active_hours": [0, 1, 4]},
                                {"agent_id": 1, "active_hours": [2], "activity_level": 0}],
              "event_config": {"initial_posts": []}}
    assert clock_of(config).stepped == (1, 2, 5)  # round r is hour r-1; agent 1 never acts
    seeded = clock_of({**config, "event_config": {"initial_posts": [{"content": "x"}]}})
    assert [seeded.round_of_step(k) for k in range(5)] == [0, 1, 2, 5, 6]  # past the foreseen: one a step
    assert clock_of(config, total_rounds=2).stepped == (1, 2)  # run_state's total cuts the config's hours


def test_off_peak_hours_that_can_draw_no_agent_step_nothing() -> None:
    config = {"time_config": {"total_simulation_hours": 3, "minutes_per_round": 60, "agents_per_hour_min": 1,
                              "agents_per_hour_max": 3, "off_peak_hours": [1], "off_peak_activity_multiplier": 0.3},
              "agent_configs": [{"agent_id": 0, "active_hours": [0, 1, 2]}]}
    assert clock_of(config).stepped == (1, 3)  # int(3 * 0.3) is 0 agents in hour 1


def test_with_no_config_the_clock_is_the_round() -> None:
    assert [RoundClock().round_of_step(k) for k in (0, 3)] == [0, 3]


def test_a_hostile_config_gets_mirofish_defaults_not_an_overflow() -> None:
    config = {"time_config": {"total_simulation_hours": 10**30, "minutes_per_round": "60", "agents_per_hour_max": 1e308,
                              "peak_activity_multiplier": 1e308, "peak_hours": "all"},
              "agent_configs": [{"agent_id": 0, "active_hours": [9, "x", None], "activity_level": True}, "nope"],
              "event_config": []}
    clock = clock_of(config)
    assert clock.minutes_per_round == 30 and clock.stepped[:2] == (19, 20)  # 72 h of 30-minute rounds; hour 9
