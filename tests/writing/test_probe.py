"""The `auto` probe: a model writes react only by stating the run's checkable findings (the largest camp or a tie,
the leading platform and by how much, the trigger's round), never by restating the run's size. Pure tests of the
sheet, then the scripted server over real HTTP."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from simreportd.agent.findings.plan import analyst_outline
from simreportd.agent.report import probe
from simreportd.agent.report.guided import SYSTEM
from simreportd.daemon.config import Config

from ..conftest import make_config
from ..fake_llm import FakeLLM
from .test_guided import guided_config
from .test_report_llm import report_once

pytestmark = pytest.mark.anyio

CONTEXT: dict[str, Any] = {"requirement": "How will residents react?", "rounds": 12, "agents_count": 24,
                           "total_actions": 210, "stances": {"supportive": 6, "opposing": 9, "neutral": 9},
                           "platforms": {"twitter": {"actions": 140}, "reddit": {"actions": 70}},
                           "scheduled_events": [{"round": 5, "description": "The council votes."}]}


def test_the_probe_sheet_holds_findings_and_not_the_runs_size() -> None:
    facts = [f.fact for f in probe.findings(CONTEXT)]
    assert facts == ["The neutral and opposing camps are tied as the largest: the agents split into 9 neutral, "
                     "9 opposing and 6 supportive.",
                     "Twitter led the run with 140 actions against 70 on Reddit, 2.00x as many.",
                     "The scheduled event landed in round 5."]
    assert not any("210" in f or "24 agents" in f or "12 rounds" in f for f in facts)


def test_a_tie_is_stated_only_as_a_tie_and_the_size_states_nothing() -> None:
    found = probe.findings(CONTEXT)
    assert probe.stated("The run had 12 rounds, 24 agents and 210 actions.", found) == 0
    assert probe.stated("The opposing camp is the largest.", found) == 0  # a tie said as one camp
    assert probe.stated("The opposing and neutral camps are tied as the largest.", found) == 0  # the sheet, copied
    assert probe.stated("Opposing and neutral agents tie for the most members.", found) == 1
    assert probe.stated("Twitter led with twice Reddit's 70 actions; the event came in round 5.", found) == 2


def test_the_probe_sheet_follows_the_report_language_and_one_platform_leads_nothing() -> None:
    zh = {**CONTEXT, "requirement": "居民会如何反应？", "platforms": {"twitter": {"actions": 140}}}
    facts = [f.fact for f in probe.findings(zh)]
    assert len(facts) == 2 and "第5轮" in facts[1] and not any("Twitter" in f for f in facts)
    assert probe.needed(probe.findings(zh)) == 2


def sheet_of(body: dict[str, Any]) -> dict[str, str]:
    return dict(re.findall(r"^\[(\d+)\] (.+)$", body["messages"][1]["content"], re.M))


def states_the_size(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any] | None:
    """The small model of the issue: it restates the run's size, which passes the claim check."""
    if body["messages"][0]["content"] != SYSTEM:
        return None
    return {"content": json.dumps({"sentences": [
        {"text": "The run was a 6-round simulation with 12 agents.", "facts": [1]}]})}


def copies_the_findings(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any] | None:
    """Qwen2.5-Coder-0.5B on seed 21: the sheet written back word for word."""
    if body["messages"][0]["content"] != SYSTEM:
        return None
    return {"content": json.dumps({"sentences": [{"text": t, "facts": [int(n)]} for n, t in sheet_of(body).items()]})}


def own_words(fact: str) -> str:
    """A probe fact as a model that reads it says it, in words of its own."""
    if m := re.match(r"The (\w+) camp is the largest", fact):
        return f"Counting profiles, {m.group(1)} agents outnumber every other side."
    if m := re.match(r"The (\w+) and (\w+) camps are tied", fact):
        return f"Neither {m.group(1)} nor {m.group(2)} agents outnumber the other: a tie at the top."
    if m := re.match(r"(\w+) led the run with \d+ actions against (\d+) on (\w+)", fact):
        return f"{m.group(3)} trailed {m.group(1)}, with only {m.group(2)} actions."
    if m := re.match(r"The scheduled event landed in (round \d+)", fact):
        return f"Everything turned in {m.group(1)}."
    return fact


def states_the_findings(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any] | None:
    if body["messages"][0]["content"] != SYSTEM:
        return None
    return {"content": json.dumps({"sentences": [{"text": own_words(t), "facts": [int(n)]}
                                                 for n, t in sheet_of(body).items()]})}


def auto(tmp_path: Path, base_url: str) -> Config:
    return guided_config(tmp_path, base_url, mode="auto")


@pytest.mark.parametrize("script, mode", [(states_the_size, "guided"), (copies_the_findings, "guided"),
                                          (states_the_findings, "react")])
async def test_auto_writes_react_only_for_a_model_that_states_the_findings(tmp_path: Path, small_sim: Path,
                                                                         script: Any, mode: str) -> None:
    with FakeLLM(script=script) as llm:
        _, _, (_, events) = await report_once(auto(tmp_path, llm.base_url), small_sim)
    [chosen] = [e.data for e in events if e.type == "WritingModeChosen"]
    assert chosen["mode"] == mode and not chosen["probe_supported"] < chosen["probe_claims"]
    assert (chosen["probe_findings"] >= 2) == (mode == "react")
    [probe_request] = [r for r in llm.requests if "What the run's data show" in r["messages"][1]["content"]]
    assert not re.search(r"\b12 agents\b|\brecorded \d+ actions", probe_request["messages"][1]["content"])


async def test_auto_is_the_default_and_the_offline_writer_is_not_probed(tmp_path: Path, small_sim: Path) -> None:
    assert Config().agent.mode == "auto"
    config = make_config(tmp_path, agent={"mode": "auto"}, llm={"provider": "offline"}, reports={"auto": False})
    _, _, (state, events) = await report_once(config, small_sim)
    assert state.report_completed and not any(e.type in ("WritingModeChosen", "DraftWritten") for e in events)


async def test_auto_plans_the_runs_own_sections_whatever_the_probe_chooses(tmp_path: Path, small_sim: Path) -> None:
    """A model's outline (or the data's fallback) has no answers section; in auto the engine plans the report."""
    with FakeLLM(script=states_the_size) as llm:
        _, _, (_, events) = await report_once(auto(tmp_path, llm.base_url), small_sim)
    [planned] = [e.data for e in events if e.type == "OutlinePlanned"]
    [context] = [e.data["context"] for e in events if e.type == "ContextGathered"]
    assert [s["title"] for s in planned["sections"]] == [s["title"] for s in analyst_outline(context)[2]]
    assert planned["sections"][-1]["title"] == "Answers to the requirement's questions"
    assert not [e for e in events if e.type == "LLMRequested" and e.data["purpose"] == "outline"]
