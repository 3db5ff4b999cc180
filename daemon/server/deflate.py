"""Websocket compression that leaves small frames as they are: zlib costs them more than it saves.

permessage-deflate marks each compressed message (RSV1); a message sent plain leaves
both sides' compression contexts untouched, so skipping it is allowed (RFC 7692 section 6).
Notifications are a few hundred bytes, so most frames skip zlib; big ones still shrink.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from websockets.extensions.base import Extension
from websockets.extensions.permessage_deflate import (
    PerMessageDeflate,
    ServerPerMessageDeflateFactory,
)
from websockets.frames import Frame, Opcode

MIN_COMPRESSED = 1024  # bytes: smaller messages go plain


class SmallFramesPlain(PerMessageDeflate):
    """permessage-deflate for messages of MIN_COMPRESSED bytes and more."""

    def encode(self, frame: Frame) -> Frame:
        if frame.opcode in (Opcode.TEXT, Opcode.BINARY) and frame.fin and len(frame.data) < MIN_COMPRESSED:
            return frame
        return super().encode(frame)


class SmallFramesPlainFactory(ServerPerMessageDeflateFactory):
    """Negotiates permessage-deflate as websockets does by default, then skips small frames."""

    def __init__(self) -> None:
        super().__init__(server_no_context_takeover=True, client_no_context_takeover=True, server_max_window_bits=12,
                         client_max_window_bits=12, compress_settings={"memLevel": 5})

    def process_request_params(self, params: Sequence[tuple[str, str | None]],
                               accepted_extensions: Sequence[Extension]) -> tuple[list[tuple[str, str | None]], Any]:
        response, agreed = super().process_request_params(params, accepted_extensions)
        return response, SmallFramesPlain(agreed.remote_no_context_takeover, agreed.local_no_context_takeover,
                                          agreed.remote_max_window_bits, agreed.local_max_window_bits,
                                          self.compress_settings)
