"""uvicorn is touched in one module, and every part of it that module relies on is listed here.

`daemon/server/connections.py` subclasses uvicorn's server and protocols and uses attributes uvicorn does not
document. An upgrade that renames or drops one must fail here, naming it, not somewhere in a flood test.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
from pathlib import Path

import pytest
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from uvicorn.server import Server, ServerState

from simreportd.daemon.server import connections

ROOT = Path(__file__).resolve().parents[2]
THE_MODULE = ROOT / "daemon" / "server" / "connections.py"

# (class, methods we override or call, attributes set when an instance is made, attributes set later)
RELIED_ON = [
    (Server, ["capture_signals", "startup", "serve"], ["server_state", "should_exit", "force_exit"], []),
    (H11Protocol, ["connection_made", "connection_lost", "on_response_complete", "handle_websocket_upgrade",
                   "send_400_response"], ["app_state", "connections", "loop"], ["transport", "client", "cycle"]),
    (WebSocketsSansIOProtocol, ["run_asgi", "send"],
     ["app_state", "conn", "handshake_complete", "close_sent", "disconnected", "writable"], ["transport", "scope"]),
]


async def app(scope: object, receive: object, send: object) -> None:  # a config needs an app to load
    raise AssertionError("never called")


def made(cls: type, loop: asyncio.AbstractEventLoop) -> object:
    """An instance of one of uvicorn's classes, made as uvicorn makes it."""
    config = Config(app, lifespan="off", log_config=None)
    if cls is Server:
        return Server(config)
    config.load()
    return cls(config, ServerState(), {}, loop)


@pytest.mark.parametrize("cls, methods, attributes, later", RELIED_ON, ids=lambda v: getattr(v, "__name__", ""))
def test_every_part_of_uvicorn_relied_on_is_there(cls: type, methods: list[str], attributes: list[str],
                                                  later: list[str]) -> None:
    assert [m for m in methods if not callable(getattr(cls, m, None))] == []
    loop = asyncio.new_event_loop()
    try:
        instance = made(cls, loop)
        assert [a for a in attributes if not hasattr(instance, a)] == []
    finally:
        loop.close()
    source = "".join(inspect.getsource(c) for c in cls.__mro__ if c.__module__.startswith("uvicorn"))
    assert [a for a in later if f"self.{a} =" not in source and f"self.{a}: " not in source] == []


def test_server_state_keeps_its_connections_and_tasks_in_sets() -> None:
    state = ServerState()
    assert isinstance(state.connections, set) and isinstance(state.tasks, set)


def test_the_embedded_server_takes_every_setting_it_is_given() -> None:
    config = connections.server_config(app, limits=None, ws_max_size=1 << 20)  # type: ignore[arg-type]
    assert (config.backlog, config.ws_max_size, config.server_header) == (connections.ACCEPT_BURST, 1 << 20, False)
    assert config.ws is connections.FramesProtocol and issubclass(config.http, connections.EdgeH11)  # type: ignore[arg-type]


def test_only_the_connections_module_imports_uvicorn() -> None:
    importers = []
    for layer in ("events", "projections", "analysis", "agent", "daemon", "simreportd"):
        for path in (ROOT / layer).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                if any(n == "uvicorn" or n.startswith("uvicorn.") for n in names):
                    importers.append(str(path.relative_to(ROOT)))
    assert sorted(set(importers)) == [str(THE_MODULE.relative_to(ROOT))]
