"""The report tools, reading the simulation model (docs/architecture.md#tools).

Every result is canonical JSON with ids (`post:twitter:42`, `agent:7`) so sentences can
cite evidence, and every query orders its rows fully, so the same model gives the same
bytes on every machine: replay depends on it.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import re
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

import anyio

from simreportd.analysis import Reader, Wordings
from simreportd.errors import ToolError
from simreportd.events.models import SampledStatement
from simreportd.projections import simulation_queries
from simreportd.projections.chart import activity_rows, per_round_rows, turning_points
from simreportd.projections.sqlite import in_thread, reading
from simreportd.projections.tallies import argument_key

from ..report.stance_labels import MAX_TEXT, sample
from .calculate import calculate
from .camps import camps_from_sayings
from .coalitions import coalitions_of
from .toolspec import REPORT_TOOLS

log = logging.getLogger("simreportd.tools")

MAX_RESULT = 16 * 1024  # bytes of JSON a tool result may take, whatever the simulation's size
MAX_SERIES = 60  # per-round rows in an analytics result; longer runs are summed into spans of rounds
MAX_POINTS = 10  # turning points in an analytics result, the sharpest first
CAMPS_CACHED = 8  # simulations whose camps a SimulationTools keeps
MAX_TIMELINE = 24  # entries in a panorama timeline; longer ones are grouped by spans of rounds
MAX_AGENT_ROUNDS = 40  # per-round rows in an agent profile; longer runs are summed into spans of rounds
MAX_STATEMENTS = 6  # an agent profile's first and newest statements, each


class Interviews(Protocol):
    async def report_interview(self, simulation_id: str, generation: int, topic: str, max_agents: int = 5) -> str:
        """The interview_agents tool's result (JSON text), live or in persona."""
        ...


class SimulationTools:
    """Tool implementations over the read-model database, run in worker threads.

    `interview_agents` reaches outside the database (the simulator's file RPC), so it is
    delegated to an `Interviews` implementation the daemon provides.
    """

    def __init__(self, views_path: Path, interviews: Interviews | None = None,
                 limiter: anyio.CapacityLimiter | None = None, reader: Reader | None = None) -> None:
        self.views_path, self.interviews, self.limiter = views_path, interviews, limiter
        self.reader = reader or Reader(None)
        self._camps: dict[tuple[str, int, int, str], tuple[dict[str, Any], Wordings]] = {}  # per run, last
        # statement and labels
        self._camps_lock = threading.Lock()  # tools of several reports run in worker threads at once
        self._finding: dict[tuple[str, int, int, str], threading.Lock] = {}  # camps being found, one thread each
        # The labels of the report a tool call runs for: a tool's arguments are the model's, so they travel
        # beside them, per worker thread (calls of several reports run at once)
        self._asking = threading.local()

    async def run(self, name: str, arguments: dict[str, Any], simulation_id: str, generation: int,
                  labels: Mapping[str, str] | None = None) -> str:
        """Run tool `name` and return its result as JSON text; `labels` are the stances a model gave
        statements, by citation id (docs/architecture.md#stances-labelled-by-the-model)."""
        if name not in REPORT_TOOLS:
            raise ToolError(f"unknown tool {name!r}")
        if name == "interview_agents":
            return await self._interview(arguments, simulation_id, generation)
        if name == "calculate":  # pure: no database
            return _dumps(calculate(arguments.get("expression")))
        method = getattr(self, name)
        return await in_thread(self._call, method, arguments, (simulation_id, generation), dict(labels or {}),
                               limiter=self.limiter)

    async def sample(self, simulation_id: str, generation: int, cap: int) -> tuple[list[SampledStatement], int]:
        """Up to `cap` of the run's statements for the model to label, every agent and round covered first
        (`stance_labels.sample`), and how many statements the run holds."""
        return await in_thread(self._sample, (simulation_id, generation), cap, limiter=self.limiter)

    def _sample(self, key: tuple[str, int], cap: int) -> tuple[list[SampledStatement], int]:
        with reading(self.views_path) as conn:
            places = simulation_queries.statement_places(conn, key)
            posts = simulation_queries.posts_by_refs(conn, key, sample(places, cap))
        return [SampledStatement(ref=p["ref"], agent_id=p["agent"]["id"], round=p["round"],
                                 text=(p["content"] or "")[:MAX_TEXT]) for p in posts], len(places)

    async def _interview(self, arguments: dict[str, Any], simulation_id: str, generation: int) -> str:
        topic = arguments.get("interview_topic")
        if not isinstance(topic, str) or not topic.strip():
            raise ToolError("interview_agents needs interview_topic (a non-empty string)")
        if self.interviews is None:
            raise ToolError("interviews are not available here")
        max_agents = arguments.get("max_agents", 5)
        result = await self.interviews.report_interview(simulation_id, generation, topic,
                                                        max_agents if isinstance(max_agents, int) else 5)
        return result if len(result.encode()) <= MAX_RESULT else bounded_json(json.loads(result), MAX_RESULT)

    async def warm(self, simulation_id: str, generation: int) -> None:
        """Find the run's camps now, so that while a model plans the outline, the `simulation_analytics`
        call every section makes next is prepared."""
        try:
            await in_thread(self._call_raw, self._camps_of, {}, (simulation_id, generation), limiter=self.limiter)
        except sqlite3.Error as exc:  # a head start, not a step: the analytics call itself says what is wrong
            log.debug("camps of %s not prepared ahead: %s", simulation_id, exc)

    async def context(self, simulation_id: str, generation: int) -> dict[str, Any]:
        """What planning needs: statistics, requirement, agent types, stances, sample posts."""
        return await in_thread(self._call_raw, self.gather_context, {}, (simulation_id, generation),
                                              limiter=self.limiter)

    def _call(self, method: Any, arguments: dict[str, Any], key: tuple[str, int], labels: dict[str, str]) -> str:
        self._asking.labels = labels  # read by _analysed below this call, in this worker thread only
        try:
            return bounded_json(self._call_raw(method, arguments, key), MAX_RESULT)
        finally:
            self._asking.labels = {}

    def _call_raw(self, method: Any, arguments: dict[str, Any], key: tuple[str, int]) -> Any:
        known, ignored = _split_args(method, arguments)
        with reading(self.views_path) as conn:
            try:
                result = method(conn, key, **known)
            except TypeError as exc:
                raise ToolError(f"bad arguments {sorted(arguments)}: {exc}") from None
        if ignored and isinstance(result, dict):  # weak models invent arguments: answer, and say which were unused
            result = {"ignored_arguments": ignored, **result}
        return result

    # --- the tools --------------------------------------------------------------------------

    def simulation_analytics(self, conn: sqlite3.Connection, key: tuple[str, int]) -> dict[str, Any]:
        per_round = _per_round(conn, key)
        totals = {p: sum(r[p] for r in per_round) for p in ("twitter", "reddit")}
        total = sum(totals.values())
        series = compress_rounds(per_round, MAX_SERIES, _after_scheduled_event(conn, key))
        return {
            "simulation_id": key[0], "generation": key[1], "total_actions": total,
            "actions_by_platform": totals, "rounds": max(0, len(per_round) - 1),
            "busiest_round": max(per_round, key=lambda r: (r["total"], -r["round"]), default=None),
            "per_round": series,
            "turning_points": _sharpest(turning_points(per_round), MAX_POINTS),
            "divergence": {"overall": round(abs(totals["twitter"] - totals["reddit"]) / total, 3) if total else 0.0,
                           "by_round": [{"round": r["round"], "value": r["divergence"]} for r in series]},
            "most_active_agents": simulation_queries.most_active(conn, key, 5),
            "most_engaged_agents": simulation_queries.most_engaged_agents(conn, key, 5),
            "action_mix": simulation_queries.action_mix(conn, key),
            "camps": self._camps_of(conn, key),
        }

    def _camps_of(self, conn: sqlite3.Connection, key: tuple[str, int]) -> dict[str, Any]:
        return self._analysed(conn, key)[0]

    def _wordings_of(self, conn: sqlite3.Connection, key: tuple[str, int]) -> Wordings:
        return self._analysed(conn, key)[1]

    def _analysed(self, conn: sqlite3.Connection, key: tuple[str, int]) -> tuple[dict[str, Any], Wordings]:
        """Camps read from what the fold kept per agent and wording, the wordings grouped by meaning: the
        dearest part of an analytics call (a row per agent and wording, and their vectors), so kept until
        the run has a new statement, and found by one thread while the others asking for the same wait for
        its answer; each section of a report asks."""
        labels: dict[str, str] = getattr(self._asking, "labels", {})
        cached = (*key, simulation_queries.last_statement(conn, key), _digest(labels))
        with self._camps_lock:
            found = self._camps.get(cached)
            finding = self._finding.setdefault(cached, threading.Lock())
        if found is not None:
            return found
        with finding:
            with self._camps_lock:
                found = self._camps.get(cached)
            if found is None:
                setup, sayings = simulation_queries.setup(conn, key), simulation_queries.sayings(conn, key)
                found = self._camps_found(sayings, labelled_by_wording(conn, key, labels), setup[0] if setup else "")
                with self._camps_lock:
                    while len(self._camps) >= CAMPS_CACHED:
                        self._camps.pop(next(iter(self._camps)))
                    self._camps[cached] = found
                    self._finding.pop(cached, None)
        return found

    def _camps_found(self, sayings: list[tuple[Any, ...]], labels: dict[tuple[int, str], str],
                     requirement: str) -> tuple[dict[str, Any], Wordings]:
        wordings = self.reader.wordings(sayings, requirement)
        camps = camps_from_sayings(sayings, meaning=wordings.meaning, labels=labels, off_topic=wordings.off_topic)
        camps["side_changers"] = len(camps["stance_shifts"])  # the list may be cut to fit a result; the count not
        camps["grouped_by"] = {"meaning": self._embedder_of(wordings), "wordings": wordings.total,
                               "compared": len(wordings.keys) if wordings.vectors is not None else 0,
                               **({"note": wordings.note} if wordings.note else {})}
        return camps, wordings

    def _search(self, conn: sqlite3.Connection, key: tuple[str, int], query: str, limit: int,
                kinds: tuple[str, ...] | None) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.reader.search(conn, key, query, limit, kinds, self._wordings_of(conn, key))
        return found

    def _searched_by(self, conn: sqlite3.Connection, key: tuple[str, int]) -> str | None:
        """The embedder whose vectors ranked this run's searches (None: keywords alone); a replay reads it."""
        return self._embedder_of(self._wordings_of(conn, key))

    @staticmethod
    def _embedder_of(wordings: Wordings) -> str | None:
        return wordings.embedder if wordings.vectors is not None else None

    def quick_search(self, conn: sqlite3.Connection, key: tuple[str, int], query: str,
                     limit: int = 10) -> dict[str, Any]:
        limit = max(1, min(int(limit), 50))
        return {"query": query, "results": self._search(conn, key, query, limit, kinds=None),
                "searched_by": self._searched_by(conn, key)}

    def panorama_search(self, conn: sqlite3.Connection, key: tuple[str, int], query: str,
                        include_expired: bool = True) -> dict[str, Any]:
        hits = sorted(self._search(conn, key, query, 200, kinds=("post", "quote", "comment")),
                      key=lambda h: (h["round"], h["ref"]))
        latest: dict[int, dict[str, Any]] = {}
        for hit in hits:
            latest[hit["agent"]["id"]] = hit
        current = sorted(latest.values(), key=lambda h: (h["round"], h["ref"]))
        superseded = [h for h in hits if latest[h["agent"]["id"]] is not h]
        result = {
            "query": query, "matches": len(hits), "timeline": _timeline(hits, MAX_TIMELINE),
            "searched_by": self._searched_by(conn, key),
            "current_statements": current[-12:],
            "undone_actions": simulation_queries.undone_actions(conn, key),
        }
        if include_expired:
            result["superseded_statements"] = superseded[-8:]
        return result

    def insight_forge(self, conn: sqlite3.Connection, key: tuple[str, int], query: str) -> dict[str, Any]:
        questions = sub_questions(query)
        findings: list[dict[str, Any]] = [
            {"question": question, "evidence": self._search(conn, key, question, 4, kinds=("post", "quote", "comment"))}
            for question in questions]
        agent_ids = sorted({e["agent"]["id"] for f in findings for e in f["evidence"]})
        return {"query": query, "sub_questions": findings, "searched_by": self._searched_by(conn, key),
                "agents": simulation_queries.profiles(conn, key, agent_ids),
                "interaction_chains": simulation_queries.chains(conn, key, agent_ids)}

    def agent_profile(self, conn: sqlite3.Connection, key: tuple[str, int], agent: Any = None,
                      agent_id: Any = None, name: Any = None) -> dict[str, Any]:
        who = self._agent_named(conn, key, agent if agent is not None else agent_id if agent_id is not None else name)
        profile = simulation_queries.profiles(conn, key, [who])[0]  # _agent_named found it
        rows = per_round_rows(simulation_queries.agent_rounds(conn, key, who))
        shifts = [s for s in self._camps_of(conn, key)["stance_shifts"] if s["agent_id"] == who]
        links = simulation_queries.chains(conn, key, [who])
        ref = f"agent:{who}"
        return {
            "agent": {"ref": ref, "name": profile["name"], "stance": profile["stance"],
                      "entity_type": profile["type"], "bio": (profile["bio"] or "")[:300]},
            "actions": profile["actions"],
            "per_round_counts": "posts, quotes, comments and reactions (likes, reposts, follows...); the other "
                                "actions (searches, idle turns) have no round: other_actions",
            "other_actions": profile["actions"] - sum(r["total"] for r in rows),
            "by_platform": {p: sum(r[p] for r in rows) for p in ("twitter", "reddit")},
            "active_rounds": sum(1 for r in rows if r["total"]),
            "first_round": rows[0]["round"] if rows else None, "last_round": rows[-1]["round"] if rows else None,
            "per_round": [{k: v for k, v in r.items() if k != "divergence"} for r in compress_rounds(rows, MAX_AGENT_ROUNDS)],
            "stance_shift": shifts[0] if shifts else None,
            "statements": simulation_queries.agent_statement_count(conn, key, who),
            "first_statements": simulation_queries.agent_statements(conn, key, who, MAX_STATEMENTS, newest=False),
            "latest_statements": simulation_queries.agent_statements(conn, key, who, MAX_STATEMENTS, newest=True),
            "reactions_received": simulation_queries.agent_reactions(conn, key, who),
            "engaged_with": [c for c in links if c["from"] == ref and c["to"] != ref],
            "engaged_by": [c for c in links if c["to"] == ref and c["from"] != ref],
        }

    def _agent_named(self, conn: sqlite3.Connection, key: tuple[str, int], given: Any) -> int:
        """The id of the agent `given` names (agent:7, 7, "7" or a name), or a ToolError saying how to find one."""
        text = str(given if given is not None else "").strip()
        number = text.removeprefix("agent:")
        if number.isdigit() and simulation_queries.agent_profile(conn, key, int(number)) is not None:
            return int(number)
        found = simulation_queries.agents_named(conn, key, text) if text and not number.isdigit() else []
        if len(found) == 1 or (found and found[0]["name"].lower() == text.lower()):
            return int(found[0]["agent_id"])
        low, high = simulation_queries.agent_id_range(conn, key)
        named = ", ".join(f"{a['name']} (agent:{a['agent_id']})" for a in found)
        hint = f" Did you mean {named}?" if found else ""
        raise ToolError(f"no agent {text!r} in this simulation.{hint} Give `agent` as an id from agent:{low} to "
                        f"agent:{high}, or a name as the tools write it: simulation_analytics lists the most active and "
                        "most engaged agents, quick_search finds agents by name or by words of their profile.")

    def coalitions(self, conn: sqlite3.Connection, key: tuple[str, int], min_size: Any = 3) -> dict[str, Any]:
        pairs = simulation_queries.mutual_follows(conn, key)
        both_ways = [p for a, b in pairs for p in ((a, b), (b, a))]
        firsts = simulation_queries.follow_rounds(conn, key, both_ways)
        formed = {(a, b): max(firsts.get((a, b), 0), firsts.get((b, a), 0)) for a, b in pairs}
        speaks_for = {s["agent_id"]: s["now_speaks_for"] for s in self._camps_of(conn, key)["stance_shifts"]}
        size = min(max(int(min_size) if str(min_size).isdigit() else 3, 2), 20)
        return coalitions_of(formed, simulation_queries.agent_stances(conn, key), speaks_for, size)

    def gather_context(self, conn: sqlite3.Connection, key: tuple[str, int]) -> dict[str, Any]:
        setup = simulation_queries.setup(conn, key)
        if setup is None:
            raise ToolError(f"simulation {key[0]} generation {key[1]} is not in the simulation model")
        requirement, config = setup
        platforms = simulation_queries.platforms(conn, key)
        stances, types = simulation_queries.stance_counts(conn, key), simulation_queries.entity_type_counts(conn, key, 8)
        return {
            "simulation_id": key[0], "generation": key[1], "requirement": requirement,
            "platforms": platforms, "total_actions": sum(p["actions"] or 0 for p in platforms.values()),
            "rounds": max([p["rounds"] or 0 for p in platforms.values()] or [0]),
            "agents_count": sum(stances.values()), "stances": stances, "agent_types": types,
            "hot_topics": config.get("hot_topics", []), "scheduled_events": config.get("scheduled_events", []),
            "narrative_direction": config.get("narrative_direction", ""),
            "sample_posts": simulation_queries.most_engaged_posts(conn, key, 5),
        }


def _digest(labels: dict[str, str]) -> str:
    """A short name for a report's labels ('' for none): camps found with them are kept under it."""
    return hashlib.sha256(_dumps(labels).encode()).hexdigest()[:16] if labels else ""


def labelled_by_wording(conn: sqlite3.Connection, key: tuple[str, int],
                        labels: dict[str, str]) -> dict[tuple[int, str], str]:
    """The labels by (agent, wording), as the camps read statements (digits masked; the fold's argument key)."""
    posts = simulation_queries.posts_by_refs(conn, key, sorted(labels)) if labels else []
    return {(p["agent"]["id"], argument_key(p["content"] or "")): labels[p["ref"]] for p in posts}


def sub_questions(query: str) -> list[str]:
    """Split a question into its parts (on '?', ';', ' and ', ','), keeping the whole as the first."""
    parts = [p.strip() for p in re.split(r"[?;,]|\band\b", query) if len(p.strip()) > 3]
    unique = list(dict.fromkeys([query.strip(), *parts]))
    return unique[:4]


def bounded_json(result: dict[str, Any], limit: int) -> str:
    """`result` as canonical JSON of at most `limit` bytes: its largest lists lose their last items until it fits.

    The lists are cut in a copy: a result can hold lists a cache keeps (the camps), and cutting those would
    shorten every later call's answer, so a tool would answer otherwise after a restart than before it.
    """
    text = _dumps(result)
    if len(text.encode()) > limit:
        result = json.loads(text)
    while len(text.encode()) > limit:
        largest = max(_lists(result), key=lambda items: len(_dumps(items)), default=None)
        if not largest:
            break
        size = len(_dumps(largest).encode())
        cut = max(1, -(-len(largest) * (len(text.encode()) - limit) // size))
        del largest[max(0, len(largest) - cut):]
        result["truncated"] = f"shortened to fit {limit // 1024} KB: lists keep their first items"
        text = _dumps(result)
    return text


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _lists(value: Any) -> Iterator[list[Any]]:
    """Every non-empty list inside a JSON value."""
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    if isinstance(value, list) and value:
        yield value
    for child in children:
        yield from _lists(child)


def _after_scheduled_event(conn: sqlite3.Connection, key: tuple[str, int]) -> int | None:
    """The round after the run's first scheduled event, where a span of the analytics' rounds begins."""
    setup = simulation_queries.setup(conn, key)
    events = (setup[1].get("scheduled_events") or []) if setup else []
    first = events[0].get("round") if events and isinstance(events[0], dict) else None
    return first + 1 if isinstance(first, int) else None


def compress_rounds(rows: list[dict[str, Any]], limit: int, begins: int | None = None) -> list[dict[str, Any]]:
    """Per-round rows as they are, or, past `limit` rows, summed over spans of rounds (`round`..`last_round`); with
    `begins`, a span begins at that round (the one after a scheduled event: what came after it is not summed with
    the event's own round or those before)."""
    if len(rows) <= limit:
        return rows
    at = next((i for i, r in enumerate(rows) if r["round"] == begins), None)
    span = -(-len(rows) // (limit if at is None else limit - 1))  # room for the short span before `begins`
    first = 0 if at is None else at % span
    starts = ([0] if first else []) + list(range(first, len(rows), span))
    out = []
    for i, end in zip(starts, [*starts[1:], len(rows)]):
        part = rows[i:end]
        t, d = sum(r["twitter"] for r in part), sum(r["reddit"] for r in part)
        out.append({"round": part[0]["round"], "last_round": part[-1]["round"], "twitter": t, "reddit": d,
                    "total": t + d, "divergence": round(abs(t - d) / (t + d), 3) if t + d else 0.0})
    return out


def _timeline(hits: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """Statements per round and platform with the first of each; past `limit` entries, per span of rounds."""
    index = {r: i for i, r in enumerate(sorted({h["round"] for h in hits}))}
    span = max(1, -(-len(index) * 2 // limit))  # two platforms per span
    groups: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for hit in hits:  # sorted by round already
        groups.setdefault((index[hit["round"]] // span, hit["platform"]), []).append(hit)
    entries = []
    for (_, platform), items in sorted(groups.items()):
        entry = {"round": items[0]["round"], "platform": platform, "statements": len(items), "first": items[0]}
        if span > 1:
            entry["last_round"] = items[-1]["round"]
        entries.append(entry)
    return entries


def _sharpest(points: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """The `limit` turning points with the highest ratio, in round order."""
    return sorted(sorted(points, key=lambda p: (-p["ratio"], p["round"]))[:limit], key=lambda p: p["round"])


def _split_args(method: Any, arguments: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The arguments `method` takes, and the names of those it does not (ours start with `_`: dropped)."""
    accepted = list(inspect.signature(method).parameters)[2:]  # after the connection and the run's key
    known = {k: v for k, v in arguments.items() if k in accepted and not k.startswith("_")}
    return known, sorted(k for k in arguments if k not in known and not k.startswith("_"))


def _per_round(conn: sqlite3.Connection, key: tuple[str, int]) -> list[dict[str, Any]]:
    return activity_rows(conn, *key)
