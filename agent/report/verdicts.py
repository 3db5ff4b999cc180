"""Judging a section's text and the report: repairs, rejections, the claim check, and the rules a result must meet."""

from __future__ import annotations

from typing import Any

from simreportd.agent.checks import claims, grounding
from simreportd.agent.report import guided, prompts
from simreportd.events.models import (
    ClaimVerdict,
    DomainEvent,
    RejectionReason,
    ReportCompleted,
    ResponseRejected,
    SectionCompleted,
)

from ..checks.problem_words import problem
from ..findings.language import Language, language_of
from .interpret import Reply, clean_body, is_raw_tool_call, strip_echoes
from .state import ReportState, SectionState

FORCED_RETRIES = 1  # an unusable forced final answer is sent back this often before the evidence stands in


def _body(s: ReportState, text: str, base: dict[str, Any]) -> tuple[str, list[DomainEvent]]:
    """Section text without our echoed instructions and stray markup; the repair is recorded."""
    body, echoed = strip_echoes(clean_body(text))
    if not echoed:
        return body, []
    return body, [ResponseRejected(**base, reason="echoed_prompt",
                                   detail="removed lines that repeat the daemon's instructions or markup")]


def _unusable(body: str) -> tuple[RejectionReason, str] | None:
    """Why a section body cannot stand, as (reason, feedback), or None when it can."""
    if is_raw_tool_call(body):
        return "raw_tool_call_as_content", prompts.wrong_format("text")
    if not body:
        return "empty_section", "Rejected: the section text is empty (or only repeated the instructions)."
    return None


def final_answer(s: ReportState, section: SectionState, final: str, base: dict[str, Any]) -> list[DomainEvent]:
    """A section's final answer: completed, or sent back once for what it lacks (tools, grounding, claims)."""
    body, events = _body(s, final, base)
    if (problem := _unusable(body)) is not None:
        return events + [ResponseRejected(**base, reason=problem[0], detail=body[:200],
                                          feedback=problem[1] if problem[0] == "empty_section"
                                          else prompts.wrong_format(s.protocol or "native"))]
    minimum = s.rules.min_tool_calls
    if section.evidence_calls < minimum:
        unused = section.unused(s.tools)
        return events + [ResponseRejected(**base, reason="too_few_tools",
                                          feedback=prompts.too_few_tools(section.evidence_calls, minimum, unused,
                                                                         s.protocol or "native", section.title))]
    check = grounding.check(body, [o.result for o in section.observations], s.known_ids())
    if not check.ok and section.grounding_rejections < 1:  # one chance to fix it, then it is marked
        return events + [ResponseRejected(**base, reason="ungrounded", detail=check.feedback()[:500],
                                          feedback=check.feedback())]
    verdict = claims.check(body, section_evidence(s, section))
    if verdict.unsupported and section.claim_rejections < 1:  # one chance, then the sentences are removed
        return events + [ResponseRejected(**base, reason="unsupported_claims", detail=claims.feedback(verdict)[:500],
                                          feedback=claims.feedback(verdict))]
    return events + [completed(s, section, body, False, events)]


def section_evidence(s: ReportState, section: SectionState) -> claims.Evidence:
    """What a section may state: its own tool results and the background its prompt showed."""
    return claims.of_observations(section.observations, claims.background(s.context), s.known_ids())


def forced_completion(s: ReportState, section: SectionState, reply: Reply, base: dict[str, Any],
                      cut: bool) -> list[DomainEvent]:
    """The last word of a section, validated like any other: sent back once, then the evidence stands in."""
    body, events = _body(s, reply.final if reply.final is not None else reply.thought, base)
    problem = _unusable(body) or (("length_cut", prompts.cut_off(s.max_tokens)) if cut else None)
    if problem is None:
        return events + [completed(s, section, body, True, events)]
    if problem[0] == "length_cut" and section.forced_replies > FORCED_RETRIES:
        return events + [completed(s, section, body, True, events, cut=True)]  # the model's own text, cut
    if section.forced_replies <= FORCED_RETRIES:
        return events + [ResponseRejected(**base, reason=problem[0], detail=body[:200],
                                          feedback=problem[1] + " " + prompts.forced_final(s.protocol or "native"))]
    evidence = "\n".join(f"- {o.tool}: {o.result[:300]}" for o in section.observations) or "- (no evidence)"
    events.append(ResponseRejected(**base, reason=problem[0], detail="forced final answer unusable; evidence kept"))
    return events + [completed(s, section, f"{prompts.PLACEHOLDER}\n\n{evidence}", True, events)]


def completed(s: ReportState, section: SectionState, written: str, forced: bool,
              repairs: list[DomainEvent], cut: bool = False, draft: int = 0,
              drafted: ClaimVerdict | None = None) -> SectionCompleted:
    """The section with its verdicts: sentences with unsupported claims removed (and listed), quotes the
    evidence lacks flagged in place, rules not met listed. A text mostly unsupported, looping or cut is not
    kept as written: what survives the claim check stands, or the evidence when nothing does.

    `repairs` are the rejections decided from the same reply, not folded yet but part of the verdict;
    `drafted` is a guided draft's verdict, taken before its unsupported sentences were removed.
    """
    placeholder = written.startswith(prompts.PLACEHOLDER)  # the evidence itself: nothing to check
    verdict = ClaimVerdict(cut=cut) if placeholder else \
        claims.check(written, section_evidence(s, section)).model_copy(update={"cut": cut})
    body = claims.keep(written, verdict)
    # A guided draft's sentences the check dropped are named in the verdict, never shown: the section the reader
    # gets is checked whole, so only what is shown can make it fall short.
    shown = verdict
    if drafted is not None:
        verdict = drafted.model_copy(update={"unsupported": drafted.unsupported + verdict.unsupported})
    if verdict.repetitive:
        body = "\n".join(dict.fromkeys(body.split("\n")))
    if not body.strip() and not placeholder:
        evidence = "\n".join(f"- {o.tool}: {o.result[:300]}" for o in section.observations) or "- (no evidence)"
        body = f"{prompts.PLACEHOLDER}\n\n{evidence}"
    body = _closing(s, section, body)
    check = grounding.check(body, [o.result for o in section.observations], s.known_ids())
    rejections = dict(section.rejections)
    for event in repairs:
        if isinstance(event, ResponseRejected):
            rejections[event.reason] = rejections.get(event.reason, 0) + 1
    ungrounded = len(check.ungrounded_quotes) + len(check.unknown_ids)
    return SectionCompleted(report_id=s.report_id, section_index=section.index, title=section.title,
                            content=grounding.mark(body, check), forced=forced, tool_calls=section.tool_calls,
                            iterations=section.iterations, ungrounded_quotes=ungrounded,
                            grounded_quotes=check.quotes - len(check.ungrounded_quotes),
                            rejections=dict(sorted(rejections.items())), claims=verdict, draft=draft,
                            problems=_problems(s, section, body, check)
                            + claims.problems(shown if s.mode == "guided" else verdict, cut, report_language(s)))


def _closing(s: ReportState, section: SectionState, body: str) -> str:
    """A guided report's last section to complete ends with the report's word on the model: whether it added a
    finding of its own anywhere (the summary is written before any section, so it cannot say)."""
    if s.mode != "guided" or s.outline is None or section.index in s.completed \
            or len(s.completed) + 1 < len(s.outline.sections):
        return body
    bodies = [done.content for _, done in sorted(s.completed.items())] + [body]
    return f"{body}\n\n{guided.report_line(bodies, report_language(s) == 'zh')}"


def _problems(s: ReportState, section: SectionState, body: str, check: grounding.Grounding) -> list[str]:
    """The [agent] rules a finished section does not meet: any one makes the report degraded."""
    problems, language = [], report_language(s)
    minimum = s.rules.min_tool_calls
    if section.evidence_calls < minimum:
        problems.append(problem(language, "few_calls", n=section.evidence_calls, m=minimum))
    if body.startswith(prompts.PLACEHOLDER):
        problems.append(problem(language, "no_text"))
    if ungrounded := len(check.ungrounded_quotes) + len(check.unknown_ids):
        problems.append(problem(language, "ungrounded", n=ungrounded))
    if check.citations < s.rules.min_citations and not body.startswith(prompts.PLACEHOLDER):
        problems.append(problem(language, "few_citations", n=check.citations, m=s.rules.min_citations))
    return problems


def report_language(s: ReportState) -> Language:
    """The language the report is written in: its requirement's (agent/findings/language.py)."""
    return language_of(str((s.context or {}).get("requirement", "")))


def report_completed(s: ReportState) -> ReportCompleted:
    """The report's verdict: `completed` only when every section meets the rules."""
    assert s.outline is not None
    language = report_language(s)
    problems = [problem(language, "outline_fallback")] if s.outline.fallback else []
    if s.outline.claims is not None and s.outline.claims.unsupported:
        problems.append(problem(language, "summary_unsupported", n=len(s.outline.claims.unsupported)))
    problems += [problem(language, "section", i=i, title=done.title, problem=p)
                 for i, done in sorted(s.completed.items()) for p in done.problems]
    return ReportCompleted(report_id=s.report_id, title=s.outline.title, sections_total=len(s.outline.sections),
                           status="completed_degraded" if problems else "completed", problems=problems)
