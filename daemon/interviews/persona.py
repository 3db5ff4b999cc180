"""An agent's answer in persona, from its profile and its own statements, without a language model.

Pure. The answer is about the question asked: it quotes the agent's statements that share words
with the question, and when none does it says so before quoting what the agent wrote last, so
two questions get two answers. It is written in the question's language.
"""

from __future__ import annotations

from typing import Any

from simreportd.agent.language import language_of

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
