"""The analysis tools: calculate, agent_profile and coalitions (docs/architecture.md#tools).

`calculate` is checked on its own (answers and refusals); agent_profile and coalitions on
a `simulate`d folder whose coalitions, side-changers and per-agent actions are known by
construction (ground_truth.json and the actions files), through an offline report written by
the real CLI; and the core never lets `calculate` stand in for evidence.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from simreportd.agent.tools.calculate import MAX_LENGTH, calculate
from simreportd.agent.tools.coalitions import coalitions_of
from simreportd.agent.tools.simulation_tools import MAX_RESULT, SimulationTools
from simreportd.agent.tools.toolspec import REPORT_TOOLS
from simreportd.errors import ToolError
from simreportd.events.models import SectionCompleted
from simreportd.projections.runner import views_path_for
from simreportd.simulator.simulate import simulate

from ..agent.test_core import drive, observe_all, reasons, reply, started
from ..conftest import PYTHON, TIMEOUT, write_config

SIM = "sim_known"
VISIBLE = ("CREATE_POST", "QUOTE_POST", "CREATE_COMMENT", "LIKE_POST", "DISLIKE_POST", "REPOST", "LIKE_COMMENT",
           "DISLIKE_COMMENT", "FOLLOW", "MUTE")  # the actions agent_profile counts per round


# --- calculate ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("expression", "result"), [
    ("(126 - 42) / 42 * 100", 200), ("2 ** 10", 1024), ("-3 + 4 * (2 - 5)", -15), ("17 % 5", 2),
    ("0.1 + 0.2", 0.3), ("1 / 3", 0.3333333333), ("-(2.5)", -2.5), ("2 ** -2", 0.25), (" 7 ", 7)])
def test_calculate_answers_arithmetic(expression: str, result: float) -> None:
    assert calculate(expression) == {"expression": expression.strip(), "result": result}


@pytest.mark.parametrize(("expression", "says"), [
    ("x + 1", "a name (x)"), ("abs(-2)", "a function call"), ("(1).real", "an attribute"),
    ("__import__('os').system('true')", "a function call"), ("2 ** 1000", "exponent 1000 is too large"),
    ("9 ** 99 * 9 ** 99", "out of range"), ("10 ** 16", "out of range"), ("1e400", "out of range"),
    ("1 / 0", "division by zero"), ("5 % (3 - 3)", "division by zero"), ("0 ** -1", "cannot compute"),
    ("(-8) ** 0.5", "not a real number"), ("True + 1", "the literal True"), ("'a' * 3", "the literal 'a'"),
    ("[1, 2]", "List"), ("1 if 1 else 2", "IfExp"), ("3 // 2", "FloorDiv"), ("1 +", "not an arithmetic expression"),
    ("", "non-empty string"), ("1" * (MAX_LENGTH + 1), f"at most {MAX_LENGTH}")])
def test_calculate_refuses_with_an_error_result_never_an_exception(expression: str, says: str) -> None:
    result = calculate(expression)
    assert "result" not in result and says in result["error"]
    assert len(result["expression"]) <= MAX_LENGTH + 3  # a long input is not echoed whole


def test_calculate_takes_no_other_type_than_a_string() -> None:
    for given in (None, 12, ["1 + 1"], {"expression": "1"}):
        assert "non-empty string" in calculate(given)["error"]


# --- calculate never counts as evidence ------------------------------------------------------------


def calculations(s: Any, n: int) -> None:
    for i in range(n):
        reply(s, calls=[("calculate", {"expression": f"{i} + 1"})])
        observe_all(s)


def test_three_calculations_do_not_meet_min_tool_calls() -> None:
    s = started()
    calculations(s, 3)
    events = reply(s, "The debate grew by 200%.")
    assert reasons(events) == ["too_few_tools"]
    feedback = s.conversation.pending[-1]["content"]
    assert "only 0 tool call(s)" in feedback and "calculate" not in feedback.split("not used yet:")[1]


def test_a_forced_section_after_calculations_only_is_marked_short_of_evidence() -> None:
    s = started(max_tool_calls=3)
    calculations(s, 3)  # the budget is spent: the next reply is the forced final answer
    events = reply(s, "Final words.")
    done = next(e for e in events if isinstance(e, SectionCompleted))
    assert done.tool_calls == 3 and "0 tool call(s), fewer than [agent] min_tool_calls = 3" in done.problems


def test_calculations_beside_evidence_do_not_block_the_section() -> None:
    s = started()
    calculations(s, 1)
    for tool in ("simulation_analytics", "quick_search", "coalitions"):
        reply(s, calls=[(tool, {"query": "x"})])
        observe_all(s)
    events = reply(s, "The debate peaked in round 5.")
    assert isinstance(events[-1], SectionCompleted) and events[-1].problems == [] and events[-1].tool_calls == 4


def test_a_named_tool_is_never_calculate() -> None:
    """Every tool that reads the simulation used, calculate not, evidence still short: a reading tool is named."""
    s = started(name_tools=True, min_tool_calls=9, max_tool_calls=20, max_iterations=20)
    for tool in REPORT_TOOLS:
        if tool != "calculate":
            reply(s, calls=[(tool, {"query": "x"})])
            observe_all(s)
    assert reasons(reply(s, "Everything is fine.")) == ["too_few_tools"]
    assert drive(s).request.params["tool_choice"]["function"]["name"] == REPORT_TOOLS[0]


# --- agent_profile and coalitions on a run known by construction -------------------------------------


@pytest.fixture(scope="module")
def known(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A 30-agent, 14-round run with two coalitions built in (one naming follow targets by `agent_id`, as the
    native environment does), and its offline report written by `simreportd report --wait`."""
    root = tmp_path_factory.mktemp("known")
    folder = root / "sims" / SIM
    simulate(folder, agents=30, rounds=14, seed=1)
    config = write_config(root, auto=False)
    result = subprocess.run([PYTHON, "-m", "simreportd", "-c", str(config), "report", str(folder), "--wait"],
                            cwd=root, capture_output=True, text=True, timeout=TIMEOUT * 3)
    assert result.returncode == 0, result.stderr[-2000:]
    store = root / "state" / "events.sqlite3"
    return {"folder": folder, "store": store, "views": views_path_for(store),
            "truth": json.loads((folder / "ground_truth.json").read_text(encoding="utf-8"))}


async def run(known: dict[str, Any], tool: str, **arguments: Any) -> dict[str, Any]:
    text = await SimulationTools(known["views"]).run(tool, arguments, SIM, 1)
    assert len(text.encode()) <= MAX_RESULT
    return json.loads(text)


@pytest.mark.anyio
async def test_coalitions_finds_the_built_in_groups_whichever_key_names_the_target(known: dict) -> None:
    truth = known["truth"]["coalitions"]
    assert {c["target_key"] for c in truth} == {"target_user_name", "agent_id"}
    result = await run(known, "coalitions")
    for built in truth:
        refs = {f"agent:{m['id']}" for m in built["members"]}
        found = next(c for c in result["coalitions"] if refs <= {m["ref"] for m in c["members"]})
        assert found["camp"] == built["stance"] and found["stance_mix"] == {built["stance"]: found["size"]}
        assert found["formed_round"] == built["formed_round"] == found["complete_round"]
        assert found["growth"][0]["members"] == 2 and found["growth"][-1] == {"round": built["formed_round"],
                                                                             "members": found["size"]}
    assert result["coalitions_found"] == len(result["coalitions"]) >= 2
    pairs = await run(known, "coalitions", min_size=2)
    assert pairs["coalitions_found"] >= result["coalitions_found"] and pairs["min_size"] == 2


@pytest.mark.anyio
async def test_agent_profile_follows_one_agent_round_by_round(known: dict) -> None:
    shift = known["truth"]["shifts"][0]
    per_round: Counter[tuple[int, str]] = Counter()
    actions = 0
    for platform in ("twitter", "reddit"):
        for line in (known["folder"] / platform / "actions.jsonl").read_text(encoding="utf-8").splitlines():
            action = json.loads(line)
            if action.get("agent_id") == shift["id"] and action.get("action_type") in VISIBLE:
                per_round[(action["round"], platform)] += 1
            actions += action.get("agent_id") == shift["id"] and "action_type" in action
    by_id, by_name = await run(known, "agent_profile", agent=f"agent:{shift['id']}"), \
        await run(known, "agent_profile", agent=shift["name"].upper())
    assert by_id == by_name and by_id["agent"]["name"] == shift["name"]
    assert by_id["actions"] == actions and by_id["other_actions"] == actions - sum(per_round.values())
    assert {(r["round"], p): r[p] for r in by_id["per_round"] for p in ("twitter", "reddit") if r[p]} == dict(per_round)
    assert by_id["stance_shift"]["now_speaks_for"] == shift["to"]
    assert by_id["stance_shift"]["from_round"] == shift["round"]
    statements = by_id["first_statements"] + by_id["latest_statements"]
    assert statements and all(s["agent"]["ref"] == f"agent:{shift['id']}" for s in statements)
    posts = known["truth"]["reference"]["posts"]
    assert all(posts[s["ref"]] == s["content"] for s in statements)


@pytest.mark.anyio
async def test_agent_profile_of_a_coalition_member_shows_whom_they_follow(known: dict) -> None:
    built = next(c for c in known["truth"]["coalitions"] if c["target_key"] == "agent_id")
    first, second = built["members"][0], built["members"][1]
    profile = await run(known, "agent_profile", agent=str(first["id"]))
    follows = {c["to"] for c in profile["engaged_with"] if c["kind"] == "follow"}
    followed_by = {c["from"] for c in profile["engaged_by"] if c["kind"] == "follow"}
    assert f"agent:{second['id']}" in follows & followed_by


@pytest.mark.anyio
async def test_an_unknown_agent_is_a_clear_error_saying_how_to_find_agents(known: dict) -> None:
    tools = SimulationTools(known["views"])
    for given in ({"agent": "agent:999"}, {"agent": "Nobody Atall"}, {}):
        with pytest.raises(ToolError, match=r"agent:0 to agent:29.*simulation_analytics.*quick_search"):
            await tools.run("agent_profile", given, SIM, 1)
    name = known["truth"]["camps"][0]["members"][0]["name"]
    with pytest.raises(ToolError, match="Did you mean"):
        await tools.run("agent_profile", {"agent": name.split()[0][:3]}, SIM, 1) if " " in name else \
            await tools.run("agent_profile", {"agent": name[:1]}, SIM, 1)


@pytest.mark.anyio
async def test_results_stay_bounded_on_a_large_run(tmp_path: Path) -> None:
    """A 200-agent, 120-round run: the busiest agent's profile and the coalitions fit MAX_RESULT."""
    from simreportd.daemon.service import Daemon

    from ..conftest import make_config

    folder = tmp_path / "sims" / "sim_large"
    simulate(folder, agents=200, rounds=120, seed=2)
    async with Daemon(make_config(tmp_path), folders=[folder]) as daemon:
        await daemon.watcher.check(folder)
        await daemon.views.catch_up()
        tools = SimulationTools(daemon.views.path)
        analytics = json.loads(await tools.run("simulation_analytics", {}, "sim_large", 1))
        busiest = analytics["most_active_agents"][0]["ref"]
        texts = [await tools.run("agent_profile", {"agent": busiest}, "sim_large", 1),
                 await tools.run("coalitions", {"min_size": 2}, "sim_large", 1)]
    assert all(len(t.encode()) <= MAX_RESULT for t in texts)
    profile = json.loads(texts[0])
    assert len(profile["per_round"]) <= 40 and profile["per_round"][-1]["last_round"] >= 100
    assert profile["actions"] == analytics["most_active_agents"][0]["actions"]


def test_the_offline_report_uses_the_new_tools_and_states_what_they_found(known: dict) -> None:
    events = sqlite3.connect(known["store"])
    called = Counter(json.loads(r[0])["tool"] for r in events.execute(
        "SELECT data FROM events WHERE type = 'ToolCalled'"))
    assert called["coalitions"] >= 1 and called["agent_profile"] >= 1 and called["calculate"] >= 1
    failed = events.execute("SELECT count(*) FROM events WHERE type = 'ToolFailed'").fetchone()[0]
    verdict = json.loads(events.execute("SELECT data FROM events WHERE type = 'ReportCompleted'").fetchone()[0])
    assert failed == 0 and verdict["status"] == "completed", verdict
    text = "".join(json.loads(r[0])["content"] for r in events.execute(
        "SELECT data FROM events WHERE type = 'SectionCompleted'"))
    built = known["truth"]["coalitions"][0]
    assert f"agent:{built['members'][0]['id']}" in text and "% more than that mean" in text
    assert f"together from round {built['formed_round']}" in text


def test_coalitions_join_pairs_in_the_order_they_formed_and_keep_camps_apart() -> None:
    """Two pairs that merge later, a chain grown one by one, a side-changer joining the camp it speaks for."""
    agents = {i: {"name": f"a{i}", "stance": "opposing" if i >= 10 else "supportive"} for i in range(20)}
    formed = {(0, 1): 3, (2, 3): 4, (1, 2): 6,  # two pairs, one group of 4 from round 6
              (10, 11): 2, (11, 12): 2, (12, 13): 5, (13, 14): 7, (14, 15): 8,  # a chain: 3 at round 2, 6 at 8
              (5, 16): 4, (4, 15): 9}  # 5 stays supportive (a bridge); 4 speaks for the opposing camp now
    result = coalitions_of(formed, agents, {4: "opposing"}, 3)
    big, small = result["coalitions"]
    assert [m["ref"] for m in big["members"]] == [f"agent:{i}" for i in (4, 10, 11, 12, 13, 14, 15)]
    assert (big["camp"], big["size"], big["formed_round"], big["complete_round"]) == ("opposing", 7, 2, 9)
    assert big["stance_mix"] == {"opposing": 6, "supportive": 1}
    assert big["growth"] == [{"round": r, "members": n} for r, n in ((2, 3), (5, 4), (7, 5), (8, 6), (9, 7))]
    assert (small["size"], small["formed_round"], small["complete_round"]) == (4, 6, 6)
    assert result["cross_camp_mutual_follows"] == 1 and result["mutual_follows"] == 10
    assert coalitions_of(formed, agents, {4: "opposing"}, 5)["coalitions_found"] == 1
