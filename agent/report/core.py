"""The sans-I/O report agent: from the folded state, decide the next effect (docs/architecture.md#sans-io-core-and-runner).

Like python-websockets' protocol objects, nothing here touches a socket, a file, a
clock or a random source: `decide(state)` returns either events to append (decisions
that need no outside world) or one effect for the runner to perform (call the LLM, run
a tool, gather context, check the environment). The runner appends what came back,
folds it, and asks again. What it can return is in `effects.py`; the LLM request of a step in
`llm_calls.py`; a section's steps in `sections.py`; the verdicts on its text in `verdicts.py`.
"""

from __future__ import annotations

from simreportd.agent.checks import claims
from simreportd.agent.report import guided, probe, prompts
from simreportd.events.models import (
    DomainEvent,
    LLMResponded,
    OutlinePlanned,
    OutlineSection,
    PlanningStarted,
    ResponseRejected,
    SectionStarted,
    ToolProtocolChosen,
    WritingModeChosen,
)

from .effects import Effect, Emit, GatherContext, Stop, UnlockInterviews, emit
from .interpret import parse_outline
from .llm_calls import request, step
from .outline import fallback_outline
from .sections import write_section
from .stance_labels import label_step
from .state import ReportState
from .verdicts import report_completed


def fold(events: list[DomainEvent], report_id: str) -> ReportState:
    """The state of a report after these events of its stream."""
    state = ReportState(report_id)
    for event in events:
        state.apply(event)
    return state


def decide(s: ReportState) -> Effect:
    """The next step of the report whose state is `s` (the first lane's, when sections run in parallel)."""
    return next_effects(s)[0]


def next_effects(s: ReportState) -> list[Effect]:
    """The next step of every lane that has one, first lane first.

    Before the sections there is one lane (planning). With `parallel_sections = N`, up to N
    sections are open at once, each its own conversation: the runner performs their effects
    concurrently and appends each outcome as it comes; the fold routes it to its lane.
    """
    if s.request is None:
        return [Stop("no ReportRequested in this stream")]
    if s.failed is not None:
        return [Stop("failed")]
    if s.report_completed:
        return [Stop("completed") if s.unlocked else UnlockInterviews(s.request.simulation_id)]
    if not s.planning_started:
        return [emit(PlanningStarted(report_id=s.report_id))]
    if s.protocol is None:
        wanted = s.rules.tool_protocol
        reason = f"tool_protocol = {wanted}" + (", native first" if wanted == "auto" else "")
        return [emit(ToolProtocolChosen(report_id=s.report_id, protocol="text" if wanted == "text" else "native",
                                        reason=reason))]
    if s.context is None:
        return [GatherContext(s.request.simulation_id, s.request.generation)]
    if s.outline is None:
        return [_plan(s)]
    if s.rules.mode == "auto" and s.mode_chosen is None:
        return [_probe(s)]
    if not s.sections and (labelling := label_step(s)) is not None:
        return [labelling]
    open_sections, index = s.open_sections, len(s.sections) + 1
    if len(open_sections) < s.rules.parallel_sections and index <= len(s.outline.sections):
        return [emit(SectionStarted(report_id=s.report_id, section_index=index,
                                    title=s.outline.sections[index - 1].title))]
    if not open_sections:
        return [emit(report_completed(s))]
    return [write_section(s, section) for section in open_sections]


def _plan(s: ReportState) -> Effect:
    c = s.lane(0)
    if (effect := step(s, 0, "planning")) is not None:
        return effect
    if c.unread is not None:
        return Emit(tuple(_read_outline(s, c.unread)))
    assert s.context is not None
    # The engine plans (a model call saved); whichever mode the probe then chooses, the sections are the run's
    # own, the answers to the requirement's questions among them.
    if s.rules.mode in ("guided", "auto"):
        title, summary, sections = guided.outline(s.context)
        return emit(OutlinePlanned(report_id=s.report_id, title=title, summary=summary,
                                   sections=[OutlineSection(**x) for x in sections]))
    so_far = s.request.partial if s.request else None
    until = max(so_far.rounds.values(), default=0) if so_far else None
    added = c.pending if c.messages else prompts.outline_messages(s.context.get("requirement", ""), s.context, until)
    return emit(request(s, "outline", 0, added, []))


def _read_outline(s: ReportState, response: LLMResponded) -> list[DomainEvent]:
    """The outline, its summary held to the claim check; else a rejection, or the data's outline.

    An outline cut at the length limit falls back at once: a model that ran out of room once runs
    out again, and each attempt costs the whole limit (minutes on a CPU server).
    """
    assert s.context is not None
    outline = parse_outline(response.content)
    if not isinstance(outline, str):
        verdict = claims.check(outline.summary, claims.evidence([], s.context))
        return [OutlinePlanned(report_id=s.report_id, title=outline.title, sections=outline.sections,
                               summary=claims.keep(outline.summary, verdict), claims=verdict)]
    cut = response.finish_reason == "length"
    rejected = ResponseRejected(report_id=s.report_id, section_index=0, iteration=s.lane(0).requests,
                                call_id=response.call_id, reason="length_cut" if cut else "invalid_outline",
                                detail=outline, feedback=prompts.outline_feedback(outline))
    if s.outline_rejections < s.rules.outline_retries and not cut:
        return [rejected]
    title, summary, sections = fallback_outline(s.context)
    return [rejected, OutlinePlanned(report_id=s.report_id, title=title, summary=summary, fallback=True,
                                     sections=[OutlineSection(**x) for x in sections])]


def _probe(s: ReportState) -> Effect:
    """`[agent] mode = "auto"`: one guided draft from the run's checkable findings, measured by the claim check.

    A model that keeps every claim supported and states the findings (not the run's size: agent/report/probe.py) may
    write freely (react); one that invents or ignores them writes guided. The measurement is recorded, so a
    replay chooses the same.
    """
    assert s.context is not None
    c = s.lane(0)
    if (effect := step(s, 0, "probe")) is not None:
        return effect
    found = probe.findings(s.context)
    facts = [f.fact for f in found]
    if c.unread is None:
        added = guided.messages("What the run's data show", "", str(s.context.get("requirement", "")), facts)
        return emit(request(s, "probe", 0, added, [], fresh=True,
                            extra={"response_format": guided.response_format(s.rules.response_format)}))
    body, cited, verdict = guided.draft(c.unread.content, facts, claims.evidence([], s.context))
    stated, needed = probe.stated(body, found), probe.needed(found)
    able = bool(found) and stated >= needed and not verdict.unsupported
    return emit(WritingModeChosen(report_id=s.report_id, mode="react" if able else "guided",
                                  probe_claims=verdict.claims, probe_supported=verdict.supported,
                                  probe_cited=len(cited), probe_findings=stated, reason=(
                                      f"probe: {stated} of {len(found)} findings stated ({needed} needed), "
                                      f"{verdict.supported} of {verdict.claims} claims supported, "
                                      f"{len(verdict.unsupported)} sentence(s) unsupported")))
