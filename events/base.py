"""The base of every event model, and the values several streams' events share."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

Platform = Literal["twitter", "reddit"]
ToolProtocol = Literal["native", "text"]  # how tool calls travel: the API's own field, or tags in the text


class DomainEvent(BaseModel):
    """Base of every event model: frozen, strict about unknown keys."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    SCHEMA_VERSION: ClassVar[int] = 1
    # The type name its stored events carry (`Recorded.type`), its `type` field's value: what a reader that
    # has not decoded an event compares with (`recorded.type == AgentActed.TYPE`), never a string literal.
    TYPE: ClassVar[str]

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        field = cls.model_fields.get("type")
        if field is not None:  # the event models; their shared bases (ReportEvent, ...) have no type
            cls.TYPE = field.default

    @property
    def type_name(self) -> str:
        return type(self).__name__

