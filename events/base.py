"""The base of every event model, and the values several streams' events share."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict

Platform = Literal["twitter", "reddit"]


class DomainEvent(BaseModel):
    """Base of every event model: frozen, strict about unknown keys."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    SCHEMA_VERSION: ClassVar[int] = 1

    @property
    def type_name(self) -> str:
        return type(self).__name__

