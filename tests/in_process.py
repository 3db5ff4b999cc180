"""The daemon's ASGI app called in this process: a route test without a port, uvicorn or a fold child.

`InProcess` opens a real `Daemon` on a store and read models under tmp_path and runs its background work
(the report scheduler, the exporter, and the fold as a task of its own: `[service] fold = "inline"`, no
child process), builds the app the server serves (`daemon/server/asgi.py`, `build_app`) and hands
requests to it as ASGI messages: the edge, the guard, CORS and the routes run as they do behind uvicorn.
What only a socket shows (uvicorn's parsing, connection limits, websockets, slow clients) stays in the
tests that start a server (tests/daemon/test_server.py).
"""

from __future__ import annotations

import contextlib
import functools
import json
import shutil
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import anyio
import pytest

from simreportd.daemon.config import Config
from simreportd.daemon.server.asgi import build_app
from simreportd.daemon.server.fanout import Fanout
from simreportd.daemon.service import Daemon

from .conftest import TIMEOUT, make_config

HOST = "127.0.0.1:8765"  # the Host a client of the default [server] sends


def in_process_config(tmp_path: Path, **sections: dict) -> Config:
    """make_config's, folding inline: no fold child; reports are written only when asked for."""
    return make_config(tmp_path, **{"reports": {"auto": False}, "service": {"fold": "inline"}, **sections})


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode()

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Sent:
    """What the app sent for one request, as uvicorn would have written it."""

    status: int = 0
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    body: bytearray = field(default_factory=bytearray)
    done: anyio.Event = field(default_factory=anyio.Event)


class InProcess:
    """A daemon's parts open on tmp_path, and its ASGI app to call; an async context manager."""

    def __init__(self, config: Config, folders: list[Path]) -> None:
        self.config, self.folders = config, folders

    async def __aenter__(self) -> InProcess:
        self._stack = contextlib.AsyncExitStack()
        self.daemon = await self._stack.enter_async_context(Daemon(self.config, self.folders))
        await self.daemon.watcher.rescan()
        tasks = await self._stack.enter_async_context(anyio.create_task_group())
        self._stack.callback(tasks.cancel_scope.cancel)  # runs first: the work stops, then the daemon closes
        tasks.start_soon(functools.partial(self.daemon.run, ingest=False))
        await self.folded()  # what was ingested is in the read models before the first request
        self.app = build_app(self.daemon, Fanout(self.daemon), self.config.server)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.__aexit__(*exc)

    async def folded(self) -> None:
        """Wait until the read models hold what the log holds now (a route's answer reads them)."""
        await self.daemon.views.wait_for(await self.daemon.store.last_position(), timeout=TIMEOUT)

    async def request(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None,
                      raw_headers: list[tuple[str, str]] | None = None) -> Answer:
        """One HTTP request to the app: `body` is sent as JSON; `raw_headers` are sent as given (doubled ones too)."""
        data = b"" if body is None else json.dumps(body).encode()
        sent_headers = {"host": HOST, **({"content-type": "application/json"} if body is not None else {}),
                        **{k.lower(): v for k, v in (headers or {}).items()}}
        listed = [*sent_headers.items(), *((k.lower(), v) for k, v in raw_headers or [])]
        if data:
            listed.append(("content-length", str(len(data))))
        where, _, query = path.partition("?")
        scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.4"}, "http_version": "1.1",
                 "method": method, "scheme": "http", "path": unquote(where), "raw_path": where.encode(),
                 "query_string": query.encode(), "root_path": "", "client": ("127.0.0.1", 50000),
                 "server": ("127.0.0.1", 8765), "state": {},
                 "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in listed]}
        sent = Sent()
        messages = [{"type": "http.request", "body": data, "more_body": False}]

        async def receive() -> dict[str, Any]:
            if messages:
                return messages.pop(0)
            await sent.done.wait()  # the client is there until the answer is whole
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                sent.status, sent.headers = message["status"], list(message.get("headers", []))
            elif message["type"] == "http.response.body":
                sent.body += message.get("body", b"")
                if not message.get("more_body", False):
                    sent.done.set()

        await self.app(scope, receive, send)
        named = {k.decode("latin-1").title(): v.decode("latin-1") for k, v in sent.headers}
        return Answer(sent.status, named, bytes(sent.body))

    async def get(self, path: str, **headers: str) -> Answer:
        return await self.request("GET", path, headers=headers)

    async def post(self, path: str, body: Any) -> Answer:
        return await self.request("POST", path, body)


def written_once(base: Path) -> str:
    """A 12-agent run simulated under `base`/sims/sim_small and its report written in this process: the report's
    id. A module's tests each take a copy (`copy_of`) instead of writing their own."""
    from simreportd.simulator.simulate import simulate

    folder = base / "sims" / "sim_small"
    simulate(folder, agents=12, rounds=6, seed=3)

    async def write() -> str:
        async with InProcess(in_process_config(base), [folder]) as app:
            report_id = await app.daemon.reports.request(folder.name)
            await app.daemon.reports.wait(report_id)  # the daemon's own scheduler writes it, in this process
            await app.folded()
            await app.daemon.exporter.flush()
        return report_id

    return anyio.run(write)


@pytest.fixture(scope="module", name="template")
def written_template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A module's report, written once (`written_once`): (its base folder, report_id)."""
    base = tmp_path_factory.mktemp("written")
    return base, written_once(base)


@pytest.fixture(name="small_sim")
def template_sim(template: tuple[Path, str]) -> Path:
    """The template's simulation folder, as `small_sim` in the modules that take these fixtures: their tests copy
    its store, and write to the folder only what they take away again."""
    return template[0] / "sims" / "sim_small"


def copy_of(template: Path, tmp_path: Path, **sections: dict) -> Config:
    """A config on a copy of `template`'s store, read models and report folders, under tmp_path, watching the
    template's simulations where they are (a report written once serves every test that only reads it)."""
    for part in ("state", "reports"):
        shutil.copytree(template / part, tmp_path / part)
    config = in_process_config(tmp_path, **sections)
    return config.model_copy(update={"watch": config.watch.model_copy(update={"roots": [template / "sims"]})})


async def acall(target: InProcess | str, path: str, body: Any = None,
                method: str | None = None) -> tuple[int, Any, dict[str, str]]:
    """(status, parsed JSON or text, headers) of one request: to the app in this process, or over HTTP to the
    server at `target` (host:port) for the tests that need a real one."""
    method = method or ("POST" if body is not None else "GET")
    if isinstance(target, str):
        status, headers, raw = await anyio.to_thread.run_sync(_over_http, target, path, body, method)
    else:
        answer = await target.request(method, path, body)
        status, headers, raw = answer.status, answer.headers, answer.body
    try:
        return status, json.loads(raw), headers
    except ValueError:
        return status, raw.decode(), headers


def _over_http(base: str, path: str, body: Any, method: str) -> tuple[int, dict[str, str], bytes]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"http://{base}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()
