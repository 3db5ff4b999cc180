"""The websocket protocol without the socket (docs/protocol.md#websocket): client messages in, frames out.

Notifications are derived from events and carry the event's position, so a client that
reconnects with `after=<last position>` gets exactly what it missed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from simreportd.agent.chat.chat_core import check_history, check_question
from simreportd.daemon.client_json import BadText, checked
from simreportd.errors import UsageError
from simreportd.events.codec import Recorded
from simreportd.events.models import (
    InterviewAnswered,
    InterviewUnlocked,
    ReportCompleted,
    ReportEvent,
    ReportFailed,
    ReportRequested,
    SectionCompleted,
    SimulationCompleted,
    SimulationDiscovered,
    SimulationGenerationStarted,
)
from simreportd.events.streams import report_stream, simulation_stream
from simreportd.projections.standing import CHANGES, Standing, shown_progress

TOPICS = frozenset({"notifications", "events"})


@dataclass(frozen=True)
class Subscribe:
    topics: frozenset[str]
    report_id: str | None
    simulation_id: str | None
    after: int


@dataclass(frozen=True)
class GenerateReport:
    simulation_id: str


@dataclass(frozen=True)
class Interview:
    simulation_id: str | None
    report_id: str | None
    agent_id: int
    question: str
    platform: str | None

    @property
    def target(self) -> str:
        """The report, else the simulation, asked about (parsing refuses an interview that names neither)."""
        return self.report_id or self.simulation_id or ""


@dataclass(frozen=True)
class Chat:
    """A question about a completed report (a new chat unless `chat_id` names one); no question: just open it."""

    report_id: str | None
    chat_id: str | None
    question: str | None
    history: list[dict[str, str]]


@dataclass(frozen=True)
class ProtocolError:
    code: str
    message: str

    def frame(self) -> dict[str, Any]:
        return {"type": "error", "code": self.code, "message": self.message}


@dataclass(frozen=True)
class HandedOver:
    """A CLI command handed over to this daemon: `request_report`, `resume`, `fork` or `rebuild`."""

    op: str
    folder: str | None = None
    report_id: str | None = None
    at: int | None = None
    provider: str | None = None
    model: str | None = None
    max_tokens: int | None = None  # resume overrides
    timeout_s: float | None = None
    force: bool | None = None  # request_report: a new report even if the run has one


Command = Subscribe | GenerateReport | Interview | Chat | HandedOver
HANDED_OVER = {"ingest": ("folder",), "request_report": ("folder",), "resume": ("report_id",),
               "fork": ("report_id", "at"), "rebuild": ()}


def parse_message(text: str | bytes) -> Command | ProtocolError:
    """A client frame as a command, or the error frame it deserves."""
    try:
        message = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        return ProtocolError("bad_json", f"the frame is not JSON: {exc}")
    except RecursionError:
        return ProtocolError("bad_json", "the frame nests its JSON too deep")
    try:
        checked(message)
    except BadText as exc:
        return ProtocolError(exc.code, str(exc))
    if not isinstance(message, dict) or not isinstance(message.get("op"), str):
        return ProtocolError("bad_message", "a frame must be a JSON object with an 'op' (a string)")
    op = message["op"]
    if op == "subscribe":
        return _subscribe(message)
    if op == "generate_report":
        if not isinstance(message.get("simulation_id"), str):
            return ProtocolError("bad_request", "generate_report needs a simulation_id (string)")
        return GenerateReport(message["simulation_id"])
    if op == "interview":
        return _interview(message)
    if op == "chat":
        return parse_chat(message)
    if op in HANDED_OVER:
        return _handed_over(op, message)
    return ProtocolError("unknown_op", f"unknown op {op!r}; use subscribe, generate_report, interview or chat")


def _handed_over(op: str, message: dict[str, Any]) -> HandedOver | ProtocolError:
    types = {"folder": str, "report_id": str, "at": int, "provider": str, "model": str, "max_tokens": int,
             "timeout_s": float, "force": bool}
    for key, kind in types.items():
        value = message.get(key)
        if (value is None and key in HANDED_OVER[op]) or (value is not None and not _fits(value, kind)):
            return ProtocolError("bad_request", f"{op} needs {', '.join(HANDED_OVER[op]) or 'nothing'}; "
                                                f"{key} must be a {'whole number >= 0' if kind is int else kind.__name__}")
    return HandedOver(op, **{key: message.get(key) for key in types})


def _fits(value: object, kind: type) -> bool:
    """`value` is a `kind` (a bool is no number here), and an int one a 64-bit count or position."""
    if isinstance(value, bool) != (kind is bool) or not isinstance(value, kind):
        return False
    return not isinstance(value, int) or 0 <= value < 2**63


def _subscribe(message: dict[str, Any]) -> Subscribe | ProtocolError:
    topics = message.get("topics", ["notifications"])
    if not isinstance(topics, list) or not topics or not set(topics) <= TOPICS:
        return ProtocolError("bad_topics", f"topics must be a non-empty list of {sorted(TOPICS)}, got {topics!r}")
    flt = message.get("filter") or {}
    if not isinstance(flt, dict) or set(flt) - {"report_id", "simulation_id"} or \
            any(not isinstance(v, str) for v in flt.values()):
        return ProtocolError("bad_filter", "filter may hold report_id and/or simulation_id, as strings")
    after = message.get("after")
    if after is not None and not _fits(after, int):
        return ProtocolError("bad_after", "after must be a position (integer >= 0) or null")
    return Subscribe(frozenset(topics), flt.get("report_id"), flt.get("simulation_id"), after or 0)


def _interview(message: dict[str, Any]) -> Interview | ProtocolError:
    agent, question = message.get("agent_id"), message.get("question")
    target = message.get("report_id") or message.get("simulation_id")
    if not isinstance(target, str):
        return ProtocolError("bad_request", "interview needs a simulation_id or a report_id")
    if isinstance(agent, bool) or not isinstance(agent, int) or not isinstance(question, str):
        return ProtocolError("bad_request", "interview needs agent_id (integer) and question (string)")
    platform = message.get("platform")
    if platform not in (None, "twitter", "reddit"):
        return ProtocolError("bad_request", "platform must be twitter, reddit or absent")
    return Interview(message.get("simulation_id"), message.get("report_id"), agent, question, platform)


def parse_chat(message: dict[str, Any]) -> Chat | ProtocolError:
    """A `chat` op: `report_id` and/or `chat_id`, a `question` (or `message`, as MiroFish names it), `history`."""
    report_id, chat_id = message.get("report_id"), message.get("chat_id")
    if any(v is not None and not isinstance(v, str) for v in (report_id, chat_id)) or not (report_id or chat_id):
        return ProtocolError("bad_request", "chat needs a report_id (string) or the chat_id of an open chat")
    question = message.get("question", message.get("message"))
    try:
        text = None if question is None else check_question(question)
        history = check_history(message.get("history", message.get("chat_history")))
    except UsageError as exc:
        return ProtocolError("bad_request", str(exc))
    return Chat(report_id, chat_id, text, history)


def matches(sub: Subscribe, recorded: Recorded, info: Standing | None) -> bool:
    """Whether an event concerns what the subscription filters on."""
    if sub.report_id is not None and recorded.stream != report_stream(sub.report_id):
        return False
    if sub.simulation_id is not None:
        own = recorded.stream == simulation_stream(sub.simulation_id)
        return own or (info is not None and info.simulation_id == sub.simulation_id)
    return True


def encode(frame: dict[str, Any]) -> bytes:
    """A frame as the UTF-8 JSON text sent on the socket."""
    return json.dumps(frame, ensure_ascii=False).encode()


class EventFrames:
    """One event's frames, each encoded once however many subscribers receive it."""

    def __init__(self, recorded: Recorded, info: Standing | None) -> None:
        self.recorded, self.info = recorded, info

    @cached_property
    def event(self) -> bytes:
        return encode(event_frame(self.recorded))

    @cached_property
    def notifications(self) -> list[bytes]:
        return [encode(frame) for frame in notifications(self.recorded, self.info)]

    def for_subscription(self, sub: Subscribe) -> list[bytes]:
        """Every frame this subscription gets for the event."""
        if self.recorded.position <= sub.after or not matches(sub, self.recorded, self.info):
            return []
        return ([self.event] if "events" in sub.topics else []) + \
            (self.notifications if "notifications" in sub.topics else [])


def event_frame(recorded: Recorded) -> dict[str, Any]:
    """An `event` frame: `type` names the frame, so the event's own type travels as `event_type`."""
    shape = recorded.as_json()
    shape["event_type"] = shape.pop("type")
    return {"type": "event", **shape}


RUN_NOTIFYING = frozenset({SimulationDiscovered.TYPE, SimulationGenerationStarted.TYPE, SimulationCompleted.TYPE})
NOTIFYING = CHANGES | {InterviewUnlocked.TYPE, InterviewAnswered.TYPE} | RUN_NOTIFYING  # told below


def notifies(recorded: Recorded) -> bool:
    """Whether the event makes notification frames: a dashboard reads the report view when it gets one."""
    return recorded.type in NOTIFYING


def notifications(recorded: Recorded, info: Standing | None) -> list[dict[str, Any]]:
    """section_ready, interview_unlocked, report_status and a run's frames derived from one event."""
    if recorded.type not in NOTIFYING:
        return []
    if recorded.type in RUN_NOTIFYING:
        return [run_notification(recorded)]
    event = recorded.event
    assert isinstance(event, ReportEvent)
    named = event.simulation_id if isinstance(event, ReportRequested | InterviewUnlocked) else None
    base = {"position": recorded.position, "report_id": event.report_id,
            "simulation_id": info.simulation_id if info else named}
    total = info.sections_total if info else 0
    out: list[dict[str, Any]] = []
    match event:
        case SectionCompleted():
            out.append({"type": "section_ready", **base, "section_index": event.section_index, "title": event.title,
                        "sections_total": total})
        case InterviewUnlocked():
            out.append({"type": "interview_unlocked", **base, "live_environment": event.live_environment})
        case InterviewAnswered():
            out.append({"type": "interview_answer", **base, "interview_id": event.interview_id,
                        "agent_id": event.agent_id, "answer": event.answer, "mode": event.mode,
                        "platform": event.platform})
    if recorded.type in CHANGES:
        out.append(report_status(event, base, info or Standing().after(event)))
    return out


def report_status(event: ReportEvent, base: dict[str, Any], standing: Standing) -> dict[str, Any]:
    """The `report_status` frame after `event`: the report's standing then (the status and progress the report
    view gives it), error, problems."""
    status = {"type": "report_status", **base, "status": standing.status}
    if isinstance(event, SectionCompleted | ReportCompleted):
        status["progress"] = standing.progress
    if isinstance(event, ReportFailed):
        status.update(progress=shown_progress(standing.status, standing.progress), error=event.error)
    if isinstance(event, SectionCompleted | ReportCompleted) and event.problems:
        status["problems"] = event.problems
    return status


def run_notification(recorded: Recorded) -> dict[str, Any]:
    """`simulation_discovered` (a new run, or a new generation of one: `restarted`) or `simulation_completed`."""
    d = recorded.data  # by key: a run's first event carries every agent's profile, too much to decode for 4 fields
    base = {"position": recorded.position, "simulation_id": d["simulation_id"], "generation": d["generation"]}
    if recorded.type == SimulationCompleted.TYPE:
        return {"type": "simulation_completed", **base, "platforms": d["platforms"],
                "all_rounds_ran": d["all_rounds_ran"]}
    return {"type": "simulation_discovered", **base, "restarted": recorded.type == SimulationGenerationStarted.TYPE,
            "requirement": d.get("requirement", "")}
