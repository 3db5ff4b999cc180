"""MiroFish's interviews (`/api/simulation/interview...`) and the environment's status, answered by our
interviewer (docs/formats.md#simulation-routes).

Request fields and answers are those of MiroFish's `backend/app/api/simulation.py` (interview
2137-2263, interview/batch 2266-2401, interview/all 2404-2504, interview/history 2507-2576,
env-status 2579-2641). An agent is asked live over the simulator's file RPC when its environment
is alive, else in persona from its profile and posts (daemon/interviews/); either way the question
and the answer are recorded as events on the report's stream, as every interview is, so interviews
open once the simulation's report has completed (409 before, saying so).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import anyio

from simreportd.daemon.host import Host
from simreportd.errors import SimreportdError
from simreportd.events.models import InterviewAnswered, InterviewRequested
from simreportd.events.streams import report_stream
from simreportd.projections import report_queries, run_queries, simulation_queries
from simreportd.projections.sqlite import reading

from .mirofish import Actor, Ask, Reply, failed, ok
from .mirofish_simulation import PREFIX, answering, body_of, find, key_of, platform_named, unknown

MAX_INTERVIEWS = 100  # agents one interview request may ask at most: each answer may cost a model call
ERROR_STATUS = {"not_found": 404, "locked": 409, "limit_reached": 429}


async def env_status(daemon: Host, ask: Ask) -> Reply:
    """Whether the run's environment takes interviews now (its env_status.json, a dead simulator's `alive`
    read as gone)."""
    given = body_of(ask).get("simulation_id")
    if not given:
        return failed(400, "send simulation_id")
    found = await find(daemon, given)
    if found is None:
        return unknown(given)
    status = await daemon.interviews.environment.status(found[0])
    alive = status is not None and status.status == "alive"
    return ok({"simulation_id": given, "env_alive": alive,
               "twitter_available": bool(status and status.twitter_available),
               "reddit_available": bool(status and status.reddit_available),
               "message": "the environment is running and takes interviews" if alive else
               "the environment is not running: interviews are answered in persona from profiles and posts"})


async def interview(daemon: Host, ask: Ask) -> Reply:
    """One agent, one question: `{simulation_id, agent_id, prompt, platform?}`."""
    body = body_of(ask)
    agent, prompt = body.get("agent_id"), body.get("prompt")
    if not body.get("simulation_id"):
        return failed(400, "send simulation_id")
    if agent is None or not prompt:
        return failed(400, "send agent_id and prompt (the question)")
    platform = platform_named(body.get("platform"))
    with daemon.interview_gate.admit(ask.client):
        answered = await _ask(daemon, body["simulation_id"], agent, prompt, platform)
    if isinstance(answered, Reply):
        return answered
    now = datetime.now().isoformat()
    return ok({"success": True, "agent_id": agent, "prompt": prompt, "timestamp": now,
               "result": {"agent_id": agent, "response": answered["answer"], "platform": platform, "timestamp": now,
                          "mode": answered["mode"], "interview_id": answered["interview_id"]}})


async def interview_batch(daemon: Host, ask: Ask) -> Reply:
    """Several agents: `{simulation_id, interviews: [{agent_id, prompt, platform?}], platform?}`."""
    body = body_of(ask)
    items, platform = body.get("interviews"), platform_named(body.get("platform"))
    if not body.get("simulation_id"):
        return failed(400, "send simulation_id")
    if not items or not isinstance(items, list):
        return failed(400, "send interviews: a list of {agent_id, prompt}")
    for n, item in enumerate(items, 1):
        if not isinstance(item, dict) or "agent_id" not in item or not item.get("prompt"):
            return failed(400, f"interview {n} of the list needs agent_id and prompt")
        platform_named(item.get("platform"))
    return await _batch(daemon, ask.client, body["simulation_id"],
                        [(i["agent_id"], i["prompt"], i.get("platform") or platform) for i in items])


async def interview_all(daemon: Host, ask: Ask) -> Reply:
    """Every agent of the run, one question: `{simulation_id, prompt, platform?}`."""
    body = body_of(ask)
    given, prompt, platform = body.get("simulation_id"), body.get("prompt"), platform_named(body.get("platform"))
    if not given or not prompt:
        return failed(400, "send simulation_id and prompt (the question)")

    def agents(path: Path) -> list[int] | None:
        with reading(path) as conn:
            key = key_of(conn, given)
            return [p["user_id"] for p in run_queries.profiles(conn, key, "reddit")] if key else None

    found = await daemon.views.in_thread(agents, daemon.views.path)
    if found is None:
        return unknown(given)
    return await _batch(daemon, ask.client, given, [(agent, prompt, platform) for agent in found])


async def _batch(daemon: Host, client: str, given: str, items: list[tuple[Any, Any, str | None]]) -> Reply:
    """Ask each (agent, question, platform): the first alone (a locked or unknown simulation asks no one),
    the rest at once; answers keyed `<platform>_<agent_id>` as MiroFish's are."""
    if len(items) > MAX_INTERVIEWS:
        return failed(400, f"{len(items)} interviews asked; at most {MAX_INTERVIEWS} a request: send them in parts")
    results: dict[str, dict[str, Any]] = {}
    default = await _defaultplatform_named(daemon, given)

    async def one(agent: Any, prompt: Any, platform: str | None) -> Reply | None:
        answered = await _ask(daemon, given, agent, prompt, platform)
        if isinstance(answered, Reply):
            return answered
        results[f"{platform or default}_{agent}"] = {"agent_id": agent, "response": answered["answer"],
                                                     "platform": platform or default, "mode": answered["mode"],
                                                     "interview_id": answered["interview_id"]}
        return None

    with daemon.interview_gate.admit(client):
        if refused := await one(*items[0]):
            return refused
        refusals: list[Reply] = []
        async with anyio.create_task_group() as group:
            for item in items[1:]:
                group.start_soon(_collect, one, item, refusals)
    if refusals:
        return refusals[0]
    now = datetime.now().isoformat()
    return ok({"success": True, "interviews_count": len(items), "timestamp": now,
               "result": {"interviews_count": len(results), "results": results}})


async def _collect(one: Any, item: tuple[Any, Any, str | None], refusals: list[Reply]) -> None:
    if (refused := await one(*item)) is not None:
        refusals.append(refused)


async def _defaultplatform_named(daemon: Host, given: str) -> str:
    """The platform an answer is filed under when none was named: Reddit, which MiroFish's frontend reads first,
    unless the run had only Twitter."""
    def platforms(path: Path) -> dict[str, Any]:
        with reading(path) as conn:
            key = key_of(conn, given)
            return simulation_queries.platforms(conn, key) if key else {}

    found = await daemon.views.in_thread(platforms, daemon.views.path)
    return "twitter" if found and "reddit" not in found else "reddit"


async def _ask(daemon: Host, given: str, agent: Any, prompt: Any, platform: str | None) -> dict[str, Any] | Reply:
    """The interviewer's answer, or our error as MiroFish's error reply."""
    found = await find(daemon, given)
    if found is None:
        return unknown(given)
    try:
        return await daemon.interviews.ask(found[0], agent, prompt, platform)
    except SimreportdError as exc:
        return failed(ERROR_STATUS.get(exc.code, 400 if exc.exit_code == 2 else 500), str(exc), code=exc.code)


async def interview_history(daemon: Host, ask: Ask) -> Reply:
    """The interviews of the run, newest first: those its simulator recorded and those asked through us."""
    body = body_of(ask)
    given, platform, agent, limit = body.get("simulation_id"), platform_named(body.get("platform")), \
        body.get("agent_id"), body.get("limit", 100)
    if not given:
        return failed(400, "send simulation_id")
    limit = limit if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0 else 100
    agent = agent if isinstance(agent, int) and not isinstance(agent, bool) else None

    def read(path: Path) -> tuple[list[dict[str, Any]], list[str]] | None:
        with reading(path) as conn:
            key = key_of(conn, given)
            if key is None:
                return None
            return (run_queries.recorded_interviews(conn, key, platform, agent),
                    report_queries.report_list(conn, key[0], 50))

    found = await daemon.views.in_thread(read, daemon.views.path)
    if found is None:
        return unknown(given)
    recorded, reports = found
    ours = [h for report_id in reports for h in await _asked(daemon, report_id)
            if platform in (None, h["platform"]) and agent in (None, h["agent_id"])]
    history = sorted(ours, key=lambda h: h["timestamp"], reverse=True) + recorded
    return ok({"count": len(history[:limit]), "history": history[:limit]})


async def _asked(daemon: Host, report_id: str) -> list[dict[str, Any]]:
    """The interviews recorded on one report's stream, in MiroFish's history shape (and their mode)."""
    events = await daemon.store.read_stream(report_stream(report_id),
                                            types=[InterviewRequested.TYPE, InterviewAnswered.TYPE])
    asked = {e.interview_id: e.question for r in events if isinstance(e := r.event, InterviewRequested)}
    return [{"agent_id": e.agent_id, "response": e.answer, "prompt": asked.get(e.interview_id, ""),
             "timestamp": r.recorded_at, "platform": e.platform, "mode": e.mode}
            for r in events if isinstance(e := r.event, InterviewAnswered)]


ACTORS: list[tuple[str, str, Actor]] = [
    ("POST", f"{PREFIX}/env-status", env_status),
    ("POST", f"{PREFIX}/interview", answering(interview)),
    ("POST", f"{PREFIX}/interview/batch", answering(interview_batch)),
    ("POST", f"{PREFIX}/interview/all", answering(interview_all)),
    ("POST", f"{PREFIX}/interview/history", answering(interview_history)),
]
