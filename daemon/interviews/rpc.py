"""The client half of the simulator's file RPC (docs/formats.md#interview-file-rpc).

A command is written to a temporary name and renamed into `ipc_commands/`, so the
simulator never reads half a file; the answer is awaited with watchfiles, with a poll
as the fallback, until `[interview] timeout_s`. `close_env` is never sent from here.
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import watchfiles

from simreportd.daemon.ingest import values
from simreportd.daemon.ingest.inputs import Confinement, read_bytes
from simreportd.errors import RPCFailed

POLL_MS = 250
# What MiroFish puts before every question it sends the environment, so that the OASIS agent answers in text
# instead of calling a tool (backend/app/api/simulation.py:22-42, and its report's interviews:
# backend/app/services/zep_tools.py:1333-1334). A live interview asked through us is asked as through MiroFish.
INTERVIEW_PREFIX = "结合你的人设、所有的过往记忆与行动，不调用任何工具直接用文本回复我："


class Unanswered(RPCFailed):
    """The environment took no command in time: nobody reads them (a stale `alive`), or it is stuck."""


def live_prompt(question: str) -> str:
    """The question as the live environment is asked it: behind MiroFish's prefix, which it carries once."""
    return question if not question or question.startswith(INTERVIEW_PREFIX) else INTERVIEW_PREFIX + question


def write_command(folder: Path, command_type: str, args: dict[str, Any]) -> str:
    """Place one command atomically; return its id."""
    command_id = uuid.uuid4().hex
    commands = folder / "ipc_commands"
    commands.mkdir(exist_ok=True)
    tmp = commands / f".{command_id}.tmp"
    tmp.write_text(json.dumps({"command_id": command_id, "command_type": command_type, "args": args,
                               "timestamp": datetime.now().isoformat()}, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, commands / f"{command_id}.json")
    return command_id


def read_response(path: Path) -> dict[str, Any] | None:
    """The response, or None while it is missing, half-written, or not something we could record."""
    try:  # a regular file inside the simulation folder, bounded, every value storable (docs/architecture.md#untrusted-input)
        response = values.loads(read_bytes(path, Confinement(path.parent.parent)))
    except (OSError, values.BadValue):
        return None
    return response if isinstance(response, dict) else None


async def call(folder: Path, command_type: str, args: dict[str, Any], timeout_s: float) -> Any:
    """Send a command and return its `result`; raise RPCFailed on timeout or a failed status."""
    command_id = await anyio.to_thread.run_sync(write_command, folder, command_type, args)
    responses = folder / "ipc_responses"
    responses.mkdir(exist_ok=True)
    path = responses / f"{command_id}.json"
    try:
        with anyio.fail_after(timeout_s):  # a deadline for the whole wait, not per read
            response = await _await_file(responses, path)
    except TimeoutError:
        (folder / "ipc_commands" / f"{command_id}.json").unlink(missing_ok=True)  # never handled: withdraw it
        raise Unanswered(f"the simulation environment did not answer within {timeout_s:g}s") from None
    path.unlink(missing_ok=True)
    if response.get("status") != "completed":
        raise RPCFailed(f"the simulation environment answered {response.get('status')!r}: {response.get('error')}")
    return response.get("result")


async def _await_file(folder: Path, path: Path) -> dict[str, Any]:
    async for _ in watchfiles.awatch(folder, rust_timeout=POLL_MS, yield_on_timeout=True, debounce=20, step=10):
        if (response := await anyio.to_thread.run_sync(read_response, path)) is not None:
            return response
    raise RPCFailed(f"{folder} vanished while waiting for an answer")
