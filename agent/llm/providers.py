"""LLM providers: what the runner calls to perform a `CallLLM` effect (docs/architecture.md#providers).

`openai` speaks to any OpenAI-compatible server with the client's own retries off: the
runner retries, so every attempt is an event. Errors are translated here, once, into
`LLMError` with the fields the core needs to decide (retryable? Retry-After? tools refused?).
"""

from __future__ import annotations

import email.utils
import functools
import json
import logging
import re
import ssl
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from simreportd.errors import LLMError
from simreportd.events.models import LLMRequested, TokenUsage, ToolCallRequest

from ..report.interpret import coerce_arguments
from ..tools.toolspec import openai_tools

if TYPE_CHECKING:
    import openai

log = logging.getLogger("simreportd.llm")


@dataclass(frozen=True)
class Completion:
    content: str
    tool_calls: list[ToolCallRequest] = field(default_factory=list)
    usage: TokenUsage = TokenUsage()
    finish_reason: str | None = None


class LLMProvider(Protocol):
    name: str

    async def complete(self, request: LLMRequested, messages: list[dict[str, Any]], attempt: int) -> Completion:
        """Answer one recorded request; raise LLMError on failure."""
        ...


def estimate_tokens(text: str) -> int:
    """About four characters per token: used when a server sends no usage."""
    return max(1, len(text) // 4) if text else 0


class Pacer(Protocol):
    """What a call waits for before it starts (the daemon's model-call budget)."""

    async def acquire(self) -> None: ...


class RateLimiter:
    """At most `per_minute` request starts per minute (0 = unlimited), spaced evenly."""

    def __init__(self, per_minute: int) -> None:
        self.interval = 60.0 / per_minute if per_minute > 0 else 0.0
        self._next = 0.0
        self._lock = anyio.Lock()

    async def acquire(self) -> None:
        if not self.interval:
            return
        async with self._lock:
            now = time.monotonic()
            wait, self._next = max(0.0, self._next - now), max(now, self._next) + self.interval
        if wait:
            await anyio.sleep(wait)


class ServerSlots:
    """How many requests the server is given at once: `[llm] max_concurrency` at most, fewer while it
    cannot keep up.

    A llama.cpp server with one slot queues the requests it is sent at once; the queued ones time out
    although the server is fine, and their retries queue again. A timeout while other requests were in
    flight halves the limit (not below 1); `RAISE_AFTER` answers in a row give one slot back.
    """

    RAISE_AFTER = 20

    def __init__(self, limit: int) -> None:
        self.most = limit
        self.limiter = anyio.CapacityLimiter(limit)
        self.answered = 0

    @property
    def limit(self) -> int:
        return int(self.limiter.total_tokens)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one request's slot; a timeout or an answer inside it adjusts the limit."""
        token = object()  # one borrower per request: a task may send several
        await self.limiter.acquire_on_behalf_of(token)
        crowded = self.limiter.borrowed_tokens > 1
        try:
            yield
        except LLMError as exc:
            if exc.kind == "timeout" and (crowded or self.limiter.borrowed_tokens > 1):
                self._shrink()
            raise
        else:
            self._answered()
        finally:
            self.limiter.release_on_behalf_of(token)

    def _shrink(self) -> None:
        self.answered = 0
        if self.limit > 1:
            self.limiter.total_tokens = max(1, self.limit // 2)
            log.warning("the LLM server timed out with other requests in flight: sending it %d at a time "
                        "([llm] max_concurrency = %d; lower it if the server has fewer slots)", self.limit, self.most)

    def _answered(self) -> None:
        self.answered += 1
        if self.answered >= self.RAISE_AFTER and self.limit < self.most:
            self.answered = 0
            self.limiter.total_tokens = self.limit + 1


@functools.cache
def trusted_authorities() -> ssl.SSLContext:
    """The TLS context the openai client would build (its HTTP library's default: the system's authorities,
    `SSL_CERT_FILE`), built once a process: reading the authorities is most of building a client."""
    import httpx2  # the openai client's HTTP library, imported with it

    return httpx2.create_ssl_context()


class OpenAIProvider:
    """Any OpenAI-compatible chat completions server (OpenAI, Ollama, vLLM, llama.cpp, OpenRouter)."""

    name = "openai"

    def __init__(self, base_url: str, api_key: str, timeout_s: float, max_concurrency: int,
                 requests_per_minute: int = 0, stream: bool = False, max_reply_bytes: int = 1 << 20,
                 budget: Pacer | None = None) -> None:
        import openai  # here, not at the top: it takes a second to import, and only the API writer needs it

        self.client = openai.AsyncOpenAI(base_url=base_url or None, api_key=api_key or "not-needed",
                                         timeout=timeout_s, max_retries=0,
                                         http_client=openai.DefaultAsyncHttpxClient(verify=trusted_authorities()))
        self.timeout_s, self.base_url = timeout_s, str(self.client.base_url).rstrip("/")
        self.stream = stream  # stream replies: `timeout_s` is then the silence allowed between two chunks
        self.max_reply_bytes = max_reply_bytes  # a longer reply is refused, never recorded: the log keeps it all
        self.slots = ServerSlots(max_concurrency)  # shared by every report and chat of this daemon
        self.rate = RateLimiter(requests_per_minute)
        self.budget = budget  # shared by every provider of the daemon

    async def close(self) -> None:
        await self.client.close()

    async def context_window(self, model: str) -> int | None:
        """The context size the server reports for `model` in its model list, if it says (vLLM, LM Studio do)."""
        import openai

        try:
            with anyio.fail_after(min(self.timeout_s, 10.0)):
                page = await self.client.models.list()
        except (TimeoutError, openai.APIError):
            return None
        for entry in page.data:
            extra = entry.model_extra or {}
            sizes = [extra.get(k) for k in ("max_model_len", "context_length", "context_window", "n_ctx")]
            size = next((v for v in sizes if isinstance(v, int) and v > 0), None)
            if size and (entry.id == model or len(page.data) == 1):
                return size
        return None

    async def complete(self, request: LLMRequested, messages: list[dict[str, Any]], attempt: int) -> Completion:
        import openai

        kwargs: dict[str, Any] = {"model": request.model, "messages": messages, **request.params}
        if request.tools and request.protocol == "native":
            kwargs["tools"] = openai_tools(request.tools)
        timeout = float(kwargs.setdefault("timeout", self.timeout_s))  # `resume --timeout` records its own
        late = f"no complete answer within {timeout:g}s ([llm] timeout_s)"
        if self.stream:
            late = f"the server sent nothing for {timeout:g}s ([llm] timeout_s, between streamed chunks)"
        async with self.slots.slot():
            await self.rate.acquire()
            if self.budget is not None:
                await self.budget.acquire()
            try:
                if self.stream:
                    return _bounded(await _streamed(self.client, kwargs, timeout, request.call_id, messages,
                                                    self.max_reply_bytes), self.max_reply_bytes)
                with anyio.fail_after(timeout):  # a deadline for the whole call, not per socket read
                    response = await self.client.chat.completions.create(**kwargs)
            except TimeoutError as exc:
                raise LLMError("timeout", late) from exc
            except openai.APIStatusError as exc:
                raise _status_error(exc) from exc
            except openai.APITimeoutError as exc:
                raise LLMError("timeout", late) from exc
            except openai.APIConnectionError as exc:
                raise LLMError("connection", f"cannot reach {self.base_url} (model {request.model!r}): "
                               f"{innermost_reason(exc)}") from exc
            except (openai.APIError, ValueError) as exc:
                raise LLMError("invalid_response", str(exc)[:300]) from exc
        return _bounded(_completion(response, request.call_id, messages), self.max_reply_bytes)


def _bounded(completion: Completion, limit: int) -> Completion:
    """The completion, or LLMError `reply_too_large` if its text and tool calls pass `limit` bytes: a reply
    is recorded whole in the log and every read model, so one runaway reply must not become gigabytes."""
    size = len(completion.content.encode()) + sum(len(json.dumps(c.arguments)) for c in completion.tool_calls)
    if size > limit:
        raise LLMError("reply_too_large", f"the reply has {size:,} bytes, more than [llm] max_reply_bytes = "
                       f"{limit:,}; lower [llm] max_tokens or raise the limit", retryable=False)
    return completion


def innermost_reason(exc: BaseException) -> str:
    """The first error of a chain, which says what failed ("[Errno 111] Connect call failed"): the OpenAI
    client's own connection error says only "Connection error.", its HTTP layer's "All connection attempts
    failed"."""
    while (inner := exc.__cause__ or exc.__context__) is not None:
        exc = inner
    return str(exc) or type(exc).__name__


async def _streamed(client: Any, kwargs: dict[str, Any], silence: float, call_id: str,
                    messages: list[dict[str, Any]], limit: int) -> Completion:
    """One streamed completion, failed only when the server is silent `silence` seconds between chunks.

    A CPU server writing 5 tokens a second is slow, not broken: a deadline on the whole call failed it
    while it was still writing. The stream is closed on every way out, so a request given up is
    cancelled on the server (llama.cpp stops computing it) before its retry is queued behind it.
    """
    with anyio.fail_after(silence):
        stream = await client.chat.completions.create(**{**kwargs, "stream": True})
    parts = _Parts()
    try:
        iterator = stream.__aiter__()
        while True:
            with anyio.fail_after(silence):
                try:
                    chunk = await iterator.__anext__()
                except StopAsyncIteration:
                    break
            parts.add(chunk)
            if parts.size > limit:  # stop reading at once: closing the stream cancels the request
                raise LLMError("reply_too_large", f"the streamed reply passed [llm] max_reply_bytes = {limit:,} "
                               "bytes; lower [llm] max_tokens or raise the limit", retryable=False)
    finally:
        with anyio.CancelScope(shield=True):
            await stream.close()
    return parts.completion(call_id, messages)


@dataclass
class _Parts:
    """The pieces of a streamed reply: text, tool calls by index, finish reason, usage when sent."""

    content: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    finish: str | None = None
    usage: Any = None
    size: int = 0  # characters received so far

    def add(self, chunk: Any) -> None:
        self.usage = getattr(chunk, "usage", None) or self.usage
        for choice in getattr(chunk, "choices", None) or []:
            self.finish = getattr(choice, "finish_reason", None) or self.finish
            delta = getattr(choice, "delta", None)
            if delta is None:
                continue
            if isinstance(text := getattr(delta, "content", None), str):
                self.content.append(text)
                self.size += len(text)
            for tc in getattr(delta, "tool_calls", None) or []:
                call = self.calls.setdefault(getattr(tc, "index", 0) or 0, {"id": None, "name": "", "arguments": ""})
                call["id"] = getattr(tc, "id", None) or call["id"]
                function = getattr(tc, "function", None)
                call["name"] += getattr(function, "name", None) or ""
                call["arguments"] += getattr(function, "arguments", None) or ""
                self.size += len(getattr(function, "arguments", None) or "")

    def completion(self, call_id: str, messages: list[dict[str, Any]]) -> Completion:
        """The reply as one non-streamed response would have carried it."""
        from types import SimpleNamespace as NS

        calls = [NS(id=c["id"], function=NS(name=c["name"], arguments=c["arguments"]))
                 for _, c in sorted(self.calls.items())] or None
        message = NS(content="".join(self.content), tool_calls=calls)
        return _completion(NS(choices=[NS(message=message, finish_reason=self.finish)], usage=self.usage),
                           call_id, messages)


OVERFLOW = re.compile(r"context (length|window|size)|too many tokens|prompt is too long|n_ctx", re.I)


def _status_error(exc: openai.APIStatusError) -> LLMError:
    status = exc.status_code
    text = str(exc)[:500]
    if status in (400, 413, 422) and OVERFLOW.search(text):
        return LLMError("context_overflow", text, status_code=status, retryable=False)
    refused = status in (400, 404, 422, 501) and any(w in text.lower() for w in ("tool", "function"))
    return LLMError("rate_limited" if status == 429 else f"http_{status}", text, status_code=status,
                    retry_after_s=retry_after(exc.response.headers),
                    retryable=status in (408, 409, 429) or status >= 500, tools_refused=refused)


def retry_after(headers: Any) -> float | None:
    """Seconds to wait from `retry-after-ms` or `retry-after` (seconds or an HTTP date)."""
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def _completion(response: Any, call_id: str, messages: list[dict[str, Any]]) -> Completion:
    """Tolerate what real servers send (no ids, no usage, string arguments); refuse what no model means."""
    choices = getattr(response, "choices", None)
    if not choices:
        raise LLMError("empty_choices", "the server answered with no choices")
    message = getattr(choices[0], "message", None)
    content = getattr(message, "content", None)
    if content is not None and not isinstance(content, str):
        raise LLMError("invalid_response", f"the reply's content is a {type(content).__name__}, not text")
    content = content or ""
    usage = getattr(response, "usage", None)
    if usage is not None and isinstance(usage.prompt_tokens, int):
        tokens = TokenUsage(prompt_tokens=usage.prompt_tokens,
                            completion_tokens=usage.completion_tokens if isinstance(usage.completion_tokens, int) else 0)
    else:
        prompt = sum(estimate_tokens(str(m.get("content") or "")) for m in messages)
        tokens = TokenUsage(prompt_tokens=prompt, completion_tokens=estimate_tokens(content), estimated=True)
    finish = getattr(choices[0], "finish_reason", None)
    return Completion(content, _tool_calls(getattr(message, "tool_calls", None), call_id), tokens,
                      finish if isinstance(finish, str) else None)


def _tool_calls(raw: Any, call_id: str) -> list[ToolCallRequest]:
    """Native tool calls; a malformed list is an invalid response (retried), not a crash later."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise LLMError("invalid_response", f"the reply's tool_calls is a {type(raw).__name__}, not a list")
    calls = []
    for n, tc in enumerate(raw, 1):
        function = getattr(tc, "function", None)
        name = getattr(function, "name", None)
        if not isinstance(name, str) or not name:
            raise LLMError("invalid_response", f"tool call {n} of the reply has no function name")
        tc_id = getattr(tc, "id", None)
        calls.append(ToolCallRequest(id=tc_id if isinstance(tc_id, str) and tc_id else f"{call_id}-t{n}", name=name,
                                     arguments=coerce_arguments(getattr(function, "arguments", None))))
    return calls
