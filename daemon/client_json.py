"""JSON from clients (HTTP bodies, websocket frames), refused when a string in it holds an unpaired surrogate.

JSON may spell a lone UTF-16 half (`"\\ud800"`); Python decodes it to a string that cannot be
encoded as UTF-8, so it would fail later, deep inside, wherever it reaches SQLite, a log line
or an answer (docs/protocol.md#security). It is refused here instead, at the edge, naming the
field: a 400 over HTTP, an `error` frame over the websocket, one log line a period.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from simreportd.errors import UsageError

from .server.edge import OncePerPeriod

log = logging.getLogger("simreportd.daemon.client_json")
refusals = OncePerPeriod(log, "refused %d request(s) whose JSON holds an unpaired surrogate")


class BadText(UsageError):
    """A string in a client's JSON that is not text (an unpaired surrogate): the request is refused."""

    code = "bad_text"


def checked(value: Any) -> Any:
    """`value` (parsed JSON) as it is, or BadText naming the first field whose text holds an unpaired surrogate."""
    try:
        json.dumps(value, ensure_ascii=False).encode()
        return value
    except UnicodeEncodeError:
        pass
    where = unpaired(value)
    refusals.count(f"{where} holds an unpaired surrogate")
    raise BadText(f"{where} holds an unpaired UTF-16 surrogate (a lone \\ud800-\\udfff): send it as text")


def unpaired(value: Any) -> str:
    """Where in `value` the first unpaired surrogate is (`message`, `chat_history[2].content`, `a key of x`)."""
    stack: list[tuple[str, Any]] = [("the body", value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str) and not _text(item):
            return where
        if isinstance(item, dict):
            prefix = "" if where == "the body" else where + "."
            for key, inner in item.items():
                if not _text(key):
                    return f"a key of {where}"
                stack.append((prefix + key, inner))
        elif isinstance(item, list):
            stack.extend((f"{where}[{n}]", inner) for n, inner in enumerate(item))
    return "the body"


def _text(item: str) -> bool:
    try:
        item.encode()
        return True
    except UnicodeEncodeError:
        return False
