"""Stances labelled by the model: a sample of a run's statements, asked in batches, each reply read strictly
(docs/architecture.md#stances-labelled-by-the-model).

Pure. With `[agent] stance_labels = N` (0: off) and a model to ask, the report first samples up to N
statements so that every agent and every round is covered before any is covered twice (`sample`,
`StatementsSampled`), then asks the model for their stances a batch at a time: the requirement and the
statements as delimited data, the run's declared stances and `none` the only answers, in the structured
output `[agent] response_format` names. Each reply is read strictly (`read_labels`): an answer outside the
batch or the stances is not taken. The labels are events (`StancesLabelled`), so a replay folds them and
asks no model; the tools read them (`agent/tools/camps.py`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from simreportd.events.models import ReportFailed, SampledStatement, StancesLabelled

from . import prompts
from .effects import Effect, Emit, SampleStatements, emit
from .llm_calls import request, step
from .state import ReportState

BATCH = 20  # statements per request: a small model's context holds them, and its answer stays short
MAX_TEXT = 300  # characters of a statement the model sees: its stance shows early, a 100 KB post costs no more
NONE = "none"  # the answer for a statement that takes no side (chatter, a question, news)
PLAIN_WORD = re.compile(r"[^\W\d_]{1,24}")  # a stance named in simulation data reaches a prompt only as this
FENCED = re.compile(r"\A```(?:json)?\s*(.*?)\s*```\Z", re.S)

SYSTEM = (
    "You label the stance of statements that simulated people posted about a question. For each statement, "
    "answer the stance it argues for, from the list given, or \"none\" when it takes no side (small talk, a "
    "question, news without an opinion). Judge what the statement says, not who wrote it. "
    f"{prompts.DATA_RULE} Answer with JSON only: {{\"labels\": [{{\"id\": 1, \"stance\": \"...\"}}, ...]}}, "
    "one item per statement."
)


def plain_stances(declared: Iterable[Any]) -> list[str]:
    """The run's declared stances fit to be answers: plain words only (a stance is simulation data, and a
    sentence posing as one would be an instruction), lower-cased, sorted, without `none`."""
    words = {str(w).strip().lower() for w in declared}
    return sorted(w for w in words if PLAIN_WORD.fullmatch(w) and w != NONE)


def sample(places: Sequence[tuple[str, int, int]], cap: int) -> list[str]:
    """Up to `cap` citation ids of (ref, agent, round) places, in the order they are asked: each agent's first
    statement, then each agent's last, then one for each round not yet covered, then each agent's middle
    statements (the middle of the longest stretch not yet asked first), an agent at a time."""
    by_agent: dict[int, list[tuple[int, str]]] = {}
    for ref, agent, round_no in places:
        by_agent.setdefault(agent, []).append((round_no, ref))
    chosen: dict[str, None] = {}
    agents = sorted(by_agent)
    for pick in (0, -1):
        chosen.update((by_agent[a][pick][1], None) for a in agents)
    covered = {round_no for a in agents for round_no, ref in by_agent[a] if ref in chosen}
    for ref, _, round_no in places:
        if round_no not in covered:
            covered.add(round_no)
            chosen[ref] = None
    orders = [_middles_first(by_agent[a]) for a in agents]
    for rank in range(max(map(len, orders), default=0)):
        chosen.update((order[rank], None) for order in orders if rank < len(order))
    return list(chosen)[:cap]


def _middles_first(said: list[tuple[int, str]]) -> list[str]:
    """An agent's statements by bisection: the middle one, then the middles of each half, and so on."""
    out, spans = [], [(0, len(said))]
    while spans:
        low, high = spans.pop(0)
        if low < high:
            mid = (low + high) // 2
            out.append(said[mid][1])
            spans += [(low, mid), (mid + 1, high)]
    return out


def batches(statements: Sequence[SampledStatement]) -> list[Sequence[SampledStatement]]:
    """The sample cut into the batches asked one request each."""
    return [statements[i:i + BATCH] for i in range(0, len(statements), BATCH)]


def messages(requirement: str, stances: list[str], batch: Sequence[SampledStatement]) -> list[dict[str, Any]]:
    """One batch's request: the instructions, then the requirement and the numbered statements as data."""
    listed = "\n".join(f"{n}. {' '.join(s.text.split())}" for n, s in enumerate(batch, 1))  # one line each
    user = (f"The question the simulation asked:\n{prompts.delimit('simulation_data', requirement)}\n\n"
            f"Stances to choose from: {', '.join([*stances, NONE])}\n\n"
            f"Statements:\n{prompts.delimit('simulation_data', listed)}\n\n"
            f"Label each of the {len(batch)} statements now, in JSON.")
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def schema(stances: list[str], size: int) -> dict[str, Any]:
    """The JSON schema of an answer: ids of the batch, and only the run's stances or `none`."""
    item = {"type": "object", "additionalProperties": False, "required": ["id", "stance"],
            "properties": {"id": {"type": "integer", "minimum": 1, "maximum": size},
                           "stance": {"type": "string", "enum": [*stances, NONE]}}}
    return {"type": "object", "additionalProperties": False, "required": ["labels"],
            "properties": {"labels": {"type": "array", "items": item, "maxItems": size}}}


def response_format(kind: str, stances: list[str], size: int) -> dict[str, Any] | None:
    """The `response_format` parameter for `[agent] response_format` (None: plain text, read all the same)."""
    if kind == "json_object":  # llama.cpp's server: a JSON object constrained by the schema's grammar
        return {"type": "json_object", "schema": schema(stances, size)}
    if kind == "json_schema":  # OpenAI, vLLM
        return {"type": "json_schema", "json_schema": {"name": "stance_labels", "schema": schema(stances, size)}}
    return None


def read_labels(content: str, batch: Sequence[SampledStatement], stances: list[str]) -> tuple[dict[str, str], int, str]:
    """The labels a reply gives, by citation id; how many answers were not taken; and why none were, when the
    reply was not the JSON asked for. An id outside the batch, a stance not offered, or an id answered twice
    is not taken: a reply steered by the statements it reads must not decide their camps."""
    text = content.strip()
    text = fenced.group(1) if (fenced := FENCED.match(text)) else text
    try:
        value = json.loads(text)
    except ValueError:
        return {}, 0, "the reply was not JSON"
    items = value.get("labels") if isinstance(value, dict) else None
    if not isinstance(items, list):
        return {}, 0, "the reply held no list of labels"
    allowed = {*stances, NONE}
    taken = [answer for item in items if (answer := _answer(item, len(batch), allowed)) is not None]
    times = Counter(number for number, _ in taken)
    labels = {batch[number - 1].ref: stance for number, stance in taken if times[number] == 1}
    if by_rote([stance for _, stance in sorted(taken)]):
        return {}, len(items), "the reply gave the stances by rote (one for nearly all, or the same few in turn)"
    return labels, len(items) - len(labels), ""


ROTE = 6  # answers at least, for a pattern to be read as rote rather than as a batch that happens to agree
ROTE_PERIOD = 3  # "supportive, opposing, neutral, supportive, ...": the list of stances said again in turn
ROTE_SHARE = 0.9  # one stance for this share of a batch: the sample mixes every camp's agents, so it is no reading


def by_rote(answers: list[str]) -> bool:
    """Whether a batch's answers, in order, repeat one stance (nearly always) or a cycle of a few: a small model at
    its limit (Qwen2.5-Coder-0.5B answered "none" to all or all but one or two statements of a batch)."""
    if len(answers) < ROTE:
        return False
    return Counter(answers).most_common(1)[0][1] >= ROTE_SHARE * len(answers) or any(
        all(a == answers[i % period] for i, a in enumerate(answers)) for period in range(1, ROTE_PERIOD + 1))


def _answer(item: Any, size: int, allowed: set[str]) -> tuple[int, str] | None:
    """One item of a reply as (1-based id, stance), or None when it is not a valid answer."""
    if not isinstance(item, dict) or set(item) != {"id", "stance"}:
        return None
    number, stance = item["id"], item["stance"]
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= size:
        return None
    return (number, stance.lower()) if isinstance(stance, str) and stance.lower() in allowed else None


def label_step(s: ReportState) -> Effect | None:
    """The next step of labelling, or None when there is none: not configured, no model (the offline writer),
    no stance to answer with, or every batch labelled. A call that fails for good labels its batch with
    nothing, and the report goes on (it reads stances as it would without a model)."""
    if s.rules.stance_labels <= 0 or s.request is None or s.request.provider == "offline" or s.context is None:
        return None
    if s.sampled is None:
        stances = plain_stances(s.context.get("stances") or {})
        return SampleStatements(s.request.simulation_id, s.request.generation, s.rules.stance_labels,
                                tuple(stances)) if stances else None
    asked = batches(s.sampled.statements)
    index = len(s.labelled)
    if index >= len(asked) or not s.sampled.stances:
        return None
    batch, stances, c = asked[index], s.sampled.stances, s.lane(0)
    effect = step(s, 0, "stance_labels")
    if isinstance(effect, Emit) and isinstance(failed := effect.events[0], ReportFailed):
        call = c.awaiting.call_id if c.awaiting is not None else None
        return emit(StancesLabelled(report_id=s.report_id, batch=index, call_id=call,
                                    note=f"the model failed: {failed.error}"[:500]))
    if effect is not None:
        return effect
    if c.unread is not None:
        labels, rejected, note = read_labels(c.unread.content, batch, stances)
        return emit(StancesLabelled(report_id=s.report_id, batch=index, call_id=c.unread.call_id, labels=labels,
                                    rejected=rejected, note=note))
    requirement = str(s.context.get("requirement", ""))
    return emit(request(s, "stance_labels", 0, messages(requirement, stances, batch), [], fresh=True,
                        extra={"response_format": response_format(s.rules.response_format, stances, len(batch))}))
