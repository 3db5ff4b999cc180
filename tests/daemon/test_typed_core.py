"""The core is typed where it reads: event types by their model, positions as `Position`, tool answers as the
TypedDicts the agent reads them as (docs/architecture.md#where-things-happen).
"""

from __future__ import annotations

import json
import re
import types
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints, is_typeddict

import pytest

from simreportd.agent.tools import tool_answers as answers
from simreportd.agent.tools.simulation_tools import SimulationTools
from simreportd.events.models import EVENT_TYPES, AgentActed, ReportEvent, SimulationEvent
from simreportd.projections.projection import by_type_name
from simreportd.simulator.simulate import simulate

from ..conftest import make_config

ROOT = Path(__file__).resolve().parents[2]
CORE = ("events", "projections", "analysis", "agent", "daemon")
# Websocket frames have a `type` too (`{"type": "error"}`): the CLI's client of the daemon reads frames, not events.
FRAME_READERS = ("daemon/cli/handover.py",)
LITERAL_TYPE_TEST = re.compile(  # `x.type == "Name"`, `x.type in ("A", ...)`, `x.get("type") == "Name"`, `type_name == "Name"`
    r"""(\.type|\.get\(["']type["']\)|\btype_name)\s*(==|!=)\s*["']|\.type\s+(not\s+)?in\s+\(["']""")


def test_every_event_model_owns_its_type_name() -> None:
    """`Model.TYPE` is what a stored event of that model carries, so a reader compares without decoding."""
    for name, model in EVENT_TYPES.items():
        assert model.TYPE == name == model.model_fields["type"].default
    acted = AgentActed(simulation_id="s", generation=1, platform="twitter", round=1, agent_id=1, action_type="X")
    assert acted.type_name == acted.type == AgentActed.TYPE
    assert not hasattr(ReportEvent, "TYPE") and not hasattr(SimulationEvent, "TYPE")  # bases are no type
    assert by_type_name({AgentActed: 1}) == {"AgentActed": 1}


def test_no_core_module_tests_an_event_type_against_a_string_literal() -> None:
    found = []
    for package in CORE:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative in FRAME_READERS:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if LITERAL_TYPE_TEST.search(line):
                    found.append(f"{relative}:{number}: {line.strip()}")
    assert not found, "compare with the model's TYPE (recorded.type == Model.TYPE):\n" + "\n".join(found)


def test_the_literal_pattern_catches_what_it_forbids() -> None:
    """The scan above would see a regression: each of these is a string-typed test it must report."""
    for line in ('if recorded.type == "AgentActed":', "if r.type != 'ReportCompleted'", 'x = r.type in ("A", "B")',
                 'if e.get("type") == "LLMRequested" == a.get("type"):', 'if type_name == "ToolCalled":'):
        assert LITERAL_TYPE_TEST.search(line), line
    assert not LITERAL_TYPE_TEST.search("if recorded.type == AgentActed.TYPE:")


# --- the tools' answers match the types the agent reads them as ---------------------------------------

SOMETIMES = {"last_round", "engagement", "error", "note"}  # a span of rounds, a statement with its engagement, a refusal,
# why the analysis read by wording (only when the embedder failed)
MERGED = {answers.Named, answers.ProfiledAgent, answers.RankedAgent, answers.Example}  # one type, several shapes


def problems(value: Any, tp: Any, path: str) -> list[str]:
    """Where `value` (an answer as JSON gives it back) is not what `tp` declares: a key missing, a wrong kind."""
    if tp is Any:
        return []
    origin, args = get_origin(tp), get_args(tp)
    if origin in (Union, types.UnionType):
        tried = [problems(value, arg, path) for arg in args]
        return [] if any(not p for p in tried) else tried[0]
    if is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{path}: {type(value).__name__}, not an object"]
        hints = get_type_hints(tp)
        missing = [f"{path}.{key}: missing" for key in hints
                   if key not in value and key not in SOMETIMES and tp not in MERGED]
        return missing + [p for key, t in hints.items() if key in value for p in problems(value[key], t, f"{path}.{key}")]
    if origin is list:
        if not isinstance(value, list):
            return [f"{path}: {type(value).__name__}, not a list"]
        return [p for i, item in enumerate(value) for p in problems(item, args[0], f"{path}[{i}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{path}: {type(value).__name__}, not an object"]
        return [p for key, item in value.items() for p in problems(item, args[1], f"{path}.{key}")]
    kinds = {float: (int, float), int: (int,), str: (str,), bool: (bool,), type(None): (type(None),)}[tp]
    ok = isinstance(value, kinds) and (tp is bool or not isinstance(value, bool))
    return [] if ok else [f"{path}: {value!r} is not {tp.__name__}"]


@pytest.mark.anyio
async def test_the_tools_answers_are_what_the_agent_reads_them_as(tmp_path: Path) -> None:
    """Every field the offline writers read, on a run with turning points, side-changers and coalitions: a tool
    that renames or retypes one fails here, not in a report that quietly says less."""
    from simreportd.daemon.service import Daemon

    folder = tmp_path / "sims" / "sim_typed"
    simulate(folder, agents=30, rounds=14, seed=1)
    async with Daemon(make_config(tmp_path), folders=[folder]) as daemon:
        await daemon.watcher.check(folder)
        await daemon.views.catch_up()
        tools = SimulationTools(daemon.views.path)

        async def ask(tool: str, **arguments: Any) -> Any:
            return json.loads(await tools.run(tool, arguments, "sim_typed", 1))

        analytics, context = await ask("simulation_analytics"), await tools.context("sim_typed", 1)
        agent, topic = analytics["most_engaged_agents"][0]["ref"], context["hot_topics"][0]
        asked = {
            "simulation_analytics": (analytics, answers.Analytics),
            "quick_search": (await ask("quick_search", query=topic, limit=10), answers.SearchAnswer),
            "panorama_search": (await ask("panorama_search", query=topic), answers.PanoramaAnswer),
            "insight_forge": (await ask("insight_forge", query=f"Who spoke about {topic}, and why?"), answers.InsightAnswer),
            "agent_profile": (await ask("agent_profile", agent=agent), answers.ProfileAnswer),
            "coalitions": (await ask("coalitions", min_size=2), answers.CoalitionsAnswer),
            "calculate": (await ask("calculate", expression="(126 - 42) / 42 * 100"), answers.CalculateAnswer),
            "context": (context, answers.PlanningContext),
        }
    found = {name: problems(value, tp, name) for name, (value, tp) in asked.items()}
    assert not any(found.values()), found
    # the run has what makes the nested types matter: they were checked, not skipped as absent
    camps = analytics["camps"]
    assert analytics["turning_points"] and camps["stance_shifts"] and camps["arguments"]
    assert asked["coalitions"][0]["coalitions"] and asked["quick_search"][0]["results"]
    assert asked["panorama_search"][0]["timeline"] and asked["insight_forge"][0]["sub_questions"][0]["evidence"]
    assert set(get_type_hints(answers.Seen)) <= {*asked, "interview_agents"}  # a Seen key is a tool's name


def test_the_check_reports_a_renamed_or_retyped_field() -> None:
    row = {"round": 3, "twitter": 1, "reddit": 2, "total": 3, "divergence": 0.333}
    assert problems(row, answers.RoundRow, "row") == []
    assert problems({**row, "round": "3"}, answers.RoundRow, "row") == ["row.round: '3' is not int"]
    renamed = {k if k != "total" else "sum": v for k, v in row.items()}
    assert problems(renamed, answers.RoundRow, "row") == ["row.total: missing"]
    assert problems({"per_round": [renamed]}, answers.Analytics, "a")[-1] == "a.per_round[0].total: missing"
