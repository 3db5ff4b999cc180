"""A report folder as MiroFish's own code reads it: its report manager, its agent log, its frontend's panels.

The rules here are read from MiroFish's repository (github.com/666ghj/MiroFish, AGPL-3.0; nothing of
it is copied, each rule is restated in our words with the file and lines it comes from):
- `backend/app/services/report_agent.py`: `ReportLogger.log_*` (lines 99-308) write each agent-log
  action with its `details` keys and stage; `ReportConsoleLogger` (lines 339-368) formats console lines as
  `[HH:MM:SS] LEVEL: message`; `ReportStatus` (lines 393-399) has five values; `ReportManager.get_report`
  (lines 2414-2470) loads `meta.json` by indexing `report_id, simulation_id, graph_id,
  simulation_requirement, status` and each outline section's `title`; `get_generated_sections`
  (lines 2199-2231) reads `section_NN.md` files by name.
- `frontend/src/components/Step4Report.vue`: `fetchAgentLog` (lines 1953-2012) takes the outline from a
  `planning_complete` line's `details.outline`, a section's text from `section_complete`'s `details.content`,
  and stops at `report_complete`; `parseQuickSearch`, `parseInsightForge`, `parsePanorama` and
  `parseInterview` (lines 544-945) find fixed markers in a `tool_result`'s `details.result` text.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ..conftest import PYTHON, write_config

# details keys each action carries, as ReportLogger writes them (report_agent.py lines 99-308)
DETAILS = {
    "report_start": {"simulation_id", "graph_id", "simulation_requirement", "message"},
    "planning_start": {"message"},
    "planning_context": {"message", "context"},
    "planning_complete": {"message", "outline"},
    "section_start": {"message"},
    "react_thought": {"iteration", "thought", "message"},
    "tool_call": {"iteration", "tool_name", "parameters", "message"},
    "tool_result": {"iteration", "tool_name", "result", "result_length", "message"},
    "llm_response": {"iteration", "response", "response_length", "has_tool_calls", "has_final_answer", "message"},
    "section_content": {"content", "content_length", "tool_calls_count", "is_subsection", "message"},
    "section_complete": {"content", "content_length", "subsection_count", "message"},
    "report_complete": {"total_sections", "total_time_seconds", "message"},
    "error": {"error", "message"},
}
STAGES = {"report_start": "pending", "planning_start": "planning", "planning_context": "planning",
          "planning_complete": "planning", "report_complete": "completed"}  # the rest: "generating"
STATUSES = {"pending", "planning", "generating", "completed", "failed"}  # ReportStatus, lines 393-399


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report folder the offline writer leaves for a finished 16-agent, 8-round run (the real CLI)."""
    from simreportd.simulator.simulate import simulate

    root = tmp_path_factory.mktemp("mirofish")
    simulate(root / "sims" / "sim_contract", agents=16, rounds=8, seed=5)
    config = write_config(root, auto=False)
    done = subprocess.run([PYTHON, "-m", "simreportd", "-c", str(config), "report", str(root / "sims" / "sim_contract"),
                           "--wait"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return root / "reports" / done.stdout.strip().splitlines()[-1]


def log_lines(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "agent_log.jsonl").read_text(encoding="utf-8").splitlines()]


def test_every_agent_log_line_has_the_details_and_stage_mirofish_writes(folder: Path) -> None:
    lines = log_lines(folder)
    assert {line["action"] for line in lines} >= {"report_start", "planning_complete", "section_start", "tool_call",
                                                  "tool_result", "llm_response", "section_complete", "report_complete"}
    for line in lines:
        assert set(line) == {"timestamp", "elapsed_seconds", "report_id", "action", "stage", "section_title",
                             "section_index", "details"}
        assert DETAILS[line["action"]] <= set(line["details"]), line["action"]
        assert line["stage"] == STAGES.get(line["action"], "generating"), line["action"]
        if line["action"] in ("section_start", "tool_call", "tool_result", "section_complete"):
            assert line["section_index"] >= 1 and line["section_title"], line
    assert lines[0]["details"]["simulation_requirement"], "report_start names the run's requirement"


def test_the_frontend_finds_the_outline_and_every_section_in_the_log(folder: Path) -> None:
    outline, sections, complete = None, {}, False
    for line in log_lines(folder):  # what fetchAgentLog does with each line
        if line["action"] == "planning_complete" and line["details"].get("outline"):
            outline = line["details"]["outline"]
        if line["action"] == "section_complete" and line["section_index"] < 100 and line["details"].get("content"):
            sections[line["section_index"]] = line["details"]["content"]
        complete = complete or line["action"] == "report_complete"
    assert outline is not None and outline["title"] and outline["summary"]
    assert sorted(sections) == list(range(1, len(outline["sections"]) + 1)) and complete
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    assert [s["title"] for s in outline["sections"]] == [s["title"] for s in meta["outline"]["sections"]]


def quick_search_panel(text: str) -> dict[str, Any]:
    facts = re.search(r"### 相关事实:\n([\s\S]*)$", text)
    return {"query": re.search(r"搜索查询:\s*(.+?)(?:\n|$)", text), "count": re.search(r"找到\s*(\d+)\s*条", text),
            "items": [line for line in (facts[1] if facts else "").split("\n") if re.match(r"^\d+\.", line)]}


def insight_panel(text: str) -> dict[str, Any]:
    questions = re.search(r"### 分析的子问题\n([\s\S]*?)(?=\n###|$)", text)
    entities = re.search(r"### 【核心实体】\n([\s\S]*?)(?=\n###|$)", text)
    relations = re.search(r"### 【关系链】\n([\s\S]*?)(?=\n###|$)", text)
    return {"query": re.search(r"分析问题:\s*(.+?)(?:\n|$)", text), "facts": re.search(r"相关预测事实:\s*(\d+)", text),
            "items": [line for line in (questions[1] if questions else "").split("\n") if re.match(r"^\d+\.", line)],
            "entities": re.findall(r"^-\s*\*\*(.+?)\*\*\s*\((.+?)\)", entities[1] if entities else "", re.M),
            "relations": re.findall(r"^-\s*(.+?)\s*--\[(.+?)\]-->\s*(.+)$", relations[1] if relations else "", re.M)}


def panorama_panel(text: str) -> dict[str, Any]:
    active = re.search(r"### 【当前有效事实】[\s\S]*?\n([\s\S]*?)(?=\n###|$)", text)
    return {"query": re.search(r"查询:\s*(.+?)(?:\n|$)", text), "active": re.search(r"当前有效事实:\s*(\d+)", text),
            "items": [line for line in (active[1] if active else "").split("\n") if re.match(r"^\d+\.", line)]}


def interview_panel(text: str) -> dict[str, Any]:
    blocks = re.split(r"#### 采访 #\d+:", text)[1:]
    return {"query": re.search(r"\*\*采访主题:\*\*\s*(.+?)(?:\n|$)", text),
            "count": re.search(r"\*\*采访人数:\*\*\s*(\d+)\s*/\s*(\d+)", text),
            "items": [b for b in blocks if re.search(r"\*\*(.+?)\*\*\s*\((.+?)\)", b)
                      and re.search(r"\*\*A:\*\*\s*([\s\S]*?)(?=\*\*关键引言|$)", b)
                      and re.search(r"\*\*Q:\*\*\s*([\s\S]*?)(?=\n\n\*\*A:\*\*|\*\*A:\*\*)", b)]}


PANELS = {"quick_search": quick_search_panel, "insight_forge": insight_panel, "panorama_search": panorama_panel,
          "interview_agents": interview_panel}


def test_every_tool_panel_of_the_frontend_parses_the_tool_results(folder: Path) -> None:
    shown: set[str] = set()
    for line in log_lines(folder):
        tool = line["details"].get("tool_name")
        if line["action"] != "tool_result" or tool not in PANELS:
            continue
        panel = PANELS[tool](line["details"]["result"])
        assert panel["query"] and panel["query"][1].strip(), (tool, line["details"]["result"][:300])
        assert line["details"]["result_length"] == len(line["details"]["result"])
        if panel["items"]:
            shown.add(tool)
    assert shown >= {"quick_search", "panorama_search", "insight_forge", "interview_agents"}, shown


def test_the_folder_loads_by_mirofish_report_manager_rules(folder: Path) -> None:
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    for key in ("report_id", "simulation_id", "graph_id", "simulation_requirement", "status"):
        assert key in meta, key
    assert meta["status"] in STATUSES and meta["quality"] in ("ok", "degraded")
    assert meta["outline"]["title"] and all(s["title"] for s in meta["outline"]["sections"])
    assert meta["markdown_content"].startswith("# ")
    names = sorted(p.name for p in folder.glob("section_*.md"))
    assert [int(n[len("section_"):-len(".md")].split("_")[0]) for n in names] == \
        list(range(1, len(meta["outline"]["sections"]) + 1))
    progress = json.loads((folder / "progress.json").read_text(encoding="utf-8"))
    assert progress["status"] == "completed" and progress["current_section"] is None
    console = (folder / "console_log.txt").read_text(encoding="utf-8").splitlines()
    assert console and all(re.match(r"^\[\d\d:\d\d:\d\d\] (INFO|WARNING|ERROR): .+", line) for line in console)
