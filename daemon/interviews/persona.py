"""An agent's answer in persona, from its profile and its own statements: without a language model, or a
model's answer held to the same standard.

Pure. The answer is about the question asked: it quotes the agent's statements that share words
with the question, and when none does it says so before quoting what the agent wrote last, so
two questions get two answers. It is written in the question's language. A model's answer stands only
when it quotes one of the agent's statements verbatim with its id; its sentences that take a premise of the
question the statements do not hold, or talk of the simulation, are dropped (`held`).
"""

from __future__ import annotations

import re
from typing import Any

from simreportd.agent.findings.language import language_of

STANCES_ZH = {"supportive": "支持", "opposing": "反对", "neutral": "中立", "observer": "旁观"}
PHRASES = {
    "en": {"lead": "[persona, from my profile and posts] I am {name}, {entity}, {stance}.",
           "entity": "a participant", "no_stance": "without a stated stance",
           "on_it": "On that, I wrote:", "also": "I also wrote:", "quote": "\u201c{content}\u201d ({ref}).",
           "not_on_it": "I did not post about that. The last thing I wrote:", "silent": "I did not post at all."},
    "zh": {"lead": "[人设回答，依据我的档案和帖子] 我是{name}，{entity}，{stance}。",
           "entity": "参与者", "no_stance": "没有表明立场",
           "on_it": "关于这个问题，我写过：", "also": "我还写过：", "quote": "\u201c{content}\u201d（{ref}）。",
           "not_on_it": "我没有就这个问题发过帖。我最近写的是：", "silent": "我没有发过帖。"},
}


def persona_answer(profile: dict[str, Any], relevant: list[dict[str, Any]], others: list[dict[str, Any]],
                   question: str) -> str:
    """The data-only answer: who the agent is, then up to two of its statements on the question (`relevant`,
    best first), else a plain "not about that" and its latest statement (`others`), each quoted with its id."""
    language = language_of(question)
    say = PHRASES[language]
    stance = profile.get("stance") or ""
    shown = STANCES_ZH.get(stance, stance) if language == "zh" else stance
    parts = [say["lead"].format(name=profile["name"], entity=profile.get("entity_type") or say["entity"],
                                stance=shown or say["no_stance"])]
    if relevant:
        parts += [say["on_it"], say["quote"].format(**relevant[0])]
        if len(relevant) > 1:
            parts += [say["also"], say["quote"].format(**relevant[1])]
    elif others:
        parts += [say["not_on_it"], say["quote"].format(**others[0])]
    else:
        parts.append(say["silent"])
    return (" " if language == "en" else "").join(parts)


WORD = re.compile(r"[a-z]{3,}|[\u4e00-\u9fff]{2}", re.I)
SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
OUTSIDE = re.compile(r"\bsimulat|\bthe data\b|模拟|数据", re.I)  # a persona knows its posts, not that it is simulated
COMMON = frozenset("the and you your did what why how was were that this have has with for about are not".split())
MODEL_LEAD = {"en": "[persona, written by the model from my posts]", "zh": "[人设回答，由模型依据我的帖子写成]"}


def held(answer: str, posts: list[dict[str, Any]], question: str) -> str | None:
    """A model's persona answer as it may stand, or None when it quotes none of the agent's statements with its id
    (the data-only answer stands in). Sentences that restate words of the question the agent's statements never
    use (its premise, taken as fact) and sentences about the simulation are dropped."""
    quoted = [p for p in posts if p["ref"] in answer and p["content"][:40] in answer]
    if not quoted:
        return None
    said = " ".join(p["content"] for p in posts).lower()
    premise = {w for w in _pairs(question) if w not in _pairs(said)}
    kept = [s for s in SENTENCE.split(answer.strip())
            if s and (any(p["ref"] in s for p in quoted) or not (OUTSIDE.search(s) or premise & _pairs(s)))]
    language = language_of(question)
    return f"{MODEL_LEAD[language]} " + (" " if language == "en" else "").join(kept)


def _pairs(text: str) -> set[tuple[str, str]]:
    """The text's pairs of neighbouring content words: what a premise is made of ("stadium memo")."""
    words = [w for w in WORD.findall(text.lower()) if w not in COMMON]
    return set(zip(words, words[1:], strict=False))
