"""MiroFish's simulation API (`/api/simulation/...`), the parts a report daemon can answer
(docs/formats.md#simulation-routes).

Routes, request fields, defaults and shapes are those of MiroFish's `backend/app/api/simulation.py`;
the data is what ingest recorded (projections/run_queries.py); the interviews are in
mirofish_interviews.py. What belongs to MiroFish's orchestration (creating,
preparing, starting and stopping runs, profiles from its knowledge graph, the graph itself) is
answered 501, naming the backend that does it.
"""

from __future__ import annotations

import heapq
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from simreportd.daemon.host import Host
from simreportd.events.models import AgentActed, acted_fields
from simreportd.events.streams import simulation_stream
from simreportd.projections import report_queries, run_queries, simulation_queries
from simreportd.projections.sqlite import reading

from .mirofish import Absurd, Actor, Ask, Reader, Reply, failed, ok

PREFIX = "/api/simulation"
MAX_ACTIONS = 100_000  # offset + limit of an actions page at most (the page is kept in memory while the log is read)

ORCHESTRATION = ("MiroFish's backend does this (it builds graphs, prepares, runs and stops simulations); "
                 "simreportd only reads the runs it watches and reports on them: send this route to MiroFish's "
                 "backend (docs/deploy/mirofish.md)")


def number(query: dict[str, str], name: str, default: int | None) -> int | None:
    """A query value as Flask's `type=int` reads it: `default` unless a whole number; Absurd past 18 digits."""
    text = query.get(name, "").strip()
    if not text.lstrip("-").isdigit():
        return default
    if len(text.lstrip("-")) > 18:
        raise Absurd(f"{name} must be a whole number below 10^18, got {text[:40]!r}")
    return int(text)


def key_of(conn: sqlite3.Connection, given: object) -> tuple[str, int] | None:
    """(our simulation id, its newest generation) of the simulation a client names (folder or config id)."""
    simulation_id = simulation_queries.resolve(conn, given) if isinstance(given, str) and given else None
    latest = simulation_queries.latest_generation(conn, simulation_id) if simulation_id else None
    return (simulation_id, latest[0]) if simulation_id and latest else None


def unknown(given: object) -> Reply:
    return failed(404, f"no simulation {str(given)[:100]}: its folder is not under [watch] roots or not ingested yet")


class BadField(ValueError):
    """A request field we cannot use: answered 400 with the message (`answering`)."""


def platform_named(value: object) -> str | None:
    """A platform the client named; BadField for anything but twitter, reddit or none."""
    if value in (None, "", "twitter", "reddit"):
        return str(value) if value else None
    raise BadField("platform must be 'twitter' or 'reddit'")


def answering(actor: Actor) -> Actor:
    """The actor, with a BadField it raises answered 400 in MiroFish's shape."""
    async def answer(daemon: Host, ask: Ask) -> Reply:
        try:
            return await actor(daemon, ask)
        except BadField as exc:
            return failed(400, str(exc))
    return answer


def body_of(ask: Ask) -> dict[str, Any]:
    return ask.body if isinstance(ask.body, dict) else {}


# --- readers: answered from the read models ----------------------------------------------------


def get_info(conn: sqlite3.Connection, ask: Ask) -> Reply:
    key = key_of(conn, ask.params["simulation_id"])
    found = run_queries.info(conn, key) if key else None
    return ok(found) if found else unknown(ask.params["simulation_id"])


def get_profiles(conn: sqlite3.Connection, ask: Ask) -> Reply:
    key, platform = key_of(conn, ask.params["simulation_id"]), ask.query.get("platform", "reddit")
    if key is None:
        return unknown(ask.params["simulation_id"])
    profiles = run_queries.profiles(conn, key, platform)
    return ok({"platform": platform, "count": len(profiles), "profiles": profiles})


def get_profiles_realtime(conn: sqlite3.Connection, ask: Ask) -> Reply:
    """The profiles, as MiroFish shows them while it generates them: here they are all there already."""
    answer = get_profiles(conn, ask)
    if answer.status != 200:
        return answer
    data = answer.body["data"]
    return ok({"simulation_id": ask.params["simulation_id"], **data, "total_expected": data["count"],
               "is_generating": False, "file_exists": True, "file_modified_at": None})


def get_config(conn: sqlite3.Connection, ask: Ask) -> Reply:
    key = key_of(conn, ask.params["simulation_id"])
    found = run_queries.config(conn, key) if key else None
    return ok(found) if found else unknown(ask.params["simulation_id"])


def get_config_realtime(conn: sqlite3.Connection, ask: Ask) -> Reply:
    answer = get_config(conn, ask)
    if answer.status != 200:
        return answer
    config = answer.body["data"]
    events = config["event_config"]
    return ok({"simulation_id": ask.params["simulation_id"], "file_exists": True, "file_modified_at": None,
               "is_generating": False, "generation_stage": "completed", "config_generated": True, "config": config,
               "summary": {"total_agents": len(config["agent_configs"]),
                           "simulation_hours": (config.get("time_config") or {}).get("total_simulation_hours"),
                           "initial_posts_count": 0, "hot_topics_count": len(events.get("hot_topics") or []),
                           "has_twitter_config": False, "has_reddit_config": False, "generated_at": None,
                           "llm_model": config.get("llm_model")}})


def download_config(conn: sqlite3.Connection, ask: Ask) -> Reply:
    answer = get_config(conn, ask)
    if answer.status != 200:
        return answer
    return Reply(200, json.dumps(answer.body["data"], ensure_ascii=False, indent=2).encode(), "application/json",
                 {"Content-Disposition": 'attachment; filename="simulation_config.json"'})


def get_run_status(conn: sqlite3.Connection, ask: Ask) -> Reply:
    key = key_of(conn, ask.params["simulation_id"])
    return ok(run_queries.run_status(conn, key)) if key else unknown(ask.params["simulation_id"])


def get_posts(conn: sqlite3.Connection, ask: Ask) -> Reply:
    key, platform = key_of(conn, ask.params["simulation_id"]), ask.query.get("platform", "reddit")
    if key is None:
        return unknown(ask.params["simulation_id"])
    total, posts = run_queries.posts(conn, key, platform, max(0, number(ask.query, "limit", 50) or 0),
                                     max(0, number(ask.query, "offset", 0) or 0))
    return ok({"platform": platform, "total": total, "count": len(posts), "posts": posts})


def get_comments(conn: sqlite3.Connection, ask: Ask) -> Reply:
    key = key_of(conn, ask.params["simulation_id"])
    if key is None:
        return unknown(ask.params["simulation_id"])
    comments = run_queries.comments(conn, key, number(ask.query, "post_id", None),
                                    max(0, number(ask.query, "limit", 50) or 0),
                                    max(0, number(ask.query, "offset", 0) or 0))
    return ok({"count": len(comments), "comments": comments})


def list_simulations(conn: sqlite3.Connection, ask: Ask) -> Reply:
    """Every simulation watched, newest generation each, as `SimulationState.to_dict()`."""
    found = [info for info in (run_queries.info(conn, key) for key in _every_key(conn)) if info]
    return ok(found, count=len(found))


def history(conn: sqlite3.Connection, ask: Ask) -> Reply:
    """The home page's list: each simulation with its requirement, rounds and newest report."""
    limit = max(0, number(ask.query, "limit", 20) or 0)
    rows = []
    for key in _every_key(conn)[:limit]:
        state = run_queries.info(conn, key) or {}
        run, setup = run_queries.run_status(conn, key), simulation_queries.setup(conn, key)
        report = report_queries.latest_report(conn, key[0])
        rows.append({**state, "simulation_requirement": setup[0] if setup else "",
                     "total_simulation_hours": run["total_simulation_hours"], "current_round": run["current_round"],
                     "runner_status": run["runner_status"], "total_rounds": run["total_rounds"], "files": [],
                     "report_id": report["report_id"] if report else None, "created_date": ""})
    return ok(rows, count=len(rows))


def _every_key(conn: sqlite3.Connection) -> list[tuple[str, int]]:
    newest: dict[str, int] = {}
    for row in simulation_queries.simulations(conn):
        newest[row["simulation_id"]] = max(newest.get(row["simulation_id"], 0), row["generation"])
    return list(newest.items())


# --- actors: the event log, the folder, the interviewer ----------------------------------------------


async def find(daemon: Host, given: object) -> tuple[str, int, Path] | None:
    """(simulation id, newest generation, folder) of the simulation a client names."""
    def find(path: Path) -> tuple[str, int, Path] | None:
        with reading(path) as conn:
            key = key_of(conn, given)
            latest = simulation_queries.latest_generation(conn, key[0]) if key else None
        return (key[0], key[1], Path(latest[1])) if key and latest else None

    return await daemon.views.in_thread(find, daemon.views.path)


async def run_actions(daemon: Host, simulation_id: str, generation: int) -> AsyncIterator[dict[str, Any]]:
    """The run's actions in the order they were recorded, read from the log a batch at a time."""
    async for recorded in daemon.store.iter_stream(simulation_stream(simulation_id), types=[AgentActed.TYPE]):
        if recorded.data["generation"] == generation:  # raw: every action of a run passes here, a page at a time
            yield acted_fields(recorded.data, recorded.stream)


async def get_actions(daemon: Host, ask: Ask) -> Reply:
    """A page of the run's actions, newest first, filtered by platform, agent and round."""
    found = await find(daemon, ask.params["simulation_id"])
    if found is None:
        return unknown(ask.params["simulation_id"])
    limit, offset = max(0, number(ask.query, "limit", 100) or 0), max(0, number(ask.query, "offset", 0) or 0)
    if limit + offset > MAX_ACTIONS:
        return failed(400, f"offset + limit is at most {MAX_ACTIONS}; filter by platform, agent_id or round_num")
    platform, agent, round_num = ask.query.get("platform"), number(ask.query, "agent_id", None), \
        number(ask.query, "round_num", None)
    newest = Newest(limit + offset)
    async for acted in run_actions(daemon, found[0], found[1]):
        if (platform in (None, acted["platform"]) and agent in (None, acted["agent_id"])
                and round_num in (None, acted["round"])):
            newest.add(acted)
    page = [run_queries.action_dict(a) for a in newest.first()[offset:offset + limit]]
    return ok({"count": len(page), "actions": page})


class Newest:
    """The `size` newest actions seen, by timestamp (equal ones in the order seen), as MiroFish sorts them
    (`SimulationRunner.get_all_actions`); memory for `size` of them however long the run."""

    def __init__(self, size: int) -> None:
        self.size, self.seen = size, 0
        self.heap: list[tuple[str, int, dict[str, Any]]] = []

    def add(self, acted: dict[str, Any]) -> None:
        self.seen += 1
        item = (acted["timestamp"] or "", -self.seen, acted)
        if len(self.heap) < self.size:
            heapq.heappush(self.heap, item)
        elif self.size and item[:2] > self.heap[0][:2]:
            heapq.heapreplace(self.heap, item)

    def first(self) -> list[dict[str, Any]]:
        """Newest first."""
        return [acted for *_, acted in sorted(self.heap, key=lambda item: item[:2], reverse=True)]


async def get_run_status_detail(daemon: Host, ask: Ask) -> Reply:
    """The run status with its actions, newest first (MAX_ACTIONS at most), per platform and of the last round."""
    found = await find(daemon, ask.params["simulation_id"])
    if found is None:
        return unknown(ask.params["simulation_id"])

    def status(path: Path) -> dict[str, Any]:
        with reading(path) as conn:
            return run_queries.run_status(conn, found[:2])

    run, platform = await daemon.views.in_thread(status, daemon.views.path), ask.query.get("platform")
    newest = Newest(MAX_ACTIONS)
    async for acted in run_actions(daemon, found[0], found[1]):
        newest.add(acted)
    every = [run_queries.action_dict(a) for a in newest.first()]
    return ok({**run, "all_actions": [a for a in every if platform in (None, a["platform"])],
               **{f"{p}_actions": [a for a in every if a["platform"] == p] if platform in (None, p) else []
                  for p in run_queries.PLATFORMS},
               "rounds_count": len({a["round_num"] for a in every}),
               "recent_actions": [a for a in every if a["round_num"] == run["current_round"]
                                  and platform in (None, a["platform"])]})


async def get_timeline(daemon: Host, ask: Ask) -> Reply:
    found = await find(daemon, ask.params["simulation_id"])
    if found is None:
        return unknown(ask.params["simulation_id"])
    actions = [a async for a in run_actions(daemon, found[0], found[1])]
    rounds = run_queries.timeline(actions, number(ask.query, "start_round", 0) or 0,
                                  number(ask.query, "end_round", None))
    return ok({"rounds_count": len(rounds), "timeline": rounds})


async def get_agent_stats(daemon: Host, ask: Ask) -> Reply:
    found = await find(daemon, ask.params["simulation_id"])
    if found is None:
        return unknown(ask.params["simulation_id"])
    stats = run_queries.agent_stats([a async for a in run_actions(daemon, found[0], found[1])])
    return ok({"agents_count": len(stats), "stats": stats})


async def not_ours(daemon: Host, ask: Ask) -> Reply:
    return failed(501, ORCHESTRATION, code="not_implemented")


READERS: list[tuple[str, str, Reader]] = [
    ("GET", f"{PREFIX}/list", list_simulations),
    ("GET", f"{PREFIX}/history", history),
    ("GET", PREFIX + "/{simulation_id}", get_info),
    ("GET", PREFIX + "/{simulation_id}/profiles", get_profiles),
    ("GET", PREFIX + "/{simulation_id}/profiles/realtime", get_profiles_realtime),
    ("GET", PREFIX + "/{simulation_id}/config", get_config),
    ("GET", PREFIX + "/{simulation_id}/config/realtime", get_config_realtime),
    ("GET", PREFIX + "/{simulation_id}/config/download", download_config),
    ("GET", PREFIX + "/{simulation_id}/run-status", get_run_status),
    ("GET", PREFIX + "/{simulation_id}/posts", get_posts),
    ("GET", PREFIX + "/{simulation_id}/comments", get_comments),
]
ACTORS: list[tuple[str, str, Actor]] = [
    ("GET", PREFIX + "/{simulation_id}/actions", get_actions),
    ("GET", PREFIX + "/{simulation_id}/timeline", get_timeline),
    ("GET", PREFIX + "/{simulation_id}/agent-stats", get_agent_stats),
    ("GET", PREFIX + "/{simulation_id}/run-status/detail", get_run_status_detail),
    *(("POST", f"{PREFIX}/{path}", not_ours) for path in (
        "create", "prepare", "prepare/status", "start", "stop", "generate-profiles", "close-env")),
    *(("GET", PREFIX + path, not_ours) for path in (
        "/entities/{graph_id}", "/entities/{graph_id}/{entity_uuid}", "/entities/{graph_id}/by-type/{entity_type}",
        "/script/{script_name}/download")),
    *((method, "/api/graph/{path:path}", not_ours) for method in ("GET", "POST", "DELETE")),
]
