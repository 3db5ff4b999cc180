"""The invented content a 0.5B model wrote in react mode (a platform loop over networks the run never had,
topics with 0 occurrences, figures not in the evidence, a summary contradicting the run) is flagged by the
claim check: live, and again when the recorded events are read back through it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from simreportd.agent.checks import claims
from simreportd.events.models import LLMResponded, ToolObserved

from ..fake_llm import FakeLLM
from ..stories.test_weak_model import is_section, replay_report_in
from .test_report_llm import llm_config, report_once

pytestmark = pytest.mark.anyio

SUMMARY = "Exam stress was the main concern, raised in 87% of 412 posts."
INVENTED = ("The debate was about biometric authentication and political discussions. On Facebook, with 2 replies, "
            "agents argued. On Instagram, with 5 replies, agents argued. On LinkedIn, with 7 replies, agents argued. "
            "On TikTok, with 9 replies, agents argued. Support reached 73.4% by round 3.")


def invents(finish: str) -> Any:
    """Qwen2.5-Coder-0.5B as the issue recorded it: a plausible outline, then invented sections (each reply
    ended by `finish`: `length` is the looping section that ran to the limit and was kept)."""
    def script(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any] | None:
        if not is_section(body):
            outline = json.loads(message["content"])
            return {"content": json.dumps({**outline, "summary": SUMMARY})}
        if message.get("tool_calls"):
            return None
        return {"content": INVENTED, "finish_reason": finish}
    return script


@pytest.mark.parametrize("finish", ["stop", "length"])
async def test_the_invented_cases_are_flagged_live_and_from_the_recorded_events(tmp_path: Path, small_sim: Path,
                                                                                 finish: str) -> None:
    with FakeLLM(script=invents(finish)) as llm:
        _, report_id, (state, records) = await report_once(llm_config(tmp_path, llm.base_url), small_sim)
    events = [r.event for r in records]
    assert (await replay_report_in(tmp_path, report_id)).divergence is None
    wanted = {"facebook", "instagram", "linkedin", "tiktok", "biometric authentication", "political", "73.4%"}
    for section in [e for e in events if e.type_name == "SectionCompleted"]:
        flagged = {c for u in section.claims.unsupported for c in u.claims}
        assert wanted <= flagged and "Facebook" not in section.content and section.claims.repetitive
        # the verdict names the claim check's findings, not only a missing citation
        assert any("not in the evidence" in p for p in section.problems)
        assert any("mostly unsupported" in p for p in section.problems)
        assert section.claims.cut == (finish == "length")
        assert ("cut at the length limit" in section.problems) == (finish == "length")
    outline = next(e for e in events if e.type_name == "OutlinePlanned")
    assert {"87%", "412"} <= {c for u in outline.claims.unsupported for c in u.claims}
    assert state.verdict.status == "completed_degraded" and any("summary" in p for p in state.verdict.problems)
    # the recorded replies, read back through the check with the recorded evidence of their section
    for index in {e.section_index for e in events if isinstance(e, ToolObserved)}:
        evidence = claims.of_observations([e for e in events if isinstance(e, ToolObserved)
                                           and e.section_index == index], None)
        replies = [e for e in events if isinstance(e, LLMResponded) and e.content == INVENTED]
        verdict = claims.check(replies[0].content, evidence)
        assert wanted <= {c for u in verdict.unsupported for c in u.claims} and verdict.mostly_unsupported
