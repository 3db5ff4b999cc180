"""The claim check, mechanical tool use and the degraded notice: pure tests of the rules, no loop, no disk."""

from __future__ import annotations

import json

from simreportd.agent.checks import claims
from simreportd.agent.report import arguments, core, effects
from simreportd.events.models import ResponseRejected, SectionCompleted, ToolCalled, ToolObserved
from simreportd.projections.export import full_markdown, render

from .test_core import drive, observe_all, reasons, reply, started, use_tools

ANALYTICS = json.dumps({"total_actions": 1234, "actions_by_platform": {"twitter": 800, "reddit": 434},
                        "per_round": [{"round": 1, "twitter": 3, "reddit": 1}, {"round": 2, "twitter": 4, "reddit": 2},
                                      {"round": 3, "twitter": 4, "reddit": 9}],
                        "most_engaged_agents": [{"agent": "agent:3", "name": "Maria Chen", "reactions": 17}],
                        "camps": {"arguments": {"supportive": [{"example": {"content": "exam stress is real"}}]}}})


def test_figures_and_names_in_the_evidence_are_supported() -> None:
    text = ("Twitter had 800 of the 1,234 actions, 64.8% of them. Maria Chen (agent:3) drew 17 reactions. "
            "Twitter averaged 3.67 actions per round in rounds 1-3, against 4.0 on Reddit: 0.92x as many.")
    verdict = claims.check(text, claims.evidence([ANALYTICS]))
    assert verdict.unsupported == [] and verdict.claims >= 10 and verdict.supported == verdict.claims


def test_invented_platforms_names_topics_and_figures_are_listed_per_sentence() -> None:
    text = ("Twitter had 800 actions. On Facebook, with 6 replies, John Doe talked about biometric authentication. "
            "Political discussions rose by 45%.")
    verdict = claims.check(text, claims.evidence([ANALYTICS]))
    [first, second] = verdict.unsupported
    assert set(first.claims) == {"facebook", "John Doe", "biometric authentication", "6"}
    assert set(second.claims) == {"45%", "Political"}
    assert claims.keep(text, verdict) == "Twitter had 800 actions."


def test_figures_and_platforms_between_han_characters_are_claims_too() -> None:
    """A Han character is a word character to `\\b`: "第3轮" and "Twitter上" must still be checked."""
    ev = claims.evidence([ANALYTICS])
    assert claims.check("第3轮Reddit上有9次行动；Twitter上共800次，Reddit上共434次。", ev).unsupported == []
    [wrong] = claims.check("第3轮共有99次行动，Facebook上71次。", ev).unsupported
    assert set(wrong.claims) == {"99", "71", "facebook"}


def test_a_looping_text_is_repetitive_and_mostly_unsupported() -> None:
    loop = " ".join(f"On {p}, with {n} replies, the debate went on." for p, n in
                    (("Facebook", 2), ("Instagram", 5), ("LinkedIn", 7), ("TikTok", 9)))
    verdict = claims.check(loop, claims.evidence([ANALYTICS]))
    assert verdict.repetitive and verdict.mostly_unsupported
    assert "repetitive: the text loops over the same sentence" in claims.problems(verdict, cut=False)


def test_persona_interview_answers_are_no_evidence_for_figures() -> None:
    interview = ToolObserved(report_id="r1", section_index=1, call_id="c1", tool="interview_agents",
                             result=json.dumps({"interviews": [{"answer": "I think 73 people agreed"}]}))
    verdict = claims.check("73 people agreed.", claims.of_observations([interview], None))
    assert [u.claims for u in verdict.unsupported] == [["73"]]
    asked = ToolObserved(report_id="r1", section_index=1, call_id="c2", tool="interview_agents", result=json.dumps(
        {"interviews": [{"agent": {"name": "Maria Chen", "ref": "agent:3"}, "answer": "John Doe told me so"}]}))
    verdict = claims.check("Maria Chen (agent:3) was asked. John Doe agreed.", claims.of_observations([asked], None))
    assert [u.claims for u in verdict.unsupported] == [["John Doe"]]  # who was asked counts; what was said not


def test_a_section_with_an_invented_figure_is_sent_back_then_kept_without_it() -> None:
    s = started()
    use_tools(s, 3)
    assert reasons(reply(s, "The debate peaked in round 5. It reached 9,999 actions.")) == ["unsupported_claims"]
    assert "9,999" in s.conversation.pending[-1]["content"]
    reply(s, "The debate peaked in round 5. It reached 9,999 actions.")
    done = s.completed[1]
    assert done.content == "The debate peaked in round 5."
    assert done.claims is not None and [u.claims for u in done.claims.unsupported] == [["9,999"]]
    assert "1 sentence(s) with figures or names not in the evidence, removed" in done.problems


def test_an_argument_copied_from_a_tool_description_is_refused_with_a_hint() -> None:
    s = started()
    query = "Ranked keyword search over posts, comments, quotes and profiles of this simulation."
    events = reply(s, calls=[("quick_search", {"query": query})])
    assert reasons(events) == ["mechanical_arguments"]
    assert "repeats the description of quick_search" in events[-1].feedback  # type: ignore[union-attr]
    assert not [e for e in events if isinstance(e, ToolCalled)]


def test_arguments_copied_from_an_earlier_results_keys_are_refused() -> None:
    earlier = [ToolObserved(report_id="r1", section_index=1, call_id="c1", tool="simulation_analytics",
                            result=ANALYTICS)]
    assert "keys of an earlier result" in (arguments.mechanical("quick_search", {"total_actions": 1234}, earlier) or "")
    assert "keys of an earlier result" in (arguments.mechanical("quick_search", {"query": "total_actions"}, earlier) or "")
    assert arguments.mechanical("quick_search", {"query": "twitter reddit"}, earlier) is None  # a real query


def test_a_repeated_call_is_answered_with_a_reminder_that_is_not_evidence() -> None:
    s = started()
    reply(s, calls=[("quick_search", {"query": "exam stress"})])
    observe_all(s)
    events = reply(s, calls=[("quick_search", {"query": "Exam  stress"})])
    called, observed = events
    assert isinstance(called, ToolCalled) and called.repeat_of is not None
    assert isinstance(observed, ToolObserved) and "not new evidence" in observed.result
    assert s.sections[1].tool_calls == 2 and s.sections[1].evidence_calls == 1
    assert isinstance(drive(s), effects.CallLLM)  # nothing to perform: the reminder is recorded already


def test_an_outline_cut_at_the_length_limit_falls_back_to_the_data_outline_at_once() -> None:
    from simreportd.agent.report.state import ReportState
    from simreportd.events.models import ContextGathered, LLMResponded, OutlinePlanned, ReportRequested

    from .test_core import SETTINGS

    s = ReportState("r1")
    s.apply(ReportRequested(report_id="r1", simulation_id="sim", generation=1, provider="openai", model="m",
                            settings=SETTINGS))
    drive(s)
    s.apply(ContextGathered(report_id="r1", context={"requirement": "What happened?", "rounds": 3}))
    effect = drive(s)
    assert isinstance(effect, effects.CallLLM)
    s.apply(LLMResponded(report_id="r1", call_id=effect.request.call_id, attempt=1, content='{"title": "A lo',
                         finish_reason="length"))
    decided = core.decide(s)
    assert isinstance(decided, effects.Emit)
    rejected, planned = decided.events
    assert isinstance(rejected, ResponseRejected) and rejected.reason == "length_cut"
    assert isinstance(planned, OutlinePlanned) and planned.fallback


def report_row(status: str, problems: list[str], section_problems: list[str]) -> dict[str, object]:
    return {"report_id": "r1", "simulation_id": "s", "title": "T", "summary": "A summary.", "status": status,
            "problems": json.dumps(problems), "progress": 100, "created_at": "", "completed_at": "", "error": None,
            "message": "", "current_section": None, "updated_at": "", "log": [], "console": [],
            "sections": [{"section_index": 1, "title": "One", "content": "Text.", "status": "completed",
                          "problems": json.dumps(section_problems)},
                         {"section_index": 2, "title": "Two", "content": "More.", "status": "completed",
                          "problems": "[]"}]}


def test_a_degraded_report_says_so_in_every_markdown_file_and_names_what_failed() -> None:
    report = report_row("completed_degraded", ["section 1 (One): mostly unsupported by its evidence"],
                        ["mostly unsupported by its evidence"])
    files = render(report, "<svg/>")
    for name in ("full_report.md", "section_01.md", "section_02.md"):
        text = files[name].decode()
        assert "Warning:" in text and "mostly unsupported by its evidence" in text, name
    assert "This section is degraded" in files["section_01.md"].decode()
    assert "This report is degraded" in files["section_02.md"].decode()
    assert json.loads(files["meta.json"])["quality"] == "degraded"


def test_a_report_that_met_the_rules_has_no_notice_and_its_summary_is_no_quotation() -> None:
    text = full_markdown(report_row("completed", [], []))
    assert "Warning" not in text and "**Summary.** A summary." in text and "> A summary." not in text
    assert isinstance(SectionCompleted.model_fields["claims"].default, type(None))


def test_a_chinese_reports_files_add_their_own_words_in_chinese() -> None:
    """A report titled in Chinese (written for a Chinese run) gets its notice, summary label and chart caption in
    Chinese; the problems stay the checks' own words."""
    report = {**report_row("completed_degraded", ["section 1 (One): mostly unsupported by its evidence"], []),
              "title": "垃圾分类：模拟讨论如何展开"}
    text = full_markdown(report)
    assert "> **警告：本报告未达到 simreportd 的质量规则**" in text and "**摘要。** A summary." in text
    assert "mostly unsupported by its evidence" in text and "Warning" not in text and "Summary" not in text
    assert "![各平台每轮的行动数" in text


def test_a_long_runs_spans_of_rounds_are_averaged_per_round() -> None:
    """A long run's per-round rows sum spans of rounds: a mean over them is per round, not per row."""
    rows = [{"round": 0, "last_round": 1, "twitter": 4}, {"round": 2, "last_round": 3, "twitter": 10},
            {"round": 4, "last_round": 5, "twitter": 7}]
    text = "Twitter averaged 4.25 actions per round in rounds 2-5. Twitter averaged 8.5 actions per round in rounds 2-5."
    verdict = claims.check(text, claims.evidence([json.dumps({"per_round": rows})]))
    assert [u.claims for u in verdict.unsupported] == [["8.5"]]
