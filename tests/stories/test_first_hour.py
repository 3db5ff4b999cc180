"""What a new user meets in the first hour, through the real CLI: exit codes, messages, waits.

The README's rule: 0 success, 1 a failed run or a divergence, 2 bad usage or configuration.
One demo store serves every case; the cases of one kind run in one test so a failure lists
every command that broke the rule at once.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from ..conftest import PYTHON, TIMEOUT, write_config
from ..fake_llm import FakeLLM
from ..processes import NotifySocket, cli, wait_until
from .test_cli import simreportd

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """A demo run written into a config's store: (its folder, config.toml, the completed report's id)."""
    root = tmp_path_factory.mktemp("first_hour")
    config = write_config(root, auto=False)
    sim = root / "sims" / "sim_one"
    assert simreportd("simulate", str(sim), "--agents", "12", "--rounds", "4").returncode == 0
    result = simreportd("-c", str(config), "report", str(sim), "--wait")
    assert result.returncode == 0, result.stderr
    return root, config, result.stdout.strip().splitlines()[-1]


def audit(cases: list[tuple[int, str, list[str]]], config: Path, cwd: Path) -> list[str]:
    """Run each `simreportd -c CONFIG ARGS`; every broken expectation, as a line."""
    broken = []
    for code, said, args in cases:
        result = simreportd("-c", str(config), *args, cwd=cwd)
        if result.returncode != code or said not in result.stderr or "Traceback" in result.stderr:
            broken.append(f"{args}: exit {result.returncode} (want {code}), stderr {result.stderr.strip()[-300:]!r}")
    return broken


def test_usage_and_configuration_errors_exit_2_with_a_message(store: tuple) -> None:
    root, config, report_id = store
    (root / "empty_sim").mkdir(exist_ok=True)
    (root / "loud.toml").write_text('[log]\nlevel = "loud"\n', encoding="utf-8")
    (root / "exposed.toml").write_text('[server]\nhost = "0.0.0.0"\n', encoding="utf-8")  # no token
    cases = [
        (2, "invalid choice", ["no-such-command"]),
        (2, "the following arguments are required: SIM_DIR", ["report"]),
        (2, "is not a folder", ["report", str(root / "nowhere")]),
        (2, "holds no simulation: none of simulation_config.json", ["report", str(root / "empty_sim")]),
        (2, "no report 'report_nope'", ["resume", "report_nope"]),
        (2, "has completed; nothing to resume", ["resume", report_id]),
        (2, "pass either REPORT_ID or --all", ["replay"]),
        (2, "no report 'report_nope'", ["replay", "report_nope", "--verify"]),
        (2, "no report 'report_nope'", ["fork", "report_nope", "--at", "1"]),
        (2, "no report 'report_nope'", ["export", "report_nope", str(root / "out")]),
        (2, "no report or simulation named 'sim_nope'", ["interview", "sim_nope", "--agent", "1", "hi?"]),
        (2, "agent 99 is not in simulation sim_one (its agents are 0 to 11)",
         ["interview", report_id, "--agent", "99", "hi?"]),
        (2, "unknown event type NoSuchType; the types are: SimulationDiscovered", ["events", "--type", "NoSuchType"]),
        (2, "no stream 'report-nope'", ["events", "--stream", "report-nope"]),
    ]
    broken = audit(cases, config, root)
    broken += audit([(2, "[log] level = 'loud' is invalid", ["status"])], root / "loud.toml", root)
    broken += audit([(2, "host = '0.0.0.0' is not loopback: set [server] token", ["run"])], root / "exposed.toml", root)
    broken += audit([(2, "does not exist", ["status"])], root / "missing.toml", root)
    elsewhere = write_config(root / "elsewhere")
    broken += audit([(2, "no event store at", ["status"]), (2, "no event store at", ["events"]),
                     (2, "no event store at", ["replay", "--all"])], elsewhere, root)
    assert not broken, "\n".join(broken)
    assert not (root / "elsewhere" / "state").exists()  # reading commands never create an empty store


def test_successful_commands_exit_0(store: tuple) -> None:
    root, config, report_id = store
    (root / "quiet.toml").write_text(config.read_text() + '[log]\nlevel = "warning"\n', encoding="utf-8")
    cases = [
        (0, "", ["status"]),
        (0, "", ["events", "--type", "ReportCompleted"]),
        (0, "", ["replay", report_id, "--verify"]),
        (0, "", ["rebuild"]),
        (0, f"Exported {report_id}", ["export", report_id, str(root / "exported")]),
        (0, "(persona", ["interview", report_id, "--agent", "1", "What did you post?"]),
    ]
    broken = audit(cases, config, root) + audit([(0, "", ["status"])], root / "quiet.toml", root)
    assert not broken, "\n".join(broken)


def test_a_failed_report_exits_1_and_says_how_to_continue(store: tuple) -> None:
    root, _, _ = store
    with FakeLLM() as llm:
        llm.unavailable_for = lambda body: True  # every request answered 503
        config = write_config(root / "failing", f'[llm]\nprovider = "openai"\nbase_url = "{llm.base_url}"\n'
                              'model = "m"\nmax_retries = 0\n', auto=False)
        result = simreportd("-c", str(config), "report", str(root / "sims" / "sim_one"), "--wait")
    assert result.returncode == 1, result.stderr
    assert "failed during" in result.stderr and "simreportd resume report_" in result.stderr


def test_events_into_a_closed_pipe_stops_quietly(store: tuple) -> None:
    root, config, _ = store
    process = subprocess.Popen([PYTHON, "-m", "simreportd", "-c", str(config), "events"], cwd=root,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    json.loads(process.stdout.readline())
    process.stdout.close()  # what `| head -1` does
    error = process.stderr.read().decode()
    assert process.wait(timeout=TIMEOUT) == 0 and error == ""


def test_commands_log_what_happens_not_what_already_happened(store: tuple) -> None:
    root, config, report_id = store
    old = simreportd("-c", str(config), "export", report_id, str(root / "again"))
    assert old.returncode == 0 and report_id not in old.stderr.replace(f"Exported {report_id}", "")
    fresh = simreportd("-c", str(config), "-v", "report", str(root / "sims" / "sim_one"), "--wait", "--force")
    new_id = fresh.stdout.strip().splitlines()[-1]
    logged = [line.split(": ", 1)[1] for line in fresh.stderr.splitlines()
              if " INFO simreportd.agent.report.report_runner: " in line]
    assert logged[0].startswith(f"report {new_id} started: simulation sim_one generation 1, offline")
    assert any(line.startswith(f"report {new_id}: section 1/") for line in logged)
    assert logged[-1] == f"report {new_id} completed" and report_id not in fresh.stderr


def test_asking_again_for_a_run_s_report_returns_it_and_force_writes_another(store: tuple) -> None:
    """One report per run unless forced: what a daemon and a user asking at once, or twice, must not double."""
    root, config, _ = store
    again = [simreportd("-c", str(config), "report", str(root / "sims" / "sim_one"), "--wait") for _ in range(2)]
    report_id = again[0].stdout.strip().splitlines()[-1]
    assert [a.stdout.strip().splitlines()[-1] for a in again] == [report_id, report_id]
    assert f"already has report {report_id}, completed" in again[1].stderr
    forced = simreportd("-c", str(config), "report", str(root / "sims" / "sim_one"), "--wait", "--force")
    assert forced.returncode == 0 and forced.stdout.strip().splitlines()[-1] != report_id


def test_the_demo_run_twice_says_the_report_exists_and_how_to_start_over(tmp_path: Path) -> None:
    first = simreportd("demo", "out", cwd=tmp_path)
    again = simreportd("demo", "out", cwd=tmp_path)
    assert first.returncode == again.returncode == 0
    assert again.stdout == first.stdout and "writing:" not in again.stderr
    assert "writing:" in first.stderr and " INFO " not in first.stderr  # progress, not the same steps logged again
    assert "already written here by an earlier `simreportd demo`" in again.stderr
    assert f"rm -rf {tmp_path / 'out'} && simreportd demo out" in again.stderr


def test_simulate_live_says_it_runs_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    live = cli("simulate", str(tmp_path / "sim_live"), "--agents", "6", "--rounds", "2", "--live",
               "--round-seconds", "0.1")
    log = live.log_path  # type: ignore[attr-defined]
    wait_until(lambda: "answers interviews" in log.read_text(), "the live run to complete")
    live.send_signal(signal.SIGTERM)
    assert live.wait(timeout=TIMEOUT) == 0
    said = log.read_text()
    assert "2 rounds, one every 0.1 s; Ctrl-C or SIGTERM stops it" in said and "round 2/2 written" in said
    assert said.rstrip().endswith("Environment stopped.")
    help_text = simreportd("simulate", "--help").stdout
    assert "(default: 24)" in help_text and "until Ctrl-C or SIGTERM" in help_text


def running_simulation(tmp_path: Path) -> tuple[Path, dict[str, list[str]]]:
    """A simulation folder caught mid-run: its first rounds written, the rest (returned) still to come."""
    from simreportd.simulator.simulate import simulate

    whole, sim = tmp_path / "whole" / "sim_live", tmp_path / "sims" / "sim_live"
    simulate(whole, agents=12, rounds=6, seed=5)
    shutil.copytree(whole, sim, ignore=shutil.ignore_patterns("actions.jsonl", "run_state.json"))
    rest = {}
    for platform in ("twitter", "reddit"):
        lines = (whole / platform / "actions.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
        cut = next(i for i, line in enumerate(lines) if '"round_start"' in line and '"round": 3' in line)
        (sim / platform / "actions.jsonl").write_text("".join(lines[:cut]), encoding="utf-8")
        rest[platform] = lines[cut:]
    return sim, rest


@pytest.mark.parametrize("daemon", [False, True], ids=["alone", "handed_over"])
def test_report_waits_for_a_running_simulation_and_now_writes_a_labelled_partial_one(
        tmp_path: Path, daemon: bool) -> None:
    config = write_config(tmp_path, auto=False)
    sim, rest = running_simulation(tmp_path)
    if daemon:  # the same, with the work handed to a running daemon
        with NotifySocket(tmp_path / "notify.sock") as systemd:
            cli("run", "-c", str(config))
            systemd.wait_for("READY=1")

    now = simreportd("-c", str(config), "report", str(sim), "--now", "--wait")
    assert now.returncode == 0, now.stderr
    partial_id = now.stdout.strip().splitlines()[-1]
    folder = tmp_path / "reports" / partial_id
    label = json.loads((folder / "meta.json").read_text())["partial"]
    assert label.startswith("部分报告：撰写时模拟仍在进行，依据截至 ")  # the run's language, as the report's
    assert "reddit 第 2 轮和 twitter 第 2 轮" in label
    assert f"> **{label}**" in (folder / "full_report.md").read_text()
    assert "上2轮中的" in (folder / "full_report.md").read_text()  # over 2 rounds, in the run's Chinese

    waiting = cli("-c", str(config), "report", str(sim), "--wait")
    log = waiting.log_path  # type: ignore[attr-defined]
    wait_until(lambda: "is still running (2 rounds" in log.read_text(), "report to wait for the run")
    for platform, lines in rest.items():
        with (sim / platform / "actions.jsonl").open("a", encoding="utf-8") as f:
            f.writelines(lines)
    assert waiting.wait(timeout=TIMEOUT) == 0, log.read_text()
    said = log.read_text()
    assert "round 6 ingested" in said and "Simulation sim_live completed: 6 rounds" in said
    full = Path(re.search(r"full report  (\S+)", said).group(1)).parent  # type: ignore[union-attr]
    assert full.name != partial_id and "partial" not in json.loads((full / "meta.json").read_text())
    assert "部分报告" not in (text := (full / "full_report.md").read_text()) and "Partial report" not in text

    replayed = simreportd("-c", str(config), "replay", partial_id, "--verify")
    assert replayed.returncode == 0 and "0 divergences" in replayed.stdout, replayed.stdout + replayed.stderr
