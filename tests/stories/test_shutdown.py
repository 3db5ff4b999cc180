"""Stopped at any moment (SIGTERM or kill -9), restarted: the same final state as an uninterrupted run.

Each torture chains its stops through one job: the daemon is started on the same folders
again and again and stopped at a seeded random moment each time, so the moments fall into
start-up, ingest of a large folder, read-model catch-up, a report in progress (a scripted
model with latency) and websocket clients streaming. Read-model digests hold positions
and clock readings, which differ between any two runs, so the comparison with an
uninterrupted run is on what those runs must share (every action once, the same
simulation model, the same sections), and the tortured read models must equal a rebuild
of their own log.
"""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from simreportd.simulator.simulate import simulate

from ..conftest import PYTHON, TIMEOUT, write_config
from ..fake_llm import FakeLLM
from ..processes import NotifySocket, cli, count, kill9, takes_sigterm, wait_until
from .test_kill import acted, model_rows, simulation_lines

pytestmark = pytest.mark.slow

STOP_TIMEOUT_S = 10.0
LLM = '[llm]\nprovider = "openai"\nbase_url = "{url}"\nmodel = "m"\nretry_backoff_s = 0.01\n'
REPORTED = "SELECT count(*) FROM events WHERE type = 'InterviewUnlocked'"
CLIENTS = textwrap.dedent("""
    import asyncio, json, sys
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed, InvalidMessage, InvalidStatus

    async def client(url, codes):
        try:
            async with connect(url) as ws:
                await ws.send(json.dumps({"op": "subscribe", "topics": ["notifications"],
                                          "after": int(sys.argv[4])}))
                async for _ in ws:
                    pass
        except ConnectionClosed as exc:
            codes.append(exc.rcvd.code if exc.rcvd else 1006)
            return
        except (OSError, InvalidStatus, InvalidMessage):  # refused, 503, or closed: a handshake met the shutdown
            codes.append(0)
            return
        codes.append(ws.close_code or 1006)

    async def main(url, n, out):
        codes = []
        await asyncio.gather(*(client(url, codes) for _ in range(n)))
        with open(out, "w") as f:
            json.dump(codes, f)

    asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3]))
""")


def big_job(base: Path, llm_url: str) -> tuple[Path, Path, Path]:
    """A 300-agent, 120-round folder (about 18k actions) and a config with the scripted model; returns
    the config, the event store and the folder."""
    folder = base / "sims" / "sim_big"
    simulate(folder, agents=300, rounds=120, seed=5)
    config = write_config(base, LLM.format(url=llm_url) + f"[service]\nstop_timeout_s = {STOP_TIMEOUT_S}\n")
    return config, base / "state" / "events.sqlite3", folder


def finish(config: Path, db: Path) -> None:
    """Run the daemon until the report is complete and the read models caught up, then stop it."""
    with NotifySocket(config.parent / "notify.sock") as systemd:
        daemon = cli("run", "-c", str(config))
        systemd.wait_for("READY=1")
    wait_until(lambda: count(db, REPORTED) == 1, "the report to complete", timeout=TIMEOUT * 3)
    views = db.with_name("events-views.sqlite3")
    wait_until(lambda: count(views, "SELECT max(position) FROM projection_checkpoint") == count(
        db, "SELECT max(position) FROM events"), "the read models to catch up")
    daemon.send_signal(signal.SIGTERM)
    assert daemon.wait(timeout=STOP_TIMEOUT_S + 2) == 0


def integrity_ok(path: Path) -> bool:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


def sections(db: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(db)
    rows = [json.loads(d) for (d,) in conn.execute(
        "SELECT data FROM events WHERE type = 'SectionCompleted' ORDER BY position")]
    conn.close()
    return [(r["section_index"], r["title"], r["content"]) for r in rows]


@pytest.fixture(scope="module")
def llm():
    with FakeLLM(latency_s=0.03) as server:
        yield server


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory, llm: FakeLLM) -> dict:
    """What an uninterrupted run of the big job ends with."""
    config, db, folder = big_job(tmp_path_factory.mktemp("uninterrupted"), llm.base_url)
    finish(config, db)
    return {"model": model_rows(db.with_name("events-views.sqlite3")), "sections": sections(db),
            "acted": acted(db), "lines": simulation_lines(folder)}


def assert_same_final_state(config: Path, db: Path, uninterrupted: dict) -> None:
    finish(config, db)
    assert acted(db) == uninterrupted["acted"] == uninterrupted["lines"]  # every action once, none twice
    assert model_rows(db.with_name("events-views.sqlite3")) == uninterrupted["model"]
    assert sections(db) == uninterrupted["sections"]
    rebuilt = subprocess.run([PYTHON, "-m", "simreportd", "-c", str(config), "rebuild"], capture_output=True,
                             text=True, timeout=TIMEOUT)
    assert rebuilt.returncode == 0 and "CHANGED" not in rebuilt.stdout, rebuilt.stdout + rebuilt.stderr


def start_clients(ready: list[str], db: Path, n: int) -> tuple[subprocess.Popen, Path]:
    """`n` dashboards streaming live notifications (after the present head) from the daemon whose READY
    message is in `ready` (all in one client process, which could not keep up with 50 full event feeds)."""
    tmp = db.parent
    out = tmp / f"clients-{time.monotonic_ns()}.json"
    status = [m for m in ready if "serving http://" in m][-1]
    url = "ws://" + status.split("serving http://")[1].split("/")[0] + "/ws"
    head = count(db, "SELECT max(position) FROM events")
    return subprocess.Popen([PYTHON, "-c", CLIENTS, url, str(n), str(out), str(head)]), out


def test_sigterm_at_30_random_moments_always_exits_0_and_a_restart_ends_as_an_uninterrupted_run(
        tmp_path: Path, llm: FakeLLM, uninterrupted: dict) -> None:
    config, db, _ = big_job(tmp_path, llm.base_url)
    rng = random.Random(30)
    for moment in range(30):
        clients = None
        if moment % 3 == 2:  # a third of the stops with 50 clients streaming
            with NotifySocket(tmp_path / "notify.sock") as systemd:
                daemon = cli("run", "-c", str(config))
                ready = systemd.wait_for("READY=1")
            clients, codes_file = start_clients(ready, db, 50)
        else:
            daemon = cli("run", "-c", str(config))
            wait_until(lambda: takes_sigterm(daemon), "the interpreter to start")
        time.sleep(rng.uniform(0.0, 1.5))  # the random moment; nothing is asserted about time
        daemon.send_signal(signal.SIGTERM)
        code = daemon.wait(timeout=STOP_TIMEOUT_S + 2)
        log = daemon.log_path.read_text(errors="replace")
        assert code == 0 and "Traceback" not in log, f"stop {moment}: exit {code}\n{log[-3000:]}"
        for path in (db, db.with_name("events-views.sqlite3")):
            assert not path.exists() or integrity_ok(path), f"stop {moment}: {path.name} damaged"
        if clients is not None:
            assert clients.wait(timeout=TIMEOUT) == 0
            codes = Counter(json.loads(codes_file.read_text()))
            assert set(codes) <= {1001, 0}, (codes, log[-2500:])  # going away (0: connected as it stopped listening)
    assert_same_final_state(config, db, uninterrupted)


def test_kill_9_at_20_random_moments_then_a_restart_ends_as_an_uninterrupted_run(
        tmp_path: Path, llm: FakeLLM, uninterrupted: dict) -> None:
    config, db, _ = big_job(tmp_path, llm.base_url)
    rng = random.Random(20)
    for _ in range(20):
        daemon = cli("run", "-c", str(config))
        wait_until(lambda: takes_sigterm(daemon), "the interpreter to start")
        time.sleep(rng.uniform(0.0, 1.6))  # the random moment
        kill9(daemon)
    assert not db.exists() or integrity_ok(db)
    assert_same_final_state(config, db, uninterrupted)


def stopped_the_moment_its_report_completes(base: Path, llm: FakeLLM) -> tuple[Path, Path, Path]:
    """Run the daemon on `base`'s folders, SIGTERM it as soon as the log holds ReportCompleted (its last steps
    may not be folded yet, nor its folder written); the config, the event store and the report's folder."""
    config, db = write_config(base, LLM.format(url=llm.base_url)), base / "state" / "events.sqlite3"
    daemon = cli("run", "-c", str(config))
    wait_until(lambda: count(db, "SELECT count(*) FROM events WHERE type = 'ReportCompleted'") == 1,
               "the report to complete", timeout=TIMEOUT * 2)
    daemon.send_signal(signal.SIGTERM)
    assert daemon.wait(timeout=STOP_TIMEOUT_S + 2) == 0
    [folder] = (base / "reports").iterdir()
    return config, db, folder


def test_a_daemon_stopped_the_moment_its_report_completes_leaves_the_report_folder_complete(
        tmp_path: Path, small_sim: Path, llm: FakeLLM) -> None:
    _, db, folder = stopped_the_moment_its_report_completes(tmp_path, llm)
    progress = json.loads((folder / "progress.json").read_text())
    assert (progress["status"], progress["progress"]) == ("completed", 100)
    written = sorted(p.read_text() for p in folder.glob("section_*.md"))
    assert written == sorted(f"## {title}\n\n{content.strip()}\n" for _, title, content in sections(db))


def test_a_report_folder_left_behind_its_view_is_written_again_at_the_next_start(
        tmp_path: Path, small_sim: Path, llm: FakeLLM) -> None:
    config, _, folder = stopped_the_moment_its_report_completes(tmp_path, llm)
    (folder / "progress.json").write_text('{"status": "generating", "progress": 60, "updated_at": "earlier"}')
    (folder / "full_report.md").unlink()  # as a daemon killed before it wrote the folder's last state leaves it

    def written_again() -> bool:
        progress = json.loads((folder / "progress.json").read_text())
        return progress["status"] == "completed" and (folder / "full_report.md").exists()

    daemon = cli("run", "-c", str(config))
    wait_until(written_again, "the folder to be written again")
    daemon.send_signal(signal.SIGTERM)
    assert daemon.wait(timeout=STOP_TIMEOUT_S + 2) == 0


def test_a_second_daemon_on_the_same_store_exits_2_and_names_the_first(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    with NotifySocket(tmp_path / "notify.sock") as systemd:
        first = cli("run", "-c", str(config))
        ready = systemd.wait_for("READY=1")
    second = subprocess.run([PYTHON, "-m", "simreportd", "-c", str(config), "run"], capture_output=True, text=True,
                            timeout=TIMEOUT)
    assert second.returncode == 2, second.stderr
    assert f"pid {first.pid}" in second.stderr and "serving http://127.0.0.1:" in second.stderr
    assert "Traceback" not in second.stderr
    status = subprocess.run([PYTHON, "-m", "simreportd", "-c", str(config), "status"], capture_output=True,
                            text=True, timeout=TIMEOUT)
    assert f"pid {first.pid}, simreportd run" in status.stdout and "serving http://" in status.stdout
    assert first.poll() is None and any("READY=1" in m for m in ready)  # the first is unharmed
    first.send_signal(signal.SIGTERM)
    assert first.wait(timeout=TIMEOUT) == 0


def test_a_store_that_is_not_a_database_exits_2_at_once_with_a_clear_message(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "events.sqlite3").write_bytes(b"garbage, not SQLite " * 500)
    for command in (["status"], ["events"], ["run"]):
        result = subprocess.run([PYTHON, "-m", "simreportd", "-c", str(config), *command], capture_output=True,
                                text=True, timeout=TIMEOUT)  # a hang would fail here
        assert result.returncode == 2, (command, result.stderr)
        assert "move it away" in result.stderr and "Traceback" not in result.stderr


def simreportd(config: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "-m", "simreportd", "-c", str(config), *args], capture_output=True, text=True,
                          timeout=TIMEOUT * 2)


def test_writing_commands_hand_their_work_to_the_running_daemon_and_export_nothing_twice(
        tmp_path: Path, small_sim: Path) -> None:
    config = write_config(tmp_path, auto=False)
    with NotifySocket(tmp_path / "notify.sock") as systemd:
        daemon = cli("run", "-c", str(config))
        systemd.wait_for("READY=1")
    report = simreportd(config, "report", str(small_sim), "--wait")
    assert report.returncode == 0 and "running daemon writes report" in report.stderr, report.stderr
    report_id = report.stdout.split()[-1]
    db = tmp_path / "state" / "events.sqlite3"
    mid = count(db, "SELECT min(position) FROM events WHERE type = 'SectionCompleted'")
    fork = simreportd(config, "fork", report_id, "--at", str(mid))
    assert fork.returncode == 0 and "Report ready" in fork.stderr, fork.stderr
    fork_id = fork.stdout.split()[-1]
    asked = simreportd(config, "interview", report_id, "--agent", "1", "What did you think?")
    assert asked.returncode == 0 and asked.stdout.strip(), asked.stderr
    rebuilt = simreportd(config, "rebuild")
    assert rebuilt.returncode == 0 and "CHANGED" not in rebuilt.stdout, rebuilt.stdout + rebuilt.stderr
    log = (tmp_path / "reports" / fork_id / "agent_log.jsonl").read_text(encoding="utf-8").splitlines()
    steps = count(db, "SELECT count(*) FROM events WHERE stream = ?", (f"report-{fork_id}",))
    assert len(log) == len(set(log)) and len(log) <= steps  # one line per step at most, none twice
    assert daemon.poll() is None
    daemon.send_signal(signal.SIGTERM)
    assert daemon.wait(timeout=TIMEOUT) == 0
    assert "CHANGED" not in simreportd(config, "rebuild").stdout  # the daemon's read models were the log's fold
