"""Parse one actions.jsonl line (docs/formats.md#action-lines) into fields, or say why it is bad.

Liberal in what it reads (unknown action types and extra keys are kept), strict about
what the model needs (ints are ints, args are an object). No I/O.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import orjson

from simreportd.daemon.ingest import values
from simreportd.events.models import Platform

PLATFORMS: tuple[Platform, ...] = ("twitter", "reddit")
EVENT_TYPES = ("simulation_start", "round_start", "round_end", "simulation_end")
MAX_ACTION_TYPE = 100  # OASIS names its actions in a word or three (CREATE_POST, LIKE_COMMENT)


class Parsed(NamedTuple):
    """A line's fields (a tuple, as `Line`: one per line)."""

    kind: str  # "action" or one of EVENT_TYPES
    platform: Platform
    fields: dict[str, Any]


class Bad(NamedTuple):
    """Why a line is refused."""

    reason: str


def parse_line(raw: bytes, platform: Platform | None) -> Parsed | Bad:
    """Fields of one line; `platform` is the folder's platform, None for the old combined file. A line that
    orjson reads whole costs one C parse; any other is read again by `values.loads`, to take it or say why not."""
    obj = line_value(raw)
    if isinstance(obj, Bad):
        return obj
    if type(obj) is not dict:
        return Bad(f"not a JSON object but {type(obj).__name__}")
    line_platform = obj.get("platform")
    platform = platform or next((p for p in PLATFORMS if p == line_platform), None)
    if platform is None:
        return Bad(f"no usable platform (got {line_platform!r}); expected one of {', '.join(PLATFORMS)}")
    if "event_type" in obj:
        return parse_event(obj, platform)
    return parse_action(obj, platform)


def line_value(raw: bytes) -> Any:
    """A line's JSON value, as `parse_line` reads it: orjson's when it reads the line whole, else `values.loads`'s;
    or `Bad` saying why neither can."""
    obj = values.line(raw)
    if obj is not values.REFUSED:
        return obj
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Bad(f"invalid UTF-8 at byte {exc.start}")
    if not text.strip():
        return Bad("blank line")
    try:
        return values.loads(text)
    except values.BadValue as exc:
        return Bad(exc.reason)


def plain_action(raw: bytes, platform: Platform) -> Parsed | None:
    """The action of a line that needs none of `parse_line`'s slower roads, or None to take them: its value read
    by orjson and checked in place, no copy and no model (raw: this is ingest's path for every line, where a
    model per line would cost more than the parse itself).
    Only for a line of a chunk that `values.has_long_integer` cleared; what it accepts, `parse_line` accepts
    as the same `Parsed`: tests/daemon/test_properties.py compares the two, and the model, on hostile lines."""
    if raw.count(b"[") + raw.count(b"{") > values.MAX_DEPTH:  # maybe too deep: `values.line` looks closer
        return None
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if type(obj) is not dict or "event_type" in obj:
        return None
    round_no, agent, kind = obj.get("round"), obj.get("agent_id"), obj.get("action_type")
    if type(round_no) is int and type(agent) is int and 0 <= round_no <= values.INT_MAX \
            and 0 <= agent <= values.INT_MAX and type(kind) is str and 0 < len(kind) <= MAX_ACTION_TYPE \
            and kind.isupper() and type(obj.get("action_args")) is dict:
        return Parsed("action", platform, obj)
    return None


def parse_event(obj: dict[str, Any], platform: Platform) -> Parsed | Bad:
    """A simulation or round event's line (its `event_type` given), read as a JSON object whose values fit."""
    kind = obj["event_type"]
    if kind not in EVENT_TYPES:
        return Bad(f"unknown event_type {kind!r}")
    needs = {"round_start": ("round",), "round_end": ("round",), "simulation_end": ("total_rounds",)}
    for key in needs.get(kind, ()):
        if (problem := _int_problem(obj, key)) is not None:
            return Bad(problem)
    fields = {
        "round": obj.get("round"),
        "simulated_hour": _int_or_none(obj.get("simulated_hour")),
        "actions_count": _int_or_none(obj.get("actions_count")),
        "total_rounds": obj.get("total_rounds") if kind == "simulation_end" else None,
        "total_actions": _int_or_none(obj.get("total_actions")),
        "agents_count": _int_or_none(obj.get("agents_count")),
    }
    return Parsed(kind, platform, fields)


def parse_row(obj: dict[str, Any], platform: Platform) -> Parsed | Bad:
    """Fields of an OASIS trace row rebuilt as an action line (its values not checked yet)."""
    try:
        values.check(obj)
    except values.BadValue as exc:
        return Bad(exc.reason)
    return parse_action(obj, platform)


def parse_action(obj: dict[str, Any], platform: Platform) -> Parsed | Bad:
    """An agent action whose values `values.check` has accepted. Its fields are the line itself (read by
    `AgentActed`'s rules: docs/events.md), a copy only when its `action_type` is not in capitals or its
    `action_args` are missing: what the fold reads from the line."""
    for key in ("round", "agent_id"):
        if (problem := _int_problem(obj, key)) is not None:
            return Bad(problem)
    action_type = obj.get("action_type")
    if not isinstance(action_type, str) or not action_type:
        return Bad(f"'action_type' must be a non-empty string, got {action_type!r}")
    if len(action_type) > MAX_ACTION_TYPE:
        return Bad(f"'action_type' is longer than {MAX_ACTION_TYPE} characters: {action_type[:40]!r}...")
    args = obj.get("action_args")
    if type(args) is dict and action_type.isupper():
        return Parsed("action", platform, obj)
    args = args or {}
    if not isinstance(args, dict):
        return Bad(f"'action_args' must be an object, got {type(args).__name__}")
    return Parsed("action", platform, {**obj, "action_type": action_type.upper(), "action_args": args})


def _int_problem(obj: dict[str, Any], key: str) -> str | None:
    if key not in obj:
        return f"missing key {key!r}"
    value = obj[key]
    if type(value) is int and 0 <= value <= values.INT_MAX:
        return None  # the common case, in one test
    if values.int64(value) is None:
        return f"{key!r} must be an integer (64-bit), got {type(value).__name__} {str(value)[:40]}"[:200]
    if value < 0:  # rounds, round counts and agent ids count from 0
        return f"{key!r} must not be negative, got {value}"
    return None


def _int_or_none(value: Any) -> int | None:
    return values.int64(value)
