"""The command line as a user runs it: real processes, real files."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from ..conftest import PYTHON, TIMEOUT, write_config

pytestmark = pytest.mark.slow


def simreportd(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "-m", "simreportd", *args], capture_output=True, text=True,
                          timeout=TIMEOUT * 2, cwd=cwd)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, subprocess.CompletedProcess]:
    root = tmp_path_factory.mktemp("demo")
    result = simreportd("demo", str(root / "out"), cwd=root)
    assert result.returncode == 0, result.stderr
    return root / "out", result.stdout.strip().splitlines()[-1], result


def action_lines(folder: Path) -> list[dict]:
    lines = []
    for platform in ("twitter", "reddit"):
        for raw in (folder / platform / "actions.jsonl").read_text(encoding="utf-8").splitlines():
            obj = json.loads(raw)
            if "event_type" not in obj:
                lines.append(obj)
    return lines


def test_demo_writes_a_complete_report_and_says_where(demo: tuple) -> None:
    out, report_id, result = demo
    folder = out / "reports" / report_id
    assert report_id.startswith("report_")
    assert str(folder / "full_report.md") in result.stderr and "ready:" in result.stderr
    assert {"meta.json", "outline.json", "progress.json", "full_report.md", "agent_log.jsonl",
            "section_01.md"} <= {p.name for p in folder.iterdir()}
    assert json.loads((folder / "progress.json").read_text())["progress"] == 100
    assert json.loads((folder / "meta.json").read_text())["status"] == "completed"


def test_demo_report_quotes_only_what_agents_wrote_and_counts_right(demo: tuple) -> None:
    out, report_id, _ = demo
    text = (out / "reports" / report_id / "full_report.md").read_text(encoding="utf-8")
    lines = action_lines(out / "simulations" / "sim_demo")
    written = {str(v) for line in lines for k, v in line["action_args"].items() if k in ("content", "quote_content")}
    quotes = re.findall(r'^> "(.*)" \((?:post|comment):\w+:\d+\)$', text, re.M)
    assert len(quotes) >= 5 and set(quotes) <= written
    assert f"recorded {len(lines)} actions" in text
    assert "without a language model" in text


def test_rerunning_the_demo_reuses_its_report(demo: tuple) -> None:
    out, report_id, _ = demo
    again = simreportd("demo", str(out))
    assert again.returncode == 0 and again.stdout.strip().splitlines()[-1] == report_id


def test_rebuild_gives_identical_read_models_and_export(demo: tuple) -> None:
    out, report_id, _ = demo
    config = write_config(out, auto=False)
    before = {p.name: p.read_bytes() for p in (out / "reports" / report_id).iterdir()}
    result = simreportd("-c", str(config), "rebuild")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "CHANGED" not in result.stdout and result.stdout.count("identical") == 3
    assert {p.name: p.read_bytes() for p in (out / "reports" / report_id).iterdir()} == before


def test_events_prints_json_lines_filtered_by_stream_and_type(demo: tuple) -> None:
    out, report_id, _ = demo
    config = write_config(out, auto=False)
    result = simreportd("-c", str(config), "events", "--stream", f"report-{report_id}", "--type", "SectionCompleted")
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(rows) >= 3 and {r["type"] for r in rows} == {"SectionCompleted"}
    assert set(rows[0]) == {"position", "stream", "version", "type", "recorded_at", "data", "event_id", "meta"}
    assert {r["meta"]["correlation_id"] for r in rows} == {rows[0]["meta"]["correlation_id"]}  # one report's work
    after = simreportd("-c", str(config), "events", "--after", str(rows[-1]["position"]), "--type", "SectionCompleted")
    assert after.stdout == ""


def test_status_json_lists_the_simulation_and_the_report(demo: tuple) -> None:
    out, report_id, _ = demo
    result = simreportd("-c", str(write_config(out, auto=False)), "status", "--json")
    info = json.loads(result.stdout)
    assert info["projection_lag"] == 0 and info["last_position"] > 100
    assert [s["simulation_id"] for s in info["simulations"]] == ["sim_demo"]
    assert [(r["report_id"], r["status"], r["progress"]) for r in info["reports"]] == [(report_id, "completed", 100)]


def test_report_for_a_missing_folder_says_what_to_pass(tmp_path: Path) -> None:
    result = simreportd("-c", str(write_config(tmp_path)), "report", str(tmp_path / "nope"))
    assert result.returncode == 2 and "is not a folder" in result.stderr and "Traceback" not in result.stderr


def test_resume_of_a_completed_report_is_refused_clearly(demo: tuple) -> None:
    out, report_id, _ = demo
    result = simreportd("-c", str(write_config(out, auto=False)), "resume", report_id)
    assert result.returncode == 2 and "has completed; nothing to resume" in result.stderr and "simreportd fork" in result.stderr


# What a command that neither writes a report nor serves must not load: most of a second of imports in each
# process that runs it (the suite starts hundreds), so main.py imports a command's module only when it runs.
HEAVY = ("simreportd.daemon.service", "simreportd.daemon.server", "simreportd.agent", "openai", "uvicorn", "starlette")
PROBE = f"""import sys
from simreportd.daemon.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(sorted(m for m in sys.modules if m.startswith({HEAVY!r})))"""


def test_commands_that_need_no_daemon_do_not_import_it(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    for args in (["--version"], ["simulate", str(tmp_path / "sims" / "s"), "--agents", "4", "--rounds", "2"],
                 ["-c", str(config), "status"], ["-c", str(config), "events"]):
        result = subprocess.run([PYTHON, "-c", PROBE, *args], capture_output=True, text=True, timeout=TIMEOUT)
        assert result.stdout.splitlines()[-1] == "[]", (args, result.stdout[-2000:], result.stderr[-2000:])
