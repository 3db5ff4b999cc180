"""The simulation fold's memory of authors and names (projections/authors.py): the same rows as the file's
subqueries give, and forgotten whenever the file holds folds it did not see."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from simreportd.daemon.ingest.ingestor import SimulationIngestor
from simreportd.events import MemoryEventStore
from simreportd.events.models import AgentActed, SimulationDiscovered
from simreportd.projections import authors as authors_module
from simreportd.projections import runner
from simreportd.projections.authors import UNKNOWN, Authors
from simreportd.projections.catalogue import projections
from simreportd.projections.simulation import SimulationModel

from .test_folds import recorded, table_rows


def test_memory_says_nothing_of_a_generation_it_did_not_see_begin_and_the_first_post_wins() -> None:
    authors = Authors()
    assert authors.author(("s", 1), "twitter", 1) is UNKNOWN
    authors.started(("s", 1), [{"agent_id": 0, "name": "Ada"}, {"agent_id": 1, "name": "Bo"},
                               {"agent_id": 2, "name": "Ada"}, {"agent_id": 0, "name": "Ada"}])
    assert authors.named(("s", 1), "Ada") is None and authors.named(("s", 1), "Bo") == 1  # Ada is two agents
    for post_id, agent in [(5, 1), (5, 0), (10**12, 2), (10**12, 1), (-3, 1)]:
        authors.posted(("s", 1), "twitter", post_id, agent)
    assert [authors.author(("s", 1), "twitter", i) for i in (5, 10**12, -3, 6, None)] == [1, 2, 1, None, None]
    assert authors.author(("s", 1), "twitter", "5") is UNKNOWN  # SQL compares it as a number: SQL decides
    authors.forget()
    assert authors.author(("s", 1), "twitter", 5) is UNKNOWN and authors.named(("s", 1), "Ada") is UNKNOWN


def test_past_its_bound_memory_lets_go_of_the_generations_it_holds_for_good(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(authors_module, "MAX_POSTS", 3)
    authors = Authors()
    authors.started(("s", 1), [{"agent_id": 0, "name": "Ada"}])
    for post_id in range(3):
        authors.posted(("s", 1), "twitter", post_id, 0)
    assert authors.author(("s", 1), "twitter", 2) == 0
    authors.posted(("s", 1), "twitter", 3, 0)
    authors.started(("s", 1), [{"agent_id": 0, "name": "Ada"}])  # never held again, even if told it begins
    assert authors.author(("s", 1), "twitter", 0) is UNKNOWN and authors.named(("s", 1), "Ada") is UNKNOWN
    authors.started(("s", 2), [{"agent_id": 0, "name": "Ada"}])  # a generation that begins later is held
    assert authors.named(("s", 2), "Ada") == 0


@pytest.mark.parametrize("bound", [2, 50_000])
def test_edges_fold_from_memory_to_the_rows_the_files_subqueries_give(bound: int,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(authors_module, "MAX_POSTS", bound)
    agents = [{"agent_id": 0, "name": "Ada"}, {"agent_id": 1, "name": "Bo"}, {"agent_id": 2, "name": "Ada"},
              {"agent_id": 0, "name": "Ada"}, {"agent_id": 3, "name": 7}]
    def act(agent: int, kind: str, **args: object) -> AgentActed:
        return AgentActed(simulation_id="p", generation=1, platform="twitter", round=1, agent_id=agent,
                          agent_name="", action_type=kind, action_args=args)
    actions = [act(1, "CREATE_POST", post_id=4, content="a"), act(2, "CREATE_POST", post_id=4, content="b"),
               act(0, "LIKE_POST", post_id=4, post_author_name="Bo"),
               act(1, "FOLLOW", target_user_name="Ada"), act(1, "FOLLOW", target_user_name="7"),
               act(2, "REPOST", post_id=10**15, original_author_name="Bo"),
               act(3, "CREATE_POST", post_id=10**15, content="c"), act(0, "LIKE_POST", post_id=10**15)]
    model = SimulationModel()
    events = recorded([SimulationDiscovered(simulation_id="p", generation=1, folder="/p", agents=agents), *actions],
                      "simulation-p")
    one_by_one, batched = sqlite3.connect(":memory:"), sqlite3.connect(":memory:")
    for conn in (one_by_one, batched):
        conn.executescript(model.schema)
    for r in events:
        runner._execute(one_by_one, model.apply(r))
    runner._execute(batched, model.apply_batch(events))
    assert table_rows(batched, model) == table_rows(one_by_one, model)
    targets = [t for (t,) in batched.execute("SELECT dst_agent FROM sim_edges ORDER BY position")]
    assert targets == [1, None, 3, 1, 3]  # the first post's author; Ada: two agents, so neither; "7": 3


def test_a_post_id_in_text_names_no_post_in_the_batch_fold_as_in_the_fold_of_one_event() -> None:
    agents = [{"agent_id": 0, "name": "Ada"}, {"agent_id": 1, "name": "Bo"}, {"agent_id": 2, "name": "Cy"}]
    def act(agent: int, kind: str, **args: object) -> AgentActed:
        return AgentActed(simulation_id="p", generation=1, platform="twitter", round=1, agent_id=agent,
                          agent_name="", action_type=kind, action_args=args)
    events = recorded([SimulationDiscovered(simulation_id="p", generation=1, folder="/p", agents=agents),
                       act(1, "CREATE_POST", post_id=4, content="a"),
                       act(0, "LIKE_POST", post_id="4", post_author_name="Cy"),
                       act(0, "REPOST", post_id=4, original_author_name="Cy")], "simulation-p")
    model = SimulationModel()
    one_by_one, batched = sqlite3.connect(":memory:"), sqlite3.connect(":memory:")
    for conn in (one_by_one, batched):
        conn.executescript(model.schema)
    for r in events:
        runner._execute(one_by_one, model.apply(r))
    runner._execute(batched, model.apply_batch(events))  # post 4 is in the run, not yet in the file
    assert table_rows(batched, model) == table_rows(one_by_one, model)
    edges = batched.execute("SELECT kind, dst_agent, target_ref FROM sim_edges ORDER BY position").fetchall()
    assert edges == [("like", 2, None), ("repost", 1, "post:twitter:4")]  # "4": the agent named; 4: its author


@pytest.mark.anyio
async def test_a_fold_that_resumes_after_another_process_folded_asks_the_file(
        small_sim: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "PAGE", 40)
    monkeypatch.setattr(runner, "GROUP_PAGES", 1)
    async with MemoryEventStore() as store:
        await SimulationIngestor(store, small_sim).check()
        head = await store.last_position()
        views = tmp_path / "views.sqlite3"
        async with runner.ProjectionRunner(store, views, projections()) as here, \
                runner.ProjectionRunner(store, views, projections()) as there:
            position = 0
            for turn in range(head // 40 + 1):  # the two take turns, a page each, as a parent and its fold child
                folding = (here, there)[turn % 2]
                folding._position = runner.Position(position)
                if batch := await store.read_rows(position, 40):
                    await folding._fold_pages(batch)
                    position = folding.position
            assert position == head
            alternated = await here.digest()
        async with runner.ProjectionRunner(store, tmp_path / "whole.sqlite3", projections()) as whole:
            await whole.catch_up()
            assert alternated == await whole.digest()
