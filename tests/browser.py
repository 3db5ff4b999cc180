"""Headless Chromium driven over the DevTools protocol with our own websockets client.

No extra dependency: the DevTools protocol is JSON over a websocket.
"""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from .conftest import TIMEOUT

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--remote-debugging-port=0", "--window-size=1280,1600"]


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


class Chromium:
    def __init__(self, profile: Path) -> None:
        self.profile = profile
        self.ids = itertools.count(1)
        self.ws: ClientConnection | None = None

    async def __aenter__(self) -> Chromium:
        binary = chromium_path()
        assert binary, "chromium is not installed (Debian package chromium)"
        self.process = subprocess.Popen([binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + TIMEOUT
        while not port_file.exists() or not port_file.read_text().strip():
            assert time.monotonic() < deadline and self.process.poll() is None, "chromium did not start"
            time.sleep(0.05)
        port = port_file.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=TIMEOUT) as response:
            page = next(t for t in json.load(response) if t["type"] == "page")
        self.ws = await connect(page["webSocketDebuggerUrl"], max_size=None)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.ws is not None:
            await self.ws.close()
        self.process.terminate()
        self.process.wait(timeout=TIMEOUT)

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        assert self.ws is not None
        call_id = next(self.ids)
        await self.ws.send(json.dumps({"id": call_id, "method": method, "params": params}))
        while True:
            message = json.loads(await self.ws.recv())
            if message.get("id") == call_id:
                if "error" in message:
                    raise AssertionError(f"{method}: {message['error']}")
                return message["result"]

    async def goto(self, url: str) -> None:
        await self.call("Page.navigate", url=url)

    async def evaluate(self, expression: str, wait: bool = False) -> Any:
        """The value of a JavaScript expression; with `wait`, of the promise it returns."""
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=wait)
        return result["result"].get("value")

    async def screenshot(self, path: Path) -> None:
        result = await self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(result["data"]))
