"""The LLM request of an agent step: send, retry, shrink to fit the context, give up; and its fingerprint."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from simreportd.agent.llm import budget
from simreportd.agent.report import prompts
from simreportd.events.models import (
    CallPurpose,
    ContextCompacted,
    LLMFailed,
    LLMRequested,
    ReportFailed,
    ToolProtocolChosen,
)

from ..tools.toolspec import openai_tools
from .effects import CallLLM, Effect, emit
from .state import Conversation, ReportState, message_bytes

MAX_BACKOFF_S = 120.0
DOWN_POLL_S = 5.0  # how often a server that is down is asked again while it is waited for
DOWN_STATUSES = (502, 503, 504)  # a proxy with no server behind it, or a server still loading its model


def step(s: ReportState, index: int, stage: str) -> Effect | None:
    """While lane `index` has a request outstanding: send it, retry it, shrink it, switch protocol, or give up
    resumably."""
    c = s.lane(index)
    if c.awaiting is None:
        return None
    failure = c.last_failure
    if failure is None:
        return CallLLM(c.awaiting, c.messages, c.attempts + 1, 0.0)
    if failure.tools_refused and s.rules.tool_protocol == "auto" and s.protocol == "native":
        return emit(ToolProtocolChosen(report_id=s.report_id, protocol="text",
                                       reason=f"the server refused tools: {failure.message[:200]}"))
    if failure.kind == "context_overflow" and c.overflows < 3:
        return emit(_shrink(s, c, failure))
    if not failure.retryable or c.failures > s.rules.max_retries:
        if (wait := down_wait(s, c.failures, failure)) is not None:
            return CallLLM(c.awaiting, c.messages, c.attempts + 1, wait)
        return emit(ReportFailed(report_id=s.report_id, stage=stage, resumable=True, error=_failure_text(s, failure)))
    delay = failure.retry_after_s if failure.retry_after_s is not None else _backoff(s, c.failures)
    return CallLLM(c.awaiting, c.messages, c.attempts + 1, delay)


def _backoff(s: ReportState, failures: int) -> float:
    """The pause before retry number `failures`: doubled each time, at most MAX_BACKOFF_S."""
    return min(s.rules.retry_backoff_s * 2.0 ** (failures - 1), MAX_BACKOFF_S)


def down_wait(s: ReportState, failures: int, failure: LLMFailed) -> float | None:
    """The pause before asking a server that is down once more, its retries spent, or None once `[llm]
    down_wait_s` has passed in such pauses: a server restarting or loading its model comes back within a
    minute, and failing the report then costs a resume (docs/protocol.md#configuration)."""
    if not s.rules.down_wait_s or not (failure.kind == "connection" or failure.status_code in DOWN_STATUSES):
        return None
    waited = sum(_backoff(s, n) for n in range(1, s.rules.max_retries + 1))
    for _ in range(failures - 1 - s.rules.max_retries):  # the polls since the retries were spent
        waited += min(DOWN_POLL_S, s.rules.down_wait_s - waited)
    left = s.rules.down_wait_s - waited
    return min(DOWN_POLL_S, left) if left > 1e-9 else None


def _failure_text(s: ReportState, failure: LLMFailed) -> str:
    """The error of a failed report: what went wrong, how often, and what to change."""
    text = f"{failure.kind}: {failure.message} (after {failure.attempt} attempt{'s' * (failure.attempt != 1)})"
    if s.rules.down_wait_s and (failure.kind == "connection" or failure.status_code in DOWN_STATUSES):
        text += f"; the server was waited for {s.rules.down_wait_s:g} s ([llm] down_wait_s)"
    if failure.kind == "context_overflow":
        text += (f"; the request does not fit the model's context even shortened: raise the server's context "
                 f"size and [llm] context_tokens, or resume with a lower --max-tokens (now {s.max_tokens})")
    return text


def _shrink(s: ReportState, c: Conversation, failure: LLMFailed) -> ContextCompacted:
    """The server said the request is too long: aim lower (at its own limit, if it said one) and ask again."""
    assert c.awaiting is not None
    sent = budget.estimate(c.messages, s.chars_per_token)
    limit = budget.server_limit(failure.message) or context_tokens(s)
    target = min(prompt_target(s, limit) - _tools_tokens(s, c.awaiting.tools), sent * 3 // 4)
    return _compaction(s, c.awaiting.section_index, c.messages, target,
                       f"the server refused the request as too long: {failure.message[:200]}")


def _compaction(s: ReportState, index: int, messages: list[dict[str, Any]], target: int,
                reason: str) -> ContextCompacted:
    after = budget.estimate(budget.compact(messages, target, s.chars_per_token), s.chars_per_token)
    return ContextCompacted(report_id=s.report_id, section_index=index, target_tokens=target,
                            before_tokens=budget.estimate(messages, s.chars_per_token), after_tokens=after,
                            reason=reason)


def context_tokens(s: ReportState) -> int:
    """The model's context size in tokens, as configured (a default when unknown)."""
    return s.rules.context_tokens or budget.DEFAULT_CONTEXT_TOKENS


def prompt_target(s: ReportState, context_tokens: int) -> int:
    """The tokens a prompt may take in a context of `context_tokens`: room left for the reply."""
    return min(budget.prompt_budget(context_tokens, s.max_tokens), s.prompt_cap or context_tokens)


def _tools_tokens(s: ReportState, tools: list[str]) -> int:
    return int(len(prompts.dumps(openai_tools(tools))) / s.chars_per_token) if tools else 0


def request(s: ReportState, purpose: CallPurpose, index: int, added: list[dict[str, Any]], tools: list[str],
            named: str | None = None, fresh: bool = False,
            extra: dict[str, Any] | None = None) -> ContextCompacted | LLMRequested:
    """The next request, or first the compaction that makes it fit the context.

    `named` is a tool the reply must call; `fresh` makes `added` a conversation of its own.
    """
    assert s.request is not None
    c, context = s.lane(index), context_tokens(s)
    before = [] if fresh else c.messages
    size = budget.estimate(before + added, s.chars_per_token) + _tools_tokens(s, tools)
    if before and added[:len(c.pending)] == c.pending and size > prompt_target(s, context):
        movable = c.messages + c.pending  # the fold compacts these; the rest of `added` stays as it is
        target = prompt_target(s, context) - (size - budget.estimate(movable, s.chars_per_token))
        compaction = _compaction(s, index, movable, target, "the conversation outgrew the context budget "
                                 f"([llm] context_tokens = {context})")
        if compaction.after_tokens < compaction.before_tokens:
            return compaction
    params: dict[str, Any] = {"temperature": s.rules.temperature,
                              "max_tokens": min(s.max_tokens, max(64, context - size - context // 20))}
    if tools and s.protocol == "native" and named is not None:
        params["tool_choice"] = {"type": "function", "function": {"name": named}}
    elif tools and s.protocol == "native" and s.rules.tool_protocol == "auto":
        params["tool_choice"] = "auto"  # some servers (llama.cpp's chatml-function-calling) ignore tools without it
    if "timeout_s" in s.overrides:
        params["timeout"] = s.overrides["timeout_s"]
    params.update({k: v for k, v in (extra or {}).items() if v is not None})
    model = s.request.model or s.request.provider
    protocol = s.protocol or "native"
    digest = hashlib.sha256() if fresh else c.digest.copy()  # the messages so far are hashed already
    for message in added:
        digest.update(message_bytes(message))
    return LLMRequested(report_id=s.report_id, call_id=f"llm-{s.llm_calls + 1}", purpose=purpose,
                        section_index=index, model=model, params=params, protocol=protocol,
                        tools=tools, messages_added=added, fresh=fresh,
                        fingerprint=_seal(model, params, protocol, tools, digest.hexdigest()))


def fingerprint(model: str, params: dict[str, Any], protocol: str, tools: list[str],
                messages: list[dict[str, Any]]) -> str:
    """SHA-256 of everything that decides what the model is asked: recomputable from the log.

    The messages are hashed one by one, in order, so the fold can keep the running hash and a
    request costs what it adds, not the whole conversation again.
    """
    digest = hashlib.sha256()
    for message in messages:
        digest.update(message_bytes(message))
    return _seal(model, params, protocol, tools, digest.hexdigest())


def _seal(model: str, params: dict[str, Any], protocol: str, tools: list[str], messages_digest: str) -> str:
    header = json.dumps({"model": model, "params": params, "protocol": protocol, "tools": tools,
                         "messages": messages_digest}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(header.encode()).hexdigest()
