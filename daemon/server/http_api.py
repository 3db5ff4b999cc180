"""HTTP GET reads on the server's port: our JSON API and the dashboard (MiroFish's routes: mirofish.py).

Each handler reads the read models on a fresh read-only connection (in a worker
thread) and returns `(status, content type, body)`; `asgi.routes` serves every one registered
with `@route`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from simreportd.projections import report_queries, simulation_queries
from simreportd.projections.chart import activity_chart, activity_rows
from simreportd.projections.export import full_markdown, load_report
from simreportd.projections.failures import fold_failures
from simreportd.projections.sqlite import reading, typed

Reply = tuple[int, str, bytes]
JSON, TEXT, SVG, HTML, MARKDOWN = ("application/json", "text/plain; version=0.0.4", "image/svg+xml",
                                    "text/html; charset=utf-8", "text/markdown; charset=utf-8")
STATIC = Path(__file__).with_name("static")


def json_reply(value: Any, status: int = 200) -> Reply:
    return status, JSON, json.dumps(value, ensure_ascii=False).encode()


def error_reply(code: str, message: str, status: int) -> Reply:
    """Our own API's error body, saying it is ours (`api`: MiroFish's routes answer `{success, error}`)."""
    return json_reply({"error": code, "message": message, "api": "simreportd"}, status)


class BadRequest(ValueError):
    """A query or path value we cannot use: answered 400 with the message."""


def int_param(text: str, name: str) -> int:
    """A non-negative 64-bit integer from the request, or `BadRequest`."""
    if not text.isdigit() or len(text) > 18:
        raise BadRequest(f"{name} must be an integer from 0 to 10^18, got {text[:40]!r}")
    return int(text)


def not_found(what: str) -> Reply:
    return error_reply("not_found", what, 404)


ROUTES: list[tuple[str, Callable[..., Reply]]] = []  # (path as Starlette writes it, function): asgi.routes serves them


def route(path: str) -> Callable[[Callable[..., Reply]], Callable[..., Reply]]:
    """Register a read: `fn(conn, query, *path parameters) -> Reply`, run on a read-only connection in a thread."""
    def register(fn: Callable[..., Reply]) -> Callable[..., Reply]:
        ROUTES.append((path, fn))
        return fn
    return register


def answer(views: Path, fn: Callable[..., Reply], query: dict[str, str], args: list[str]) -> Reply:
    """Answer one GET with `fn` on a fresh read-only connection (in a worker thread; the edge checked the request).
    A missing file raises ViewsMissing, which the app answers 503 with Retry-After."""
    with reading(views) as conn:
        try:
            return fn(conn, query, *args)
        except BadRequest as exc:
            return error_reply("bad_request", str(exc), 400)


def dashboard() -> Reply:
    return 200, HTML, (STATIC / "dashboard.html").read_bytes()


@route("/api/simulations")
def simulations(conn: sqlite3.Connection, query: dict[str, str]) -> Reply:
    rows = simulation_queries.simulations(conn)
    for row in rows:
        del row["folder"]  # where it lives on this machine is no business of a dashboard
    return json_reply({"simulations": [typed(row) for row in rows]})


@route("/api/simulations/{simulation_id}/activity.svg")
def activity(conn: sqlite3.Connection, query: dict[str, str], given: str) -> Reply:
    """The run's actions per round: of `?generation=N` (a report's own run), else of its newest generation."""
    simulation_id = simulation_queries.resolve(conn, given) or given
    latest = simulation_queries.latest_generation(conn, simulation_id)
    if latest is None:
        return not_found(f"no simulation {simulation_id}")
    generation = int_param(query["generation"], "generation") if "generation" in query else latest[0]
    if generation > latest[0]:
        return not_found(f"no generation {generation} of simulation {simulation_id} (its newest is {latest[0]})")
    return 200, SVG, activity_chart(conn, simulation_id, generation).encode()


@route("/api/reports")
def reports(conn: sqlite3.Connection, query: dict[str, str]) -> Reply:
    return json_reply({"reports": [typed(row) for row in report_queries.reports(conn)]})


@route("/api/reports/{report_id}")
def report(conn: sqlite3.Connection, query: dict[str, str], report_id: str) -> Reply:
    found = load_report(conn, report_id)
    if found is None:
        return not_found(f"no report {report_id}")
    found["activity"] = activity_rows(conn, found["simulation_id"], found["generation"])
    found["sections"] = [typed(section) for section in found["sections"]]
    for derived in ("log", "console"):  # the agent and console logs have routes of their own
        found.pop(derived)
    return json_reply(typed(found))


@route("/api/reports/{report_id}/trace")
def trace(conn: sqlite3.Connection, query: dict[str, str], report_id: str) -> Reply:
    found = report_queries.trace(conn, report_id)
    return json_reply(found) if found is not None else not_found(f"no trace for report {report_id}")


@route("/api/reports/{report_id}/markdown")
def markdown(conn: sqlite3.Connection, query: dict[str, str], report_id: str) -> Reply:
    found = load_report(conn, report_id)
    return (200, MARKDOWN, full_markdown(found).encode()) if found else not_found(f"no report {report_id}")


def metrics(conn: sqlite3.Connection, head: int, projected: int, clients: int) -> str:
    """Prometheus text exposition of the daemon's counters (all derived from the log and views)."""
    by_status = report_queries.counts_by_status(conn)
    llm, tools, prompt, completion = report_queries.totals(conn)
    rejections = simulation_queries.rejections(conn)
    failures = len(fold_failures(conn))
    lines = [
        "# HELP simreportd_events_appended_total Events in the log (the last position).",
        "# TYPE simreportd_events_appended_total counter", f"simreportd_events_appended_total {head}",
        "# HELP simreportd_projection_lag Events not yet folded into the read models.",
        "# TYPE simreportd_projection_lag gauge", f"simreportd_projection_lag {head - projected}",
        "# HELP simreportd_reports Reports by status.", "# TYPE simreportd_reports gauge",
        *[f'simreportd_reports{{status="{s}"}} {by_status.get(s, 0)}'
          for s in ("pending", "planning", "generating", "completed", "completed_degraded", "failed")],
        "# HELP simreportd_llm_calls_total LLM requests made by report agents.",
        "# TYPE simreportd_llm_calls_total counter", f"simreportd_llm_calls_total {llm}",
        "# HELP simreportd_tool_calls_total Tool calls made by report agents.",
        "# TYPE simreportd_tool_calls_total counter", f"simreportd_tool_calls_total {tools}",
        "# HELP simreportd_tokens_total LLM tokens, by kind.", "# TYPE simreportd_tokens_total counter",
        f'simreportd_tokens_total{{kind="prompt"}} {prompt}', f'simreportd_tokens_total{{kind="completion"}} {completion}',
        "# HELP simreportd_websocket_clients Connected websocket clients.",
        "# TYPE simreportd_websocket_clients gauge", f"simreportd_websocket_clients {clients}",
        "# HELP simreportd_ingest_rejections_total Input lines recorded as IngestRejected.",
        "# TYPE simreportd_ingest_rejections_total counter", f"simreportd_ingest_rejections_total {rejections}",
        "# HELP simreportd_projection_failures_total Events a read model skipped because folding them failed.",
        "# TYPE simreportd_projection_failures_total counter", f"simreportd_projection_failures_total {failures}",
    ]
    return "\n".join(lines) + "\n"
