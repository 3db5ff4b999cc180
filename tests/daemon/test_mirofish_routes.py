"""Every route of MiroFish's report API, called in this process (tests/in_process.py), in the shapes MiroFish's
own code reads.

Shapes, defaults and status codes are those of MiroFish's `backend/app/api/report.py` (generate
lines 24-205, generate/status 208-282, the report by id 287-322, by-simulation 325-361, list 364-400,
download 403-445, delete 448-472, chat 477-560, progress 565-602, sections 605-655, section/N
658-700, check 705-747, agent-log and its stream 752-857, console-log and its stream 862-960,
tools/search and tools/statistics 965-1015; restated in our words). Its frontend reads `data.*`
and treats `success: false` as an error (`frontend/src/api/index.js`, lines 24-33); `from_line`
is read with Flask's `type=int`, so a value that is not a whole number counts as 0.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest

from simreportd.daemon.gates import Gate
from simreportd.errors import LimitReached

from ..conftest import TIMEOUT
from ..fake_llm import FakeLLM
from ..in_process import InProcess, acall, copy_of, template_sim, written_template  # noqa: F401 (fixtures)
from ..processes import wait_until

pytestmark = pytest.mark.anyio


@pytest.fixture
async def written(template: tuple[Path, str], tmp_path: Path, small_sim: Path):  # noqa: ANN201
    """The daemon's app in this process on a copy of the template: (app, report_id)."""
    async with InProcess(copy_of(template[0], tmp_path), [small_sim]) as app:
        yield app, template[1]


async def test_the_report_and_its_parts_answer_in_mirofish_shapes(written, small_sim: Path) -> None:  # noqa: ANN001
    base, report_id = written
    status, report, _ = await acall(base, f"/api/report/{report_id}")
    assert status == 200 and report["success"] is True
    data = report["data"]
    for key in ("report_id", "simulation_id", "graph_id", "simulation_requirement", "status", "outline",
                "markdown_content", "created_at", "completed_at", "error"):
        assert key in data, key
    assert data["status"] == "completed" and data["outline"]["sections"] and data["markdown_content"].startswith("# ")
    config_id = json.loads((small_sim / "simulation_config.json").read_text())["simulation_id"]
    for given in (small_sim.name, config_id):  # clients ask by the config's id; our id is the folder's name
        status, by_sim, _ = await acall(base, f"/api/report/by-simulation/{given}")
        assert status == 200 and by_sim["has_report"] is True and by_sim["data"]["report_id"] == report_id
        status, check, _ = await acall(base, f"/api/report/check/{given}")
        assert check["data"] == {"simulation_id": given, "has_report": True, "report_status": "completed",
                                 "report_id": report_id, "interview_unlocked": True}
    encoded = "".join(f"%{ord(c):02X}" for c in small_sim.name)  # every character percent-encoded
    status, by_encoded, _ = await acall(base, f"/api/report/by-simulation/{encoded}")
    assert status == 200 and by_encoded["data"]["report_id"] == report_id
    status, listed, _ = await acall(base, "/api/report/list?limit=abc")
    assert status == 200 and listed["count"] == 1 and listed["data"][0]["report_id"] == report_id
    status, text, headers = await acall(base, f"/api/report/{report_id}/download")
    assert status == 200 and text.startswith("# ") and f'filename="{report_id}.md"' in headers["Content-Disposition"]
    status, progress, _ = await acall(base, f"/api/report/{report_id}/progress")
    assert progress["data"]["status"] == "completed" and progress["data"]["progress"] == 100
    status, sections, _ = await acall(base, f"/api/report/{report_id}/sections")
    total = len(data["outline"]["sections"])
    assert sections["data"]["total_sections"] == total and sections["data"]["is_complete"] is True
    status, one, _ = await acall(base, f"/api/report/{report_id}/section/1")
    assert status == 200 and one["data"]["filename"] == "section_01.md" and one["data"]["content"].startswith("## ")
    status, missing, _ = await acall(base, f"/api/report/{report_id}/section/{total + 1}")
    assert status == 404 and missing["success"] is False and missing["error"]
    status, nothing, _ = await acall(base, "/api/report/report_nope")
    assert status == 404 and nothing == {"success": False, "error": "no report report_nope", "api": "mirofish"}


async def test_our_http_api_answers_beside_mirofishs(written) -> None:  # noqa: ANN001
    """Our own routes (/api/reports, the trace, markdown, the chart, metrics) on the same report."""
    base, report_id = written
    _, report, _ = await acall(base, f"/api/report/{report_id}")
    sections = report["data"]["outline"]["sections"]
    _, listed, _ = await acall(base, f"/api/report/{report_id}/sections")
    assert [s["filename"] for s in listed["data"]["sections"]] == [f"section_{i:02d}.md" for i in
                                                                    range(1, len(sections) + 1)]
    status, beyond, _ = await acall(base, f"/api/report/{report_id}/section/99")
    assert status == 404 and f"has no section 99 (its sections are 1 to {len(sections)})" in str(beyond)
    _, one, _ = await acall(base, f"/api/report/{report_id}/section/2")
    assert one["data"]["content"].startswith(f"## {sections[1]['title']}\n")
    _, trace, _ = await acall(base, f"/api/reports/{report_id}/trace")
    kinds = {s["kind"] for sec in trace["sections"] for it in sec["iterations"] for s in it["steps"]}
    assert {"tool_call", "observation", "final_answer", "llm_response"} <= kinds
    assert all(s["iteration"] == it["iteration"] for sec in trace["sections"] for it in sec["iterations"]
               for s in it["steps"])
    _, markdown, _ = await acall(base, f"/api/reports/{report_id}/markdown")
    assert markdown.startswith(f"# {report['data']['outline']['title']}")
    _, svg, _ = await acall(base, "/api/simulations/sim_small/activity.svg")
    assert svg.startswith("<svg") and "polyline" in svg
    assert (await acall(base, "/api/simulations/nope/activity.svg"))[0] == 404  # as /api/reports/nope
    _, metrics, _ = await acall(base, "/metrics")
    assert 'simreportd_reports{status="completed"} 1' in metrics and "simreportd_websocket_clients" in metrics
    assert (await acall(base, "/api/reports/nope"))[0] == 404


async def test_the_logs_are_read_incrementally_and_whole(written) -> None:  # noqa: ANN001
    base, report_id = written
    for log in ("agent-log", "console-log"):
        status, first, _ = await acall(base, f"/api/report/{report_id}/{log}?from_line=0")
        total = first["data"]["total_lines"]
        assert status == 200 and total == len(first["data"]["logs"]) > 3 and first["data"]["has_more"] is False
        _, rest, _ = await acall(base, f"/api/report/{report_id}/{log}?from_line=3")
        assert rest["data"]["logs"] == first["data"]["logs"][3:] and rest["data"]["from_line"] == 3
        _, odd, _ = await acall(base, f"/api/report/{report_id}/{log}?from_line=two")
        assert odd["data"]["from_line"] == 0 and len(odd["data"]["logs"]) == total
        _, whole, _ = await acall(base, f"/api/report/{report_id}/{log}/stream")
        assert whole["data"] == {"logs": first["data"]["logs"], "count": total}
    _, agent, _ = await acall(base, f"/api/report/{report_id}/agent-log")
    assert agent["data"]["logs"][0]["action"] == "report_start"


async def test_generate_returns_the_runs_report_and_fifty_forced_at_once_write_one_more(written, small_sim) -> None:  # noqa: ANN001
    base, report_id = written
    status, again, _ = await acall(base, "/api/report/generate", {"simulation_id": small_sim.name})
    assert status == 200 and again["data"]["report_id"] == report_id and again["data"]["already_generated"] is True
    status, done, _ = await acall(base, "/api/report/generate/status", {"simulation_id": small_sim.name})
    assert done["data"]["already_completed"] is True and done["data"]["report_id"] == report_id
    answers: list[Any] = []

    async def ask() -> None:
        answers.append(await acall(base, "/api/report/generate", {"simulation_id": small_sim.name,
                                                                  "force_regenerate": True}))

    async with anyio.create_task_group() as tasks:
        for _ in range(50):
            tasks.start_soon(ask)
    await base.folded()
    # Asked while the new report runs, a force returns it; asked once it has completed (an offline report is
    # quick in this process), the same client's force is past its limit: 429 naming it, never a third report.
    refused = [a for a in answers if a[0] != 200]
    assert all(a[0] == 429 and a[1]["code"] == "limit_reached" for a in refused), [a[:2] for a in refused][:3]
    new = {a[1]["data"]["report_id"] for a in answers if a[0] == 200}
    assert len(new) == 1 and report_id not in new and len(refused) < len(answers)
    [new_id] = new
    _, task, _ = await acall(base, "/api/report/generate/status", {"task_id": new_id})
    assert task["data"]["task_id"] == new_id and task["data"]["status"] in ("pending", "processing", "completed")
    status, unknown, _ = await acall(base, "/api/report/generate", {"simulation_id": "sim_nowhere"})
    assert status == 404 and unknown["success"] is False
    status, empty, _ = await acall(base, "/api/report/generate", {"force_regenerate": True})
    assert status == 400 and "simulation_id" in empty["error"]


async def test_a_deleted_report_is_hidden_everywhere_and_its_events_stay(written, small_sim, tmp_path: Path) -> None:  # noqa: ANN001
    base, report_id = written
    folder = tmp_path / "reports" / report_id
    await anyio.to_thread.run_sync(lambda: wait_until(lambda: (folder / "meta.json").exists(), "the report's folder"))
    status, deleted, _ = await acall(base, f"/api/report/{report_id}", method="DELETE")
    assert status == 200 and deleted["success"] is True
    await base.folded()
    assert (await acall(base, f"/api/report/{report_id}"))[0] == 404
    assert (await acall(base, "/api/report/list"))[1]["count"] == 0
    assert (await acall(base, f"/api/report/check/{small_sim.name}"))[1]["data"]["has_report"] is False
    assert (await acall(base, f"/api/reports/{report_id}"))[0] == 404
    assert report_id not in json.dumps((await acall(base, "/api/reports"))[1])
    assert (await acall(base, f"/api/report/{report_id}", method="DELETE"))[0] == 404
    await anyio.to_thread.run_sync(lambda: wait_until(lambda: not folder.exists(), "the folder to go"))
    kept = sqlite3.connect(tmp_path / "state" / "events.sqlite3").execute(
        "SELECT count(*) FROM events WHERE stream = ?", (f"report-{report_id}",)).fetchone()[0]
    assert kept > 10  # nothing erased: the log keeps the report's events


async def test_the_tools_routes_run_our_tools_on_the_simulation_named(written, small_sim) -> None:  # noqa: ANN001
    base, _ = written
    status, found, _ = await acall(base, "/api/report/tools/search", {"graph_id": small_sim.name, "query": "the",
                                                                      "limit": 3})
    assert status == 200 and found["data"]["query"] == "the" and len(found["data"]["results"]) <= 3
    status, stats, _ = await acall(base, "/api/report/tools/statistics", {"simulation_id": small_sim.name})
    assert status == 200 and stats["data"]["actions_by_platform"]
    status, refused, _ = await acall(base, "/api/report/tools/search", {"simulation_id": small_sim.name})
    assert status == 400 and refused["success"] is False


async def test_chats_beyond_the_limit_are_refused_429_at_once(template: tuple[Path, str], tmp_path: Path,
                                                              small_sim: Path) -> None:
    """Two chats at once in all: of six sent together to a model busy until the refusals are in, two are
    answered and four refused (the model is held, not slow, so a loaded machine cannot change the count)."""
    with FakeLLM(held=True) as llm:  # about the template's report, written offline
        config = copy_of(template[0], tmp_path, llm={"provider": "openai", "base_url": llm.base_url, "model": "slow",
                                                     "timeout_s": 30.0, "max_retries": 0},
                         limits={"chats_at_once": 2, "chats_per_client": 10, "chats_per_minute": 100})
        async with InProcess(config, [small_sim]) as app:
            answers: list[Any] = []

            async def ask(n: int) -> None:
                answers.append(await acall(app, "/api/report/chat", {
                    "simulation_id": small_sim.name, "message": f"Question {n}: who led the debate?"}))

            async with anyio.create_task_group() as tasks:
                for n in range(6):
                    tasks.start_soon(ask, n)
                with anyio.fail_after(TIMEOUT):
                    while len(answers) < 4:
                        await anyio.sleep(0.02)
                llm.released.set()
    refused = [a for a in answers if a[0] == 429]
    assert len(refused) == 4 and len(answers) == 6, [a[0] for a in answers]
    assert all(a[1]["code"] == "limit_reached" and int(a[2]["Retry-After"]) > 0 for a in refused)


def test_a_gate_admits_within_its_limits_and_frees_places_when_done() -> None:
    gate = Gate("chat question", at_once=2, per_client=1, per_minute=2)  # refusals are not counted
    with gate.admit("a"), gate.admit("b"):
        with pytest.raises(LimitReached, match="2 chat questions are being answered"):
            with gate.admit("c"):
                pass
    with gate.admit("a"):
        with pytest.raises(LimitReached, match="this client has 1"):
            with gate.admit("a"):
                pass
    with pytest.raises(LimitReached, match="2 chat questions in the last minute") as refused:
        with gate.admit("a"):
            pass
    assert refused.value.retry_after_s > 0 and gate.running == 0

