"""The deployment the README gives a MiroFish user, run for real: Debian's nginx with docs/deploy/nginx-mirofish.conf.

MiroFish's frontend sends every call to one base URL (`frontend/src/api/index.js`, line 5:
`VITE_API_BASE_URL`), so one origin must answer both MiroFish's backend routes and our report
routes. Through the shipped nginx file: the report routes and our websocket reach simreportd,
another `/api/` route reaches the stand-in for MiroFish's backend, and a frontend path gets the
frontend's index.html.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from ..conftest import PYTHON, TIMEOUT, send_json, write_config
from ..processes import cli, wait_until

NGINX = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin")
pytestmark = pytest.mark.skipif(NGINX is None, reason="nginx is not installed (.ci/run installs Debian's nginx)")
SHIPPED = Path(__file__).parents[2] / "docs" / "deploy" / "nginx-mirofish.conf"
PER_USER = 3  # [server] max_connections_per_client behind the proxy, which [server] trusted_proxies lists


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Backend(BaseHTTPRequestHandler):
    """Stands in for MiroFish's Flask backend: every answer says who answered."""

    def do_GET(self) -> None:  # noqa: N802 (the http.server hook's name)
        send_json(self, {"success": True, "data": {"answered_by": "mirofish-backend", "path": self.path}})

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def proxied(tmp_path: Path, small_sim: Path) -> Iterator[tuple[str, str]]:
    """(the proxy's base URL, the id of a completed report) with simreportd, the stand-in and nginx running."""
    ours, theirs, front = free_port(), free_port(), free_port()
    config = write_config(tmp_path, auto=False, text=f"trusted_proxies = [\"127.0.0.1\"]\n"
                          f"max_connections_per_client = {PER_USER}\n").read_text().replace("port = 0", f"port = {ours}")
    (tmp_path / "config.toml").write_text(config)
    done = subprocess.run([PYTHON, "-m", "simreportd", "-c", str(tmp_path / "config.toml"), "report", str(small_sim),
                           "--wait"], capture_output=True, text=True, timeout=300)
    report_id = done.stdout.strip().splitlines()[-1]
    backend = ThreadingHTTPServer(("127.0.0.1", theirs), Backend)
    threading.Thread(target=backend.serve_forever, daemon=True).start()
    daemon = cli("-c", str(tmp_path / "config.toml"), "run")
    wait_until(lambda: _answers(f"http://127.0.0.1:{ours}/healthz"), "simreportd to serve")
    nginx = _start_nginx(tmp_path, ours, theirs, front)
    try:
        wait_until(lambda: _answers(f"http://127.0.0.1:{front}/api/report/list"), "nginx to serve")
        yield f"127.0.0.1:{front}", report_id
    finally:
        nginx.terminate()
        nginx.wait(timeout=TIMEOUT)
        backend.shutdown()
        daemon.terminate()


def _start_nginx(tmp_path: Path, ours: int, theirs: int, front: int) -> subprocess.Popen:
    """nginx in the foreground, one process, with the shipped server block and only its addresses replaced."""
    dist = tmp_path / "dist"
    dist.mkdir()
    (dist / "index.html").write_text("<!doctype html><title>MiroFish frontend</title>")
    block = (SHIPPED.read_text().replace("127.0.0.1:8765", f"127.0.0.1:{ours}")
             .replace("127.0.0.1:5001", f"127.0.0.1:{theirs}").replace("127.0.0.1:3000", f"127.0.0.1:{front}")
             .replace("/srv/mirofish/frontend/dist", str(dist)))
    (tmp_path / "site.conf").write_text(block)
    temp = tmp_path / "nginx-temp"
    temp.mkdir()
    (tmp_path / "nginx.conf").write_text(
        f"daemon off; master_process off; pid {tmp_path}/nginx.pid; error_log {tmp_path}/nginx-error.log;\n"
        "events {}\nhttp {\n access_log off;\n"
        + "".join(f" {kind}_temp_path {temp}/{kind};\n" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        + f" include {tmp_path}/site.conf;\n}}\n")
    return subprocess.Popen([str(NGINX), "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=TIMEOUT) as answer:
        return json.loads(answer.read())


def test_one_origin_serves_our_report_routes_mirofish_backend_routes_and_the_frontend(proxied: tuple[str, str]) -> None:
    base, report_id = proxied
    report = get_json(f"http://{base}/api/report/{report_id}")
    assert report["success"] and report["data"]["report_id"] == report_id and report["data"]["status"] == "completed"
    log = get_json(f"http://{base}/api/report/{report_id}/agent-log?from_line=0")["data"]
    assert log["total_lines"] == len(log["logs"]) > 0
    theirs = get_json(f"http://{base}/api/simulation/sim_small")
    assert theirs["data"]["answered_by"] == "mirofish-backend"
    with urllib.request.urlopen(f"http://{base}/report/{report_id}", timeout=TIMEOUT) as page:
        assert b"MiroFish frontend" in page.read()
    with urllib.request.urlopen(f"http://{base}/simreportd/", timeout=TIMEOUT) as page:
        assert b"<html" in page.read().lower()


def test_our_dashboard_websocket_is_upgraded_through_the_proxy(proxied: tuple[str, str]) -> None:
    base, report_id = proxied

    async def subscribe() -> list[dict]:
        async with connect(f"ws://{base}/ws") as ws:
            await ws.send(json.dumps({"op": "subscribe", "topics": ["notifications"], "after": 0}))
            frames = []
            while not frames or frames[-1]["type"] != "caught_up":
                frames.append(json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT)))
            return frames

    frames = asyncio.run(subscribe())
    assert any(f["type"] == "section_ready" and f["report_id"] == report_id for f in frames)


def test_behind_the_proxy_each_user_has_a_connection_limit_of_their_own(proxied: tuple[str, str]) -> None:
    """Users at 127.0.0.2 and 127.0.0.3 reach simreportd only through nginx (whose address is 127.0.0.1):
    the first, holding its limit of websockets, is refused one more (1013); the second is still served."""
    base, _ = proxied

    async def opened(source: str) -> Any:
        return await connect(f"ws://{base}/ws", local_addr=(source, 0), open_timeout=TIMEOUT)

    async def served(ws: Any) -> bool:
        try:
            await ws.send(json.dumps({"op": "subscribe", "topics": ["notifications"], "after": 0}))
            while json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))["type"] != "caught_up":
                pass
            return True
        except ConnectionClosed as exc:
            assert exc.rcvd is not None and exc.rcvd.code == 1013 and "max_connections_per_client" in exc.rcvd.reason
            return False

    async def crowd() -> tuple[list[bool], bool]:
        held = [await opened("127.0.0.2") for _ in range(PER_USER + 1)]
        try:
            return [await served(ws) for ws in held], await served(await opened("127.0.0.3"))
        finally:
            for ws in held:
                await ws.close()

    first, second = asyncio.run(crowd())
    assert first == [True] * PER_USER + [False] and second is True
