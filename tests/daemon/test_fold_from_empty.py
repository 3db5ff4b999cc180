"""A fold that is behind the log (or folds it from empty) leaves the posts' search rows out and writes them in one
pass once it has caught up: the search index it leaves is the one a fold writing them as it goes leaves, even after
a kill before it caught up."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simreportd.daemon.ingest.ingestor import SimulationIngestor
from simreportd.events import MemoryEventStore
from simreportd.projections import runner
from simreportd.projections.catalogue import projections
from simreportd.projections.sqlite import reading

pytestmark = pytest.mark.anyio


def with_a_han_post(folder: Path) -> None:
    """Give the run's first post Chinese text: the search rows space out its Han characters."""
    path = folder / "twitter" / "actions.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    first = next(i for i, line in enumerate(lines) if '"CREATE_POST"' in line)
    action = json.loads(lines[first])
    action["action_args"]["content"] = "他们说气候政策 works"
    lines[first] = json.dumps(action, ensure_ascii=False)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def search_index(path: Path) -> list[tuple[object, ...]]:
    """Every token the posts' search index holds: (term, row, column, offset)."""
    with reading(path) as conn:
        conn.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, sim_posts_fts, 'instance')")
        return conn.execute("SELECT term, doc, col, offset FROM temp.vocab ORDER BY doc, offset").fetchall()


def waiting(path: Path) -> list[str]:
    with reading(path) as conn:
        return [name for (name,) in conn.execute("SELECT name FROM projection_pending_search")]


async def test_a_fold_from_empty_fills_the_search_rows_once_caught_up_even_after_a_kill(
        small_sim: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with_a_han_post(small_sim)
    monkeypatch.setattr(runner, "GROUP_PAGES", 1)
    views, as_it_goes, behind = (tmp_path / f"{name}.sqlite3" for name in ("views", "as_it_goes", "behind"))
    async with MemoryEventStore() as store:
        await SimulationIngestor(store, small_sim).check()
        monkeypatch.setattr(runner, "PAGE", 1_000_000)  # never a whole page: never behind
        async with runner.ProjectionRunner(store, as_it_goes, projections()) as live:
            await live._fold_pages(await store.read_rows(0, 1))  # caught up with nothing waiting from then on
            assert waiting(as_it_goes) == []
            await live.catch_up()
        monkeypatch.setattr(runner, "PAGE", 50)
        async with runner.ProjectionRunner(store, views, projections()) as first:
            await first._fold_pages(await store.read_rows(0, 50))  # stopped after one page, as by a kill
            assert waiting(views) == ["sim_posts_fts"] and search_index(views) == []
        async with runner.ProjectionRunner(store, views, projections()) as restarted:
            await restarted.catch_up()
        async with runner.ProjectionRunner(store, behind, projections()) as late:
            await late._fold_pages(await store.read_rows(0, 30))  # caught up, its search rows written
            written = search_index(behind)
            await late._fold_pages(await store.read_rows(30, 50))  # then behind: they wait
            assert waiting(behind) == ["sim_posts_fts"] and search_index(behind) == written != []
            await late.catch_up()
    assert waiting(views) == waiting(as_it_goes) == waiting(behind) == []
    filled = search_index(views)
    assert filled == search_index(as_it_goes) == search_index(behind)
    assert {"气", "works"} <= {term for term, *_ in filled}


async def test_a_rebuild_leaves_the_search_rows_of_the_fold_it_replaces(small_sim: Path, tmp_path: Path) -> None:
    views = tmp_path / "views.sqlite3"
    async with MemoryEventStore() as store:
        await SimulationIngestor(store, small_sim).check()
        async with runner.ProjectionRunner(store, views, projections()) as folded:
            await folded.catch_up()
            before = search_index(views)
            await folded.rebuild()
    assert before and search_index(views) == before and waiting(views) == []
