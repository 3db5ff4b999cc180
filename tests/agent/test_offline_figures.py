"""Every figure the offline writer states is one its tools returned: no sum, count of a list or count of rounds
of its own, which the claim check cannot find. A small run hides such a figure (a 4 or an 11 is somewhere in any
evidence); a long run's figures are its own, and the report then fails its own check."""

from __future__ import annotations

import json
from typing import Any

import pytest

from simreportd.agent.checks import claims
from simreportd.agent.findings.facts import Facts
from simreportd.agent.findings.statements import WRITERS

# Rounds past 100, counts in the hundreds: no figure the writer could derive is also one of these by chance.
ROWS = [{"round": r, "twitter": 300 + r, "reddit": 200 + 2 * r, "total": 500 + 3 * r} for r in range(100, 140)]
ANALYTICS: dict[str, Any] = {
    "total_actions": sum(r["total"] for r in ROWS), "rounds": 140,
    "actions_by_platform": {"twitter": sum(r["twitter"] for r in ROWS), "reddit": sum(r["reddit"] for r in ROWS)},
    "per_round": ROWS, "camps": {"stance_shifts": [], "arguments": {}},
    "divergence": {"overall": 0.0226, "by_round": [{"round": r["round"], "twitter": r["twitter"], "reddit": r["reddit"],
                                                    "value": round(abs(r["twitter"] - r["reddit"]) / r["total"], 4)}
                                                   for r in ROWS]},
    "most_engaged_agents": [{"ref": "agent:122", "name": "Zara Haddad", "stance": "supportive", "reactions": 4431,
                             "shares": 1203, "comments": 1117, "likes": 2111}],
}
AGENT = {"ref": "agent:122", "name": "Zara Haddad", "stance": "supportive"}
PROFILE = {"agent": AGENT, "actions": 9051, "by_platform": {"twitter": 4437, "reddit": 4242}, "active_rounds": 131,
           "first_round": 101, "last_round": 139, "statements": 4721, "engaged_with": []}
INTERVIEWS = {"note": "answered in persona from profiles and posts", "interviews": [
    {"agent": {"ref": f"agent:{n}", "name": name, "stance": "opposing"}, "mode": "persona", "answer": "No."}
    for n, name in ((211, "Ann Lee"), (212, "Bo Chen"), (213, "Cy Diaz"))]}
SEEN = {"simulation_analytics": [ANALYTICS], "agent_profile": [PROFILE], "interview_agents": [INTERVIEWS]}


def background(requirement: str) -> dict[str, Any]:
    return {"requirement": requirement, "rounds": 140, "agents_count": 250,
            "stances": {"supportive": 160, "opposing": 90},
            "platforms": {"twitter": {"actions": ANALYTICS["actions_by_platform"]["twitter"]},
                          "reddit": {"actions": ANALYTICS["actions_by_platform"]["reddit"]}},
            "scheduled_events": [{"round": 105, "description": "The exam rules change"}]}


@pytest.mark.parametrize("requirement", ["How did Twitter and Reddit differ?", "Twitter和Reddit有何不同？"])
@pytest.mark.parametrize("kind", sorted(WRITERS))
def test_each_writer_states_only_figures_its_evidence_holds(kind: str, requirement: str) -> None:
    context = background(requirement)
    text = WRITERS[kind](Facts(SEEN, context, requirement, set()))  # type: ignore[arg-type]
    results = [json.dumps(result) for found in SEEN.values() for result in found]
    verdict = claims.check(text, claims.evidence(results, claims.background(context)))  # type: ignore[arg-type]
    assert text and verdict.unsupported == [], verdict.unsupported


def shift(n: int, name: str) -> dict[str, Any]:
    return {"agent": f"agent:{n}", "agent_id": n, "name": name, "stated_stance": "supportive",
            "now_speaks_for": "opposing", "from_round": 121, "statements_after": 30 + n, "statements_before": 9,
            "example": {"content": f"Scrap it, says {name}.", "ref": f"post:reddit:{2000 + n}"}}


NAMES = ["Kofi Lin", "Tariq Okafor", "Hana Rossi", "Aiko Nair", "Ravi Berg", "Zara Sato", "Chen Weber"]


@pytest.mark.parametrize("requirement", ["How did Twitter and Reddit differ?", "Twitter和Reddit有何不同？"])
def test_many_side_changers_are_listed_in_one_sentence_that_does_not_loop(requirement: str) -> None:
    shifts = [shift(201 + i, name) for i, name in enumerate(NAMES)]
    analytics = {**ANALYTICS, "camps": {"stance_shifts": shifts[:5], "side_changers": 7, "arguments": {}},
                 "truncated": "shortened to fit 16 KB: lists keep their first items"}
    seen = {**SEEN, "simulation_analytics": [analytics]}
    text = WRITERS["drivers"](Facts(seen, background(requirement), requirement, set()))  # type: ignore[arg-type]
    results = [json.dumps(result) for found in seen.values() for result in found]
    verdict = claims.check(text, claims.evidence(results, claims.background(background(requirement))))  # type: ignore[arg-type]
    assert verdict.unsupported == [] and not verdict.repetitive, verdict
    assert ("7 agents changed sides" in text or "7名参与者改变了立场" in text) and "At least" not in text
    assert all(name in text for name in NAMES[:5]) and NAMES[5] not in text  # the listed ones, none made up
    assert text.count("> \"Scrap it") == 2  # the first two in their own words
