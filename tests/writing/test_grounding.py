"""Grounding: quotes must come from the section's observations; invented ones are sent back, then marked."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from simreportd.agent.checks.grounding import check, mark
from simreportd.daemon.cli.local import generate
from simreportd.daemon.service import Daemon
from simreportd.events.streams import report_stream
from simreportd.projections.sqlite import connect_views

from ..conftest import make_config
from ..fake_llm import FakeLLM

pytestmark = pytest.mark.anyio

INVENTED = '> "Everyone agreed the policy was perfect." (post:twitter:9999)'


def invent_quotes(body: dict, message: dict) -> dict | None:
    """A model that writes its sections well, then adds a quote nobody wrote."""
    system = body["messages"][0]["content"]
    if message.get("tool_calls") or "Plan the report" in system or "You answer as one simulated" in system:
        return None
    return {**message, "content": message["content"] + "\n\n" + INVENTED}


async def run_report(tmp_path: Path, folder: Path, script) -> tuple[list, dict]:
    with FakeLLM(script=script) as llm:
        config = make_config(tmp_path, reports={"auto": False},
                             # room for every tool result: shortening a conversation is not what is tested here
                             llm={"provider": "openai", "base_url": llm.base_url, "model": "m",
                                  "context_tokens": 32768})
        async with Daemon(config, folders=[folder]) as daemon:
            await daemon.watcher.check(folder)
            report_id = await daemon.reports.request(folder.name)
            await generate(daemon, report_id)
            events = await daemon.store.read_stream(report_stream(report_id))
    conn = connect_views(config.store.path.with_name("events-views.sqlite3"))
    row = conn.execute("SELECT ungrounded_quotes, status FROM reports WHERE report_id = ?", (report_id,)).fetchone()
    conn.close()
    return events, {"ungrounded": row[0], "status": row[1]}


async def test_a_faithful_model_scores_zero(tmp_path: Path, small_sim: Path) -> None:
    events, view = await run_report(tmp_path, small_sim, None)
    assert view == {"ungrounded": 0, "status": "completed"}
    assert not [e for e in events if e.type == "ResponseRejected"]
    sections = [e.data["content"] for e in events if e.type == "SectionCompleted"]
    assert sum(len(re.findall(r"^> ", s, re.M)) for s in sections) >= 3


async def test_an_invented_quote_is_sent_back_once_then_marked_and_counted(tmp_path: Path, small_sim: Path) -> None:
    events, view = await run_report(tmp_path, small_sim, invent_quotes)
    rejected = [e.data for e in events if e.type == "ResponseRejected"]
    sections = [e.data for e in events if e.type == "SectionCompleted"]
    assert [r["reason"] for r in rejected] == ["ungrounded"] * len(sections)
    assert "Everyone agreed the policy was perfect" in rejected[0]["feedback"] and "post:twitter:9999" in rejected[0]["feedback"]
    assert all("[not found in the evidence]" in s["content"] for s in sections)
    assert all(s["ungrounded_quotes"] == 2 for s in sections)  # the quote and its unknown id
    assert view == {"ungrounded": 2 * len(sections), "status": "completed_degraded"}  # marked, and said so
    assert all(s["problems"] == ["2 quote(s) or id(s) not found in the evidence"] for s in sections)


def test_quotes_are_matched_inside_json_results_whatever_their_quote_marks() -> None:
    results = ['{"results": [{"ref": "post:reddit:4", "content": "Bus lanes \\u201cnow\\u201d, not later."}]}']
    body = '> \u201cBus lanes \u201cnow\u201d, not later.\u201d (post:reddit:4)\n\n> "Made up." (post:reddit:4)'
    found = check(body, results, {"post:reddit:4"})
    assert found.ungrounded_quotes == ["Made up."] and found.unknown_ids == []
    assert mark(body, found).count("[not found in the evidence]") == 1
