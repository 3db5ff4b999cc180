"""The same store contract on PostgreSQL, plus what only several appending processes can show."""

from __future__ import annotations

import contextlib
import itertools
import json
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from simreportd.errors import StoreUnusable
from simreportd.events import CaughtUp, PostgresEventStore
from simreportd.events.models import PlanningStarted
from simreportd.events.postgres import TABLE

from ..conftest import PYTHON, TIMEOUT, write_config
from ..postgres_server import database_url, postgres_cluster  # noqa: F401 (a fixture)
from ..store_contract import EventStoreContract

_names = itertools.count()


@pytest.fixture
def pg_url(postgres_cluster: str) -> str:  # noqa: F811
    return database_url(postgres_cluster, f"contract_{next(_names)}")


class TestPostgresStore(EventStoreContract):
    @pytest.fixture
    async def store(self, pg_url: str) -> AsyncIterator[PostgresEventStore]:
        async with PostgresEventStore(pg_url) as store:
            yield store

    async def execute_directly(self, store: PostgresEventStore, sql: str) -> None:
        conn = await asyncpg.connect(store.url)
        try:
            await conn.execute(sql.format(table=TABLE))
        finally:
            await conn.close()


APPENDERS = textwrap.dedent("""
    import anyio, sys
    from simreportd.events.models import PlanningStarted
    from simreportd.events import PostgresEventStore

    async def main(url, process):
        async with PostgresEventStore(url) as store, anyio.create_task_group() as tasks:
            for n in range(16):
                async def appender(n=n):
                    for i in range(25):
                        await store.append(f"report-p{process}-{n}", [PlanningStarted(report_id=str(i))])
                tasks.start_soon(appender)

    anyio.run(main, sys.argv[1], sys.argv[2])
""")


@pytest.mark.slow
@pytest.mark.anyio
async def test_four_processes_of_16_appenders_get_gapless_positions_and_a_subscriber_sees_each_once(
        pg_url: str) -> None:
    import anyio

    async with PostgresEventStore(pg_url) as store:
        await store.append("report-first", [PlanningStarted(report_id="first")])
        seen: list[int] = []
        total = 1 + 4 * 16 * 25

        async def subscriber() -> None:
            async for item in store.subscribe(after=1):
                if isinstance(item, CaughtUp):
                    continue
                seen.append(item.position)
                if len(seen) == total - 1:
                    return

        with anyio.fail_after(TIMEOUT * 2):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(subscriber)
                processes = [subprocess.Popen([sys.executable, "-c", APPENDERS, pg_url, str(p)]) for p in range(4)]
                for process in processes:
                    assert await anyio.to_thread.run_sync(process.wait) == 0
        everything = await store.read_all(0, limit=100_000)
    assert [r.position for r in everything] == list(range(1, total + 1))
    assert seen == list(range(2, total + 1))  # every event once, in order, none skipped while in flight





def test_migrate_copies_a_store_into_postgresql_with_positions_and_ids_intact(
        tmp_path: Path, pg_url: str, small_sim: Path) -> None:
    sqlite_config = write_config(tmp_path)
    assert simreportd(sqlite_config, "report", str(small_sim), "--wait").returncode == 0
    migrated = simreportd(sqlite_config, "migrate", "--to", pg_url)
    assert migrated.returncode == 0 and "digests match" in migrated.stderr, migrated.stderr
    again = simreportd(sqlite_config, "migrate", "--to", pg_url)
    assert again.returncode == 2 and "empty database" in again.stderr
    node = tmp_path / "node2"
    pg_config = write_config(node)
    pg_config.write_text(pg_config.read_text().replace("[store]\n", f'[store]\nurl = "{pg_url}"\n'))
    on_sqlite = json.loads(simreportd(sqlite_config, "status", "--json").stdout)
    rebuilt = simreportd(pg_config, "rebuild")  # another node folds its own read models from PostgreSQL
    assert "rebuilt read models to position" in rebuilt.stdout, rebuilt.stderr
    on_postgres = json.loads(simreportd(pg_config, "status", "--json").stdout)
    assert on_postgres["last_position"] == on_sqlite["last_position"] > 0
    assert on_postgres["reports"] == on_sqlite["reports"]
    assert on_postgres["simulations"] == on_sqlite["simulations"]
    assert on_postgres["store"].startswith("postgresql://") and on_sqlite["store"].endswith("events.sqlite3")


def simreportd(config: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "-m", "simreportd", "-c", str(config), *args], capture_output=True, text=True,
                          timeout=TIMEOUT * 2)


def psql(sockets: str, url: str, sql: str) -> str:
    database = url.split("@/")[1].split("?")[0]
    return subprocess.run(["psql", "-h", sockets, "-U", "simreportd", "-d", database, "-tAc", sql],
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.slow
def test_three_daemons_share_the_work_and_one_killed_mid_report_is_taken_over(
        tmp_path: Path, postgres_cluster: str, pg_url: str) -> None:  # noqa: F811
    from simreportd.simulator.simulate import simulate

    from ..fake_llm import FakeLLM
    from ..processes import NotifySocket, cli, kill9, wait_until

    for n in range(6):
        simulate(tmp_path / "sims" / f"sim_{n}", agents=12, rounds=6, seed=n)
    q = lambda sql: psql(postgres_cluster, pg_url, sql)  # noqa: E731
    with FakeLLM(latency_s=0.05) as llm:
        nodes, daemons, sockets_of = [], {}, []
        with contextlib.ExitStack() as sockets:  # all three start at once: one started alone could write
            for n in range(3):                   # every report before the others are up
                node = tmp_path / f"node{n}"
                config = write_config(node, f'[llm]\nprovider = "openai"\nbase_url = "{llm.base_url}"\nmodel = "m"\n')
                config.write_text(config.read_text().replace("[store]\n", f'[store]\nurl = "{pg_url}"\n')
                                  .replace('roots = ["sims"]', f'roots = ["{tmp_path / "sims"}"]'))
                systemd = sockets.enter_context(NotifySocket(node / "notify.sock"))
                daemons[n] = cli("run", "-c", str(config))
                nodes.append(config)
                sockets_of.append(systemd)
            for systemd in sockets_of:
                systemd.wait_for("READY=1")
        owners: list[int] = []

        def writing_a_report() -> bool:  # asked in one query: a report may end between two
            owner = q("SELECT a.application_name FROM simreportd_leases l JOIN pg_locks k ON k.locktype = 'advisory'"
                      " AND k.objid::bigint = (l.key & x'ffffffff'::bigint) JOIN pg_stat_activity a ON a.pid = k.pid"
                      " WHERE l.name LIKE 'report:%' LIMIT 1")
            owners[:] = [n for n, d in daemons.items() if owner and owner.endswith(f":{d.pid}")]
            return bool(owners)

        wait_until(writing_a_report, "a daemon writing a report", timeout=TIMEOUT * 2)
        kill9(daemons.pop(owners[0]))
        wait_until(lambda: q("SELECT count(DISTINCT stream) FROM simreportd_events WHERE type = 'ReportCompleted'")
                   == "6", "six reports to complete", timeout=TIMEOUT * 4)
        for daemon in daemons.values():
            daemon.terminate()
            assert daemon.wait(timeout=TIMEOUT) == 0
    assert q("SELECT count(*) FROM simreportd_events WHERE type = 'ReportCompleted'") == "6"  # each exactly once
    assert q("SELECT count(*) FROM (SELECT stream, data::json->>'section_index' FROM simreportd_events"
             " WHERE type = 'SectionCompleted' GROUP BY 1, 2 HAVING count(*) > 1) twice") == "0"
    digests = [simreportd(nodes[n], "rebuild").stdout for n in daemons]
    assert digests[0] == digests[1] and "CHANGED" not in digests[0]  # every node folded the same read models


@pytest.mark.anyio
async def test_a_server_that_cannot_be_reached_is_named_without_its_password_and_with_postgresql_advice() -> None:
    with pytest.raises(StoreUnusable) as refused:
        async with PostgresEventStore("postgresql://ann:s3cret@127.0.0.1:1/events"):
            pass
    message = str(refused.value)
    assert "postgresql://ann@127.0.0.1:1/events" in message and "s3cret" not in message
    assert "Check that the server runs" in message and ".recover" not in message
