"""MiroFish's simulation API over real HTTP against a real daemon, in the shapes MiroFish's own code reads.

Routes, fields and defaults are those of MiroFish's `backend/app/api/simulation.py` (the simulation by id
750-780, profiles and profiles/realtime 985-1130, config 1253-1286, run-status 1700-1755, actions
1859-1910, timeline 1913-1950, agent-stats 1953-1979, posts and comments 1982-2134, interview and its
batch, all and history 2137-2576, env-status 2579-2641); its frontend's Step 5 reads
`res.data.result.results["reddit_<id>"].response` (`frontend/src/components/Step5Interaction.vue`, 700-745
and 786-830) and `res.data.profiles[i].username` from profiles/realtime (890-897).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ..conftest import TIMEOUT, make_config
from ..fake_llm import FakeLLM
from ..in_process import acall, copy_of, template_sim, written_template  # noqa: F401 (fixtures)
from .test_server import Running

pytestmark = pytest.mark.anyio


@pytest.fixture
async def written(template: tuple[Path, str], tmp_path: Path, small_sim: Path):  # noqa: ANN201
    """A daemon serving over real HTTP on a copy of the template's store and report: (running, report_id)."""
    async with Running(copy_of(template[0], tmp_path, server={"port": 0}), [small_sim]) as running:
        yield running, template[1]


def action_lines(folder: Path) -> list[dict[str, Any]]:
    """The simulator's action lines (not its round and platform markers)."""
    lines = [json.loads(line) for p in ("twitter", "reddit") for line in (folder / p / "actions.jsonl").open()]
    return [line for line in lines if "agent_id" in line]


async def test_the_run_is_read_in_mirofish_shapes_by_either_id(written, small_sim: Path) -> None:
    running, _ = written
    base, config = running.base, json.loads((small_sim / "simulation_config.json").read_text())
    for given in (small_sim.name, config["simulation_id"]):
        status, info, _ = await acall(base, f"/api/simulation/{given}")
        assert status == 200 and info["success"] is True
        assert info["data"]["simulation_id"] == config["simulation_id"] and info["data"]["status"] == "completed"
        assert info["data"]["project_id"] == config["project_id"] and info["data"]["graph_id"] == config["graph_id"]
        assert info["data"]["profiles_count"] == 12 and info["data"]["reddit_status"] == "completed"
    profiles = json.loads((small_sim / "reddit_profiles.json").read_text())
    status, realtime, _ = await acall(base, f"/api/simulation/{small_sim.name}/profiles/realtime?platform=reddit")
    got = realtime["data"]["profiles"]
    assert realtime["data"]["count"] == len(profiles) == 12 and realtime["data"]["is_generating"] is False
    assert [(p["user_id"], p["username"], p["profession"]) for p in got] == \
        [(p["user_id"], p["username"], p["profession"]) for p in profiles]  # Step 5 numbers agents by this order
    _, twitter, _ = await acall(base, f"/api/simulation/{small_sim.name}/profiles?platform=twitter")
    assert twitter["data"]["platform"] == "twitter" and set(twitter["data"]["profiles"][0]) == \
        {"user_id", "name", "username", "user_char", "description"}
    _, got_config, _ = await acall(base, f"/api/simulation/{small_sim.name}/config")
    assert got_config["data"]["simulation_requirement"] == config["simulation_requirement"]
    assert [a["agent_id"] for a in got_config["data"]["agent_configs"]] == [a["agent_id"] for a in config["agent_configs"]]
    assert got_config["data"]["time_config"] == config["time_config"]
    status, nothing, _ = await acall(base, "/api/simulation/sim_nowhere")
    assert status == 404 and nothing["success"] is False and "sim_nowhere" in nothing["error"]
    _, listed, _ = await acall(base, "/api/simulation/list")
    assert listed["count"] == 1 and listed["data"][0]["simulation_id"] == config["simulation_id"]
    _, history, _ = await acall(base, "/api/simulation/history?limit=5")
    assert history["data"][0]["report_id"] == written[1]  # the home page links the run to its report
    assert history["data"][0]["simulation_requirement"] == config["simulation_requirement"]


async def test_actions_timeline_and_stats_count_every_action_ingested(written, small_sim: Path) -> None:
    running, _ = written
    base, lines = running.base, action_lines(small_sim)
    _, run, _ = await acall(base, f"/api/simulation/{small_sim.name}/run-status")
    assert run["data"]["runner_status"] == "completed" and run["data"]["total_actions_count"] == len(lines)
    assert run["data"]["reddit_actions_count"] == len(action_lines_of(small_sim, "reddit"))
    _, page, _ = await acall(base, f"/api/simulation/{small_sim.name}/actions?limit=5&offset=2")
    _, every, _ = await acall(base, f"/api/simulation/{small_sim.name}/actions?limit=1000")
    assert every["data"]["count"] == len(lines) and page["data"]["actions"] == every["data"]["actions"][2:7]
    times = [a["timestamp"] for a in every["data"]["actions"]]
    assert times == sorted(times, reverse=True)  # newest first, as MiroFish sorts them
    assert set(every["data"]["actions"][0]) == {"round_num", "timestamp", "platform", "agent_id", "agent_name",
                                                "action_type", "action_args", "result", "success"}
    _, one, _ = await acall(base, f"/api/simulation/{small_sim.name}/actions?agent_id=3&platform=reddit&limit=abc")
    assert one["data"]["count"] == sum(1 for line in action_lines_of(small_sim, "reddit") if line["agent_id"] == 3)
    _, timeline, _ = await acall(base, f"/api/simulation/{small_sim.name}/timeline?start_round=1")
    assert sum(r["total_actions"] for r in timeline["data"]["timeline"]) == \
        sum(1 for line in lines if line["round"] >= 1) and timeline["data"]["timeline"][0]["round_num"] == 1
    _, stats, _ = await acall(base, f"/api/simulation/{small_sim.name}/agent-stats")
    totals = [s["total_actions"] for s in stats["data"]["stats"]]
    assert sum(totals) == len(lines) and totals == sorted(totals, reverse=True)


def action_lines_of(folder: Path, platform: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / platform / "actions.jsonl").open() if '"agent_id"' in line]


async def test_posts_and_comments_are_pages_of_what_was_written(written, small_sim: Path) -> None:
    running, _ = written
    base = running.base
    reddit = action_lines_of(small_sim, "reddit")
    written_posts = [a for a in reddit if a["action_type"] in ("CREATE_POST", "QUOTE_POST")]
    _, posts, _ = await acall(base, f"/api/simulation/{small_sim.name}/posts?limit=2")
    assert posts["data"]["total"] == len(written_posts) and posts["data"]["count"] == min(2, len(written_posts))
    assert {"post_id", "user_id", "content", "created_at", "num_likes", "num_shares"} <= set(posts["data"]["posts"][0])
    _, comments, _ = await acall(base, f"/api/simulation/{small_sim.name}/comments?limit=500")
    assert comments["data"]["count"] == sum(1 for a in reddit if a["action_type"] == "CREATE_COMMENT")


async def test_step_five_interviews_one_agent_and_a_batch_and_each_is_recorded(written, small_sim: Path) -> None:
    running, report_id = written
    base = running.base
    _, env, _ = await acall(base, "/api/simulation/env-status", {"simulation_id": small_sim.name})
    assert env["data"]["env_alive"] is False and env["data"]["reddit_available"] is False
    (small_sim / "env_status.json").write_text(json.dumps({"status": "alive", "reddit_available": True}))
    _, alive, _ = await acall(base, "/api/simulation/env-status", {"simulation_id": small_sim.name})
    (small_sim / "env_status.json").unlink()  # nobody would answer: the interviews below go to persona
    assert alive["data"]["env_alive"] is True and alive["data"]["reddit_available"] is True
    status, single, _ = await acall(base, "/api/simulation/interview",
                                    {"simulation_id": small_sim.name, "agent_id": 2, "prompt": "What do you think?"})
    assert status == 200 and single["data"]["result"]["response"] and single["data"]["result"]["mode"] == "persona"
    status, batch, _ = await acall(base, "/api/simulation/interview/batch", {
        "simulation_id": small_sim.name, "interviews": [{"agent_id": 0, "prompt": "Why?"}, {"agent_id": 5,
                                                                                           "prompt": "Why?"}]})
    results = batch["data"]["result"]["results"]
    assert status == 200 and set(results) == {"reddit_0", "reddit_5"} and all(r["response"] for r in results.values())
    _, history, _ = await acall(base, "/api/simulation/interview/history", {"simulation_id": small_sim.name})
    asked = [(h["agent_id"], h["prompt"]) for h in history["data"]["history"] if h.get("mode") == "persona"]
    assert {(2, "What do you think?"), (0, "Why?"), (5, "Why?")} <= set(asked)
    events = await running.daemon.store.read_stream(f"report-{report_id}", types=["InterviewAnswered"])
    assert {e.data["interview_id"] for e in events} >= {single["data"]["result"]["interview_id"],
                                                         results["reddit_0"]["interview_id"]}


async def test_interviews_refuse_bad_requests_in_mirofish_shape(written, small_sim: Path) -> None:
    running, _ = written
    base, sim = running.base, small_sim.name
    for body, why in [({"agent_id": 1, "prompt": "x"}, "simulation_id"),
                      ({"simulation_id": sim, "prompt": "x"}, "agent_id"),
                      ({"simulation_id": sim, "agent_id": 1, "prompt": "x", "platform": "myspace"}, "platform"),
                      ({"simulation_id": sim, "agent_id": 999, "prompt": "x"}, "999")]:
        status, answer, _ = await acall(base, "/api/simulation/interview", body)
        assert status in (400, 404) and answer["success"] is False and why in answer["error"], (body, answer)
    status, answer, _ = await acall(base, "/api/simulation/interview/batch", {
        "simulation_id": sim, "interviews": [{"agent_id": n, "prompt": "x"} for n in range(101)]})
    assert status == 400 and "at most 100" in answer["error"]
    status, answer, _ = await acall(base, "/api/simulation/interview/batch",
                                    {"simulation_id": sim, "interviews": [{"prompt": "x"}]})
    assert status == 400 and "agent_id" in answer["error"]


async def test_orchestration_routes_answer_501_naming_mirofish_backend(written) -> None:
    running, _ = written
    for path, body in [("/api/simulation/create", {"project_id": "p"}), ("/api/simulation/start", {}),
                       ("/api/simulation/prepare", {}), ("/api/simulation/stop", {}),
                       ("/api/simulation/generate-profiles", {}), ("/api/graph/project/proj_1", None),
                       ("/api/simulation/entities/graph_1", None)]:
        status, answer, _ = await acall(running.base, path, body)
        assert status == 501 and answer["success"] is False and "MiroFish's backend" in answer["error"], path
    status, answer, _ = await acall(running.base, "/api/simulation/sim_small/nothing-here")
    assert status == 404 and answer["success"] is False  # MiroFish's error shape under its prefix


async def test_chat_answers_about_a_simulation_whose_report_failed(tmp_path: Path, small_sim: Path) -> None:
    """MiroFish's chat needs only the simulation: with the report failed, the chat is grounded in the run's
    context and the tools, and says it has no report to go on."""
    with FakeLLM() as llm:
        config = make_config(tmp_path, llm={"provider": "openai", "base_url": llm.base_url, "model": "scripted",
                                            "timeout_s": 5.0, "max_retries": 1, "retry_backoff_s": 0.01},
                             reports={"auto": False}, server={"port": 0})
        llm.faults.extend([("status", 503)] * 2)  # the report's first request fails, and its one retry
        async with Running(config, [small_sim]) as running:
            report_id = await running.daemon.reports.request(small_sim.name)
            state = await running.daemon.reports.wait(report_id)
            await running.daemon.views.wait_for(await running.daemon.store.last_position(), timeout=TIMEOUT)
            config_id = json.loads((small_sim / "simulation_config.json").read_text())["simulation_id"]
            _, check, _ = await acall(running.base, f"/api/report/check/{config_id}")
            served = len(llm.requests)
            status, answer, _ = await acall(running.base, "/api/report/chat", {
                "simulation_id": config_id, "message": "Which arguments dominated the debate?", "chat_history": []})
            chat_id = answer["data"]["chat_id"] if status == 200 else ""
            started = await running.daemon.store.read_stream(f"chat-{chat_id}", limit=1)
    assert state.failed is not None and check["data"]["report_status"] == "failed"
    assert status == 200 and answer["success"] is True and answer["data"]["response"], answer
    assert answer["data"]["report_id"] is None and answer["data"]["tool_calls"]  # grounded by the tools
    assert started[0].data["report_id"] == "" and started[0].data["simulation_id"] == small_sim.name
    opening = json.dumps(llm.requests[served]["messages"])
    assert "No report has been written" in opening and "congestion charge" in opening  # the run's requirement


async def test_the_tools_find_the_simulation_by_the_graph_id_mirofish_sends(written, small_sim: Path) -> None:
    running, _ = written
    graph = json.loads((small_sim / "simulation_config.json").read_text())["graph_id"]
    status, found, _ = await acall(running.base, "/api/report/tools/search",
                                   {"graph_id": graph, "query": "congestion charge", "limit": 4})
    data = found["data"]
    assert status == 200 and data["query"] == "congestion charge" and 0 < data["total_count"] == len(data["facts"]) <= 4
    assert data["facts"][0].startswith(f"[{data['results'][0]['ref']}] ") and data["nodes"] == data["edges"] == []
    status, stats, _ = await acall(running.base, "/api/report/tools/statistics", {"graph_id": graph})
    assert status == 200 and stats["data"]["graph_id"] == graph and stats["data"]["total_nodes"] == 12
    assert sum(stats["data"]["entity_types"].values()) == 12 and stats["data"]["total_edges"] > 0
    status, unknown, _ = await acall(running.base, "/api/report/tools/statistics", {"graph_id": "graph_nowhere"})
    assert status == 404 and "graph_nowhere" in unknown["error"]
