"""Turn event models into stored rows and back, lifting old schema versions on the way in."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import UnknownEventType
from .models import EVENT_ADAPTER, EVENT_TYPES, DomainEvent

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]

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


def upcast(type_name: str, schema_version: int, data: dict[str, Any]) -> dict[str, Any]:
    """Lift stored `data` of `type_name` from `schema_version` to the model's current version."""
    model = EVENT_TYPES.get(type_name)
    if model is None:
        raise UnknownEventType(type_name, schema_version)
    version = schema_version
    while version < model.SCHEMA_VERSION:
        data = UPCASTERS[(type_name, version)](data)
        version += 1
    return data


def encode(event: DomainEvent) -> str:
    """Serialise an event's data (everything but its type) as compact, key-sorted JSON."""
    data = event.model_dump(mode="json", exclude={"type"})
    return dumps(data)


def dumps(value: Any) -> str:
    """The one JSON spelling used for stored data: compact, sorted keys, raw UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def decode(type_name: str, schema_version: int, data: dict[str, Any]) -> DomainEvent:
    """Validate stored data into its current event model."""
    data = upcast(type_name, schema_version, data)
    return EVENT_ADAPTER.validate_python({**data, "type": type_name})


@dataclass(frozen=True, slots=True)
class Recorded:
    """An event as stored: its place in the log plus its data, decoded on first use."""

    position: int
    stream: str
    version: int
    type: str
    schema_version: int
    event_id: str
    recorded_at: str
    data: dict[str, Any]
    meta: dict[str, Any]
    _event: list[DomainEvent] = field(default_factory=list, repr=False, compare=False)

    @property
    def event(self) -> DomainEvent:
        """The decoded, upcast event model (cached)."""
        if not self._event:
            self._event.append(decode(self.type, self.schema_version, self.data))
        return self._event[0]

    def as_json(self) -> dict[str, Any]:
        """The public JSON shape used by `simreportd events` and the websocket feed."""
        return {
            "position": self.position,
            "stream": self.stream,
            "version": self.version,
            "type": self.type,
            "recorded_at": self.recorded_at,
            "data": self.data,
        }
