"""Documentation and architecture checks: every event documented, imports pointing one way, and the design
cited from code is in the repository (docs/README.md)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from simreportd import errors
from simreportd.events.codec import decode, upcast
from simreportd.events.models import EVENT_TYPES, OutlinePlanned

ROOT = Path(__file__).resolve().parents[2]
IO_MODULES = {"anyio", "aiosqlite", "openai", "websockets", "watchfiles", "sqlite3", "socket", "asyncio", "os",
              "httpx", "subprocess", "time", "random", "uuid"}
PURE = ["agent/report/core.py", "agent/report/effects.py", "agent/report/llm_calls.py", "agent/report/sections.py",
        "agent/report/verdicts.py", "agent/report/state.py", "agent/report/interpret.py", "agent/report/prompts.py",
        "agent/report/outline.py", "agent/tools/toolspec.py", "agent/offline/offline.py", "agent/findings/facts.py",
        "agent/findings/statements.py", "agent/findings/plan.py", "agent/findings/phrases.py",
        "agent/offline/offline_chat.py", "agent/report/guided.py", "agent/report/stance_labels.py",
        "agent/report/probe.py", "daemon/ingest/rounds.py", "agent/chat/chat_core.py", "agent/chat/chat_state.py",
        "agent/chat/chat_prompts.py", "events/models.py", "events/base.py", "events/report_events.py",
        "events/chat_events.py", "events/codec.py", "simreportd/errors.py", "projections/projection.py",
        "projections/simulation.py", "projections/report.py", "projections/trace.py", "daemon/ingest/parse.py",
        "daemon/ingest/ingest_state.py", "daemon/server/protocol.py"]


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


def test_callers_reach_the_store_through_the_events_face() -> None:
    """The contract, its values and the backends are imported from `simreportd.events`, not its modules."""
    import simreportd.events as face

    deep = re.compile(r"from simreportd\.events\.(?:store|log|contract|memory|postgres) import ([\w, ]+)")
    reaching = [f"{path.relative_to(ROOT)}: {name.strip()}"
                for layer in ("projections", "analysis", "agent", "daemon", "simreportd")
                for path in (ROOT / layer).rglob("*.py")
                for names in deep.findall(path.read_text(encoding="utf-8"))
                for name in names.split(",") if name.strip() in face.__all__]
    assert reaching == []


@pytest.mark.parametrize("layer, forbidden", [
    ("events", {"projections", "analysis", "agent", "daemon", "simulator"}),
    ("projections", {"analysis", "agent", "daemon", "simulator"}), ("analysis", {"agent", "daemon", "simulator"}),
    ("agent", {"daemon", "simulator"}), ("simulator", {"events", "projections", "analysis", "agent", "daemon"})])
def test_imports_point_one_way(layer: str, forbidden: set[str]) -> None:
    for path in (ROOT / layer).rglob("*.py"):
        source = path.read_text()
        for other in forbidden:
            assert f"simreportd.{other}" not in source, f"{path.name} imports the {other} layer"


LAYER_PACKAGES = {"events": "simreportd.events", "projections": "simreportd.projections",
                  "analysis": "simreportd.analysis", "agent": "simreportd.agent",
                  "daemon": "simreportd.daemon", "simulator": "simreportd.simulator", "simreportd": "simreportd"}


def module_name(path: Path, root: Path = ROOT) -> str:
    """The installed name of a module file: `daemon/server/app.py` is `simreportd.daemon.server.app`."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    parts = parts[:-1] if parts[-1] == "__init__" else parts
    return ".".join([LAYER_PACKAGES[parts[0]], *parts[1:]])


def imported_modules(path: Path, known: set[str], root: Path = ROOT) -> set[str]:
    """The modules of `known` that `path` imports, absolutely or relatively, at module level, under
    TYPE_CHECKING or inside a function alike."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # `from .x import y` in package a.b is a.b.x; `from .. import y`, a
                outer = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(outer + ([base] if base else []))
            found.update([base, *(f"{base}.{a.name}" for a in node.names)])
    return found & known


def import_circles(layers: list[str], root: Path = ROOT) -> list[list[str]]:
    """Every module of `layers` that can reach itself again by following imports, with the path back."""
    files = {module_name(p, root): p for layer in layers for p in (root / layer).rglob("*.py")}
    graph = {name: imported_modules(path, set(files), root) - {name} for name, path in files.items()}
    circles = []
    for start in sorted(graph):
        paths, seen = [[start]], {start}
        while paths:
            path = paths.pop()
            for nxt in sorted(graph[path[-1]]):
                if nxt == start:
                    circles.append([*path, start])
                elif nxt not in seen:
                    seen.add(nxt)
                    paths.append([*path, nxt])
    return circles


@pytest.mark.parametrize("layer", ["events", "projections", "analysis", "agent", "daemon"])
def test_no_import_circle_within_a_layer(layer: str) -> None:
    assert import_circles([layer]) == []


def test_no_import_circle_in_simreportd() -> None:
    """Across the layers too: a module importing one of an outer layer, late or for types, can close a circle."""
    assert import_circles([*LAYER_PACKAGES]) == []


def private_imports(layers: list[str], root: Path = ROOT) -> list[str]:
    """`module: name` for every `_private` name a module of `layers` imports from another module of ours."""
    found = []
    for layer in layers:
        for path in sorted((root / layer).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("simreportd")):
                    found += [f"{module_name(path, root)}: {a.name}" for a in node.names
                              if a.name.startswith("_") and not a.name.startswith("__")]
    return found


def test_no_module_imports_a_private_name() -> None:
    """What two modules share is public: a module that reaches for another's `_helper` is sharing by accident
    (the analysis lives in agent/findings/ for that reason, not in the offline writer)."""
    assert private_imports([*LAYER_PACKAGES]) == []


def test_the_private_import_check_finds_one(tmp_path: Path) -> None:
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "a.py").write_text("from .b import _helper, public\nfrom simreportd.agent.c import _d\n")
    assert private_imports(["agent"], tmp_path) == ["simreportd.agent.a: _helper", "simreportd.agent.a: _d"]


def test_the_circle_check_finds_a_circle(tmp_path: Path) -> None:
    """A circle through a relative import, one under TYPE_CHECKING and one inside a function is found."""
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "a.py").write_text("from .b import x\n")
    (tmp_path / "agent" / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                             "    from simreportd.agent import c\n")
    (tmp_path / "agent" / "c.py").write_text("def f():\n    from simreportd.agent.a import y\n")
    assert import_circles(["agent"], tmp_path)[0] == ["simreportd.agent.a", "simreportd.agent.b",
                                                       "simreportd.agent.c", "simreportd.agent.a"]


RAW_READ = re.compile(r"\b(?!frame\b)\w+(\[\d+\])?\.data\b(?!_)")


def raw_reads(path: Path, root: Path = ROOT) -> list[str]:
    """The lines of `path` that read a recorded event's data as a dict without a comment (on the line or the three
    above) saying why it is read raw or by key."""
    lines = path.read_text().splitlines()
    return [f"{path.relative_to(root)}:{n + 1}: {line.strip()}" for n, line in enumerate(lines)
            if RAW_READ.search(line.split("#")[0]) and not line.lstrip().startswith(("#", '"'))
            and not any(re.search(r"#.*\b(raw|by key)\b", above, re.IGNORECASE) for above in lines[max(0, n - 3):n + 1])]


def test_events_are_read_typed_outside_the_hot_path() -> None:
    """Projections and the daemon read an event's fields from its model (`recorded.event`); a dict read by key
    is for the measured hot path only, and says so where it happens."""
    found = [hit for layer in ("projections", "daemon") for path in sorted((ROOT / layer).rglob("*.py"))
             for hit in raw_reads(path)]
    assert found == []


def test_the_raw_read_check_finds_one(tmp_path: Path) -> None:
    (tmp_path / "view.py").write_text("def apply(recorded):\n    return recorded.data['report_id']\n"
                                      "def fold(r):\n    return r.data  # raw: every action passes here\n")
    assert [hit.split(": ", 1)[1] for hit in raw_reads(tmp_path / "view.py", tmp_path)] == ["return recorded.data['report_id']"]


def test_no_two_modules_share_a_name() -> None:
    """A module's name says which one it is: `runner.py` twice (the agent's and the fold's) meant reading its
    folder to know which a traceback, a log line or a doc named."""
    seen: dict[str, list[str]] = {}
    for layer in LAYER_PACKAGES:
        for path in sorted((ROOT / layer).rglob("*.py")):
            if path.name != "__init__.py":
                seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}


def test_every_cli_command_runs_through_one_executor() -> None:
    """Whether a daemon runs is asked in one place (`daemon/cli/choose.py`): a command that asked it itself would
    have two paths, and they would drift apart."""
    askers = sorted(p.name for p in (ROOT / "daemon" / "cli").glob("*.py") if "running_daemon(" in p.read_text())
    assert askers == ["choose.py", "handover.py"]  # handover.py defines it
    assert "Daemon(" not in (ROOT / "daemon" / "cli" / "chat_command.py").read_text()


def test_every_error_belongs_to_a_family() -> None:
    """A caller catches a layer's errors by their parent (`except StoreError`): only the families hang off the
    base, and every error class of the tree is in one."""
    families = {cls.__name__ for cls in errors.SimreportdError.__subclasses__()}
    assert families == {"ConfigError", "UsageError", "StoreError", "WaitTimeout", "AgentError", "ReportError",
                        "ServiceError"}
    assert issubclass(errors.LLMError, errors.AgentError) and issubclass(errors.HandoverFailed, errors.ServiceError)
    assert issubclass(errors.ReportElsewhere, errors.ReportError) and errors.exit_code_for("report_elsewhere") == 1


def test_every_event_type_is_documented() -> None:
    catalogue = (ROOT / "docs" / "events.md").read_text()
    missing = [name for name in EVENT_TYPES if f"`{name}`" not in catalogue]
    assert missing == []


def test_outline_v1_is_upcast_to_section_objects() -> None:
    stored = {"report_id": "r", "title": "T", "summary": "S", "sections": ["One", "Two"]}
    assert upcast("OutlinePlanned", 1, stored)["sections"][1] == {"title": "Two", "description": ""}
    event = decode("OutlinePlanned", 1, stored)
    assert isinstance(event, OutlinePlanned) and [s.title for s in event.sections] == ["One", "Two"]


# What the repository ships as code, configuration and documentation: a reference from any of it must lead
# to something a clone has. Caches and test artifacts are not part of it.
SHIPPED = ["events", "projections", "analysis", "agent", "daemon", "simulator", "simreportd", "tests", "bench", "docs", "systemd",
           ".ci", "config.toml", "pyproject.toml", "README.md"]
NOT_SHIPPED = {"__pycache__", "artifacts", ".hypothesis", ".pytest_cache"}
TEXT_SUFFIXES = {"", ".py", ".md", ".toml", ".service", ".html", ".js", ".css", ".json", ".txt", ".sh", ".cfg"}
# Pages and trackers a clone does not have: the design notes the project started from, their folder, the
# machine they lived on, and issue numbers of a tracker that is not part of the repository. (The path is
# split in two literals so that this line does not match itself.)
OUTSIDE = re.compile(r"\b(?:DESIGN|FORMATS|STYLE)\.md\b|\.\./shared\b|/work" r"/|\b[Ii]ssues?\s+#?\d+|\b[Ii]ssues show\b")
DOCS_CITATION = re.compile(r"\bdocs/([\w./-]+\.md)(?:#([\w-]+))?")
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")


def shipped_files() -> list[Path]:
    files: list[Path] = []
    for name in SHIPPED:
        top = ROOT / name
        candidates = [top] if top.is_file() else sorted(top.rglob("*"))
        files += [p for p in candidates if p.is_file() and p.suffix in TEXT_SUFFIXES
                  and not NOT_SHIPPED & set(p.relative_to(ROOT).parts)]
    return files


def lines_of(path: Path) -> list[tuple[int, str]]:
    try:
        return list(enumerate(path.read_text(encoding="utf-8").splitlines(), 1))
    except UnicodeDecodeError:
        return []


def anchors(page: Path) -> set[str]:
    """The section anchors of a Markdown page, as GitHub makes them from its headings."""
    out = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if match := re.match(r"#{1,6}\s+(.*)", line):
            out.add(re.sub(r"[^\w\- ]", "", match[1].strip().lower()).replace(" ", "-"))
    return out


def test_no_reference_to_a_file_or_issue_outside_the_repository() -> None:
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}"
             for path in shipped_files() for number, line in lines_of(path) if OUTSIDE.search(line)]
    assert found == [], "cite docs/ instead:\n" + "\n".join(found)


def test_every_cited_docs_page_and_section_exists() -> None:
    missing = []
    for path in shipped_files():
        for number, line in lines_of(path):
            for page, section in DOCS_CITATION.findall(line):
                target = ROOT / "docs" / page
                if not target.is_file():
                    missing.append(f"{path.relative_to(ROOT)}:{number}: docs/{page} does not exist")
                elif section and section not in anchors(target):
                    missing.append(f"{path.relative_to(ROOT)}:{number}: docs/{page} has no section #{section}")
    assert missing == [], "\n".join(missing)


def test_links_between_docs_pages_resolve() -> None:
    broken = []
    for page in [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]:
        for number, line in lines_of(page):
            for link in MARKDOWN_LINK.findall(line):
                if "://" in link or link.startswith("mailto:"):
                    continue
                file_part, _, section = link.partition("#")
                target = (page.parent / file_part).resolve() if file_part else page
                if not target.exists():
                    broken.append(f"{page.relative_to(ROOT)}:{number}: {link} does not exist")
                elif section and target.suffix == ".md" and section not in anchors(target):
                    broken.append(f"{page.relative_to(ROOT)}:{number}: {link} names no section of {target.name}")
    assert broken == [], "\n".join(broken)


def test_code_cites_the_docs() -> None:
    """The design is cited where it is implemented: without citations the test above would check nothing."""
    cited = {page for path in shipped_files() if path.suffix == ".py" for _, line in lines_of(path)
             for page, _ in DOCS_CITATION.findall(line)}
    assert {"architecture.md", "formats.md", "protocol.md"} <= cited
