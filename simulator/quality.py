"""Score a report against its simulation's ground truth (`ground_truth.json`, see truth.py).

Pure: report Markdown and the ground-truth dict in, a `Score` out. It counts
- facts recovered: each fact of the story named in one sentence, with its figure within tolerance;
- wrong numbers: every figure whose shape ties it to the read models (an agent's actions, posts or
  reactions; a round's actions; a camp's size; platform totals and means; a spike's baseline) is checked;
- hallucinated names: agent or post ids that do not exist, a name given to the wrong agent id, and
  names built like the simulator's that belong to no agent of this simulation;
- quotes: grounded when the text is the post its id names (or, without an id, any post's text);
- questions: answered when one section restates the question and recovers the facts that answer it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .scenario import SCENARIOS
from .story import STANCES
from .truth import template_pattern

NUMBER = r"(\d[\d,]*(?:\.\d+)?)"
SENTENCE_END = re.compile(r"(?<=[.!?。！？;；])\s+|\n+")
QUOTED = re.compile(r"\"([^\"\n]{4,}?)\"|\u201c([^\u201d\n]{4,}?)\u201d")
REF = re.compile(r"\b((?:post|comment):(?:twitter|reddit):\w+)")
AGENT_REF = re.compile(r"\bagent:(\d+)\b")


@dataclass
class Score:
    facts: list[tuple[str, bool]] = field(default_factory=list)
    numbers_checked: int = 0
    wrong_numbers: list[str] = field(default_factory=list)
    hallucinated: list[str] = field(default_factory=list)
    quotes_grounded: int = 0
    quotes_ungrounded: list[str] = field(default_factory=list)
    questions: list[tuple[str, bool]] = field(default_factory=list)

    @property
    def recovered(self) -> int:
        return sum(ok for _, ok in self.facts)


@dataclass
class Fact:
    kind: str
    claim: str
    pattern: re.Pattern[str] | None = None
    numbers: list[float] = field(default_factory=list)
    templates: list[str] = field(default_factory=list)
    said: dict[str, str] = field(default_factory=dict)  # an llm-style argument's statements, by ref

    def found_in(self, sentence: str, quotes: list[str]) -> bool:
        """True when the sentence states this fact (or, for an argument, a quote uses it: one of its templates,
        or one of its statements, cited by id or quoted whole or in part)."""
        if self.templates:
            return any(template_pattern(t).match(q) for t in self.templates for q in quotes)
        if self.said:
            texts = set(self.said.values())
            return any(q in self.said or q in texts or _part_of(q, texts) for q in quotes)
        match = self.pattern.search(sentence) if self.pattern else None
        if not match:
            return False
        return not self.numbers or any(_close(x, v) for x in _numbers(sentence) for v in self.numbers)


# --- facts ---------------------------------------------------------------------------------------


def facts_of(truth: dict[str, Any]) -> list[Fact]:
    """The facts a good report on this story states."""
    t, spike, div = truth["trigger"], truth["spike"], truth["divergence"]
    words = "|".join(re.escape(w) for w in [*t["words"], t["description"][:24], "scheduled event", "trigger"])
    out = [Fact("trigger", f"the trigger landed in round {t['round']}",
                _near(rf"\bround {t['round']}\b", words)),
           Fact("spike", f"round {spike['round']} spiked to {spike['actions']} actions",
                re.compile(rf"\bround {spike['round']}\b", re.I), [spike["actions"]])]
    loud = div["platform"].capitalize()
    out.append(Fact("divergence", f"{loud} kept arguing after round {div['after_round']} "
                    f"({div['means_after'][div['platform']]} vs {div['means_after'][div['quiet']]} a round)",
                    re.compile(rf"\b{loud}\b", re.I),
                    [v for v in (div["means_after"][div["platform"]], div["totals_after"][div["platform"]],
                                 div["ratio"]) if v]))
    for camp in truth["camps"]:
        out.append(Fact("camp", f"{camp['size']} {camp['stance']} agents",
                        _near(rf"\b{camp['size']}\b", rf"\b{camp['stance']}")))
    for agent in truth["most_engaged"]:
        out.append(Fact("engaged", f"{agent['name']} drew {agent['reactions']} reactions",
                        re.compile(re.escape(agent["name"])), [agent["reactions"]]))
    for shift in truth["shifts"]:
        out.append(Fact("shift", f"{shift['name']} moved from {shift['from']} to {shift['to']}",
                        _near(re.escape(shift["name"]), rf"\b{shift['to']}")))
    for stance, top in truth["top_arguments"].items():
        if top["templates"]:
            out.append(Fact("argument", f"the {stance} camp's top argument: {top['templates'][0]}",
                            templates=top["templates"]))
        else:
            tied, posts = top.get("arguments", [top["argument"]]), truth["reference"]["posts"]
            said = {ref: posts[ref] for ref, s in truth["statements"].items() if s["argument"] in tied and ref in posts}
            summary = truth["arguments"][top["argument"]]["summary"]
            out.append(Fact("argument", f"the {stance} camp's top argument: {summary}", said=said))
    return out


def _part_of(quote: str, texts: Any) -> bool:
    """A quote of at least a few words that is part of one of `texts` (a trailing ellipsis aside)."""
    core = quote.strip().rstrip("…").rstrip(".").strip()
    return len(core) >= 12 and any(core in t for t in texts)


def _near(a: str, b: str, gap: int = 120) -> re.Pattern[str]:
    """`a` and `b` within `gap` characters of each other, either order."""
    return re.compile(rf"(?:{a}).{{0,{gap}}}?(?:{b})|(?:{b}).{{0,{gap}}}?(?:{a})", re.I | re.S)


def _numbers(text: str) -> list[float]:
    return [float(n.replace(",", "")) for n in re.findall(NUMBER, text)]


def _close(x: float, v: float) -> bool:
    """Equal for counts; within rounding (0.05, or 1%) for means and ratios."""
    return x == v if float(v).is_integer() and float(x).is_integer() else abs(x - v) <= max(0.051, abs(v) * 0.01)


# --- scoring -------------------------------------------------------------------------------------


def score_report(markdown: str, truth: dict[str, Any]) -> Score:
    """Every verdict on one report."""
    score = Score()
    sections = _sections(markdown)
    facts = facts_of(truth)
    found: list[set[int]] = [set() for _ in sections]
    for s, (_, body) in enumerate(sections):
        quoted = _quotes(body)
        quotes = [q for q, _ in quoted] + [ref for _, ref in quoted if ref]
        for sentence in _sentences(body):
            found[s].update(i for i, f in enumerate(facts) if f.found_in(sentence, []))
        found[s].update(i for i, f in enumerate(facts) if (f.templates or f.said) and f.found_in("", quotes))
    recovered = set().union(*found) if found else set()
    score.facts = [(f.claim, i in recovered) for i, f in enumerate(facts)]
    ref = truth["reference"]
    _check_quotes(markdown, ref["posts"], truth, score)
    prose = _prose(markdown)
    _check_names(prose, truth, score)
    _check_numbers(prose, ref, score)
    score.questions = [(q["question"], _answered(q, sections, facts, found)) for q in truth["questions"]]
    return score


def _sections(markdown: str) -> list[tuple[str, str]]:
    parts = re.split(r"^## (.+)$", markdown, flags=re.M)
    return [("", parts[0])] + [(parts[i], parts[i + 1]) for i in range(1, len(parts) - 1, 2)]


def _sentences(text: str) -> list[str]:
    return [s for s in SENTENCE_END.split(_prose(text)) if s.strip()]


def _prose(markdown: str) -> str:
    """The report's own words: blockquotes and quoted text removed (their numbers are the agents'), Chinese
    figures read as their English shapes (`_canonical`)."""
    text = "\n".join(line for line in markdown.splitlines() if not _is_quote(line))
    return _canonical(QUOTED.sub("\u201c\u201d", text))


HAN = "\u4e00-\u9fff"
STANCES_ZH = {"支持": "supportive", "反对": "opposing", "中立": "neutral", "旁观": "observer"}
PUNCTUATION_ZH = str.maketrans({"（": " (", "）": ") ", "：": ": ", "，": ", ", "、": ", ", "；": "; ", "。": ". ",
                                "！": "! ", "？": "? "})
Replacement = str | Callable[[re.Match[str]], str]
CANONICAL: list[tuple[str, Replacement]] = [  # a Chinese report's figures as the English rules read them, in order
    (rf"(?<=[{HAN}])(?=[A-Za-z0-9])|(?<=[A-Za-z0-9])(?=[{HAN}])", " "),
    (r"第\s*(\d+)\s*-\s*(\d+)\s*轮", r" rounds \1-\2 "), (r"第\s*(\d+)\s*轮", r" round \1 "),
    (rf"(Twitter|Reddit)\s*平均每轮\s*{NUMBER}\s*次(?:行动)?", r" \1 averaged \2 "),
    (rf"(Twitter|Reddit)\s*上\s*{NUMBER}\s*次(行动)?", lambda m: f" {m[2]} {'actions ' if m[3] else ''}on {m[1]} "),
    (rf"{NUMBER}\s*次行动", r" \1 actions "), (rf"{NUMBER}\s*条帖子", r" \1 posts "), (rf"{NUMBER}\s*次回应", r" \1 reactions "),
    (rf"是\s*(rounds? [\d-]+)\s*均值\s*\(\s*{NUMBER}\s*\)\s*的\s*{NUMBER}\s*倍", r" \3x the mean of \1 (\2) "),
    (r"(支持|反对|中立|旁观)方\s*(\d+)\s*人", lambda m: f" {m.group(2)} {STANCES_ZH[m.group(1)]} agents "),
    (r"(支持|反对|中立|旁观)方", lambda m: f" {STANCES_ZH[m.group(1)]} camp "),
    (r"之前", " before "), (r"之后", " after "), (r"共记录", " recorded "), (r"预定事件", " scheduled event "),
]


def _canonical(text: str) -> str:
    """Chinese prose with its figures in the shapes the English rules check ("第5轮有120次行动" is "round 5 有
    120 actions", "支持方18人" is "18 supportive agents"), so a report in Chinese is checked as one in English.
    English text has none of these shapes and is left as it is."""
    if not re.search(f"[{HAN}]", text):
        return text
    text = text.translate(PUNCTUATION_ZH)
    for pattern, replacement in CANONICAL:
        text = re.sub(pattern, replacement, text)
    return re.sub(r" ([:,.;!?)])", r"\1", re.sub(r" {2,}", " ", text)).replace("( ", "(")


def _is_quote(line: str) -> bool:
    """A blockquote holding a quotation or a post id (not the summary the export sets in one)."""
    return line.lstrip().startswith(">") and bool(QUOTED.search(line) or REF.search(line))


def _quotes(markdown: str) -> list[tuple[str, str]]:
    """(quoted text, cited id or '') for every quotation in a blockquote."""
    out = []
    for line in (ln.lstrip()[1:].strip() for ln in markdown.splitlines() if _is_quote(ln)):
        found = [(m.group(1) or m.group(2), line[m.end():]) for m in QUOTED.finditer(line)]
        if not found:
            found = [(REF.sub("", line).strip(" ()"), line)]
        for text, after in found:
            cited = REF.match(after.strip(" (")) if after.strip().startswith("(") else None
            out.append((text.strip(), cited.group(1) if cited else ""))
    return out


def _check_quotes(markdown: str, posts: dict[str, str], truth: dict[str, Any], score: Score) -> None:
    texts = set(posts.values()) | {truth["trigger"]["description"]}
    for text, ref in _quotes(markdown):
        if text.startswith("["):  # a persona answer's own framing, not a quotation
            continue
        grounded = posts.get(ref) == text if ref else any(text in t for t in texts)
        if grounded:
            score.quotes_grounded += 1
        else:
            score.quotes_ungrounded.append(f"{text[:60]} ({ref or 'no id'})")


def _check_names(prose: str, truth: dict[str, Any], score: Score) -> None:
    agents, posts = truth["reference"]["agents"], truth["reference"]["posts"]
    for m in AGENT_REF.finditer(prose):
        agent = agents.get(m.group(1))
        if agent is None:
            score.hallucinated.append(f"agent:{m.group(1)} does not exist")
            continue
        before = prose[max(0, m.start() - 60):m.start()].rstrip(" (")
        named = _name_at_end(before)
        if named and named != agent["name"] and not before.endswith(agent["name"]):
            score.hallucinated.append(f"{named} is not agent:{m.group(1)} ({agent['name']})")
    for ref in sorted(set(REF.findall(prose)) - set(posts)):
        score.hallucinated.append(f"{ref} does not exist")
    names = {a["name"] for a in agents.values()}
    for name in sorted(set(_pool_names(prose)) - names):
        score.hallucinated.append(f"{name} is no agent of this simulation")


def _name_at_end(text: str) -> str:
    """A person's name ending `text`, if it ends with one (two capitalised words, or 2-3 Han characters)."""
    m = re.search(r"([A-Z][a-z]+ [A-Z][a-z]+|[\u4e00-\u9fff]{2,3})$", text)
    return m.group(1) if m else ""


def _pool_names(prose: str) -> list[str]:
    """Names built from the simulator's name pools (First Last, or a Han surname and given name)."""
    found = []
    for sc in SCENARIOS:
        firsts, lasts, sep = sc.names
        if sep:
            rx = rf"\b(?:{'|'.join(firsts)}) (?:{'|'.join(lasts)})\b"
        else:
            rx = rf"(?<![\u4e00-\u9fff])(?:{'|'.join(firsts)})(?:{'|'.join(lasts)})(?![\u4e00-\u9fff])"
        found += re.findall(rx, prose)
    return found


def _check_numbers(prose: str, ref: dict[str, Any], score: Score) -> None:
    """Check every figure whose wording ties it to the read models."""
    rounds = {r[0]: {"twitter": r[1], "reddit": r[2], "total": r[1] + r[2]} for r in ref["rounds"]}
    for sentence in _sentences(prose):
        _check_camps(sentence, ref["agents"], score)
        sentence = _check_agent_figures(sentence, ref["agents"], score)
        _check_round_figures(sentence, rounds, score)
        _check_totals(sentence, rounds, score)


def _verdict(score: Score, claim: str, said: float, true: float) -> None:
    score.numbers_checked += 1
    if not _close(said, true):
        score.wrong_numbers.append(f"{claim}: said {said:g}, is {true:g}")


def _check_agent_figures(sentence: str, agents: dict[str, Any], score: Score) -> str:
    """'agent:N ... 19 actions, 9 posts, 26 reactions'; returns the sentence with those parts removed."""
    pieces = AGENT_REF.split(sentence)
    rest = pieces[0]
    for agent_id, segment in zip(pieces[1::2], pieces[2::2]):
        agent = agents.get(agent_id)
        if agent:
            for said, what in re.findall(rf"{NUMBER} (actions|posts|reactions)\b", segment):
                _verdict(score, f"agent:{agent_id} {what}", float(said.replace(",", "")), agent[what])
        rest += " " + re.sub(rf"{NUMBER} (actions|posts|reactions)\b", "", segment)
    return rest


def _check_round_figures(sentence: str, rounds: dict[int, dict[str, int]], score: Score) -> None:
    """'round R with N actions', 'N on Twitter' after a round, 'Rx the mean of rounds a-b (m)', means (over the
    rounds named in brackets, if any), and 'in rounds a-b: N actions on Twitter' (a span's sums)."""
    _check_spans(sentence, rounds, score)
    current, phase = None, ""
    for clause in re.split(r"[;；]", sentence):
        phase = "before" if re.search(r"\bbefore\b", clause, re.I) else "after" if re.search(
            r"\bafter\b", clause, re.I) else phase
        for m in re.finditer(r"\bround (\d+)\b((?:(?!\bround \d).)*)", clause, re.I | re.S):
            current = int(m.group(1))
            row, tail = rounds.get(current), m.group(2)
            if row is None or re.search(r"averag|mean|per round", tail, re.I):
                continue
            total = re.search(rf"^\D{{0,40}}?\b{NUMBER} actions\b(?! (?:on|per)\b)", tail)
            if total:
                _verdict(score, f"round {current} actions", float(total.group(1).replace(",", "")), row["total"])
            for said, platform in re.findall(rf"{NUMBER} (?:actions )?on (Twitter|Reddit)\b", tail, re.I):
                _verdict(score, f"round {current} on {platform}", float(said.replace(",", "")), row[platform.lower()])
            baseline = re.search(rf"{NUMBER}x the mean of rounds (\d+)\s*[-\u2013]\s*(\d+)(?: \({NUMBER}\))?", tail)
            if baseline:
                _check_baseline(current, baseline.groups(), rounds, score)
        for platform, said in re.findall(rf"(Twitter|Reddit) averaged {NUMBER}", clause):
            if current is not None and phase:
                named = re.search(r"\(rounds (\d+)\s*[-\u2013]\s*(\d+)\)", clause)
                first, last = (int(named.group(1)), int(named.group(2))) if named else (
                    (current + 1, max(rounds)) if phase == "after" else (1, current - 1))
                rows = [v[platform.lower()] for r, v in rounds.items() if first <= r <= last]
                if rows:
                    _verdict(score, f"{platform} mean {phase} round {current}", float(said), sum(rows) / len(rows))


def _check_spans(sentence: str, rounds: dict[int, dict[str, int]], score: Score) -> None:
    """'in rounds a-b: N actions on Twitter against M on Reddit': the sums over those rounds."""
    for first, last, tail in re.findall(r"\brounds (\d+)\s*[-\u2013]\s*(\d+):((?:(?!\bround).)*)", sentence):
        span = [rounds[r] for r in range(int(first), int(last) + 1) if r in rounds]
        for said, platform in re.findall(rf"{NUMBER} (?:actions )?on (Twitter|Reddit)\b", tail):
            _verdict(score, f"rounds {first}-{last} on {platform}", float(said.replace(",", "")),
                     sum(r[platform.lower()] for r in span))


def _check_baseline(round_no: int, groups: tuple[str | None, ...], rounds: dict[int, dict[str, int]],
                    score: Score) -> None:
    ratio, first, last, mean_said = groups
    window = [rounds[r]["total"] for r in range(int(first or 0), int(last or 0) + 1) if r in rounds]
    if not window or round_no not in rounds:
        return
    mean = sum(window) / len(window)
    _verdict(score, f"round {round_no} ratio to rounds {first}-{last}", float(ratio or 0), rounds[round_no]["total"] / mean)
    if mean_said:
        _verdict(score, f"mean of rounds {first}-{last}", float(mean_said), mean)


def _check_camps(sentence: str, agents: dict[str, Any], score: Score) -> None:
    """'18 supportive agents', '18 supportive, 16 opposing and 4 neutral'."""
    sizes = {s: sum(a["stance"] == s for a in agents.values()) for s in STANCES}
    for m in re.finditer(rf"(?<!agent:)\b{NUMBER} ({'|'.join(STANCES)})s?(?= agents\b|,| and\b|\)|\.|$)", sentence):
        said, stance = m.groups()
        listed = re.match(r" agents \(((?:[^()]|\([^()]*\))*)\)", sentence[m.end():])
        if listed and len(AGENT_REF.findall(listed.group(1))) == int(said):
            continue  # '3 supportive agents (A (agent:1), B (agent:2) and C (agent:3))': a group, not a camp
        _verdict(score, f"{stance} camp size", float(said), sizes[stance])


def _check_totals(sentence: str, rounds: dict[int, dict[str, int]], score: Score) -> None:
    """Whole-simulation figures: 'recorded N actions', 'N on Twitter and M on Reddit' (no round named)."""
    if re.search(r"\brounds? \d|averag|mean|per round|after|before", sentence, re.I):
        return
    total = re.search(rf"(?:recorded|in total|overall)\D{{0,20}}?{NUMBER} (?:simulated )?actions", sentence)
    if total:
        _verdict(score, "total actions", float(total.group(1).replace(",", "")), sum(r["total"] for r in rounds.values()))
    if "actions" in sentence:
        for said, platform in re.findall(rf"{NUMBER} (?:actions )?on (Twitter|Reddit)\b", sentence):
            _verdict(score, f"{platform} total", float(said.replace(",", "")),
                     sum(r[platform.lower()] for r in rounds.values()))


def _answered(question: dict[str, Any], sections: list[tuple[str, str]], facts: list[Fact],
              found: list[set[int]]) -> bool:
    """One section restates the question and recovers a fact of every kind that answers it."""
    kinds = [k for k in question["facts"] if any(f.kind == k for f in facts)]
    for s, (_, body) in enumerate(sections):
        if all(w.lower() in body.lower() for w in question["keywords"]) and all(
                any(facts[i].kind == k for i in found[s]) for k in kinds):
            return True
    return False


# --- printing ------------------------------------------------------------------------------------


def table(scores: list[tuple[int, Score]]) -> str:
    """One row per seed and a total row, then what was missed or wrong."""
    head = "| seed | facts recovered | wrong numbers | hallucinated names | quotes grounded | questions answered |"
    rows = [head, "|---|---|---|---|---|---|"]
    for seed, s in scores:
        rows.append(f"| {seed} | {s.recovered}/{len(s.facts)} | {len(s.wrong_numbers)} of {s.numbers_checked} | "
                    f"{len(s.hallucinated)} | {s.quotes_grounded}/{s.quotes_grounded + len(s.quotes_ungrounded)} | "
                    f"{sum(ok for _, ok in s.questions)}/{len(s.questions)} |")
    facts = sum(len(s.facts) for _, s in scores)
    got = sum(s.recovered for _, s in scores)
    quotes = sum(s.quotes_grounded + len(s.quotes_ungrounded) for _, s in scores)
    asked = sum(len(s.questions) for _, s in scores)
    rows.append(f"| **all** | **{got}/{facts} ({100 * got / max(facts, 1):.1f}%)** | "
                f"**{sum(len(s.wrong_numbers) for _, s in scores)} of {sum(s.numbers_checked for _, s in scores)}** | "
                f"**{sum(len(s.hallucinated) for _, s in scores)}** | "
                f"**{sum(s.quotes_grounded for _, s in scores)}/{quotes}** | "
                f"**{sum(ok for _, s in scores for _, ok in s.questions)}/{asked}** |")
    notes = [f"seed {seed}: {kind} {item}" for seed, s in scores for kind, items in (
        ("missed", [c for c, ok in s.facts if not ok]), ("wrong", s.wrong_numbers), ("hallucinated", s.hallucinated),
        ("ungrounded", s.quotes_ungrounded), ("unanswered", [q for q, ok in s.questions if not ok])) for item in items]
    return "\n".join(rows + ([""] + notes if notes else []))
