"""Turn event models into stored rows and back, lifting old schema versions on the way in."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, NamedTuple

from pydantic_core import from_json

from simreportd.errors import UnknownEventType

from .ids import id_text
from .models import EVENT_ADAPTER, EVENT_TYPES, AgentActed, DomainEvent, acted_fields
from .positions import Position

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]
Form = Callable[[dict[str, Any], str], dict[str, Any]]  # (stored data, its stream) -> the model's fields

# (type, from_version) -> function lifting `data` to from_version + 1.
UPCASTERS: dict[tuple[str, int], Upcaster] = {}


def upcaster(type_name: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
    """Register a function that lifts `type_name` data from `from_version` to the next version."""

    def register(fn: Upcaster) -> Upcaster:
        UPCASTERS[(type_name, from_version)] = fn
        return fn

    return register


@upcaster("OutlinePlanned", 1)
def _outline_sections_become_objects(data: dict[str, Any]) -> dict[str, Any]:
    sections = [s if isinstance(s, dict) else {"title": str(s), "description": ""} for s in data["sections"]]
    return {**data, "sections": sections}


# (type, version) -> function reading a stored form that a maker writes itself, never the model, into the
# model's fields, with the stream it is stored in (which may imply some of them): an action's line as ingest
# stores it (docs/events.md#agent-actions).
FORMS: dict[tuple[str, int], Form] = {("AgentActed", AgentActed.LINE_VERSION): acted_fields,
                                      ("AgentActed", AgentActed.ACTION_VERSION): acted_fields}


def upcast(type_name: str, schema_version: int, data: dict[str, Any], stream: str = "") -> dict[str, Any]:
    """Lift stored `data` of `type_name` (stored in `stream`) from `schema_version` to the model's current
    version."""
    model = EVENT_TYPES.get(type_name)
    if model is None:
        raise UnknownEventType(type_name, schema_version)
    if (form := FORMS.get((type_name, schema_version))) is not None:
        return form(data, stream)
    version = schema_version
    while version < model.SCHEMA_VERSION:
        data = UPCASTERS[(type_name, version)](data)
        version += 1
    return data


class Encoded(NamedTuple):
    """An event its maker serialised itself, checked as its form needs: stored as it is.

    Ingest makes one per action line, the line itself with a few keys put in front (`FORMS`): building a
    model and serialising it again were a fifth of the time a line cost. `type_name` and `SCHEMA_VERSION` read
    as on a model.
    """

    type_name: str
    data: str
    SCHEMA_VERSION: int


_TYPE = {"type"}  # never changed: one set for every call


def encode(event: DomainEvent | Encoded) -> str:
    """Serialise an event's data (everything but its type) as compact JSON, in field order: what
    `model_dump_json` writes, by its serializer directly (a third faster, on every ingested line)."""
    if isinstance(event, Encoded):
        return event.data
    return event.__pydantic_serializer__.to_json(event, exclude=_TYPE).decode()


def decode(type_name: str, schema_version: int, data: dict[str, Any], stream: str = "") -> DomainEvent:
    """Validate stored data (of `stream`: what its data leaves out, it implies) into its current event model."""
    data = upcast(type_name, schema_version, data, stream)
    return EVENT_ADAPTER.validate_python({**data, "type": type_name})


def loads(text: str) -> Any:
    """`json.loads`, by pydantic-core's parser: twice as fast, and the fold decodes every event it reads. Not
    orjson's, though as fast: it reads an int past 64 bits as a float, and the log keeps what it was given."""
    try:
        return from_json(text)
    except ValueError:  # what only Python's parser takes (a lone surrogate escape): as json.loads reads it
        return json.loads(text)


# An event as a plain tuple, in `Recorded`'s argument order: (position, stream, version, type, schema_version,
# event_id, recorded_at, data, meta), its data and meta as stored text.
RecordedRow = tuple[int, str, int, str, int, str | bytes, str, str, str]


class Recorded:
    """An event as stored: its place in the log, and its data, parsed and decoded only when used.

    Decoding is lazy because most readers need only a few fields: a projection reads
    `data`, a subscriber filtering by type reads neither.
    """

    __slots__ = ("position", "stream", "version", "type", "schema_version", "_event_id", "recorded_at",
                 "raw_data", "raw_meta", "_data", "_event")

    def __init__(self, position: int, stream: str, version: int, type: str, schema_version: int,  # noqa: A002
                 event_id: str | bytes, recorded_at: str, raw_data: str, raw_meta: str = "{}") -> None:
        self.position, self.stream, self.version, self.type = Position(position), stream, version, type
        self.schema_version, self._event_id, self.recorded_at = schema_version, event_id, recorded_at
        self.raw_data, self.raw_meta = raw_data, raw_meta
        self._data: dict[str, Any] | None = None
        self._event: DomainEvent | None = None

    def __repr__(self) -> str:
        return f"Recorded(position={self.position}, stream={self.stream!r}, type={self.type!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Recorded) and (self.position, self.event_id, self.raw_data) == (
            other.position, other.event_id, other.raw_data)

    __hash__ = None  # type: ignore[assignment]

    @property
    def event_id(self) -> str:
        """The id in its text form (the SQLite store reads its 16 bytes: made text only when asked)."""
        event_id = self._event_id
        if isinstance(event_id, bytes):
            self._event_id = event_id = id_text(event_id)
        return event_id

    @property
    def data(self) -> dict[str, Any]:
        """The stored JSON data (as written: not upcast)."""
        if self._data is None:
            self._data = loads(self.raw_data)
        return self._data

    @property
    def meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = json.loads(self.raw_meta)
        return meta

    @property
    def event(self) -> DomainEvent:
        """The decoded, upcast event model (cached)."""
        if self._event is None:
            model = EVENT_TYPES.get(self.type)
            if model is not None and model.SCHEMA_VERSION == self.schema_version:
                self._event = model.model_validate_json(self.raw_data)  # fast path: no dict in between
            else:
                self._event = decode(self.type, self.schema_version, self.data, self.stream)
        return self._event

    def as_json(self) -> dict[str, Any]:
        """The public JSON shape used by `simreportd events` and the websocket feed; `meta` holds the
        correlation and causation ids that link an event to the work and the event it answers."""
        return {
            "position": self.position,
            "stream": self.stream,
            "version": self.version,
            "type": self.type,
            "recorded_at": self.recorded_at,
            "data": self.data,
            "event_id": self.event_id,
            "meta": self.meta,
        }
