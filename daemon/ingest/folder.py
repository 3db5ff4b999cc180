"""Read what a simulation folder holds right now (docs/formats.md#mirofish-simulation-folder): blocking file reads only.

Every function here tolerates a folder that is being written or deleted underneath it, and
reads through `inputs` (regular files inside the folder, bounded) and `values` (every value
kept fits the event models and SQLite): hostile files cost a rejection, never the daemon.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, NamedTuple

from simreportd.daemon.ingest import values
from simreportd.events.models import Platform

from .inputs import Confinement, NotReadable, read_bytes
from .rounds import UNKNOWN, RoundClock, clock_of
from .tail import FileIdentity, identify

ACTION_FILES: dict[str, Platform] = {"twitter/actions.jsonl": "twitter", "reddit/actions.jsonl": "reddit"}
COMBINED_FILE = "actions.jsonl"
PID_MAX = 2**22  # Linux's PID_MAX_LIMIT: anything above is not a process id os.kill can take
MARKERS = ("simulation_config.json", *ACTION_FILES, COMBINED_FILE, "twitter_simulation.db", "reddit_simulation.db")


@dataclass(frozen=True)
class SourceFile:
    key: str
    platform: Platform | None
    path: Path
    identity: FileIdentity
    kind: str = "jsonl"  # or "oasis": a raw OASIS database, read only when no actions.jsonl exists


@dataclass(frozen=True)
class EnvStatus:
    status: Literal["alive", "stopped", "stale"]
    twitter_available: bool
    reddit_available: bool
    pid: int | None


@dataclass(frozen=True)
class FolderSnapshot:
    exists: bool
    sources: list[SourceFile] = field(default_factory=list)
    present: set[Platform] = field(default_factory=set)
    env: EnvStatus | None = None
    finished_hint: dict[Platform, int] = field(default_factory=dict)  # OASIS only: platform -> total rounds
    clock: RoundClock = UNKNOWN  # OASIS only: which round a database row belongs to
    rounds_ran: dict[Platform, bool] = field(default_factory=dict)  # OASIS only: whether a finished platform ran all
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # action files not read, and why
    databases: dict[Platform, Path] = field(default_factory=dict)  # the OASIS databases present, by platform
    databases_only: bool = False  # no actions.jsonl: the databases are the actions' source


class Setup(NamedTuple):
    """What a generation starts with, and the reasons parts of it were left out."""

    requirement: str
    config: dict[str, Any]
    agents: list[dict[str, Any]]
    problems: list[tuple[str, str]]  # (file, reason)


def is_simulation_folder(path: Path) -> bool:
    """A folder is a simulation when it holds any of the files a simulator writes."""
    return path.is_dir() and any((path / m).exists() for m in MARKERS)


def snapshot(folder: Path, confinement: Confinement | None = None) -> FolderSnapshot:
    """The action files with their identities, the platforms present, the environment status."""
    if not folder.is_dir():
        return FolderSnapshot(exists=False)
    confinement = confinement or Confinement(folder)
    sources: list[SourceFile] = []
    present: set[Platform] = set()
    unreadable: list[tuple[str, str]] = []
    for key, platform in ACTION_FILES.items():
        if (folder / key).exists():
            present.add(platform)
        if (identity := _identify(folder, key, confinement, unreadable)) is not None:
            sources.append(SourceFile(key, platform, folder / key, identity))
    env = read_env_status(folder, confinement)
    if not present and (identity := _identify(folder, COMBINED_FILE, confinement, unreadable)) is not None:
        sources.append(SourceFile(COMBINED_FILE, None, folder / COMBINED_FILE, identity))
    databases: dict[Platform, Path] = {p: folder / f"{p}_simulation.db" for p in ACTION_FILES.values()
                                       if (folder / f"{p}_simulation.db").exists()}
    if present or sources:
        return FolderSnapshot(True, sources, present, env, unreadable=unreadable, databases=databases)
    return replace(_oasis_snapshot(folder, confinement, env, databases), unreadable=unreadable)


def _identify(folder: Path, key: str, confinement: Confinement,
              unreadable: list[tuple[str, str]]) -> FileIdentity | None:
    """The action file's identity, None while it is missing or has no complete line yet; a path we do not read
    (a folder, a FIFO, a link out of the simulation folder or in a loop, no permission) goes into `unreadable`,
    with why."""
    try:
        return identify(folder / key, confinement)
    except NotReadable as exc:
        unreadable.append((key, str(exc)))
    except OSError as exc:
        unreadable.append((key, f"{key} cannot be opened ({exc.strerror or exc}); not read"))
    return None


def _oasis_snapshot(folder: Path, confinement: Confinement, env: EnvStatus | None,
                    databases: dict[Platform, Path]) -> FolderSnapshot:
    """The databases as the only sources (the ingestor reads them, each query bounded), with run_state.json as
    the only hint that a platform has ended."""
    present = set(databases)
    run_state = _read_json(folder / "run_state.json", confinement)
    run_state = run_state if isinstance(run_state, dict) else {}
    total = max(0, values.int64(run_state.get("total_rounds")) or 0)
    done = run_state.get("runner_status") == "completed"
    hint = {p: total for p in present if done or run_state.get(f"{p}_completed") is True}
    config = _read_json(folder / "simulation_config.json", confinement)
    clock = clock_of(config if isinstance(config, dict) else {}, total)
    return FolderSnapshot(True, [], present, env, hint, clock, {p: _ran_all(run_state, p, total) for p in hint},
                          databases=databases, databases_only=bool(databases))


def _ran_all(run_state: dict[str, Any], platform: str, total: int) -> bool:
    """Whether run_state.json says the platform ran every round: its own round count reached the total where it
    keeps one (MiroFish's runner does, from each round_end), else the runner completed (it logs the end of a
    platform stopped early too: run_parallel_simulation.py:1228-1233 and 1283-1284)."""
    reached = values.int64(run_state.get(f"{platform}_current_round")) or 0
    if reached > 0:
        return reached >= total
    return run_state.get("runner_status") == "completed"


def read_env_status(folder: Path, confinement: Confinement | None = None) -> EnvStatus | None:
    """env_status.json, with a stale `alive` (its simulator's pid is gone) reported as `stale`."""
    confinement = confinement or Confinement(folder)
    env = _read_json(folder / "env_status.json", confinement)
    if not isinstance(env, dict) or env.get("status") not in ("alive", "stopped"):
        return None
    run_state = _read_json(folder / "run_state.json", confinement)
    pid = values.int64(run_state.get("process_pid")) if isinstance(run_state, dict) else None
    pid = pid if pid is not None and pid > 0 else None
    alive = env["status"] == "alive"
    status: Literal["alive", "stopped", "stale"] = "stopped" if not alive else "alive" if pid is None or pid_alive(pid) \
        else "stale"
    return EnvStatus(status, bool(env.get("twitter_available")), bool(env.get("reddit_available")), pid)


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (a zombie counts as gone)."""
    if not 0 < pid <= PID_MAX:
        return False  # os.kill would raise OverflowError; no process can have it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def read_setup(folder: Path, confinement: Confinement | None = None) -> Setup:
    """Requirement, config summary and agents from simulation_config.json and the profile files."""
    confinement = confinement or Confinement(folder)
    problems: list[tuple[str, str]] = []
    config = _config_read_for_id(folder) or _load_json(folder / "simulation_config.json", confinement, problems)
    config = config if isinstance(config, dict) else {}
    agents: dict[int, dict[str, Any]] = {}
    for item in _kept(config.get("agent_configs"), "simulation_config.json", problems):
        if (agent_id := values.int64(item.get("agent_id"))) is not None:  # not `false`, not 2**64
            agents[agent_id] = {
                "agent_id": agent_id, "name": str(item.get("entity_name") or ""),
                "entity_type": str(item.get("entity_type") or ""), "stance": str(item.get("stance") or ""),
                "influence": values.number(item.get("influence_weight")),  # a column of numbers: [] would stop
                "activity_level": values.number(item.get("activity_level"))}  # the fold of the whole run
    for profile in _read_profiles(folder, confinement, problems):
        entry = agents.setdefault(profile["agent_id"], {"agent_id": profile["agent_id"]})
        for key, value in profile.items():
            if value not in (None, "") and not entry.get(key):
                entry[key] = value
    event_config: dict[str, Any] = config["event_config"] if isinstance(config.get("event_config"), dict) else {}
    summary: dict[str, Any] = {
        "time_config": config.get("time_config") if isinstance(config.get("time_config"), dict) else {},
        "hot_topics": event_config.get("hot_topics") or [],
        "narrative_direction": event_config.get("narrative_direction") or "",
        "scheduled_events": event_config.get("scheduled_events") or [],
        "llm_model": config.get("llm_model") or "",
        **{key: str(config[key]) for key in ("simulation_id", "project_id", "graph_id") if config.get(key)},
    }
    requirement = str(config.get("simulation_requirement") or "")
    if not values.fits([summary, requirement]):
        problems.append(("simulation_config.json", "settings dropped: " + _why([summary, requirement])))
        summary, requirement = {}, ""
    return Setup(requirement, summary, [agents[k] for k in sorted(agents)], problems)


def configured_id(folder: Path, confinement: Confinement | None = None) -> str:
    """The `simulation_id` simulation_config.json gives, or "" when it has none, or none that is a string. The
    config read is kept for the folder's next `read_setup` (a discovery reads both), while the file is unchanged."""
    path = folder / "simulation_config.json"
    stamp = _stamp(path)
    config = _load_json(path, confinement or Confinement(folder), [])
    if stamp is not None and isinstance(config, dict):
        if len(_READ_FOR_ID) >= KEPT_CONFIGS:
            _READ_FOR_ID.clear()
        _READ_FOR_ID[folder] = (stamp, config)
    given = config.get("simulation_id") if isinstance(config, dict) else None
    return given if isinstance(given, str) else ""


# Folders whose config `configured_id` read and no `read_setup` took yet: few, as a folder already known reads
# no setup at a restart, and each config held is a parsed file (a run's can be megabytes).
KEPT_CONFIGS = 4
_READ_FOR_ID: dict[Path, tuple[tuple[int, int, int, int], dict[str, Any]]] = {}


def _config_read_for_id(folder: Path) -> dict[str, Any] | None:
    """The config `configured_id` last read of `folder`, taken (once), if the file has not changed since."""
    kept = _READ_FOR_ID.pop(folder, None)
    return kept[1] if kept is not None and kept[0] == _stamp(folder / "simulation_config.json") else None


def _stamp(path: Path) -> tuple[int, int, int, int] | None:
    """What tells a file's versions apart without reading it: device, inode, size and modification time."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _kept(items: Any, file: str, problems: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The dict entries of a JSON list that fit; each one left out is a problem with its reason."""
    kept = []
    for i, item in enumerate(items if isinstance(items, list) else []):
        if isinstance(item, dict):
            if values.fits(item):
                kept.append(item)
            else:
                problems.append((file, f"entry {i} left out: {_why(item)}"))
    return kept


def _why(value: Any) -> str:
    try:
        values.check(value)
    except values.BadValue as exc:
        return exc.reason
    return "ok"


def _read_profiles(folder: Path, confinement: Confinement, problems: list[tuple[str, str]]) -> list[dict[str, Any]]:
    profiles: list[dict[str, Any]] = []
    try:
        text = read_bytes(folder / "twitter_profiles.csv", confinement).decode("utf-8")
        for row in csv.DictReader(io.StringIO(text, newline="")):
            user_id = (row.get("user_id") or "").strip()
            if user_id.isdigit() and len(user_id) <= 20 and values.int64(int(user_id)) is not None:
                profiles.append({"agent_id": int(user_id), "name": row.get("name") or "",
                                 "username": row.get("username") or "", "bio": row.get("description") or ""})
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError, csv.Error, ValueError) as exc:
        problems.append(("twitter_profiles.csv", f"not read: {exc}"[:200]))
    reddit = _load_json(folder / "reddit_profiles.json", confinement, problems)
    for item in _kept(reddit, "reddit_profiles.json", problems):
        if isinstance(item.get("user_id"), int):
            profiles.append({"agent_id": item["user_id"], "name": str(item.get("name") or ""),
                             "username": str(item.get("username") or ""), "bio": str(item.get("bio") or ""),
                             "persona": str(item.get("persona") or ""),
                             "profession": str(item.get("profession") or "")})
    return profiles


def _load_json(path: Path, confinement: Confinement, problems: list[tuple[str, str]]) -> Any:
    """The file's JSON (values unchecked: the caller keeps what fits), or None with a problem noted."""
    try:
        return values.loads(read_bytes(path, confinement), check_values=False)
    except FileNotFoundError:
        return None
    except (OSError, values.BadValue) as exc:
        problems.append((path.name, f"not read: {getattr(exc, 'reason', None) or exc}"[:200]))
        return None


def _read_json(path: Path, confinement: Confinement) -> Any:
    """The file's JSON if it is readable and every value fits, else None (a hint file: no complaint)."""
    try:
        return values.loads(read_bytes(path, confinement))
    except (OSError, values.BadValue):
        return None
