"""The live half of `simreportd simulate --live`: answer interviews over the file RPC (docs/formats.md#interview-file-rpc)."""

from __future__ import annotations

import json
import os
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from .story import Story

POLL_SECONDS = 0.2


def serve_interviews(folder: Path, story: Story, stopping: dict[str, bool]) -> None:
    """Handle the oldest command file, one at a time, until close_env or SIGTERM."""
    commands, responses = folder / "ipc_commands", folder / "ipc_responses"
    commands.mkdir(exist_ok=True)
    responses.mkdir(exist_ok=True)
    while not stopping["stop"]:
        pending = sorted(commands.glob("*.json"), key=lambda p: p.stat().st_mtime)
        if not pending:
            time.sleep(POLL_SECONDS)
            continue
        path = pending[0]
        try:
            command = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            path.unlink(missing_ok=True)
            continue
        path.unlink(missing_ok=True)
        response = handle(command, story)
        tmp = responses / f".{command.get('command_id')}.tmp"
        tmp.write_text(json.dumps(response, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, responses / f"{command.get('command_id')}.json")
        if command.get("command_type") == "close_env":
            return


def handle(command: dict[str, Any], story: Story) -> dict[str, Any]:
    kind, args = command.get("command_type"), command.get("args") or {}
    result: Any
    try:
        if kind == "interview":
            result = single(story, int(args["agent_id"]), str(args["prompt"]), args.get("platform"))
        elif kind == "batch_interview":
            result = batch(story, args.get("interviews") or [], args.get("platform"))
        elif kind == "close_env":
            result = {"message": "environment closed"}
        else:
            raise ValueError(f"unknown command_type {kind!r}")
    except (KeyError, ValueError, IndexError) as exc:
        return {"command_id": command.get("command_id"), "status": "failed", "result": None,
                "error": str(exc), "timestamp": datetime.now().isoformat()}
    return {"command_id": command.get("command_id"), "status": "completed", "result": result, "error": None,
            "timestamp": datetime.now().isoformat()}


def batch(story: Story, interviews: list[dict[str, Any]], platform: str | None) -> dict[str, Any]:
    results = {}
    for item in interviews:
        agent_id, prompt = int(item["agent_id"]), str(item["prompt"])
        asked = str(item.get("platform") or platform or "")
        for p in [asked] if asked else ["twitter", "reddit"]:
            results[f"{p}_{agent_id}"] = answer(story, agent_id, prompt, p)
    return {"interviews_count": len(results), "results": results}


def single(story: Story, agent_id: int, prompt: str, platform: str | None) -> dict[str, Any]:
    if platform:
        return answer(story, agent_id, prompt, platform)
    return {"agent_id": agent_id, "prompt": prompt,
            "platforms": {p: answer(story, agent_id, prompt, p) for p in ("twitter", "reddit")}}


def answer(story: Story, agent_id: int, prompt: str, platform: str) -> dict[str, Any]:
    """An in-persona answer built from what the agent actually posted on that platform."""
    agent = story.agents[agent_id]
    said = [line["action_args"]["content"] for r in story.lines[platform] for line in r
            if line["agent_id"] == agent_id and line["action_type"] == "CREATE_POST"]
    if not story.scenario.requirement.isascii():  # a Chinese run's agents answer in Chinese, as they post
        stance = {"supportive": "我支持", "opposing": "我反对", "neutral": "我还没拿定主意",
                  "observer": "我主要在旁观"}[agent.stance]
        quote = f"我写过：“{said[-1]}”" if said else ""
        text = f"作为{agent.entity_type}，说到{story.scenario.short}，{stance}。{quote}"
    else:
        stance = {"supportive": "I'm for it", "opposing": "I'm against it", "neutral": "I'm still undecided",
                  "observer": "I'm mostly watching"}[agent.stance]
        quote = f" As I wrote: \"{said[-1]}\"" if said else ""
        text = f"Speaking as a {agent.entity_type.lower()}: {stance} when it comes to {story.scenario.short}.{quote}"
    return {"agent_id": agent_id, "response": text, "timestamp": datetime.now().isoformat(), "platform": platform}
