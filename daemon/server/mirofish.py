"""Every route of MiroFish's report API, answered from our log and read models
(docs/formats.md#http-routes-for-mirofish-clients).

MiroFish's frontend talks to one base URL and reads `{success: true, data}` or `{success: false,
error}`; its routes, their request fields, defaults and status codes are those of MiroFish's
`backend/app/api/report.py`, and the shapes of `data` those of its `Report.to_dict()` and
`ReportManager` (`backend/app/services/report_agent.py`). Only MiroFish's five statuses appear
here; our quality verdict travels in `quality` and `problems`.

Two kinds of handler: readers take a read-only connection to the read models and run in a
worker thread; actors take the daemon (they append events: generate, delete, chat, and the
tools). Each returns a `Reply`; the HTTP layer (asgi.py) turns it into a response.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from simreportd.daemon.host import Host
from simreportd.errors import LimitReached, SimreportdError, WaitTimeout
from simreportd.events.models import ReportDeleted
from simreportd.events.streams import report_stream
from simreportd.projections import report_queries, run_queries, simulation_queries
from simreportd.projections.export import full_markdown, load_report, meta, progress, section_markdown
from simreportd.projections.sqlite import reading
from simreportd.projections.standing import mirofish_status

SETTLE_S = 30.0  # how long an actor waits for the read models to show what it appended


@dataclass(frozen=True)
class Ask:
    """One request as a handler sees it: path parameters (decoded), query parameters, the JSON body, and who
    asks (the peer's address, for the per-client limits)."""

    params: dict[str, str] = field(default_factory=dict)
    query: dict[str, str] = field(default_factory=dict)
    body: Any = None
    client: str = ""  # who asks, for the per-client limits (commands.client_address)


@dataclass(frozen=True)
class Reply:
    status: int
    body: Any  # JSON-able, or bytes with `content_type`
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


Reader = Callable[[sqlite3.Connection, Ask], Reply]
Actor = Callable[[Host, Ask], Awaitable[Reply]]


def ok(data: Any, **extra: Any) -> Reply:
    return Reply(200, {"success": True, "data": data, **extra})


def failed(status: int, error: str, **extra: Any) -> Reply:
    """MiroFish's error body, saying it is MiroFish's (`api`: our own routes answer `{error, message}`)."""
    return Reply(status, {"success": False, "error": error, "api": "mirofish", **extra})


class Absurd(ValueError):
    """A number in a request beyond any log or report (more than 18 digits): answered 400, `bad_request`."""


def _whole(text: str, name: str) -> int | None:
    """A whole number as Flask's `type=int` reads it (None if `text` is none); Absurd past 18 digits."""
    digits = text.strip().lstrip("-")
    if not digits.isdigit():
        return None
    if len(digits) > 18:
        raise Absurd(f"{name} must be a whole number below 10^18, got {text[:40]!r}")
    return int(text)


def from_line(query: dict[str, str]) -> int:
    """`from_line`: anything but a whole number counts as 0, as with Flask's `type=int` (and so does < 0)."""
    return max(0, _whole(query.get("from_line", "0"), "from_line") or 0)


def _simulation(conn: sqlite3.Connection, given: object) -> str | None:
    """The simulation a client names, by its folder name or by `simulation_id` in its simulation_config.json."""
    return simulation_queries.resolve(conn, given) if isinstance(given, str) and given else None


def _report_meta(conn: sqlite3.Connection, report_id: str) -> dict[str, Any] | None:
    found = load_report(conn, report_id)
    return meta(found) if found is not None else None


# --- readers ---------------------------------------------------------------------------------


def get_report(conn: sqlite3.Connection, ask: Ask) -> Reply:
    found = _report_meta(conn, ask.params["report_id"])
    return ok(found) if found else failed(404, f"no report {ask.params['report_id']}")


def by_simulation(conn: sqlite3.Connection, ask: Ask) -> Reply:
    simulation_id = _simulation(conn, ask.params["simulation_id"])
    row = report_queries.latest_report(conn, simulation_id) if simulation_id else None
    if row is None:
        return failed(404, f"simulation {ask.params['simulation_id']} has no report", has_report=False)
    return ok(_report_meta(conn, row["report_id"]), has_report=True)


def list_reports(conn: sqlite3.Connection, ask: Ask) -> Reply:
    limit = ask.query.get("limit", "50")
    simulation_id = _simulation(conn, ask.query.get("simulation_id")) or ask.query.get("simulation_id")
    ids = report_queries.report_list(conn, simulation_id, int(limit) if limit.isdigit() and len(limit) < 10 else 50)
    reports = [found for found in (_report_meta(conn, rid) for rid in ids) if found]
    return ok(reports, count=len(reports))


def download(conn: sqlite3.Connection, ask: Ask) -> Reply:
    report_id = ask.params["report_id"]
    found = load_report(conn, report_id)
    if found is None:
        return failed(404, f"no report {report_id}")
    return Reply(200, full_markdown(found).encode("utf-8"), "text/markdown; charset=utf-8",
                 {"Content-Disposition": f'attachment; filename="{report_id}.md"'})


def get_progress(conn: sqlite3.Connection, ask: Ask) -> Reply:
    found = load_report(conn, ask.params["report_id"])
    return ok(progress(found)) if found else failed(404, f"no progress for report {ask.params['report_id']}")


def sections(conn: sqlite3.Connection, ask: Ask) -> Reply:
    report_id = ask.params["report_id"]
    found = load_report(conn, report_id)
    done = [s for s in (found or {}).get("sections", []) if s["status"] == "completed"]
    return ok({"report_id": report_id, "sections": [
        {"filename": f"section_{s['section_index']:02d}.md", "section_index": s["section_index"],
         "subsection_index": None, "content": section_markdown(s, found), "is_subsection": False} for s in done],
        "total_sections": len(done), "is_complete": found is not None and mirofish_status(found["status"]) == "completed"})


def section(conn: sqlite3.Connection, ask: Ask) -> Reply:
    report_id, number = ask.params["report_id"], ask.params["index"]
    index = _whole(number, "the section number")
    found = load_report(conn, report_id)
    match = [s for s in (found or {}).get("sections", []) if s["section_index"] == index and s["status"] == "completed"]
    if match:
        index = match[0]["section_index"]
        return ok({"filename": f"section_{index:02d}.md", "section_index": index,
                   "content": section_markdown(match[0], found)})
    total = (found or {}).get("sections_total")
    if found is None or total and not (index is not None and 1 <= index <= total):
        return failed(404, f"report {report_id} has no section {number}"
                           + (f" (its sections are 1 to {total})" if total else ""))
    return failed(404, f"section {number} of report {report_id} is not ready")


def check(conn: sqlite3.Connection, ask: Ask) -> Reply:
    given = ask.params["simulation_id"]
    simulation_id = _simulation(conn, given)
    row = report_queries.latest_report(conn, simulation_id) if simulation_id else None
    status = mirofish_status(row["status"]) if row else None
    return ok({"simulation_id": given, "has_report": row is not None, "report_status": status,
               "report_id": row["report_id"] if row else None, "interview_unlocked": status == "completed"})


def generate_status(conn: sqlite3.Connection, ask: Ask) -> Reply:
    """MiroFish's task status, where our task is the report itself (`task_id` is the report id)."""
    body = ask.body if isinstance(ask.body, dict) else {}
    task_id, given = body.get("task_id") or ask.query.get("task_id"), body.get("simulation_id")
    simulation_id = _simulation(conn, given)
    row = report_queries.latest_report(conn, simulation_id) if simulation_id else None
    if row is not None and mirofish_status(row["status"]) == "completed":
        return ok({"simulation_id": given, "report_id": row["report_id"], "status": "completed", "progress": 100,
                   "message": "The report is written", "already_completed": True})
    if not isinstance(task_id, str) or not task_id:
        return failed(400, "send task_id (the report_id generate answered) or simulation_id")
    found = load_report(conn, task_id)
    if found is None:
        return failed(404, f"no task {task_id}")
    status = mirofish_status(found["status"])
    return ok({"task_id": task_id, "task_type": "report_generate",
               "status": {"pending": "pending", "completed": "completed", "failed": "failed"}.get(status, "processing"),
               "progress": max(0, found["progress"]), "message": found["message"],
               "result": {"report_id": task_id, "simulation_id": found["simulation_id"], "status": status}
               if status == "completed" else None,
               "error": found["error"], "metadata": {"simulation_id": found["simulation_id"], "report_id": task_id},
               "created_at": found["created_at"], "updated_at": found["updated_at"]})


# --- actors ----------------------------------------------------------------------------------


async def _resolve(daemon: Host, given: object, graph: object = None) -> str | None:
    """The simulation a client names, or (with no `given`) the one of the graph it names."""
    def find(path: Any) -> str | None:
        with reading(path) as conn:
            if not given and isinstance(graph, str) and graph:
                return simulation_queries.resolve_graph(conn, graph) or _simulation(conn, graph)
            return _simulation(conn, given)

    return await daemon.views.in_thread(find, daemon.views.path)


async def generate(daemon: Host, ask: Ask) -> Reply:
    """The run's report: the one it has (running or completed) unless `force_regenerate`; else a new one.
    A forced one passes `[limits]`' regenerations (daemon/gates.py): beyond them, 429 naming the limit."""
    body = ask.body if isinstance(ask.body, dict) else {}
    given = body.get("simulation_id")
    if not isinstance(given, str) or not given:
        return failed(400, "send simulation_id")
    simulation_id = await _resolve(daemon, given)
    if simulation_id is None:
        return failed(404, f"no simulation {given}: its folder is not under [watch] roots or not ingested yet")
    try:
        report_id, state = await daemon.reports.ensure(
            simulation_id, force=body.get("force_regenerate") is True, trigger="http",
            admit=partial(daemon.regenerations.admit, ask.client, simulation_id))
    except LimitReached as exc:
        return Reply(429, {"success": False, "error": str(exc), "code": exc.code},
                     headers={"Retry-After": str(exc.retry_after_s)})
    except SimreportdError as exc:
        return failed(409 if exc.exit_code == 2 else 500, str(exc))
    await _settled(daemon)  # the report's routes know it now
    messages = {"completed": "The report already exists", "running": "The report is being written",
                "new": "Report started: poll /api/report/generate/status with task_id, or the agent log"}
    return ok({"simulation_id": given, "report_id": report_id, "task_id": report_id,
               "status": "completed" if state == "completed" else "generating", "message": messages[state],
               "already_generated": state == "completed"})


async def delete(daemon: Host, ask: Ask) -> Reply:
    """Hide the report everywhere (a ReportDeleted event); nothing is erased from the log."""
    report_id = ask.params["report_id"]

    def status(path: Any) -> str | None:
        with reading(path) as conn:
            row = report_queries.report_row(conn, report_id)
            return None if row is None else str(row["status"])

    found = await daemon.views.in_thread(status, daemon.views.path)
    if found is None:
        return failed(404, f"no report {report_id}")
    if found not in ("completed", "completed_degraded", "failed"):
        return failed(409, f"report {report_id} is being written ({found}); delete it once it has ended")
    await daemon.store.append(report_stream(report_id), [ReportDeleted(report_id=report_id)])  # at any version
    await _settled(daemon)
    return Reply(200, {"success": True, "message": f"report {report_id} deleted"})


async def _settled(daemon: Host) -> None:
    """Wait (a little) for the read models to fold what was just appended; a lagging fold (a big ingest) does
    not turn a done request into a 500: the views catch up by themselves."""
    with contextlib.suppress(WaitTimeout):
        await daemon.views.wait_for(await daemon.store.last_position(), timeout=SETTLE_S)


async def search_tool(daemon: Host, ask: Ask) -> Reply:
    """MiroFish's `tools/search`: our `quick_search` on the simulation the request names."""
    body = ask.body if isinstance(ask.body, dict) else {}
    query, limit = body.get("query"), body.get("limit", 10)
    if not isinstance(query, str) or not query.strip():
        return failed(400, "send simulation_id (or graph_id) and query")
    return await _tool(daemon, body, "quick_search", {"query": query, "limit": limit if isinstance(limit, int) else 10},
                       lambda conn, key, found: run_queries.search_result(found))


async def statistics_tool(daemon: Host, ask: Ask) -> Reply:
    """MiroFish's `tools/statistics`: our `simulation_analytics` on the simulation the request names."""
    body = ask.body if isinstance(ask.body, dict) else {}
    graph = str(body.get("graph_id") or "")
    return await _tool(daemon, body, "simulation_analytics", {},
                       lambda conn, key, found: {**found, **run_queries.graph_statistics(conn, key, graph)})


Shape = Callable[[sqlite3.Connection, tuple[str, int], dict[str, Any]], dict[str, Any]]


async def _tool(daemon: Host, body: dict[str, Any], tool: str, arguments: dict[str, Any], shape: Shape) -> Reply:
    """Our tool on the simulation named (by `simulation_id`, or by the `graph_id` MiroFish sends), its answer
    given the fields of MiroFish's by `shape` (on the read models)."""
    given, graph = body.get("simulation_id"), body.get("graph_id")
    simulation_id = await _resolve(daemon, given, graph)
    if simulation_id is None:
        named = given or graph
        return failed(400 if not named else 404, f"no simulation or graph {named}" if named else
                      "send simulation_id or graph_id")

    def newest(path: Any) -> int | None:
        with reading(path) as conn:
            latest = simulation_queries.latest_generation(conn, simulation_id)
            return None if latest is None else latest[0]

    generation = await daemon.views.in_thread(newest, daemon.views.path)
    if generation is None:
        return failed(404, f"no run of {simulation_id} is folded yet")
    try:
        result = json.loads(await daemon.runner.tools.run(tool, arguments, simulation_id, generation))
    except SimreportdError as exc:
        return failed(400, str(exc))

    def shaped(path: Any) -> dict[str, Any]:
        with reading(path) as conn:
            return shape(conn, (simulation_id, generation), result)

    return ok(await daemon.views.in_thread(shaped, daemon.views.path))


READERS: list[tuple[str, str, Reader]] = [
    ("GET", "/api/report/list", list_reports),
    ("GET", "/api/report/check/{simulation_id}", check),
    ("GET", "/api/report/by-simulation/{simulation_id}", by_simulation),
    ("POST", "/api/report/generate/status", generate_status),
    ("GET", "/api/report/generate/status", generate_status),  # the frontend's getReportStatus asks with GET
    ("GET", "/api/report/{report_id}", get_report),
    ("GET", "/api/report/{report_id}/download", download),
    ("GET", "/api/report/{report_id}/progress", get_progress),
    ("GET", "/api/report/{report_id}/sections", sections),
    ("GET", "/api/report/{report_id}/section/{index}", section),
]
ACTORS: list[tuple[str, str, Actor]] = [
    ("POST", "/api/report/generate", generate),
    ("DELETE", "/api/report/{report_id}", delete),
    ("POST", "/api/report/tools/search", search_tool),
    ("POST", "/api/report/tools/statistics", statistics_tool),
]  # POST /api/report/chat is daemon/chat_answers.py's chat_request; the agent and console logs are streaming.py's

