"""Hand a CLI command's work over to the daemon that holds the store (docs/architecture.md#one-writer-per-store).

The daemon's lock file names the URL it serves; the command is sent there as one websocket
op (`request_report`, `resume`, `fork`, `rebuild`, `interview`, `chat`), and the daemon answers with
one `command_result` (or `error`) frame. The CLI then follows the report in the shared log.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import anyio
from websockets.asyncio.client import connect
from websockets.exceptions import WebSocketException

from simreportd.daemon.config import Config
from simreportd.daemon.lock import Holder, read_holder
from simreportd.errors import HandoverFailed

ANSWERS = ("command_result", "interview_answer", "chat_opened")
ANSWER_TIMEOUT_S = 600.0  # an interview answered by a slow model may take minutes


def running_daemon(config: Config) -> Holder | None:
    """The daemon that holds the store and serves a port, if there is one."""
    holder = read_holder(config.store.path)
    return holder if holder is not None and holder.url else None


async def send(holder: Holder, config: Config, message: dict[str, Any],
               on_frame: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Send one op to the daemon; return its answer (`command_result`, `interview_answer`, `chat_opened` or the
    `chat_answer` that is `done`); `on_frame` sees the frames before it (a chat's steps)."""
    url = urlsplit(holder.url or "")
    headers = {"Authorization": f"Bearer {config.server.token}"} if config.server.token else {}
    try:
        with anyio.fail_after(ANSWER_TIMEOUT_S):
            async with connect(f"ws://{url.netloc}/ws", additional_headers=headers, max_size=None) as ws:
                await ws.send(json.dumps(message))
                async for text in ws:
                    frame = json.loads(text)
                    if frame.get("type") == "error":
                        raise HandoverFailed(f"the running daemon refused: {frame.get('message')}", frame.get("code"))
                    if frame.get("type") in ANSWERS or (frame.get("type") == "chat_answer" and frame.get("done")):
                        return dict(frame)
                    if on_frame is not None:
                        on_frame(frame)
    except (OSError, WebSocketException, TimeoutError) as exc:
        raise HandoverFailed(f"the daemon {holder.describe()} holds the store but did not answer at {holder.url} "
                             f"({exc or type(exc).__name__}); check that it runs, or stop it") from exc
    raise HandoverFailed(f"the daemon at {holder.url} closed the connection without an answer")
