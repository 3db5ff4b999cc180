"""Read what a simulation folder holds right now (FORMATS.md section 1): blocking file reads only.

Every function here tolerates a folder that is being written or deleted underneath it.
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .oasis import identify_db
from .tail import FileIdentity, identify

ACTION_FILES = {"twitter/actions.jsonl": "twitter", "reddit/actions.jsonl": "reddit"}
COMBINED_FILE = "actions.jsonl"
MARKERS = ("simulation_config.json", *ACTION_FILES, COMBINED_FILE, "twitter_simulation.db", "reddit_simulation.db")


@dataclass(frozen=True)
class SourceFile:
    key: str
    platform: str | None
    path: Path
    identity: FileIdentity
    kind: str = "jsonl"  # or "oasis": a raw OASIS database, read only when no actions.jsonl exists


@dataclass(frozen=True)
class EnvStatus:
    status: str
    twitter_available: bool
    reddit_available: bool
    pid: int | None


@dataclass(frozen=True)
class FolderSnapshot:
    exists: bool
    sources: list[SourceFile] = field(default_factory=list)
    present: set[str] = field(default_factory=set)
    env: EnvStatus | None = None
    finished_hint: dict[str, int] = field(default_factory=dict)  # OASIS only: platform -> total rounds
    minutes_per_round: int = 60


def is_simulation_folder(path: Path) -> bool:
    """A folder is a simulation when it holds any of the files a simulator writes."""
    return path.is_dir() and any((path / m).exists() for m in MARKERS)


def snapshot(folder: Path) -> FolderSnapshot:
    """The action files with their identities, the platforms present, the environment status."""
    if not folder.is_dir():
        return FolderSnapshot(exists=False)
    sources = []
    present = set()
    for key, platform in ACTION_FILES.items():
        if (folder / key).exists():
            present.add(platform)
        if (identity := identify(folder / key)) is not None:
            sources.append(SourceFile(key, platform, folder / key, identity))
    if not present and (identity := identify(folder / COMBINED_FILE)) is not None:
        sources.append(SourceFile(COMBINED_FILE, None, folder / COMBINED_FILE, identity))
        return FolderSnapshot(True, sources, present, read_env_status(folder))
    if present or sources:
        return FolderSnapshot(True, sources, present, read_env_status(folder))
    return _oasis_snapshot(folder)


def _oasis_snapshot(folder: Path) -> FolderSnapshot:
    """The databases as sources, with run_state.json as the only hint that a platform has ended."""
    sources, present = [], set()
    for platform in ("twitter", "reddit"):
        key = f"{platform}_simulation.db"
        if (folder / key).exists():
            present.add(platform)
            if (identity := identify_db(folder / key)) is not None:
                sources.append(SourceFile(key, platform, folder / key, identity, kind="oasis"))
    run_state = _read_json(folder / "run_state.json")
    run_state = run_state if isinstance(run_state, dict) else {}
    total = run_state.get("total_rounds") if isinstance(run_state.get("total_rounds"), int) else 0
    done = run_state.get("runner_status") == "completed"
    hint = {p: total for p in present if done or run_state.get(f"{p}_completed") is True}
    config = _read_json(folder / "simulation_config.json")
    time_config = config.get("time_config", {}) if isinstance(config, dict) else {}
    minutes = time_config.get("minutes_per_round", 60) if isinstance(time_config, dict) else 60
    return FolderSnapshot(True, sources, present, read_env_status(folder), hint,
                          minutes if isinstance(minutes, int) and minutes > 0 else 60)


def read_env_status(folder: Path) -> EnvStatus | None:
    """env_status.json, with a stale `alive` (its simulator's pid is gone) reported as `stale`."""
    env = _read_json(folder / "env_status.json")
    if not isinstance(env, dict) or env.get("status") not in ("alive", "stopped"):
        return None
    run_state = _read_json(folder / "run_state.json")
    pid = run_state.get("process_pid") if isinstance(run_state, dict) else None
    pid = pid if isinstance(pid, int) and pid > 0 else None
    status = env["status"]
    if status == "alive" and pid is not None and not pid_alive(pid):
        status = "stale"
    return EnvStatus(status, bool(env.get("twitter_available")), bool(env.get("reddit_available")), pid)


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def read_setup(folder: Path) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """(requirement, config summary, agents) from simulation_config.json and the profile files."""
    config = _read_json(folder / "simulation_config.json")
    config = config if isinstance(config, dict) else {}
    agents: dict[int, dict[str, Any]] = {}
    for item in config.get("agent_configs") or []:
        if isinstance(item, dict) and isinstance(item.get("agent_id"), int):
            agents[item["agent_id"]] = {
                "agent_id": item["agent_id"], "name": str(item.get("entity_name") or ""),
                "entity_type": str(item.get("entity_type") or ""), "stance": str(item.get("stance") or ""),
                "influence": item.get("influence_weight"), "activity_level": item.get("activity_level")}
    for profile in _read_profiles(folder):
        entry = agents.setdefault(profile["agent_id"], {"agent_id": profile["agent_id"]})
        for key, value in profile.items():
            if value not in (None, "") and not entry.get(key):
                entry[key] = value
    event_config = config.get("event_config") if isinstance(config.get("event_config"), dict) else {}
    summary = {
        "time_config": config.get("time_config") if isinstance(config.get("time_config"), dict) else {},
        "hot_topics": event_config.get("hot_topics") or [],
        "narrative_direction": event_config.get("narrative_direction") or "",
        "scheduled_events": event_config.get("scheduled_events") or [],
        "llm_model": config.get("llm_model") or "",
    }
    requirement = str(config.get("simulation_requirement") or "")
    return requirement, summary, [agents[k] for k in sorted(agents)]


def _read_profiles(folder: Path) -> list[dict[str, Any]]:
    profiles: list[dict[str, Any]] = []
    try:
        with (folder / "twitter_profiles.csv").open(encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f):
                if (row.get("user_id") or "").strip().isdigit():
                    profiles.append({"agent_id": int(row["user_id"]), "name": row.get("name") or "",
                                     "username": row.get("username") or "", "bio": row.get("description") or ""})
    except (OSError, UnicodeDecodeError, csv.Error):
        pass
    reddit = _read_json(folder / "reddit_profiles.json")
    for item in reddit if isinstance(reddit, list) else []:
        if isinstance(item, dict) and isinstance(item.get("user_id"), int):
            profiles.append({"agent_id": item["user_id"], "name": str(item.get("name") or ""),
                             "username": str(item.get("username") or ""), "bio": str(item.get("bio") or ""),
                             "persona": str(item.get("persona") or ""),
                             "profession": str(item.get("profession") or "")})
    return profiles


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
