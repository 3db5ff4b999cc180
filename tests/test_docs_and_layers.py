"""Documentation and architecture checks: every event documented, imports pointing one way."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from simreportd.events.codec import decode, upcast
from simreportd.events.models import EVENT_TYPES, OutlinePlanned

ROOT = Path(__file__).resolve().parents[1]
IO_MODULES = {"anyio", "aiosqlite", "openai", "websockets", "watchfiles", "sqlite3", "socket", "asyncio", "os",
              "httpx", "subprocess", "time", "random", "uuid"}
PURE = ["agent/core.py", "agent/state.py", "agent/interpret.py", "agent/prompts.py", "agent/outline.py",
        "agent/toolspec.py", "agent/offline.py", "agent/chat.py", "agent/chat_prompts.py", "agent/offline_chat.py",
        "events/models.py", "events/codec.py", "simreportd/errors.py",
        "projections/base.py", "projections/simulation.py", "projections/report.py", "projections/trace.py",
        "daemon/ingest/parse.py", "daemon/ingest/state.py", "daemon/server/protocol.py"]


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("module", PURE)
def test_pure_modules_do_no_io(module: str) -> None:
    assert not imports(ROOT / module) & IO_MODULES
    assert ".now(" not in (ROOT / module).read_text(), "the clock belongs to the edges"


def test_only_the_store_imports_aiosqlite_in_events() -> None:
    users = [p.name for p in (ROOT / "events").glob("*.py") if "aiosqlite" in imports(p)]
    assert users == ["store.py"]


@pytest.mark.parametrize("layer, forbidden", [
    ("events", {"projections", "agent", "daemon", "simulator"}), ("projections", {"agent", "daemon", "simulator"}),
    ("agent", {"daemon", "simulator"}), ("simulator", {"events", "projections", "agent", "daemon"})])
def test_imports_point_one_way(layer: str, forbidden: set[str]) -> None:
    for path in (ROOT / layer).rglob("*.py"):
        source = path.read_text()
        for other in forbidden:
            assert f"simreportd.{other}" not in source, f"{path.name} imports the {other} layer"


def test_every_event_type_is_documented() -> None:
    catalogue = (ROOT / "docs" / "events.md").read_text()
    missing = [name for name in EVENT_TYPES if f"`{name}`" not in catalogue]
    assert missing == []


def test_outline_v1_is_upcast_to_section_objects() -> None:
    stored = {"report_id": "r", "title": "T", "summary": "S", "sections": ["One", "Two"]}
    assert upcast("OutlinePlanned", 1, stored)["sections"][1] == {"title": "Two", "description": ""}
    event = decode("OutlinePlanned", 1, stored)
    assert isinstance(event, OutlinePlanned) and [s.title for s in event.sections] == ["One", "Two"]
