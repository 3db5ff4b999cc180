"""Report engine overhead per loop step, with a zero-latency scripted model and instant tools.

Run by hand: `python bench/agent.py [REPORTS]`. Each step is one effect of the core
(decide, perform, append, fold, and for LLM calls the prompt build and fingerprint); the
model and the tools answer at once, so what is timed is the engine itself, on a real
SQLite store. Also prints the prompt tokens a report sends (estimated from characters).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from simreportd.agent.llm.providers import Completion, estimate_tokens
from simreportd.agent.report.report_runner import ReportRunner, settings_for
from simreportd.agent.tools.toolspec import REPORT_TOOLS
from simreportd.daemon.config import Config
from simreportd.events import SQLiteEventStore
from simreportd.events.models import (
    LLMRequested,
    ReportRequested,
    TokenUsage,
    ToolCallRequest,
)
from simreportd.events.streams import report_stream

OUTLINE = ('{"title": "Bench", "summary": "s", "sections": [{"title": "A"}, {"title": "B"}, {"title": "C"},'
           ' {"title": "D"}, {"title": "E"}]}')
RESULT = '{"results": [' + ",".join([f'{{"ref": "post:twitter:{i}", "content": "{"x" * 200}"}}'
                                      for i in range(10)]) + "]}"


class ScriptedModel:
    name = "scripted"

    def __init__(self) -> None:
        self.prompt_tokens = 0

    async def complete(self, request: LLMRequested, messages: list[dict[str, Any]], attempt: int) -> Completion:
        self.prompt_tokens += sum(estimate_tokens(str(m.get("content") or "")) for m in messages)
        if request.purpose == "outline":
            return Completion(OUTLINE)
        used = sum(1 for m in messages if m["role"] == "tool")
        if request.tools and used < 4:
            return Completion("", [ToolCallRequest(id=f"t{used}", name=REPORT_TOOLS[used], arguments={"query": "q"})])
        return Completion("The section text, grounded in the results above. " * 20, usage=TokenUsage())


class InstantTools:
    async def run(self, name: str, arguments: dict, simulation_id: str, generation: int, labels: object = None) -> str:
        return RESULT

    async def context(self, simulation_id: str, generation: int) -> dict[str, Any]:
        return {"requirement": "How did it go?", "hot_topics": ["bench"]}

    async def warm(self, simulation_id: str, generation: int) -> None:
        """Nothing to prepare: every call answers at once."""


class NoEnvironment:
    async def alive(self, simulation_id: str) -> bool:
        return False


async def main(reports: int) -> None:
    config = Config()
    with tempfile.TemporaryDirectory() as tmp:
        async with SQLiteEventStore(Path(tmp) / "events.sqlite3") as store:
            model = ScriptedModel()
            appends = 0
            real_append = store.append

            async def counting_append(*args: Any, **kwargs: Any) -> Any:
                nonlocal appends
                appends += 1
                return await real_append(*args, **kwargs)

            store.append = counting_append  # type: ignore[method-assign]
            runner = ReportRunner(store, InstantTools(), lambda _: model, NoEnvironment())  # type: ignore[arg-type]
            started, steps = time.perf_counter(), 0
            for n in range(reports):
                rid = f"bench{n}"
                await store.append(report_stream(rid), [ReportRequested(
                    report_id=rid, simulation_id="sim", generation=1, provider="scripted", model="m",
                    settings=settings_for(config.agent, config.llm, REPORT_TOOLS))], expected_version=0)
                state = await runner.run(rid)
                assert state.report_completed
                steps += state.version - 1
            elapsed = time.perf_counter() - started
            appends -= reports  # the ReportRequested appends are the bench's, not the engine's
    print(f"reports                {reports} (5 sections, 4 tool calls each)")
    print(f"loop steps             {appends:,} effects performed and appended ({steps:,} events), "
          f"{appends // reports} per report")
    print(f"engine overhead        {elapsed / appends * 1000:.3f} ms per step (goal: under 2 ms)")
    print(f"prompt tokens          {model.prompt_tokens // reports:,} per report (estimated, 4 chars per token)")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20))
