"""No input can stop the daemon (docs/architecture.md#untrusted-input): hostile simulation folders against one real daemon.

One daemon watches a root holding every bad folder below plus a normal simulation. Each
case then checks that the daemon is alive, `/healthz` answers, the normal folder is fully
ingested, and the bad folder ended as expected (a rejection with a reason, or left alone).
A last test restarts the daemon over the same log: it must come up, with no fold failure.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from simreportd.simulator.simulate import simulate

from ..conftest import PYTHON, TIMEOUT, write_config
from ..processes import STARTED, NotifySocket, cli, serving, wait_until

pytestmark = pytest.mark.slow

GOOD = {"round": 1, "timestamp": "2026-03-02T09:00:00", "agent_id": 1, "agent_name": "A",
        "action_type": "CREATE_POST", "action_args": {"content": "fine"}, "result": None, "success": True}
START = {"event_type": "simulation_start", "platform": "twitter", "total_rounds": 1, "agents_count": 2}
OUTSIDE_SECRET = "outside-the-root-secret"


def good(**changes: object) -> str:
    return json.dumps({**GOOD, **changes})


def actions(folder: Path, *bad: str | bytes, platform: str = "twitter") -> None:
    """An actions file: a start line, a good action, the bad lines, another good action."""
    path = folder / platform / "actions.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({**START, "platform": platform}).encode(), good().encode(),
             *(b if isinstance(b, bytes) else b.encode("utf-8", "surrogatepass") for b in bad),
             good(agent_id=2).encode()]
    path.write_bytes(b"\n".join(lines) + b"\n")


def nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def fifo(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)


def link(path: Path, target: str | Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)


def oasis_db(folder: Path, rows: list[tuple[object, object, str, str]]) -> None:
    conn = sqlite3.connect(folder / "twitter_simulation.db")
    conn.executescript("CREATE TABLE trace (user_id, created_at, action TEXT, info TEXT);"
                       "CREATE TABLE user (user_id, agent_id, user_name, name, bio);"
                       "INSERT INTO user VALUES (1, 1, 'a', 'A', '');")
    conn.executemany("INSERT INTO trace VALUES (?, ?, ?, ?)",
                     [(1, 1, "create_post", '{"content": "fine"}'), *rows, (1, 2, "create_post", "{}")])
    conn.commit()
    conn.close()


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[Path], None]
    outcome: str  # "rejected: <reason part>", "ingested" (good lines kept, setup trimmed), "ignored",
    # "noted: <reason part>" (an action file not read at all: recorded once, with why)


def _with(make: Callable[[Path], None]) -> Callable[[Path], None]:
    """The case's bad file next to an otherwise normal actions file."""
    def both(folder: Path) -> None:
        actions(folder)
        make(folder)
    return both


CASES = [
    # the red-team run's cases
    Case("deep_brackets", lambda f: actions(f, "[" * 3000 + "]" * 3000), "rejected: nested deeper"),
    Case("args_nested_300", lambda f: actions(f, good().replace('{"content": "fine"}', nested(300))),
         "rejected: nested deeper"),
    Case("args_nested_1100", lambda f: actions(f, good().replace('{"content": "fine"}', nested(1100))),
         "rejected: nested deeper"),
    Case("config_nested_100k", _with(lambda f: (f / "simulation_config.json").write_text("[" * 100_000 + "]" * 100_000)),
         "ingested"),
    Case("int_5000_digits", lambda f: actions(f, good().replace('"round": 1', '"round": ' + "7" * 5000)),
         "rejected: out of the 64-bit range"),
    Case("agent_id_2_63", lambda f: actions(f, good(agent_id=2**63)), "rejected: 64-bit"),
    Case("round_2_63", lambda f: actions(f, good(round=2**63)), "rejected: 64-bit"),
    Case("round_negative", lambda f: actions(f, good(round=-3)), "rejected: 'round' must not be negative"),
    Case("agent_id_negative", lambda f: actions(f, good(agent_id=-5)), "rejected: 'agent_id' must not be negative"),
    Case("action_type_10kb", lambda f: actions(f, good(action_type="CREATE_POST" * 1000)),
         "rejected: 'action_type' is longer than 100"),
    Case("negative_2_63_minus_1", lambda f: actions(f, good(agent_id=-(2**63) - 1)), "rejected: 64-bit"),
    Case("reddit_profile_2_63", _with(lambda f: (f / "reddit_profiles.json").write_text(json.dumps(
        [{"user_id": 2**63, "name": "x"}, {"user_id": 3, "name": "ok", "karma": 2**64}]))), "ingested"),
    Case("twitter_profile_2_63", _with(lambda f: (f / "twitter_profiles.csv").write_text(
        f"user_id,name,username,user_char,description\n{2**63},x,x,,\n{'9' * 5000},y,y,,\n")), "ingested"),
    Case("agent_configs_2_63", _with(lambda f: (f / "simulation_config.json").write_text(json.dumps(
        {"simulation_requirement": "q", "agent_configs": [{"agent_id": 2**63}, {"agent_id": 1, "influence_weight": 2**70}]}))),
         "ingested"),
    Case("lone_surrogate_name", lambda f: actions(f, good().replace('"agent_name": "A"', '"agent_name": "s\\ud800"')),
         "rejected: lone surrogate"),
    Case("pid_2_40_alive", _with(lambda f: (
        (f / "env_status.json").write_text(json.dumps({"status": "alive", "twitter_available": True})),
        (f / "run_state.json").write_text(json.dumps({"process_pid": 2**40})))), "ingested"),
    Case("fifo_config", _with(lambda f: fifo(f / "simulation_config.json")), "ingested"),
    Case("env_status_dev_zero", _with(lambda f: link(f / "env_status.json", "/dev/zero")), "ingested"),
    Case("actions_etc_passwd", lambda f: (link(f / "twitter" / "actions.jsonl", "/etc/passwd"),
                                          (f / "simulation_config.json").write_text("{}")),
         "noted: links outside the simulation folder"),
    Case("folder_linked_outside", lambda f: None, "ignored"),  # made by the fixture: needs the outside folder
    # our own
    Case("nan", lambda f: actions(f, good().replace('"fine"', "NaN")), "rejected: NaN"),
    Case("infinity_1e999", lambda f: actions(f, good().replace('"fine"', "1e999")), "rejected: not finite"),
    Case("invalid_utf8", lambda f: actions(f, b'{"round": 1, "agent_name": "\xff\xfe"}'), "rejected: invalid UTF-8"),
    Case("surrogate_key", lambda f: actions(f, good().replace('"content"', '"\\udc00"')), "rejected: lone surrogate"),
    Case("fifo_actions", lambda f: (fifo(f / "twitter" / "actions.jsonl"), (f / "simulation_config.json").write_text("{}")),
         "noted: actions.jsonl is not a regular file (a FIFO)"),
    Case("fifo_run_state", _with(lambda f: fifo(f / "run_state.json")), "ingested"),
    Case("fifo_env_status", _with(lambda f: fifo(f / "env_status.json")), "ingested"),
    Case("actions_is_a_folder", lambda f: ((f / "twitter" / "actions.jsonl").mkdir(parents=True),
                                           (f / "reddit_profiles.json").write_text("[]")),
         "noted: actions.jsonl is not a regular file (a folder)"),
    Case("symlink_loop", lambda f: (link(f / "twitter" / "actions.jsonl", "actions.jsonl"),
                                    (f / "simulation_config.json").write_text("{}")),
         "noted: actions.jsonl links outside the simulation folder"),  # a loop resolves nowhere inside
    Case("config_dev_zero", _with(lambda f: link(f / "simulation_config.json", "/dev/zero")), "ingested"),
    Case("oasis_db_fifo", lambda f: fifo(f / "twitter_simulation.db"), "ignored"),
    Case("oasis_rows_hostile", lambda f: (f.mkdir(parents=True), oasis_db(f, [
        (1, 1, "create_post", '{"content": "x", "post_id": 9223372036854775808}'),
        ("not an id", 1, "like_post", "{}"), (1, 1, "quote_post", nested(200))])), "rejected: 64-bit"),
    Case("config_surrogate_requirement", _with(lambda f: (f / "simulation_config.json").write_text(
        '{"simulation_requirement": "q\\ud800"}')), "ingested"),
    Case("simulation_end_2_63", lambda f: actions(f, json.dumps({"event_type": "simulation_end", "platform": "twitter",
                                                                 "total_rounds": 2**63})), "rejected: 64-bit"),
    Case("round_start_hour_2_64", lambda f: actions(f, json.dumps({"event_type": "round_start", "round": 1,
                                                                   "simulated_hour": 2**64})), "rejected: 64-bit"),
    Case("huge_event_type", lambda f: actions(f, json.dumps({"event_type": ["x" * 5000] * 20})),
         "rejected: unknown event_type"),
    Case("config_inf_number", _with(lambda f: (f / "simulation_config.json").write_text(
        '{"time_config": {"minutes_per_round": 1e999}, "simulation_requirement": "q"}')), "ingested"),
    Case("line_10mb_no_newline", lambda f: (actions(f), (f / "twitter" / "actions.jsonl").open("ab").write(
        b"[" * 10_000_000)), "ingested"),
]


def run_daemon(config: Path) -> tuple[subprocess.Popen, str]:
    (config.parent / "notify.sock").unlink(missing_ok=True)  # left by the previous start
    with NotifySocket(config.parent / "notify.sock") as systemd:
        daemon = cli("run", "-c", str(config))
        STARTED.remove(daemon)  # shared by the module's tests: the module fixture stops it, not each test
        [ready] = [m for m in systemd.wait_for("READY=1") if "READY=1" in m]
    return daemon, serving(ready)


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
        return json.load(response)


def folded_to_head(url: str) -> bool:
    """Whether the daemon's read models hold every event of its log (as it was when asked)."""
    health = get_json(url + "healthz")
    return bool(health["projection_position"] >= health["position"])


def events_of(db: Path, stream: str) -> list[tuple[str, dict]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=TIMEOUT)
    try:
        return [(t, json.loads(d)) for t, d in conn.execute(
            "SELECT type, data FROM events WHERE stream = ? ORDER BY position", (stream,))]
    finally:
        conn.close()


def good_actions(events: list[tuple[str, dict]]) -> int:
    return sum(1 for t, _ in events if t == "AgentActed")


class Hostile:
    """The running daemon, its URL and its store, shared by every case."""

    def __init__(self, tmp: Path) -> None:
        self.tmp, self.db = tmp, tmp / "state" / "events.sqlite3"
        sims = tmp / "sims"
        sims.mkdir(parents=True)
        simulate(sims / "normal", agents=8, rounds=3, seed=3)
        self.normal_lines = sum(1 for p in ("twitter", "reddit") for raw in
                                (sims / "normal" / p / "actions.jsonl").read_text(encoding="utf-8").splitlines()
                                if "event_type" not in json.loads(raw))
        for case in CASES:
            case.make(sims / case.name)
        outside = tmp / "outside"
        actions(outside)
        (outside / "simulation_config.json").write_text(json.dumps({"simulation_requirement": OUTSIDE_SECRET}))
        (sims / "folder_linked_outside").symlink_to(outside)
        self.config = write_config(tmp, auto=False)
        self.daemon, self.url = run_daemon(self.config)
        self.deaths = 0

    def normal_done(self) -> bool:
        return good_actions(events_of(self.db, "simulation-normal")) == self.normal_lines


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory):
    setup = Hostile(tmp_path_factory.mktemp("hostile"))
    yield setup
    if setup.daemon.poll() is None:
        setup.daemon.kill()
        setup.daemon.wait(timeout=TIMEOUT)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_hostile_folder_leaves_the_daemon_serving_and_the_normal_folder_ingested(hostile: Hostile, case: Case) -> None:
    stream = f"simulation-{case.name}"
    def notes() -> list[str]:
        return [d["reason"] for t, d in events_of(hostile.db, stream) if t == "IngestRejected"]

    if case.outcome.startswith("noted: "):  # a file not read at all: said once, with why
        wait_until(lambda: any(case.outcome.removeprefix("noted: ") in r for r in notes()), f"{case.name}'s note")
    elif case.outcome == "ignored":
        wait_until(hostile.normal_done, "the normal folder to be ingested")
    else:
        wait_until(lambda: good_actions(events_of(hostile.db, stream)) >= 2, f"{case.name}'s good lines")
    assert hostile.daemon.poll() is None, hostile.daemon.log_path.read_text()[-3000:]
    assert get_json(hostile.url + "healthz")["status"] == "ok"
    wait_until(hostile.normal_done, "the normal folder to be ingested")
    events = events_of(hostile.db, stream)
    text = json.dumps(events)
    assert "root:" not in text and OUTSIDE_SECRET not in text  # nothing from outside the folder
    if case.outcome.startswith("rejected: "):
        reasons = [d["reason"] for t, d in events if t == "IngestRejected"]
        assert any(case.outcome.removeprefix("rejected: ") in r for r in reasons), reasons
    elif case.outcome != "ingested":  # ignored, or noted
        assert good_actions(events) == 0
    if case.outcome.startswith("noted: "):
        assert sum(case.outcome.removeprefix("noted: ") in r for r in notes()) == 1  # not again at each check


def test_status_says_how_many_lines_of_each_simulation_were_refused(hostile: Hostile) -> None:
    wait_until(lambda: any(t == "IngestRejected" for t, _ in events_of(hostile.db, "simulation-nan")), "nan's refusal")
    wait_until(lambda: folded_to_head(hostile.url), "the read models to fold it")  # status reads them
    status = subprocess.run([PYTHON, "-m", "simreportd", "-c", str(hostile.config), "status"], capture_output=True,
                            text=True, timeout=TIMEOUT)
    [line] = [line for line in status.stdout.splitlines() if line.split()[:1] == ["nan"]]
    assert re.search(r"\b1 refused \(`simreportd events --type IngestRejected`\)", line), status.stdout
    [normal] = [line for line in status.stdout.splitlines() if line.split()[:1] == ["normal"]]
    assert "refused" not in normal


def test_the_daemon_restarts_over_the_hostile_log_without_fold_failures(hostile: Hostile) -> None:
    wait_until(hostile.normal_done, "the normal folder to be ingested")
    hostile.daemon.send_signal(signal.SIGTERM)  # a FIFO in a folder must not have wedged a thread
    assert hostile.daemon.wait(timeout=TIMEOUT) == 0, hostile.daemon.log_path.read_text()[-3000:]
    hostile.daemon, hostile.url = run_daemon(hostile.config)
    health = get_json(hostile.url + "healthz")
    assert health["status"] == "ok" and health["fold_failures"] == 0
    assert health["projection_position"] == health["position"]
    assert "simreportd_projection_failures_total 0" in urllib.request.urlopen(
        hostile.url + "metrics", timeout=TIMEOUT).read().decode()
