"""The offline writer says a tie as a tie and names only the platforms the run has: pure tests of its writers,
their text read back through the claim check."""

from __future__ import annotations

import json
from typing import Any

from simreportd.agent.checks import claims
from simreportd.agent.findings.facts import Facts
from simreportd.agent.findings.plan import analyst_outline
from simreportd.agent.findings.statements import WRITERS

ROWS = [{"round": r, "twitter": 4 + r, "reddit": 0, "total": 4 + r} for r in range(0, 9)]
ANALYTICS: dict[str, Any] = {"total_actions": sum(r["total"] for r in ROWS), "rounds": 8,
                             "actions_by_platform": {"twitter": sum(r["total"] for r in ROWS), "reddit": 0},
                             "per_round": ROWS, "camps": {"stance_shifts": [], "arguments": {}}}


def background(stances: dict[str, int], requirement: str) -> dict[str, Any]:
    return {"requirement": requirement, "rounds": 8, "agents_count": sum(stances.values()), "stances": stances,
            "platforms": {"twitter": {"actions": ANALYTICS["total_actions"]}},
            "scheduled_events": [{"round": 4, "description": "The exam rules change"}]}


def written(kind: str, context: dict[str, Any]) -> tuple[str, claims.ClaimVerdict]:
    """A section of `kind` written from ANALYTICS, and its verdict against that same evidence."""
    text = WRITERS[kind](Facts({"simulation_analytics": [ANALYTICS]}, context, context["requirement"], set()))  # type: ignore[arg-type]
    return text, claims.check(text, claims.evidence([json.dumps(ANALYTICS)], claims.background(context)))


def test_a_tie_of_camps_is_said_as_a_tie_in_english_and_chinese() -> None:
    tied = background({"supportive": 2, "opposing": 2}, "How will students react?")
    text, verdict = written("answers", tied)
    assert "The opposing and supportive camps are tied as the largest" in text and "camp is the largest" not in text
    assert verdict.unsupported == []
    assert analyst_outline(tied)[2][1]["title"] == "The camps: opposing and supportive agents are tied as the largest"
    zh = background({"supportive": 2, "opposing": 2}, "学生会如何反应？")
    text, verdict = written("answers", zh)
    assert "反对方和支持方人数并列最多" in text and verdict.unsupported == []
    ahead = background({"supportive": 3, "opposing": 2}, "How will students react?")
    assert "The supportive camp is the largest" in written("answers", ahead)[0]
    assert analyst_outline(ahead)[2][1]["title"] == "The camps: supportive agents are the largest"


def test_a_twitter_only_run_never_mentions_reddit() -> None:
    only = background({"supportive": 3, "opposing": 2}, "How did Twitter and Reddit differ?")
    for kind in ("timeline", "answers"):
        text, verdict = written(kind, only)
        assert "Reddit" not in text.replace("How did Twitter and Reddit differ?", ""), text
        assert verdict.unsupported == [], verdict
    assert "Twitter was the run's only platform: after round 4 it averaged 10.5 actions per round" in \
        written("answers", only)[0]
    assert "all on Twitter" in written("timeline", only)[0]


def statement(ref: str, round_no: int, stance: str, content: str) -> dict[str, Any]:
    return {"ref": ref, "kind": "post", "round": round_no, "platform": "twitter", "content": content,
            "agent": {"ref": "agent:1", "name": "Ann Lee", "stance": stance}}


def test_a_concern_is_answered_with_a_concern_and_a_reaction_with_what_was_said_after_the_trigger() -> None:
    asked = "How will students react, and what concerns spread fastest?"
    context = background({"supportive": 3, "opposing": 2}, asked)
    early, late = statement("post:twitter:1", 1, "opposing", "Cameras at home are creepy."), \
        statement("post:twitter:9", 5, "opposing", "The new rules ignore our privacy.")
    arguments = {"opposing": [{"statements": 4, "example": late}]}
    analytics = {**ANALYTICS, "camps": {"stance_shifts": [], "arguments": arguments}}
    seen: Any = {"simulation_analytics": [analytics],
                 "quick_search": [{"query": "How will students react?", "results": [early, late]}]}
    text = WRITERS["answers"](Facts(seen, context, asked, set()))
    reaction, concerns = text.split("**What concerns spread fastest?**")
    assert "post:twitter:9" in reaction and "post:twitter:1" not in reaction  # round 5, after the trigger in 4
    assert concerns.index("post:twitter:9") < concerns.index("spread fastest in round")  # the concern first
