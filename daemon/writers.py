"""The writers a report can be written with, looked up by the provider name its events record.

A report keeps its writer for life: the runner asks for the provider its `ReportRequested`
(or latest `WriterChanged`) names, never the one `[llm]` happens to say today, so a report is
never finished by another writer unnoticed. A writer this configuration lacks answers every
call with a non-retryable failure that says what to set: the report fails once, resumably,
with the reason in its log. Switching writers is a user's decision (`resume --provider`).
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

import anyio

from simreportd.agent.llm.providers import Completion, LLMProvider, OpenAIProvider, Pacer, innermost_reason
from simreportd.agent.offline.offline import OfflineProvider
from simreportd.errors import LLMError, UsageError, WriterUnreachable
from simreportd.events.models import LLMRequested

from .config import LLMConfig

OFFLINE_MODEL = "offline-writer"
DEFAULT_OPENAI_URL = "https://api.openai.com/v1"
PROBE_TIMEOUT_S = 10.0


def model_for(llm: LLMConfig, provider: str) -> str:
    """The model a new report (or a switch) gets with `provider`: `[llm] model`, or the offline writer's name."""
    return llm.model if provider == "openai" else OFFLINE_MODEL


def missing_configuration(llm: LLMConfig, provider: str) -> str | None:
    """What this configuration lacks to write with `provider`, in words that say what to set; None if nothing."""
    if provider == "offline":
        return None
    if provider != "openai":
        return f"simreportd has no provider {provider!r} (it has openai and offline)"
    if llm.base_url or os.environ.get(llm.api_key_env):
        return None
    return (f"[llm] base_url is not set (nor SIMREPORTD_LLM_BASE_URL) and ${llm.api_key_env} is empty: "
            "set the URL of an OpenAI-compatible server, or the API key in that variable")


async def unreachable(llm: LLMConfig, provider: str) -> str | None:
    """Why `provider`'s server cannot be reached now (one TCP connection, no request), or None."""
    if provider != "openai":
        return None
    url = llm.base_url or DEFAULT_OPENAI_URL
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with anyio.fail_after(min(llm.timeout_s, PROBE_TIMEOUT_S)):
            stream = await anyio.connect_tcp(parts.hostname or "", port)
        await stream.aclose()
    except (OSError, TimeoutError) as exc:
        return f"cannot connect to {url} ({innermost_reason(exc) if str(exc) else 'timed out'})"
    return None


def choose_writer(llm: LLMConfig, provider: str | None, model: str | None,
                  current: tuple[str, str] | None = None) -> tuple[str, str]:
    """The (provider, model) asked for: the flags, else `current` (a report's own writer), else `[llm]`'s."""
    if provider is None and model is None:
        return current or (llm.resolved_provider(), model_for(llm, llm.resolved_provider()))
    provider = provider or "openai"  # a model name alone means a model served over the OpenAI API
    if provider == "offline":
        return provider, OFFLINE_MODEL
    same = current[1] if current and current[0] == provider else None
    return provider, model or same or model_for(llm, provider)


def describe_writer(provider: str, model: str) -> str:
    """`openai model 'gpt-x'`, or `offline`."""
    return f"{provider} model {model!r}" if provider == "openai" else provider


async def check_writer(llm: LLMConfig, writer: tuple[str, str], task: str, own: bool, fallback: str) -> None:
    """Refuse to start `task` with a writer this configuration lacks or cannot reach now, saying what to do.

    `own`: the writer is the report's own (not one the user asked for): lacking it is then no
    usage error but a writer out of reach (exit 1). `fallback` says how to go on with another writer.
    """
    name = describe_writer(*writer)
    if (missing := missing_configuration(llm, writer[0])) is not None:
        if not own:
            raise UsageError(f"cannot {task} with {name}: {missing}")
        raise WriterUnreachable(f"cannot {task}: it is written with {name}, and {missing}; then run this again, "
                                f"or {fallback}")
    if writer[0] == "openai" and not writer[1] and not llm.base_url:
        raise UsageError(f"cannot {task} with OpenAI's API: no model is named; set [llm] model (or pass --model), "
                         "or --provider offline for the offline writer")
    if (reason := await unreachable(llm, writer[0])) is not None:
        raise WriterUnreachable(f"cannot {task} with {name}: {reason}; start the server or fix [llm] base_url, "
                                f"then run this again" + (f", or {fallback}" if fallback else ""))


class Unavailable:
    """Stands in for a writer this configuration lacks: every call fails, once, with what to set."""

    def __init__(self, name: str, reason: str) -> None:
        self.name, self.reason = name, reason

    async def complete(self, request: LLMRequested, messages: list[dict[str, Any]], attempt: int) -> Completion:
        raise LLMError("writer_unavailable", f"report {request.report_id} is written with {self.name}, but "
                       f"{self.reason}; then `simreportd resume {request.report_id}`, or continue with another "
                       f"writer: `simreportd resume {request.report_id} --provider offline`", retryable=False)


class Writers:
    """One provider per writer name, built from `[llm]` on first use and shared by every report."""

    def __init__(self, llm: LLMConfig, budget: Pacer | None = None) -> None:
        self.llm, self.budget = llm, budget
        self.providers: dict[str, LLMProvider] = {}

    def __call__(self, name: str) -> LLMProvider:
        if name not in self.providers:
            self.providers[name] = self._build(name)
        return self.providers[name]

    def _build(self, name: str) -> LLMProvider:
        if (missing := missing_configuration(self.llm, name)) is not None:
            return Unavailable(name, missing)
        if name == "openai":
            return OpenAIProvider(self.llm.base_url, os.environ.get(self.llm.api_key_env, ""), self.llm.timeout_s,
                                  self.llm.max_concurrency, self.llm.requests_per_minute, stream=self.llm.stream,
                                  max_reply_bytes=self.llm.max_reply_bytes, budget=self.budget)
        return OfflineProvider()

    async def close(self) -> None:
        for provider in self.providers.values():
            if isinstance(provider, OpenAIProvider):
                await provider.close()
