"""Guided writing for small models (docs/formats.md#claim-check, `[agent] mode = "guided"`).

Pure. The engine does what a small model does badly: it plans each section's tool calls from the
simulation (agent/findings/plan.py), runs them, and turns the results into a short numbered sheet of
facts (figures and quotes with their ids). The model only writes: sentences citing the facts by number,
in a JSON schema where the server enforces one. The claim check keeps the sentences the sheet supports,
marked as the model's; under them the engine's whole analysis of the section stands "From the data",
every statement the offline writer makes, whatever the model cited. In the answers section the engine
answers: the model's sentences stand under the question whose fact they cite first.
"""

from __future__ import annotations

import json
import re
from typing import Any

from simreportd.events.models import ClaimVerdict, ToolObserved

from ..checks import claims, relations
from ..findings.facts import Facts
from ..findings.phrases import EN, ZH, phrases_for
from ..findings.plan import analyst_outline, tool_calls
from ..findings.statements import WRITERS
from ..tools.tool_answers import PlanningContext, Seen, add_answer

MAX_FACTS = 12  # a sheet longer than this loses a 0.5B model's attention
FACT_REF = re.compile(r"\[(\d{1,2})\]")
FENCED = re.compile(r"\A```(?:json)?\s*(.*?)\s*```\.?\Z", re.S)  # JSON in a Markdown fence, as small models write it
ITEM = re.compile(r'\{\s*"text"\s*:\s*"(?:[^"\\]|\\.)*"\s*,\s*"facts"\s*:\s*\[[\d,\s]*\]\s*\}')  # one whole sentence
QUESTION = re.compile(r"\*\*[^*\n]+[?？]\*\*")  # a question as the offline writer's answers section restates it
WORDS = re.compile(r"\w+")
QUESTION_LINE = re.compile(r"^(\*\*[^*\n]+[?？]\*\*)$", re.M)
SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["sentences"],
    "properties": {"sentences": {"type": "array", "minItems": 1, "maxItems": 4, "items": {
        "type": "object", "required": ["text", "facts"],
        "properties": {"text": {"type": "string"},
                       "facts": {"type": "array", "items": {"type": "integer"}, "minItems": 1}}}}}}
SYSTEM = ("You write one section of an analysis report about a social-media simulation. You get a numbered "
          "sheet of facts taken from the simulation data. Write 2 to 4 short sentences that explain what the "
          "facts mean for the section's question. Use only the facts on the sheet: copy every number and name "
          "exactly as the sheet writes it, add no number, name, platform or topic of your own, and end each "
          "sentence with the numbers of the facts it uses, like [2] or [1][3]. "
          'Answer in JSON: {"sentences": [{"text": "...", "facts": [1, 3]}]}.')
ANSWER_EACH = "Answer each question in one sentence, citing the facts listed under that question. "


def outline(context: dict[str, Any]) -> tuple[str, str, list[dict[str, str]]]:
    """The outline of a guided report: the offline writer's, shaped by the run (its trigger, camps, platforms),
    one section for each kind of fact the sheets hold."""
    return analyst_outline(context)


def seen_by_tool(observations: list[ToolObserved]) -> Seen:
    """The section's results parsed, by tool, as the offline writer reads them (reminders left out)."""
    seen: Seen = {}
    for o in observations:
        try:
            value = json.loads(o.result)
        except ValueError:
            continue
        if isinstance(value, dict) and "reminder" not in value:
            add_answer(seen, o.tool, value)
    return seen


def plan(kind: str, background: PlanningContext, seen: Seen) -> list[tuple[str, dict[str, Any]]]:
    """The section's tool calls, as the offline writer plans them, without persona interviews (generated
    text, never evidence, and a model call per agent: a minute each on a CPU server)."""
    requirement = str(background.get("requirement") or "")
    return [(name, args) for name, args in tool_calls(kind, background, requirement, seen) if name != "interview_agents"]


def analysis(kind: str, seen: Seen, background: PlanningContext) -> str:
    """The engine's whole analysis of the section: the statements the offline writer makes of these results."""
    return WRITERS[kind](Facts(seen, background, str(background.get("requirement") or ""), set()))


def sheet(text: str) -> list[str]:
    """The numbered facts: the section's statements (its `analysis`), one per line, at most MAX_FACTS.
    In the answers section each requirement question heads the facts that answer it (`is_question`)."""
    entries: list[str] = []
    for block in text.split("\n\n"):
        block = block.strip()
        if block.startswith(">") and entries and not is_question(entries[-1]):
            entries[-1] += "\n" + block  # a quotation belongs to the statement that introduces it
        elif is_question(block):
            entries.append(block)
        elif block:
            entries += whole_quotations([s for s in claims.SENTENCE.split(block) if s.strip()])
    kept = [e for e in entries if is_question(e) or claims.claims_in(e) or e.startswith(">")]
    facts = [e for e in kept if not is_question(e)][:MAX_FACTS]
    out = [e for e in kept if is_question(e) or e in facts]
    return [e for i, e in enumerate(out) if not is_question(e) or (i + 1 < len(out) and not is_question(out[i + 1]))]


def whole_quotations(pieces: list[str]) -> list[str]:
    """Sentences with a quotation that a full stop inside it cut, joined again: a fact is never cut in a quote."""
    out: list[str] = []
    for piece in pieces:
        if out and _open_quote(out[-1]):
            out[-1] += " " + piece
        else:
            out.append(piece)
    return out


def _open_quote(text: str) -> bool:
    return text.count('"') % 2 == 1 or text.count("\u201c") > text.count("\u201d")


def is_question(entry: str) -> bool:
    """A requirement question heading the sheet's facts that answer it (`**How will ...?**`), not a fact."""
    return bool(QUESTION.fullmatch(entry))


def numbered(facts: list[str]) -> dict[int, str]:
    """The sheet's facts by the number the model cites them with (questions are not numbered)."""
    return dict(enumerate((f for f in facts if not is_question(f)), 1))


def messages(title: str, description: str, requirement: str, facts: list[str]) -> list[dict[str, Any]]:
    """The request for one draft: instructions, the sheet (facts under the question they answer), the section."""
    lines, number = [], 0
    for fact in facts:
        number += not is_question(fact)
        lines.append(f"Question: {fact.strip('*')}" if is_question(fact) else f"[{number}] {fact}")
    listed = "\n".join(lines)
    task = ANSWER_EACH if any(is_question(f) for f in facts) else ""
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Question of the report: {requirement}\nSection: {title}. "
                                        f"{description}\n\nFacts:\n{listed}\n\n"
                                        f"{task}Write the section now, in JSON."}]


def response_format(kind: str) -> dict[str, Any] | None:
    """The `response_format` request parameter for `[agent] response_format` (None: plain text)."""
    if kind == "json_object":  # llama.cpp's server: a JSON object constrained by the schema's grammar
        return {"type": "json_object", "schema": SCHEMA}
    if kind == "json_schema":  # OpenAI, vLLM
        return {"type": "json_schema", "json_schema": {"name": "section", "schema": SCHEMA}}
    return None


def sentences_of(content: str) -> list[tuple[str, list[int]]]:
    """The draft's sentences with the facts each cites, from the JSON answer (its complete items, when the
    length limit cut it) or from plain text with [n]."""
    content = FENCED.sub(r"\1", content.strip())
    try:
        value = json.loads(content)
        items = value.get("sentences") if isinstance(value, dict) else None
    except ValueError:
        items = _whole_items(content) if content.lstrip().startswith("{") else None
    if isinstance(items, list):
        out = []
        for item in items:
            if isinstance(item, str):  # a sentence without its object: its facts are the [n] it writes
                item = {"text": item, "facts": []}
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                cited = [n for n in item.get("facts") or [] if isinstance(n, int)]
                out.append((item["text"], cited + [int(n) for n in FACT_REF.findall(item["text"])]))
        return out
    return [(s, [int(n) for n in FACT_REF.findall(s)]) for s in claims.sentences(content)]


def _whole_items(content: str) -> list[Any]:
    """The complete `{"text": ..., "facts": [...]}` items of a JSON answer cut short."""
    out = []
    for m in ITEM.finditer(content):
        try:
            out.append(json.loads(m.group(0)))
        except ValueError:
            continue
    return out


def draft(content: str, facts: list[str], ev: claims.Evidence, engine: str = "",
          asked: str = "") -> tuple[str, list[int], ClaimVerdict]:
    """One draft as kept: the sentences whose claims the evidence supports, marked as the model's, over the
    engine's analysis (`engine`, from the data; the probe has none and keeps the sentences alone); those that
    only copy the engine or restate what was `asked` are not the model's reading."""
    sheet = numbered(facts)
    written = [(FACT_REF.sub("", text).strip(), [n for n in dict.fromkeys(cited) if n in sheet])
               for text, cited in sentences_of(content)]
    verdict = claims.check("\n".join(text for text, _ in written if text), ev)  # each sentence judged alone
    dropped = {u.sentence for u in verdict.unsupported}
    kept = [(t, c) for t, c in written if t and not any(d in t for d in dropped) and c]
    cited = list(dict.fromkeys(n for _, c in kept for n in c))
    if not kept:
        return "", [], verdict
    if not engine:
        return " ".join(t for t, _ in kept), cited, verdict
    said: set[str] = set()  # a sentence the model wrote twice stands once
    own = [(" ".join(p for p in claims.sentences(t) if adds(p, engine, asked) and not _again(p, said)), c)
           for t, c in kept]
    return composed(engine, facts, [(t, c) for t, c in own if t]), cited, verdict


def _again(sentence: str, said: set[str]) -> bool:
    key = _words(sentence)
    seen = key in said
    said.add(key)
    return seen


def adds(sentence: str, engine: str, asked: str = "") -> bool:
    """Whether a kept sentence of the model's says something checked: a claim the check read (a figure, id, name or
    term: "Residents will react by arguing that it will lead to increased air quality" holds none, so nothing of it
    was checked), not the engine's facts copied (spliced or garbled included), not the question `asked` restated,
    not a lead-in with nothing after it ("...以下几个方面：", or the JSON debris of one)."""
    plain = sentence.strip().strip('",').strip().rstrip(".。")
    return bool(plain) and not plain.endswith((":", "：")) and checkable(plain) and not copied(plain, engine) \
        and not restates(plain, asked) and novel(plain, engine, asked)


def novel(sentence: str, engine: str, asked: str = "") -> bool:
    """Whether the sentence states something the engine's text (and the question `asked`) does not: a figure of
    another value, an id, name or term neither writes, or who has the upper hand (the engine never says). A
    sentence of the engine's figures and names in other words ("with 40 agents split into 16 neutral, 12
    supportive, and 10 opposing camps") is a restatement, however it is worded."""
    known = f"{engine}\n{asked}"
    figures = {_value(v) for k, v in claims.claims_in(known) if k == "figure"}
    lowered = known.lower()
    for kind, value in claims.claims_in(sentence):
        if kind == "figure" and _value(value) not in figures:
            return True
        if kind in ("id", "name", "term") and value.lower() not in lowered:
            return True
    return relations.gives_the_lead(sentence) and not relations.gives_the_lead(engine)


def _value(figure: str) -> float | None:
    m = claims.FIGURE.match(figure)
    return float(m.group(1).replace(",", "") + (m.group(2) or "")) if m else None


def checkable(sentence: str) -> bool:
    """Whether the claim check read something in the sentence it could hold against the data (a platform alone
    is no finding: "In Twitter, they are neutral on posts ... while in Reddit, they are neutral by profile")."""
    return any(kind in ("figure", "id", "name", "term") for kind, _ in claims.claims_in(sentence))


RUN = 4  # words in a row that a sentence must share with the engine's facts for them to count as copied
COPIED = 0.6  # a sentence this much of which is such runs copies the engine


def copied(sentence: str, engine: str) -> bool:
    """Whether the sentence is mostly runs of the engine's words: one fact copied, a fact with another's tail
    garbled on ("X is neutral by profile, ... spoke for the opposing camp: Y 2 times"), or pieces of two spliced
    ("On Twitter, they kept the debate going with a 0.17 ... divergence, while on Reddit, they were furthest
    apart in round 13: ...")."""
    words, text = WORDS.findall(sentence.lower()), f" {_words(engine)} "
    if not words or f" {' '.join(words)} " in text:
        return bool(words)
    covered: set[int] = set()
    for i in range(len(words) - RUN + 1):
        if f" {' '.join(words[i:i + RUN])} " in text:
            covered.update(range(i, i + RUN))
    return len(covered) >= COPIED * len(words)


RESTATED = 0.8  # a sentence without figures or ids whose content words are this share of the question's


def restates(sentence: str, asked: str) -> bool:
    """Whether the sentence only says the question again ("Residents will react to the proposed charge, which
    arguments dominate."): no figure or id, and its content words nearly all the question's."""
    if not asked or any(kind in ("figure", "id") for kind, _ in claims.claims_in(sentence)):
        return False
    words = [w for w in WORDS.findall(sentence.lower()) if w not in claims.STOP_WORDS]
    question = set(WORDS.findall(asked.lower()))
    return bool(words) and sum(w in question for w in words) >= RESTATED * len(words)


def _words(text: str) -> str:
    return " ".join(WORDS.findall(text.lower()))


def composed(engine: str, facts: list[str], kept: list[tuple[str, list[int]]]) -> str:
    """The section as it stands: the model's checked sentences, marked as its own, then the engine's analysis
    under "From the data" (in the answers section, per question: the sentences citing its facts first)."""
    say = phrases_for(engine)
    none = "" if kept else say("model_added_none")
    if not any(is_question(f) for f in facts):
        said = " ".join(t for t, _ in kept)
        return "\n\n".join(p for p in (none, said and f"{say('model_reading')} {said}", say("from_data"), engine) if p)
    by_question = {question: " ".join(t for t, c in kept if c[0] in members) for question, members in grouped(facts)}
    parts = QUESTION_LINE.split(engine)
    out = [none, f"{say('model_reading')} {by_question['']}" if by_question.get("") else "", parts[0].strip()]
    for question, answer in zip(parts[1::2], parts[2::2], strict=True):
        said = by_question.get(question, "")
        out += [question, said and f"{say('model_reading')} {said}", say("from_data"), answer.strip()]
    return "\n\n".join(p for p in out if p)


def report_line(bodies: list[str], zh: bool) -> str:
    """The report's own word on the model, closing the last section to complete: whether the model added a finding
    of its own anywhere (a section shows its reading) or none in any section (no figure: the scorer reads them)."""
    added = any(EN["model_reading"] in b or ZH["model_reading"] in b for b in bodies)
    return (REPORT_ADDED if added else REPORT_NONE)[zh]


# The report's line on the model (`report_line`), in English and in Chinese.
REPORT_NONE = ("_Across the whole report the model added no finding of its own: every section stands on the data's "
               "statements alone._", "_整份报告中模型没有提出自己的发现：各节均只依据数据本身的陈述。_")
REPORT_ADDED = ("_The model added findings of its own, each checked against the data, only where a section shows "
                "its reading; everything else stands on the data's statements alone._",
                "_模型仅在标明“模型的解读”之处提出了自己的发现（均已对照数据核查）；其余内容只依据数据本身的陈述。_")


def grouped(facts: list[str]) -> list[tuple[str, list[int]]]:
    """(question, the numbers of the facts under it); facts before the first question under ''."""
    groups: list[tuple[str, list[int]]] = [("", [])]
    number = 0
    for fact in facts:
        if is_question(fact):
            groups.append((fact, []))
        else:
            number += 1
            groups[-1][1].append(number)
    return groups


def best(drafts: list[tuple[int, str, list[int], ClaimVerdict]]) -> tuple[int, str] | None:
    """The draft to keep: none unsupported first, then the most supported claims, then the most facts cited."""
    usable = [d for d in drafts if d[1]]
    if not usable:
        return None
    chosen = max(usable, key=lambda d: (not d[3].unsupported, d[3].supported, len(d[2]), -d[0]))
    return chosen[0], chosen[1]


def fallback(facts: list[str], engine: str = "", lines: tuple[str, str] | None = None) -> str:
    """When no draft survives the claim check (or the model gave none, `lines`): the engine's analysis (or the
    sheet) alone, said to be the data's and not the model's (in the sheet's language)."""
    line = (lines or NO_DRAFT)[phrases_for(engine or " ".join(facts)).language == "zh"]
    listed = engine or "\n".join(f"- {f}" for f in facts if not is_question(f)) or "- (no facts)"
    return f"{line}\n\n{listed}"


# The fallback's first line, in English and in Chinese (a tuple: `body.startswith(NO_DRAFT)` finds either).
NO_DRAFT = ("_No draft of the model survived the claim check; the facts from the data:_",
            "_模型的草稿没有一句通过声明检查；以下是数据中的事实：_")
# The same when the model could not be reached at all (a chat turn on a report written guided).
NO_MODEL = ("_The model could not be reached, so nothing here is its phrasing; the facts from the data:_",
            "_无法连接模型，以下不是模型的措辞，而是数据中的事实：_")
