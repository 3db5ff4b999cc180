"""The claim check: every figure and every name in a text must come from the evidence it was written from
(docs/formats.md#claim-check).

Pure text work, no I/O. A *claim* is a figure (a count, a decimal, a percentage, a ratio, a round number),
an id (`post:twitter:42`, `agent:7`), a platform, a person's name (two capitalised words) or a term the
text puts in quotation marks or names as a topic, or a relation (who reacted to whom, who is most active,
who changed sides, which camp is largest, which platform led: agent/checks/relations.py). A claim is supported when
the evidence holds it: a figure as a number of a tool result (a percentage also as a share, rounded as the
text rounds it, so a `calculate` result counts), a name or term as text of a result, a relation as the roles
the results give. Persona interview answers are written by a
model, not said in the run: they are never evidence for figures or names (`generated_evidence`).
Sentences with unsupported claims are listed, one verdict per sentence; `keep` drops them from the text.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from simreportd.events.models import ClaimVerdict, ToolObserved, UnsupportedSentence

from ..findings.language import Language
from ..tools.tool_answers import PlanningContext
from . import relations as roles_of
from .grounding import CITATION
from .problem_words import problem
from .relations import RelationCollector, Relations

# A Chinese full stop ends a sentence with no space after it (after its closing quotation mark, if any).
SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[^a-z])|(?<=[。！？])(?![。！？”’」』）)])\s*|(?<=[。！？][”’」』）)])\s*|\n+")
# Edges are ASCII, not \b: a Han character is a word character, and "第9轮" and "Twitter平均" hold claims too.
FIGURE = re.compile(r"(?<![A-Za-z0-9_:.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?\s*"
                    r"(%|percent(?![a-z])|x(?![a-z])|times(?![a-z])|倍)?")
CAPITALISED_PAIR = re.compile(r"\b([A-Z][a-z]{2,}(?: [A-Z][a-z]{2,})+)\b")
QUOTED_TERM = re.compile(r"[\"“”]([^\"“”\n]{3,60})[\"“”]")
TOPIC = re.compile(r"\b(?:discussions? (?:of|about|on)|concerns? (?:about|over)|topics? (?:of|like|such as)|"
                   r"talk(?:ed|ing)? about|(?:was|were|is|are) about|focus(?:ed)? on|cent(?:er|re)d on|such as)"
                   r"\s+([a-z][a-z-]+(?: [a-z][a-z-]+)?)", re.I)
TOPIC_BEFORE = re.compile(r"\b([a-z][a-z-]{3,}) (?:discussions|debates)\b", re.I)
FACT_REF = re.compile(r"\[(?:F|fact\s*)?(\d{1,3})\]", re.I)
LIST_MARK = re.compile(r"^\s*(?:[-*>]|\d{1,2}[.)])\s+", re.M)
HEADING = re.compile(r"^#+ .*$", re.M)
QUOTE_BLOCK = re.compile(r"^>.*$", re.M)  # quotations: held to the quote check (agent/checks/grounding.py), not this one
PLATFORMS = ("twitter", "reddit", "facebook", "instagram", "linkedin", "tiktok", "youtube", "weibo", "wechat",
             "telegram", "whatsapp", "mastodon", "threads", "discord", "snapchat", "douyin", "pinterest", "quora")
STOP_WORDS = frozenset("""the a an in on at of and or but to from for with by as is was were be been it its this that
these those their there then than so such some any all each every most more less many much one two three four five
six seven eight nine ten first second third last next other another after before during while over under about
into out up down not no yes only also very both either neither same own""".split())
OPENERS = frozenset("""The This That These Those In On At Of And But Overall However Meanwhile During After Before
While Although Over Under From With Without For By As Most Some Many Each Every Both Round Rounds Section Summary
Total Twitter Reddit Agent Agents Camp Camps Supportive Opposing Neutral Observer Answers Answer Question
Questions Key Data Facts Fact Note Evidence""".split())
SMALL = 10  # counts up to this are words in disguise ("2 platforms", "top 5"): checked like any other figure
MAX_SERIES = 80  # per-round rows whose span means are worked out (tools send at most 60)
MOSTLY = 0.5  # a text whose sentences with claims are more than half unsupported is mostly unsupported
REPEATED = 0.6  # distinct sentences below this share of all sentences: the text loops


@dataclass(frozen=True)
class Evidence:
    """What a text may state: the numbers and the text of the results it was written from."""

    numbers: frozenset[float]
    text: str  # lower-cased: every string and key of every result, joined
    ids: frozenset[str]
    derived: frozenset[float] = frozenset()  # means of per-round series over spans of rounds
    ratios: frozenset[float] = frozenset()  # one platform's actions over another's, before or after a round
    relations: Relations = Relations()  # who holds which role: agent/checks/relations.py

    def has_figure(self, value: float, decimals: int, percent: bool) -> bool:
        """The figure occurs, rounded as the text rounds it; a percentage may be a share times 100."""
        shares = [(value / 100, decimals + 2)] if percent else []
        return any(_rounds_to(n, v, places) for n in self.numbers for v, places in [(value, decimals), *shares])

    def has_text(self, phrase: str) -> bool:
        return phrase.lower() in self.text


@dataclass
class _Collector:
    numbers: set[float] = field(default_factory=set)
    texts: list[str] = field(default_factory=list)
    derived: set[float] = field(default_factory=set)
    ratios: set[float] = field(default_factory=set)

    def series(self, rows: list[Any]) -> None:
        """Means per round of every numeric column of per-round rows over every span of rounds: a text may state
        "Twitter averaged 3.33 actions per round (rounds 1-3)" without a calculate call. A long run's row sums a
        span of rounds (`round`..`last_round`): it counts as that many rounds."""
        if len(rows) > MAX_SERIES or not all(isinstance(r, dict) and "round" in r for r in rows) or not rows:
            return
        widths = [_width(r) for r in rows]
        for key in {k for r in rows for k, v in r.items() if k not in ("round", "last_round")
                    and isinstance(v, int | float)}:
            values = [float(r.get(key) or 0) for r in rows]
            for start in range(len(values)):
                total, rounds = 0.0, 0
                for end in range(start, len(values)):
                    total, rounds = total + values[end], rounds + widths[end]
                    self.derived.add(total / rounds)
        self.platform_ratios(rows)

    def platform_ratios(self, rows: list[Any]) -> None:
        """How many times one platform's actions the other's were, before and after each round ("after round
        18 Twitter had 2.35x Reddit's actions", "是后者的2.35倍"): only the spans that start or end the run."""
        columns = sorted({k for r in rows for k in r if k in PLATFORMS})
        for a in columns:
            for b in (c for c in columns if c != a):
                for part in (rows[i:] for i in range(len(rows))), (rows[:i + 1] for i in range(len(rows))):
                    for span in part:
                        over = sum(float(r.get(b) or 0) for r in span)
                        if over:
                            self.ratios.add(sum(float(r.get(a) or 0) for r in span) / over)

    def add(self, value: Any) -> None:
        if isinstance(value, bool):
            return
        if isinstance(value, int | float):
            self.numbers.add(float(value))
        elif isinstance(value, str):
            self.texts.append(value)
            self.numbers.update(_figures_in(value))
        elif isinstance(value, dict):
            for k, v in value.items():
                self.texts.append(str(k))
                self.add(v)
        elif isinstance(value, list):
            self.series(value)
            for v in value:
                self.add(v)


def _width(row: dict[str, Any]) -> int:
    """How many rounds a per-round row counts (1, or its span `round`..`last_round`)."""
    last, first = row.get("last_round"), row.get("round")
    return max(1, last - first + 1) if isinstance(last, int) and isinstance(first, int) else 1


def evidence(results: list[str], context: Mapping[str, Any] | None = None) -> Evidence:
    """The evidence of tool `results` (JSON, or plain text) and the planning `context` the prompt showed."""
    collector, roles = _Collector(), RelationCollector()
    for result in results:
        try:
            value = json.loads(result)
        except ValueError:
            value = result
        collector.add(value)
        roles.add(value)
    if context:
        collector.add(context)
        roles.add(dict(context))
    ids = {m for r in results for m in CITATION.findall(r)}
    text = "\n".join(collector.texts).lower()
    return Evidence(frozenset(collector.numbers), text, frozenset(ids), frozenset(collector.derived),
                    frozenset(collector.ratios), roles.relations())


def generated_evidence(tool: str) -> bool:
    """Whether a tool's result is model-written (persona interviews), so never evidence for figures."""
    return tool == "interview_agents"


def of_observations(observations: list[ToolObserved], context: Mapping[str, Any] | None,
                    ids: set[str] | None = None) -> Evidence:
    """The evidence of these tool results and the context the prompt showed; persona interviews give names,
    ids and words (who was asked, about what), never figures. `ids` widens the ids that may be cited (any the
    report's tools returned)."""
    ev = evidence([o.result for o in observations if not generated_evidence(o.tool)], context)
    generated = evidence([_without_answers(o.result) for o in observations if generated_evidence(o.tool)])
    return Evidence(ev.numbers, ev.text + "\n" + generated.text, ev.ids | generated.ids | frozenset(ids or ()),
                    ev.derived, ev.ratios, ev.relations)


def _without_answers(result: str) -> str:
    """A persona interview's result without its answers: who was asked, about what, in which mode."""
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("answer", "response")}
        return [strip(v) for v in value] if isinstance(value, list) else value
    try:
        return json.dumps(strip(json.loads(result)))
    except ValueError:
        return ""


BACKGROUND = ("rounds", "platforms", "agents_count", "stances", "hot_topics", "scheduled_events", "requirement")


def background(context: dict[str, Any] | None) -> PlanningContext:
    """The part of the planning context a section's prompt shows: evidence for every section. `context` is
    `ContextGathered`'s, which `SimulationTools.context` gathered: typed here, where the agent reads it."""
    return cast(PlanningContext, {k: v for k, v in (context or {}).items() if k in BACKGROUND})


def sentences(text: str) -> list[str]:
    """The prose of `text` cut into sentences: headings, list marks and blank lines set aside."""
    prose = LIST_MARK.sub("", QUOTE_BLOCK.sub("", HEADING.sub("", text)))
    return [s.strip() for s in SENTENCE.split(prose) if s and len(s.strip()) > 1]


def claims_in(sentence: str) -> list[tuple[str, str]]:
    """Every claim of one sentence as (kind, text): figures, ids, platforms, names, terms."""
    found: list[tuple[str, str]] = [("id", m) for m in CITATION.findall(sentence)]
    bare = FACT_REF.sub(" ", CITATION.sub(" ", sentence))
    found += [("figure", m.group(0).strip()) for m in FIGURE.finditer(bare)]
    lowered = bare.lower()
    found += [("platform", p) for p in PLATFORMS if re.search(rf"(?<![a-z0-9]){p}(?![a-z0-9])", lowered)]
    for m in CAPITALISED_PAIR.finditer(bare):
        words = [w for w in m.group(1).split() if w not in OPENERS and w.lower() not in PLATFORMS]
        if len(words) >= 2:
            found.append(("name", " ".join(words)))
    for m in (*QUOTED_TERM.finditer(bare), *TOPIC.finditer(bare), *TOPIC_BEFORE.finditer(bare)):
        term = m.group(1).strip()
        if any(w.lower() not in STOP_WORDS for w in term.split()):
            found.append(("term", term))
    return found


def supported(kind: str, claim: str, ev: Evidence, operands: tuple[float, ...] = ()) -> bool:
    """Whether the evidence holds one claim; a figure may also be worked out from the sentence's `operands`."""
    if kind == "id":
        return claim in ev.ids
    if kind == "figure":
        return _figure_supported(claim, ev, operands)
    if kind == "term":
        return all(ev.has_text(w) for w in claim.lower().split() if w not in STOP_WORDS)
    return ev.has_text(claim)


def _figure_supported(claim: str, ev: Evidence, operands: tuple[float, ...]) -> bool:
    """In the evidence; or, for a decimal, a ratio or a percentage: a mean of a per-round span, or worked
    out from two other figures of the same sentence ("9.0 against 4.0, 2.25x as many")."""
    m = FIGURE.match(claim)
    if m is None:
        return True
    whole, fraction, unit = m.group(1), m.group(2) or "", (m.group(3) or "").lower()
    value = float(whole.replace(",", "") + fraction)
    decimals = max(0, len(fraction) - 1)
    percent = unit in ("%", "percent")
    if ev.has_figure(value, decimals, percent):
        return True
    if not (fraction or unit):
        return False  # a whole count is stated by the evidence or not at all
    worked = set(ev.derived) if fraction else set()
    worked |= set(ev.ratios) if unit in ("x", "times", "倍") else set()
    worked |= {r for a in operands for b in operands if a != b and b
               for r in ((a / b, a / b * 100, (a / b - 1) * 100) if percent else (a / b,))}
    return any(_rounds_to(w, value, decimals) for w in worked)


def check(text: str, ev: Evidence) -> ClaimVerdict:
    """The verdict on `text`: claims counted, each sentence with unsupported claims listed, loops noticed."""
    parts = sentences(text)
    unsupported: list[UnsupportedSentence] = []
    claims = supported_count = with_claims = 0
    for sentence in parts:
        found = list(dict.fromkeys(claims_in(sentence)))
        figures = tuple(_figures_in(FACT_REF.sub(" ", CITATION.sub(" ", sentence))))
        missing = [c for k, c in found if not supported(k, c, ev, figures)]
        relations = roles_of.unsupported(sentence, ev.relations)  # only the wrong ones are counted: a role is no figure
        missing += relations
        claims += len(found) + len(relations)
        supported_count += len(found) - len(missing)
        with_claims += bool(found)
        if missing:
            unsupported.append(UnsupportedSentence(sentence=sentence[:400], claims=missing))
    return ClaimVerdict(sentences=len(parts), claims=claims, supported=supported_count,
                        unsupported=unsupported, repetitive=repetitive(parts),
                        mostly_unsupported=bool(with_claims) and len(unsupported) > MOSTLY * with_claims)


def repetitive(parts: list[str]) -> bool:
    """Whether the sentences loop: few distinct ones, or one frame repeated with other fillers."""
    if len(parts) < 4:
        return False
    shapes = [re.sub(r"[\d.,]+\d|\d|[A-Z]\w*", "#", s) for s in parts]
    distinct = len(set(parts)) / len(parts)
    common = Counter(shapes).most_common(1)[0][1]
    return distinct < REPEATED or common >= max(3, len(parts) // 2)


def keep(text: str, verdict: ClaimVerdict) -> str:
    """`text` without its sentences that hold unsupported claims (lines otherwise as they were)."""
    dropped = {u.sentence for u in verdict.unsupported}
    if not dropped:
        return text
    lines = []
    for line in text.split("\n"):
        pieces = SENTENCE.split(line)
        kept = [p for p in pieces if p and _prose_of(p) not in dropped]
        if kept or not line.strip():
            lines.append("".join(p if p.endswith(CJK_STOPS) else p + " " for p in kept).rstrip() if kept else line)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


CJK_STOPS = ("。", "！", "？", "”", "’", "」", "』", "）")  # a Chinese sentence needs no space after it


def _prose_of(piece: str) -> str:
    return LIST_MARK.sub("", piece).strip()[:400]


def feedback(verdict: ClaimVerdict, what: str = "section") -> str:
    """What to fix, for the model: each sentence and the claims in it that no tool result supports."""
    listed = "; ".join(f'"{u.sentence[:100]}" ({", ".join(u.claims[:4])})' for u in verdict.unsupported[:5])
    return (f"Rejected: the {what} states things no tool result supports: {listed}. State only figures, names "
            "and topics that occur in the tool results (use calculate for ratios) and write it again.")


def problems(verdict: ClaimVerdict, cut: bool, language: Language = "en") -> list[str]:
    """The claim rules a text breaks, in words (in the report's `language`): any one makes its report degraded."""
    out = []
    if verdict.unsupported:
        out.append(problem(language, "unsupported", n=len(verdict.unsupported)))
    if verdict.mostly_unsupported:
        out.append(problem(language, "mostly_unsupported"))
    if verdict.repetitive:
        out.append(problem(language, "repetitive"))
    if cut:
        out.append(problem(language, "cut"))
    return out


def _figures_in(text: str) -> list[float]:
    return [float(m.group(1).replace(",", "") + (m.group(2) or "")) for m in FIGURE.finditer(text)]


def _rounds_to(number: float, value: float, decimals: int) -> bool:
    """`number` written with `decimals` decimals reads `value` (half-way cases either way)."""
    return bool(abs(number - value) <= 0.5 * 10.0 ** -decimals + 1e-9)
