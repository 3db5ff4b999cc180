"""The camps from the fold's tally per agent and argument (`sim_sayings`) are those a full scan of every
statement finds, and the tally comes out the same however the log is folded (rebuild == incremental)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simreportd.agent.tools.camps import camps_from_sayings
from simreportd.daemon.ingest.ingestor import SimulationIngestor
from simreportd.events import MemoryEventStore
from simreportd.projections import runner, simulation_queries
from simreportd.projections.catalogue import projections
from simreportd.projections.sqlite import reading
from simreportd.simulator.simulate import simulate

from .. import camps_full_scan


@pytest.mark.anyio
async def test_the_camps_from_the_tally_are_those_a_full_scan_of_the_statements_finds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "sims" / "sim_camps"
    simulate(folder, agents=40, rounds=150, seed=11)
    whole, paged = tmp_path / "whole.sqlite3", tmp_path / "paged.sqlite3"
    async with MemoryEventStore() as store:
        await SimulationIngestor(store, folder).check()
        async with runner.ProjectionRunner(store, whole, projections()) as views:
            await views.catch_up()
            digest = await views.digest()
        monkeypatch.setattr(runner, "PAGE", 37)  # many small batches, as a live run folds
        monkeypatch.setattr(runner, "GROUP_PAGES", 1)
        async with runner.ProjectionRunner(store, paged, projections()) as views:
            await views.catch_up()
            assert (await views.digest())["simulation"] == digest["simulation"]
    key = (folder.name, 1)
    with reading(whole) as conn:
        tally = camps_from_sayings(simulation_queries.sayings(conn, key))
        said = camps_full_scan.statements(conn, key)
        rows = conn.execute("SELECT count(*) FROM sim_sayings").fetchone()[0]
    assert as_scanned(tally) == camps_full_scan.camps(said)
    assert len(tally["arguments"]) >= 2 and tally["stance_shifts"], tally  # something to get wrong
    assert rows < len(said) / 2  # a row per agent and argument, not per statement


def sayings_of(said: list[camps_full_scan.Statement]) -> list[tuple[Any, ...]]:
    """Statements (in run order) added up per agent and argument as the fold does, as `sayings` rows."""
    rows: dict[tuple[int, str], list[Any]] = {}
    for position, s in enumerate(said):
        at, post = (s.round, s.ref, position), s.kind != "comment"
        row = rows.setdefault((s.agent, s.key), [s.name, s.stance, 0, (*at, s.content), at, 0, (None,) * 4])
        row[2], row[4], row[5] = row[2] + 1, at, row[5] + post
        row[6] = (*at, s.content) if post and row[6][0] is None else row[6]
    return [(agent, key, name, stance, n, *first, *last, posts, *post)
            for (agent, key), (name, stance, n, first, last, posts, post) in rows.items()]


STANCES = ["for", "against", "neutral", ""]
SAID = st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3), st.integers(0, 6),
                          st.sampled_from(["post", "quote", "comment"])), max_size=60)


@settings(max_examples=400, deadline=None)
@given(SAID, st.lists(st.sampled_from(STANCES), min_size=6, max_size=6))
def test_any_statements_make_the_same_camps_read_one_by_one_or_added_up_per_agent_and_argument(
        statements: list[tuple[int, int, int, str]], stances: list[str]) -> None:
    said = sorted((camps_full_scan.Statement(kind, r, agent, f"A{agent}", stances[agent], f"k{key}",
                                             f"post:x:{i:03}", f"text {i}")
                   for i, (agent, key, r, kind) in enumerate(statements)), key=lambda s: (s.round, s.ref))
    assert as_scanned(camps_from_sayings(sayings_of(said))) == camps_full_scan.camps(said)


def as_scanned(camps: dict[str, Any]) -> dict[str, Any]:
    """What the full scan computes of the camps: the arguments without their rounds, and the side changes."""
    return {"arguments": {camp: [{k: v for k, v in a.items() if k != "rounds"} for a in top]
                          for camp, top in camps["arguments"].items()}, "stance_shifts": camps["stance_shifts"]}
