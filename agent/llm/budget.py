"""Context budgeting: estimate what a request costs in tokens, and shorten older turns so it fits.

Pure functions of the messages, so the fold can apply a recorded `ContextCompacted` again
and rebuild exactly the conversation that was sent. Older tool results shrink to the ids
and figures they hold (what a section cites); older replies shrink to their first lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

DEFAULT_CONTEXT_TOKENS = 8192
DEFAULT_CHARS_PER_TOKEN = 3.0  # conservative for JSON-heavy prompts; calibrated from the server's usage
PER_MESSAGE_TOKENS = 8
KEEP_LAST = 2  # the newest messages are never shortened by the first passes
IDS = re.compile(r"\b(?:(?:post|comment):(?:twitter|reddit):\w+|agent:\d+)\b")
FIGURES = re.compile(r"(?<![\w.])\d+(?:\.\d+)?%?")
TOOL_NAME = re.compile(r'<tool_result name="([\w-]+)"')
CONTEXT_LIMIT = re.compile(r"(?:context (?:length|window|size)|n_ctx)\D{0,40}?(\d{3,7})", re.I)


def estimate(messages: list[dict[str, Any]], chars_per_token: float) -> int:
    """Tokens a request of these messages will take, roughly (and on the safe side)."""
    chars = sum(len(str(m.get("content") or "")) + len(str(m.get("tool_calls") or "")) for m in messages)
    return int(chars / chars_per_token) + PER_MESSAGE_TOKENS * len(messages)


def server_limit(message: str) -> int | None:
    """The context size a server names when it refuses a request as too long, if it names one."""
    match = CONTEXT_LIMIT.search(message)
    return int(match.group(1)) if match else None


def reply_tokens(context_tokens: int, max_tokens: int) -> int:
    """What a reply may use: `max_tokens`, but never more than a quarter of the context."""
    return max(64, min(max_tokens, context_tokens // 4))


def prompt_budget(context_tokens: int, max_tokens: int) -> int:
    """Tokens the messages may take so that the reply still fits, with a 5% margin."""
    return context_tokens - reply_tokens(context_tokens, max_tokens) - context_tokens // 20


def compact(messages: list[dict[str, Any]], target: int, chars_per_token: float) -> list[dict[str, Any]]:
    """The messages with older turns shortened, pass by pass, until they fit `target` tokens (or cannot)."""
    out = [dict(m) for m in messages]
    for shorten in (_digest_results, _trim_replies, _trim_all(1500), _trim_all(400), _trim_all(1200, newest=True),
                    _trim_all(150, newest=True)):
        if estimate(out, chars_per_token) <= target:
            break
        out = shorten(out)
    return out


def _older(messages: list[dict[str, Any]]) -> range:
    """Indexes that may be shortened: not the system prompt, not the newest turns."""
    return range(1, max(1, len(messages) - KEEP_LAST))


def _digest_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for i in _older(messages):
        content = str(messages[i].get("content") or "")
        if "<tool_result" in content and len(content) > 400:
            messages[i]["content"] = digest(content)
    return messages


def digest(result: str) -> str:
    """A tool result reduced to its tool name, the ids it returned and the figures it holds."""
    name = TOOL_NAME.search(result)
    ids = list(dict.fromkeys(IDS.findall(result)))[:20]
    figures = list(dict.fromkeys(FIGURES.findall(result)))[:30]
    return (f"[earlier result of {name.group(1) if name else 'a tool'}, shortened to fit the context; "
            f"ids: {', '.join(ids) or 'none'}; figures: {', '.join(figures) or 'none'}]")


def _trim_replies(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for i in _older(messages):
        if messages[i].get("role") == "assistant":
            messages[i]["content"] = cut(str(messages[i].get("content") or ""), 200)
    return messages


def _trim_all(limit: int, newest: bool = False) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    """A pass that cuts every message but the system prompt (and, unless `newest`, the last) to `limit`."""
    def trim(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for i in range(1, len(messages) if newest else len(messages) - 1):
            messages[i]["content"] = cut(str(messages[i].get("content") or ""), limit)
        return messages
    return trim


def cut(text: str, limit: int) -> str:
    """The head and the tail of a long text (a request's instruction often comes last)."""
    if len(text) <= limit:
        return text
    head, tail = text[:limit * 2 // 3].rstrip(), text[len(text) - limit // 3:].lstrip()
    return f"{head} [...shortened to fit the context...] {tail}"
