"""`simreportd chat REPORT_ID`: ask follow-up questions about a completed report.

Interactive when stdin is a terminal, one question per line otherwise. Each answer goes to
stdout; the steps taken for it (tool calls) and its sources go to stderr. With a daemon running,
every question travels as the websocket op `chat`; without one, the chat runs here (choose.py).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterator

import anyio

from simreportd.daemon.config import Config
from simreportd.errors import ChatFailed, SimreportdError

from .choose import executor_for
from .executor import Asker, Frame
from .say import say

EXIT_WORDS = frozenset({"exit", "quit", ":q"})


async def chat(args: argparse.Namespace, config: Config) -> int:
    async with executor_for(config, "chat") as work:
        return await converse(work.asker(args.report_id, args.chat))


async def converse(asker: Asker) -> int:
    """Every question in turn; exit 0 when all were answered, 1 when one could not be, 2 for a bad one."""
    chat_id = await asker.open()
    interactive = sys.stdin.isatty()
    say(f"Chat {chat_id}: ask about the report" + (" (an empty line or Ctrl-D ends it)" if interactive else ""))
    worst = 0
    async for question in questions(interactive):
        try:
            frame = await asker.ask(question, show_step)
        except ChatFailed as exc:
            say(f"simreportd: error: {exc}")
            worst = max(worst, 1)
            continue
        except SimreportdError as exc:
            if exc.exit_code != 2:
                raise
            say(f"simreportd: {exc}")
            worst = 2
            continue
        show_answer(frame)
    say(f"Chat {chat_id} is recorded in its own stream: simreportd events --stream chat-{chat_id}; "
        f"simreportd replay {chat_id} --verify reproduces it")
    return worst


async def questions(interactive: bool) -> AsyncIterator[str]:
    """The questions on stdin: prompted when it is a terminal (an empty line ends), else one per line."""
    while True:
        if interactive:
            print("you> ", end="", file=sys.stderr, flush=True)
        line = await anyio.to_thread.run_sync(sys.stdin.readline)
        if not line or (interactive and line.strip().lower() in EXIT_WORDS | {""}):
            return
        if line.strip():
            yield line.rstrip("\n")


def show_step(frame: Frame) -> None:
    step = frame.get("step") or {}
    if step.get("kind") == "tool_call":
        args = ", ".join(f"{k}={v!r}" for k, v in sorted((step.get("arguments") or {}).items()))
        say(f"  {step.get('tool')}({args})")


def show_answer(frame: Frame) -> None:
    print(frame["answer"], end="\n\n", flush=True)
    grounding = frame.get("grounding") or {}
    flagged = len(grounding.get("ungrounded_quotes") or []) + len(grounding.get("unknown_ids") or [])
    say(f"  [turn {frame.get('turn')}: {len(frame.get('tool_calls') or [])} tool call(s); sources: "
        f"{', '.join(frame.get('sources') or []) or 'none'}; {grounding.get('grounded_quotes', 0)} grounded quote(s)"
        + (f"; {flagged} quote(s) or id(s) not found in the evidence, flagged" if flagged else "") + "]")
    if frame.get("no_evidence"):
        say("  WARNING: this answer rests on no evidence from the simulation: check it before relying on it")
    if unsupported := frame.get("unsupported"):
        say(f"  {len(unsupported)} sentence(s) with figures or names not in the evidence were removed")
