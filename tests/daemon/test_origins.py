"""Out of the box, MiroFish's frontend on its dev server may use the daemon (its origins are allowed by
default: `frontend/vite.config.js` serves it on port 3000), and a page on any other origin is told in the
log once, with the setting that would allow it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simreportd.daemon.config import load_config

from ..stories.test_edge import CHAT, collecting, raw, request
from .test_server import Running, server_config

pytestmark = pytest.mark.anyio

PREFLIGHT = ("Access-Control-Request-Method: POST", "Access-Control-Request-Headers: content-type")


def test_the_default_configuration_allows_mirofish_frontend_and_nothing_else() -> None:
    assert load_config(None, {}).server.allowed_origins == ["http://localhost:3000", "http://127.0.0.1:3000"]
    shipped = load_config(Path(__file__).parents[2] / "config.toml", {})
    assert shipped.server.allowed_origins == load_config(None, {}).server.allowed_origins


async def test_mirofish_frontend_is_answered_by_default_and_another_origin_is_logged_once(
        tmp_path: Path, small_sim: Path) -> None:
    with collecting("simreportd.daemon.server.origins") as told:
        async with Running(server_config(tmp_path), [small_sim]) as r:
            for frontend in ("http://localhost:3000", "http://127.0.0.1:3000"):
                status, headers, _ = await raw(r.base, request("OPTIONS", "/api/report/chat", r.base,
                                                               f"Origin: {frontend}", *PREFLIGHT))
                assert status == 200 and headers["access-control-allow-origin"] == frontend
                status, headers, body = await raw(r.base, request(
                    "POST", "/api/report/chat", r.base, f"Origin: {frontend}", "Content-Type: application/json",
                    body=CHAT))
                assert status == 404 and headers["access-control-allow-origin"] == frontend  # answered, no such run
            assert not told.records
            other = "Origin: http://localhost:5173"
            for _ in range(3):
                status, headers, _ = await raw(r.base, request("OPTIONS", "/api/report/chat", r.base, other,
                                                               *PREFLIGHT))
                assert "access-control-allow-origin" not in headers
            status, _, body = await raw(r.base, request("POST", "/api/report/chat", r.base, other,
                                                        "Content-Type: application/json", body=CHAT))
            assert status == 403 and json.loads(body)["success"] is False  # still no spending from elsewhere
    assert len(told.records) == 1
    line = told.records[0].getMessage()
    assert "http://localhost:5173" in line and "[server] allowed_origins" in line
