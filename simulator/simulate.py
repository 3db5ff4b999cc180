"""`simreportd simulate`: write a MiroFish-layout simulation folder (docs/formats.md#mirofish-simulation-folder).

At once, or over time with `--live` the way the real parallel runner does it: line by
line with open/append/close, sometimes half a line first, then the environment stays
alive and answers interviews over the file RPC until `close_env` or SIGTERM.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from .oasis_db import write_oasis_db
from .scenario import make_story
from .story import Agent, Story
from .truth import FILE as GROUND_TRUTH
from .truth import ground_truth

PLATFORMS = ("twitter", "reddit")


def simulate(folder: Path, agents: int = 24, rounds: int = 12, seed: int = 7, live: bool = False,
             round_seconds: float = 0.5, restart: bool = False, oasis_db: bool = False,
             say: Callable[[str], None] = lambda _: None, style: str = "catalogue") -> Story:
    """Write a whole simulation into `folder`; with `live`, pace it (telling `say`) and then serve interviews.

    `style`: "catalogue" (agents repeat their camp's lines) or "llm" (every statement written anew)."""
    story = make_story(seed, agents, rounds, style)
    folder.mkdir(parents=True, exist_ok=True)
    if restart:
        force_restart(folder)
    write_setup(folder, story)
    _write_json(folder / GROUND_TRUTH, ground_truth(story))
    if live:
        run_live(folder, story, round_seconds, say)
    else:
        for platform in PLATFORMS:
            path = folder / platform / "actions.jsonl"
            path.parent.mkdir(exist_ok=True)
            with path.open("a", encoding="utf-8") as f:
                f.writelines(_dump(line) for line in platform_lines(story, platform))
        write_run_state(folder, story, "completed", pid=None)
    if oasis_db:
        for platform in PLATFORMS:
            write_oasis_db(folder / f"{platform}_simulation.db", story, platform)
    return story


def force_restart(folder: Path) -> None:
    """Delete the run's files the way MiroFish's force restart does."""
    for name in ("run_state.json", "env_status.json", "twitter_simulation.db", "reddit_simulation.db", GROUND_TRUTH):
        (folder / name).unlink(missing_ok=True)
    for platform in PLATFORMS:
        (folder / platform / "actions.jsonl").unlink(missing_ok=True)
    for sub in ("ipc_commands", "ipc_responses"):
        shutil.rmtree(folder / sub, ignore_errors=True)


def platform_lines(story: Story, platform: str) -> list[dict[str, Any]]:
    """Every line one platform's actions.jsonl holds, start to end."""
    rounds = story.lines[platform]
    out: list[dict[str, Any]] = [{"event_type": "simulation_start", "platform": platform,
                                  "total_rounds": story.rounds * 3, "agents_count": len(story.agents),
                                  "timestamp": story.start.isoformat()}]
    out.extend(rounds[0])
    total = len(rounds[0])
    for round_no in range(1, story.rounds + 1):
        out.append({"event_type": "round_start", "round": round_no, "simulated_hour": (8 + round_no) % 24})
        out.extend(rounds[round_no])
        total += len(rounds[round_no])
        out.append({"event_type": "round_end", "round": round_no, "actions_count": len(rounds[round_no])})
    out.append({"event_type": "simulation_end", "platform": platform, "total_rounds": story.rounds,
                "total_actions": total})
    return out


def write_setup(folder: Path, story: Story) -> None:
    """simulation_config.json and both profile files."""
    _write_json(folder / "simulation_config.json", simulation_config(story, folder.name))
    with (folder / "twitter_profiles.csv").open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["user_id", "name", "username", "user_char", "description"])
        for a in story.agents:
            writer.writerow([a.agent_id, a.name, a.username, f"{a.entity_type}; {a.stance}", a.bio])
    _write_json(folder / "reddit_profiles.json", [reddit_profile(a, story) for a in story.agents])


def simulation_config(story: Story, simulation_id: str) -> dict[str, Any]:
    """The config MiroFish prepares; its id is the folder's name, as MiroFish names a simulation's folder."""
    sc = story.scenario
    return {
        "simulation_id": simulation_id, "project_id": "proj_demo", "graph_id": "graph_demo",
        "simulation_requirement": sc.requirement,
        "time_config": {"total_simulation_hours": story.rounds, "minutes_per_round": 60,
                        "agents_per_hour_min": 2, "agents_per_hour_max": len(story.agents),
                        "peak_hours": [8, 9, 18, 19], "off_peak_hours": [1, 2, 3, 4]},
        "agent_configs": [{"agent_id": a.agent_id, "entity_uuid": f"ent-{a.agent_id:04d}",
                           "entity_name": a.name, "entity_type": a.entity_type, "activity_level": a.activity,
                           "active_hours": list(range(7, 23)),
                           "sentiment_bias": sentiment_bias(a) if story.style == "llm" else 0.0, "stance": a.stance,
                           "influence_weight": a.influence} for a in story.agents],
        "event_config": {"initial_posts": [], "hot_topics": sc.hot_topics,
                         "narrative_direction": f"Debate over {sc.topic}.",
                         "scheduled_events": [{"round": story.spike_round, "description": sc.trigger}]},
        "twitter_config": {}, "reddit_config": {}, "llm_model": "simulated", "llm_base_url": "",
        "generated_at": story.start.isoformat(),
    }


def sentiment_bias(agent: Agent) -> float:
    """-1.0 (negative) to 1.0 (positive), as MiroFish's config generator gives each agent: positive for the
    supportive, negative for the opposing, near 0 otherwise; the more active, the stronger."""
    strength = (agent.activity - 0.3) / 0.7
    sign = {"supportive": 1.0, "opposing": -1.0}.get(agent.stance)
    return round(sign * (0.2 + 0.7 * strength), 2) if sign else round(0.2 * strength - 0.1, 2)


def reddit_profile(agent: Agent, story: Story) -> dict[str, Any]:
    return {"user_id": agent.agent_id, "username": agent.username, "name": agent.name, "bio": agent.bio,
            "persona": f"A {agent.age}-year-old {agent.entity_type.lower()} who is {agent.stance} about "
                       f"{story.scenario.short}.",
            "karma": 100 + agent.agent_id * 17, "created_at": "2025-01-01", "age": agent.age, "gender": "other",
            "mbti": agent.mbti, "country": agent.country, "profession": agent.entity_type,
            "interested_topics": story.scenario.hot_topics[:2]}


def run_live(folder: Path, story: Story, round_seconds: float, say: Callable[[str], None]) -> None:
    """Write rounds over time, then stay alive for interviews until close_env or SIGTERM."""
    stopping = {"stop": False}
    for signum in (signal.SIGTERM, signal.SIGINT):  # Ctrl-C stops as cleanly as SIGTERM
        signal.signal(signum, lambda *_: stopping.update(stop=True))
    streams = {p: _live_rounds(platform_lines(story, p)) for p in PLATFORMS}
    for platform in PLATFORMS:
        (folder / platform).mkdir(exist_ok=True)
    write_run_state(folder, story, "running", pid=os.getpid())
    say(f"Running live in {folder} (pid {os.getpid()}): {story.rounds} rounds, one every {round_seconds:g} s; "
        "Ctrl-C or SIGTERM stops it")
    for round_no in range(story.rounds + 2):
        if stopping["stop"]:
            break
        for platform in PLATFORMS:
            chunk = streams[platform][round_no] if round_no < len(streams[platform]) else []
            _append_slowly(folder / platform / "actions.jsonl", chunk, round_no)
        if 1 <= round_no <= story.rounds:
            say(f"  round {round_no}/{story.rounds} written")
        time.sleep(round_seconds)
    write_run_state(folder, story, "completed", pid=os.getpid())
    from .interview_responder import serve_interviews  # the RPC half only matters in live mode

    _write_json(folder / "env_status.json", _env_status("alive"))
    if not stopping["stop"]:
        say("Run completed. The environment stays alive and answers interviews (ipc_commands/) "
            "until close_env, Ctrl-C or SIGTERM")
    serve_interviews(folder, story, stopping)
    _write_json(folder / "env_status.json", _env_status("stopped"))
    say("Environment stopped.")


def _live_rounds(lines: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Split a platform's lines into round-sized chunks (start+seeds, each round, end)."""
    chunks: list[list[dict[str, Any]]] = [[]]
    for line in lines:
        if line.get("event_type") == "round_start" or line.get("event_type") == "simulation_end":
            chunks.append([])
        chunks[-1].append(line)
    return chunks


def _append_slowly(path: Path, lines: list[dict[str, Any]], round_no: int) -> None:
    """Open/append/close per line like the real runner; every few rounds leave half a line for a moment."""
    for i, line in enumerate(lines):
        data = _dump(line).encode("utf-8")
        if round_no % 3 == 1 and i == len(lines) // 2:
            with path.open("ab") as f:
                f.write(data[: len(data) // 2])
            time.sleep(0.05)
            data = data[len(data) // 2:]
        with path.open("ab") as f:
            f.write(data)


def write_run_state(folder: Path, story: Story, status: str, pid: int | None) -> None:
    counts = {p: sum(len(r) for r in story.lines[p]) for p in PLATFORMS}
    _write_json(folder / "run_state.json", {
        "simulation_id": folder.name, "runner_status": status, "current_round": story.rounds,
        "total_rounds": story.rounds, "twitter_completed": status == "completed",
        "reddit_completed": status == "completed", "twitter_actions_count": counts["twitter"],
        "reddit_actions_count": counts["reddit"], "total_actions_count": sum(counts.values()),
        "started_at": story.start.isoformat(), "updated_at": datetime.now().isoformat(),
        "completed_at": None, "error": None, "process_pid": pid, "recent_actions": []})


def _env_status(status: str) -> dict[str, Any]:
    return {"status": status, "twitter_available": status == "alive", "reddit_available": status == "alive",
            "timestamp": datetime.now().isoformat()}


def _dump(line: dict[str, Any]) -> str:
    return json.dumps(line, ensure_ascii=False) + "\n"


def _write_json(path: Path, value: Any) -> None:
    """Write through a temporary name and rename, so readers never see half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value, ensure_ascii=False, indent=2), encoding="utf-8")
    os.replace(tmp, path)
