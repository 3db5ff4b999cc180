"""Interviews with simulated agents: live over the file RPC when the environment is alive, else in persona.

Used twice: by the report agent's `interview_agents` tool, and after a report completes
by users (`simreportd interview`, the websocket op). Every answer says which mode made it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio

from simreportd.agent.chat.chat_core import check_question
from simreportd.agent.findings.language import language_of
from simreportd.agent.llm.providers import LLMProvider
from simreportd.agent.report.prompts import DATA_RULE, delimit
from simreportd.errors import InterviewLocked, LLMError, NotFound, RPCFailed, UsageError
from simreportd.events import EventStore
from simreportd.events.models import (
    InterviewAnswered,
    InterviewMode,
    InterviewRequested,
    InterviewUnlocked,
    LLMRequested,
    Platform,
    ReportRequested,
)
from simreportd.events.streams import report_stream
from simreportd.projections import report_queries, simulation_queries
from simreportd.projections.sqlite import in_thread, reading
from simreportd.projections.standing import standing_of

from .environment import FolderEnvironment
from .persona import held, persona_answer
from .rpc import live_prompt

MAX_AGENTS = 10
# What a model's persona answer must do (daemon/interviews/persona.py, `held`, keeps it to them).
PERSONA_RULES = ("Quote at least one of your posts word for word in quotation marks, followed by its ref in brackets, "
                 'e.g. "text" (post:twitter:42). Take nothing the question assumes as true unless your posts say it: '
                 "if they do not, say you did not say that. Speak of your posts, never of a simulation or its data.")
T = TypeVar("T")
STANCE_ORDER = ("opposing", "supportive", "neutral", "observer", "")


QUESTIONS = {
    "en": ("Please answer these questions:", ["What is your view on {topic}, and why?",
                                              "Did anything you saw during the discussion of {topic} change your mind?",
                                              "What would you say to someone who disagrees with you about {topic}?"]),
    "zh": ("请回答以下问题：", ["你怎么看{topic}？为什么？", "在关于{topic}的讨论中，有没有什么让你改变了看法？",
                          "对于在{topic}上和你意见不同的人，你会说什么？"]),
}


def questions(topic: str) -> list[str]:
    """Three questions on a topic, the same for every agent so answers can be compared, in the topic's language."""
    return [q.format(topic=topic) for q in QUESTIONS[language_of(topic)][1]]


def interview_prompt(topic: str) -> str:
    """The numbered questions on `topic` one batch of agents is asked, in the topic's language."""
    lead, _ = QUESTIONS[language_of(topic)]
    return lead + "\n" + "\n".join(f"{i}. {q}" for i, q in enumerate(questions(topic), 1))


GENERATED = ("these answers are written by a model in each agent's persona, not said during the run: "
             "quote them as generated, never as evidence for a figure or a fact (docs/formats.md#claim-check)")


class Interviewer:
    def __init__(self, store: EventStore, views_path: Path, provider: LLMProvider, model: str,
                 timeout_s: float, limiter: anyio.CapacityLimiter | None = None, probe_s: float = 5.0) -> None:
        self.store, self.views_path, self.provider, self.timeout_s = store, views_path, provider, timeout_s
        self.model, self.limiter = model, limiter
        self.environment = FolderEnvironment(views_path, limiter, probe_s)

    async def _in_thread(self, func: Callable[..., T], *args: Any) -> T:
        """Blocking read-model work in a worker thread, under the read-model database's limiter."""
        return await in_thread(func, *args, limiter=self.limiter)

    # --- the report tool ------------------------------------------------------------------------

    async def report_interview(self, simulation_id: str, generation: int, topic: str, max_agents: int = 5) -> str:
        """The `interview_agents` tool: varied agents, shared questions, one batch; JSON with every answer."""
        count = max(1, min(int(max_agents), MAX_AGENTS))
        agents = await self._in_thread(self._choose, simulation_id, generation, topic, count)
        asked, prompt = questions(topic), interview_prompt(topic)
        answers, mode, note = await self._answers(simulation_id, generation, agents, prompt, topic)
        generated = {"generated": GENERATED} if mode == "persona" else {}  # model-written: never evidence for figures
        return json.dumps({"topic": topic, "questions": asked, "mode": mode, "note": note, **generated, "interviews": [
            {"agent": {"ref": f"agent:{a['agent_id']}", "name": a["name"], "stance": a["stance"]},
             "agent_id": a["agent_id"], "question": prompt, **answers[a["agent_id"]]} for a in agents]},
            sort_keys=True, ensure_ascii=False)

    async def _answers(self, simulation_id: str, generation: int, agents: list[dict[str, Any]],
                       prompt: str, topic: str) -> tuple[dict[int, dict[str, Any]], str, str]:
        folder = self.environment.folder_of(simulation_id)
        live, unanswered = await self.environment.liveness(simulation_id)
        if folder and live:
            try:
                result = await self.environment.call(folder, "batch_interview", {"interviews": [
                    {"agent_id": a["agent_id"], "prompt": live_prompt(prompt)} for a in agents]}, self.timeout_s)
                return _live_answers(result, agents), "live", "answered live by the running simulation"
            except RPCFailed as exc:
                note = f"live interview failed ({exc}); answered in persona from profiles and posts instead"
        elif unanswered:
            note = f"live interview failed ({unanswered}); answered in persona from profiles and posts instead"
        else:
            note = "the simulation environment is not running; answered in persona from profiles and posts"
        persona: dict[int, dict[str, Any]] = {}
        errors: list[Exception] = []
        materials = await self._in_thread(self._persona_materials, simulation_id, generation,
                                          [a["agent_id"] for a in agents], topic)

        async def answer(agent_id: int) -> None:
            try:
                persona[agent_id] = {"mode": "persona", "platform": None,
                                     "answer": await self._persona(*materials[agent_id], prompt)}
            except Exception as exc:  # raised below as it is (a task group would wrap it in a group)
                errors.append(exc)

        async with anyio.create_task_group() as group:  # asked at once; [llm] max_concurrency bounds the model
            for a in agents:
                group.start_soon(answer, a["agent_id"])
        if errors:
            raise errors[0]
        return persona, "persona", note

    def _choose(self, simulation_id: str, generation: int, topic: str, count: int) -> list[dict[str, Any]]:
        """Agents who wrote about the topic, taken in turn from each stance so camps are all heard."""
        with reading(self.views_path) as conn:
            key = (simulation_id, generation)
            ranked = simulation_queries.topic_writers(conn, key, topic)
            active = simulation_queries.agents_by_activity(conn, key)
            profiles = simulation_queries.agent_stances(conn, key)
        candidates = [profiles[a] for a in dict.fromkeys(ranked + active) if a in profiles]
        by_stance = {s: [c for c in candidates if c["stance"] == s] for s in STANCE_ORDER}
        chosen: list[dict[str, Any]] = []
        while len(chosen) < min(count, len(candidates)):
            for stance in STANCE_ORDER:
                if by_stance[stance] and len(chosen) < count:
                    chosen.append(by_stance[stance].pop(0))
        return chosen

    async def _persona(self, profile: dict[str, Any], relevant: list[dict[str, Any]], others: list[dict[str, Any]],
                       question: str) -> str:
        """An answer in the agent's persona, from its profile and its own recorded statements, those on the
        question first (`_persona_materials`)."""
        if self.provider.name == "openai":
            try:
                written = await self._persona_by_model(profile, relevant + others, question)
            except LLMError:
                written = ""  # the data-only answer below is always available
            if (kept := held(written, relevant + others, question)) is not None:
                return kept
        return persona_answer(profile, relevant, others, question)

    async def _persona_by_model(self, profile: dict[str, Any], posts: list[dict[str, Any]], question: str) -> str:
        system = (f"You answer as one simulated social-media user, in the first person, in two or three sentences, "
                  f"consistent with their profile and posts and nothing else. {PERSONA_RULES} {DATA_RULE}")
        user = (f"Profile:\n{delimit('simulation_data', json.dumps(profile, ensure_ascii=False))}\n"
                f"Posts:\n{delimit('simulation_data', json.dumps(posts, ensure_ascii=False))}\n"
                f"Question:\n{delimit('simulation_data', question)}")
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        request = LLMRequested(report_id="interview", call_id=uuid.uuid4().hex, purpose="interview",
                               model=self.model, messages_added=messages,
                               fingerprint="")
        completion = await self.provider.complete(request, messages, 1)
        return completion.content.strip() or "(no answer)"

    def _persona_materials(self, simulation_id: str, generation: int, agent_ids: list[int],
                           about: str) -> dict[int, tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]]:
        """Each agent's profile, its statements on `about` (the interview's topic, or the question's own words),
        best first, and its latest other statements."""
        key = (simulation_id, generation)
        with reading(self.views_path) as conn:
            profiles = {agent_id: simulation_queries.agent_profile(conn, key, agent_id) for agent_id in agent_ids}
            found = {agent_id: profile for agent_id, profile in profiles.items() if profile is not None}
            if missing := [agent_id for agent_id in agent_ids if agent_id not in found]:
                low, high = simulation_queries.agent_id_range(conn, key)
                raise NotFound(f"agent {missing[0]} is not in simulation {simulation_id} (its agents are {low} to {high})")
            relevant = simulation_queries.relevant_statements(conn, key, agent_ids, about)
            latest = {agent_id: simulation_queries.latest_statements(conn, key, agent_id) for agent_id in agent_ids}
        on_it = {agent_id: once(relevant[agent_id]) for agent_id in found}  # the same words once
        return {agent_id: (profile, on_it[agent_id], once(on_it[agent_id] + latest[agent_id])[len(on_it[agent_id]):])
                for agent_id, profile in found.items()}

    # --- after the report -------------------------------------------------------------------------

    async def ask(self, target: str, agent_id: int, question: str, platform: str | None = None) -> dict[str, Any]:
        """A user's question to one agent, refused before the report's interviews are unlocked; recorded."""
        question, named = check_question(question, "interview"), _platform(platform)
        if isinstance(agent_id, bool) or not isinstance(agent_id, int) or not -2**63 <= agent_id < 2**63:
            raise UsageError(f"agent {str(agent_id)[:30]} is no agent id (a 64-bit integer)")
        report = await self._unlocked_report(target)
        simulation_id, generation = report.simulation_id, report.generation
        interview_id = uuid.uuid4().hex[:12]
        live, unanswered = await self.environment.liveness(simulation_id)
        folder = self.environment.folder_of(simulation_id)
        mode: InterviewMode = "persona"
        answer = ""
        note = f"live interview failed ({unanswered}); answered in persona" if unanswered else ""
        if live and folder:
            try:
                args = {"agent_id": agent_id, "prompt": live_prompt(question),
                        **({"platform": platform} if platform else {})}
                result = await self.environment.call(folder, "interview", args, self.timeout_s)
                answer, mode = _single_answer(result), "live"
            except RPCFailed as exc:
                note = f"live interview failed ({exc}); answered in persona"
        if mode == "persona":
            materials = await self._in_thread(self._persona_materials, simulation_id, generation, [agent_id], question)
            answer = await self._persona(*materials[agent_id], question)
        stream = report_stream(report.report_id)
        await self.store.append(stream, [
            InterviewRequested(report_id=report.report_id, interview_id=interview_id, simulation_id=simulation_id,
                               agent_id=agent_id, question=question, platform=named, mode=mode),
            InterviewAnswered(report_id=report.report_id, interview_id=interview_id, agent_id=agent_id,
                              answer=answer, mode=mode, platform=named)])
        return {"report_id": report.report_id, "simulation_id": simulation_id, "interview_id": interview_id,
                "agent_id": agent_id, "question": question, "answer": answer, "mode": mode, "platform": platform,
                "note": note}

    async def _unlocked_report(self, target: str) -> ReportRequested:
        """The request of the report `target` names (a report, or a simulation's latest), once it unlocked."""
        events = await self.store.read_stream(report_stream(target))
        if not events:
            report_id = await self._in_thread(self._latest_report, target)
            events = await self.store.read_stream(report_stream(report_id))
        requested = events[0].event
        assert isinstance(requested, ReportRequested)  # a report stream begins with its request
        if not any(r.type == InterviewUnlocked.TYPE for r in events):
            standing = standing_of([r.event for r in events], requested.report_id).described()
            raise InterviewLocked(f"report {requested.report_id} {standing}; interviews unlock when it "
                                  "completes: try again then")
        return requested

    def _latest_report(self, given: str) -> str:
        with reading(self.views_path) as conn:
            simulation_id = simulation_queries.resolve(conn, given) or given  # its id, config id or folder name
            row = report_queries.latest_report(conn, simulation_id)
            known = row is not None or simulation_queries.is_known(conn, simulation_id)
        if row is None and known:
            raise InterviewLocked(f"simulation {simulation_id} has no report yet; interviews unlock when its report "
                                  "completes (`simreportd report SIM_DIR --wait` writes one)")
        if row is None:
            raise NotFound(f"no report or simulation named {simulation_id!r}; `simreportd status` lists them")
        return str(row["report_id"])




def once(statements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The statements in order, each text kept at its first place only (agents repeat themselves word for word)."""
    kept: dict[str, dict[str, Any]] = {}
    for statement in statements:
        kept.setdefault(statement["content"], statement)
    return list(kept.values())


def _live_answers(result: Any, agents: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Per agent, its answers from a batch result keyed `<platform>_<agent_id>`."""
    results = (result or {}).get("results", {}) if isinstance(result, dict) else {}
    answers: dict[int, dict[str, Any]] = {}
    for agent in agents:
        per_platform = {p: results.get(f"{p}_{agent['agent_id']}") for p in ("twitter", "reddit")}
        parts = [f"[{p}] {r['response']}" for p, r in per_platform.items() if isinstance(r, dict) and r.get("response")]
        answers[agent["agent_id"]] = {"mode": "live" if parts else "persona", "platform": None,
                                      "answer": " ".join(parts) or "(the live environment gave no answer)"}
    return answers


def _single_answer(result: Any) -> str:
    if not isinstance(result, dict):
        raise RPCFailed("the live environment sent an unreadable result")
    if "response" in result:
        return str(result["response"])
    platforms = result.get("platforms") or {}
    parts = [f"[{p}] {r['response']}" for p, r in sorted(platforms.items()) if isinstance(r, dict) and r.get("response")]
    if not parts:
        raise RPCFailed("the live environment's result holds no answer")
    return " ".join(parts)


PLATFORMS: dict[str, Platform] = {"twitter": "twitter", "reddit": "reddit"}


def _platform(named: str | None) -> Platform | None:
    """The platform a question is put on, if it names one: Twitter or Reddit."""
    if not named:
        return None
    if named not in PLATFORMS:
        raise UsageError(f"platform {named[:30]!r} is neither twitter nor reddit: name one of them, or none")
    return PLATFORMS[named]
