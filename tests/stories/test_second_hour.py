"""What a user meets after the demo works, through the real CLI: one report per request, quiet progress,
errors that name what to fix, help on every option."""

from __future__ import annotations

import argparse
import json
import re
import socket
from pathlib import Path

import anyio
import pytest

from simreportd.agent.findings.language import language_of
from simreportd.agent.llm.providers import OpenAIProvider
from simreportd.agent.report.prompts import outline_messages
from simreportd.daemon.cli.main import build_parser
from simreportd.errors import LLMError
from simreportd.events.models import LLMRequested
from simreportd.simulator.quality import score_report
from simreportd.simulator.simulate import simulate
from simreportd.simulator.truth import FILE

from ..conftest import write_config
from ..fake_llm import FakeLLM
from .test_cli import simreportd
from .test_first_hour import running_simulation

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def openai_config(root: Path, base_url: str, auto: bool = True) -> Path:
    """A config whose writer is the OpenAI-compatible server at `base_url`, retrying twice at once."""
    return write_config(root, f'[llm]\nprovider = "openai"\nbase_url = "{base_url}"\nmodel = "scripted"\n'
                              'max_retries = 2\nretry_backoff_s = 0.01\n', auto=auto)


def failed_report(root: Path) -> tuple[Path, str, str]:
    """A completed run whose report failed (its server answered 503): (config.toml, the report's id, what
    `report --wait` said on stderr)."""
    simulate(root / "sims" / "sim_one", agents=12, rounds=4, seed=3)
    with FakeLLM() as llm:
        llm.unavailable_for = lambda body: True
        config = openai_config(root, llm.base_url)
        result = simreportd("-c", str(config), "report", str(root / "sims" / "sim_one"), "--wait")
    assert result.returncode == 1 and "failed during" in result.stderr, result.stderr
    retries = [line.strip() for line in result.stderr.splitlines() if line.startswith("        ")]
    assert retries == ["LLM call failed (attempt 1): http_503: Error code: 503 - scripted 503",
                       "attempt 2 failed the same way", "attempt 3 failed the same way"]  # the reason once
    return config, result.stdout.strip().splitlines()[-1], result.stderr


def reports_in(config: Path) -> list[str]:
    status = simreportd("-c", str(config), "status", "--json")
    return [r["report_id"] for r in json.loads(status.stdout)["reports"]]


def test_resume_without_a_daemon_writes_only_the_report_resumed(tmp_path: Path) -> None:
    config, report_id, _ = failed_report(tmp_path)
    resumed = simreportd("-c", str(config), "resume", report_id, "--provider", "offline")
    assert resumed.returncode == 0, resumed.stderr
    assert reports_in(config) == [report_id]  # no automatic report of the run started beside it
    assert resumed.stdout.strip() == report_id


def test_commands_print_their_progress_without_log_lines_unless_verbose(tmp_path: Path) -> None:
    config, report_id, reported = failed_report(tmp_path)
    resumed = simreportd("-c", str(config), "resume", report_id, "--provider", "offline")
    replayed = simreportd("-c", str(config), "replay", report_id, "--verify")
    for said in (reported, resumed.stderr, replayed.stderr):
        assert " INFO " not in said and "read models" not in said, said
    assert "[1/5] writing:" in resumed.stderr and "Report ready:" in resumed.stderr  # the progress stays
    verbose = simreportd("-c", str(config), "-v", "replay", report_id, "--verify")
    assert " INFO simreportd.projections.runner: read models created" in verbose.stderr


def test_a_fresh_store_builds_no_read_models_from_an_empty_log(tmp_path: Path) -> None:
    simulate(tmp_path / "sims" / "sim_one", agents=12, rounds=4, seed=3)
    result = simreportd("-c", str(write_config(tmp_path)), "report", "-v", str(tmp_path / "sims" / "sim_one"),
                        "--wait")
    assert result.returncode == 0 and " INFO simreportd.agent.report.report_runner: report " in result.stderr, result.stderr
    assert "building them from the log" not in result.stderr


def test_status_says_how_to_build_read_models_that_lag_behind_the_log(tmp_path: Path) -> None:
    simulate(tmp_path / "sims" / "sim_one", agents=12, rounds=4, seed=3)
    config = write_config(tmp_path)
    assert simreportd("-c", str(config), "report", str(tmp_path / "sims" / "sim_one"), "--wait").returncode == 0
    (tmp_path / "state" / "events-views.sqlite3").unlink()  # a new node of a shared store has none either
    fresh = simreportd("-c", str(config), "status").stdout
    assert "simulations  0" in fresh and "read models  not built yet" in fresh
    assert "`simreportd run` folds them as it starts, `simreportd rebuild` folds them now" in fresh
    assert simreportd("-c", str(config), "rebuild").returncode == 0
    rebuilt = simreportd("-c", str(config), "status").stdout
    assert "simulations  1" in rebuilt and "projection lag 0" in rebuilt and "read models" not in rebuilt


def test_every_argument_of_every_command_has_help() -> None:
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    silent = [f"{name} {action.metavar or action.dest}" for name, command in commands.items()
              for action in command._actions if not action.help]
    assert silent == []
    fork = simreportd("fork", "--help").stdout
    assert "a position in the event log (the `position` field of `simreportd events --stream" in " ".join(fork.split())


def test_the_units_documentation_is_the_readme_its_install_steps_put_there() -> None:
    unit = (ROOT / "systemd" / "simreportd.service").read_text(encoding="utf-8")
    [documentation] = re.findall(r"^Documentation=(.*)$", unit, re.M)
    assert documentation == "file:/usr/share/doc/simreportd/README.md"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "sudo install -Dm644 README.md /usr/share/doc/simreportd/README.md" in readme


def test_a_partial_report_is_titled_from_what_happened_and_status_says_partial(tmp_path: Path) -> None:
    config = write_config(tmp_path, auto=False)
    sim, rest = running_simulation(tmp_path)  # rounds 1 and 2 written; its event is scheduled for round 3
    now = simreportd("-c", str(config), "report", str(sim), "--now", "--wait")
    assert now.returncode == 0, now.stderr
    partial_id = now.stdout.strip().splitlines()[-1]
    title = json.loads((tmp_path / "reports" / partial_id / "outline.json").read_text(encoding="utf-8"))["title"]
    assert "第3轮事件之前" in title and "事件发生后" not in title, title  # a Chinese run: a Chinese title
    for platform, lines in rest.items():
        with (sim / platform / "actions.jsonl").open("a", encoding="utf-8") as f:
            f.writelines(lines)
    full = simreportd("-c", str(config), "report", str(sim), "--wait")
    full_id = full.stdout.strip().splitlines()[-1]
    rows = {line.split()[0]: line.split()[3] for line in simreportd("-c", str(config), "status").stdout.splitlines()
            if line.startswith("  report_")}
    assert rows == {partial_id: "partial", full_id: "full"}


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_llm_server_is_named_with_its_model_before_any_work(tmp_path: Path) -> None:
    simulate(tmp_path / "sims" / "sim_one", agents=12, rounds=4, seed=3)
    url = f"http://127.0.0.1:{closed_port()}/v1"
    config = openai_config(tmp_path, url)
    for args in (["report", str(tmp_path / "sims" / "sim_one"), "--wait"], ["demo", str(tmp_path / "demo")]):
        refused = simreportd("-c", str(config), *args)
        assert refused.returncode == 1 and "attempt" not in refused.stderr, refused.stderr
        assert f"with openai model 'scripted': cannot connect to {url} (" in refused.stderr
        assert "pass --provider offline" in refused.stderr and "Traceback" not in refused.stderr
    offline = simreportd("-c", str(config), "report", str(tmp_path / "sims" / "sim_one"), "--wait", "--provider", "offline")
    demo = simreportd("-c", str(config), "demo", str(tmp_path / "demo"), "--provider", "offline")
    assert offline.returncode == demo.returncode == 0, offline.stderr + demo.stderr
    for store in (config, tmp_path / "demo" / "config.toml"):
        requested = simreportd("-c", str(store), "events", "--type", "ReportRequested").stdout.splitlines()
        assert [(r["data"]["provider"], r["data"]["model"]) for r in map(json.loads, requested)] == \
            [("offline", "offline-writer")]


def test_a_connection_error_names_the_servers_url_and_model_and_why() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    request = LLMRequested(report_id="r", call_id="c", purpose="outline", model="scripted", protocol="native",
                           tools=[], messages_added=[], fingerprint="")

    async def call() -> LLMError:
        provider = OpenAIProvider(url, "", timeout_s=5.0, max_concurrency=1)
        try:
            await provider.complete(request, [{"role": "user", "content": "hello"}], 1)
        except LLMError as exc:
            return exc
        finally:
            await provider.close()
        raise AssertionError("a closed port answered")

    error = anyio.run(call)
    assert error.kind == "connection" and f"cannot reach {url} (model 'scripted'): [Errno 111]" in str(error)


def statements_by_agent(folder: Path) -> dict[int, set[str]]:
    """What each agent wrote (posts, quotes, comments), from the simulation's own action files."""
    said: dict[int, set[str]] = {}
    for platform in ("twitter", "reddit"):
        for line in (folder / platform / "actions.jsonl").read_text(encoding="utf-8").splitlines():
            action = json.loads(line)
            for key in ("content", "quote_content"):
                if "agent_id" in action and action.get("action_args", {}).get(key):
                    said.setdefault(action["agent_id"], set()).add(action["action_args"][key])
    return said


def two_topics(texts: set[str]) -> tuple[str, str]:
    """Two words of an agent's statements that no statement holds both of: two questions with two answers."""
    words = sorted({w for t in texts for w in re.findall(r"[a-z]{6,}", t.lower())})
    holding = {w: {t for t in texts if w in t.lower()} for w in words}
    return next((a, b) for a in words for b in words if a < b and holding[a] and holding[b]
                and not holding[a] & holding[b])


def interview(config: Path, target: str, agent: int, question: str) -> str:
    result = simreportd("-c", str(config), "interview", target, "--agent", str(agent), question)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_persona_interviews_answer_the_question_asked_from_the_agents_own_statements(tmp_path: Path) -> None:
    folder = tmp_path / "sims" / "sim_one"
    simulate(folder, agents=12, rounds=4, seed=3)
    config = write_config(tmp_path, auto=False)
    assert simreportd("-c", str(config), "report", str(folder), "--wait").returncode == 0
    said = statements_by_agent(folder)
    agent = max(said, key=lambda a: (len(said[a]), -a))
    answers = {}
    for word in two_topics(said[agent]):
        answers[word] = interview(config, "sim_one", agent, f"What is it with {word}?")
        quoted = re.findall(r"\u201c(.+?)\u201d \((?:post|comment):", answers[word])
        assert quoted and all(q in said[agent] and word in q.lower() for q in quoted), answers[word]
        assert "On that, I wrote:" in answers[word]
    assert len(set(answers.values())) == 2
    unasked = interview(config, "sim_one", agent, "What is it with zeppelins?")
    assert "I did not post about that. The last thing I wrote:" in unasked


def test_a_chinese_question_gets_a_chinese_persona_answer(tmp_path: Path) -> None:
    folder = tmp_path / "sims" / "sim_zh"
    simulate(folder, agents=12, rounds=4, seed=5)
    config = write_config(tmp_path, auto=False)
    assert simreportd("-c", str(config), "report", str(folder), "--wait").returncode == 0
    said = statements_by_agent(folder)
    agent = max(said, key=lambda a: (len(said[a]), -a))
    answer = interview(config, "sim_zh", agent, "你怎么看按袋计费？")
    assert answer.startswith("[人设回答，依据我的档案和帖子] 我是") and "关于这个问题，我写过：" in answer, answer
    assert all(q in said[agent] for q in re.findall(r"\u201c(.+?)\u201d（", answer))


def test_a_chinese_simulation_gets_a_chinese_report_as_grounded_as_an_english_one(tmp_path: Path) -> None:
    folder = tmp_path / "sims" / "sim_zh"
    simulate(folder, agents=40, rounds=16, seed=2)  # the story of seed 2 is told in Chinese
    config = write_config(tmp_path, auto=False)
    result = simreportd("-c", str(config), "report", str(folder), "--wait")
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "reports" / result.stdout.split()[-1] / "full_report.md").read_text(encoding="utf-8")
    headings = re.findall(r"^#+ (.+)$", text, re.M)
    assert all(language_of(h) == "zh" for h in headings), headings
    assert "what happened" not in text and "agents split into" not in text
    score = score_report(text, json.loads((folder / FILE).read_text(encoding="utf-8")))
    assert [claim for claim, ok in score.facts if not ok] == [] and len(score.facts) >= 15
    assert score.wrong_numbers == [] and score.numbers_checked >= 25
    assert score.hallucinated == [] and score.quotes_ungrounded == [] and score.quotes_grounded >= 15
    assert all(ok for _, ok in score.questions)


def test_the_scorer_reads_a_chinese_reports_figures_and_finds_a_wrong_one(tmp_path: Path) -> None:
    simulate(tmp_path / "sim", agents=24, rounds=10, seed=5)
    truth = json.loads((tmp_path / "sim" / FILE).read_text(encoding="utf-8"))
    spike = truth["spike"]
    right = f"# 报告\n\n## 经过\n\n第{spike['round']}轮有{spike['actions']}次行动。\n"
    wrong = right.replace(f"{spike['actions']}次行动", f"{spike['actions'] + 7}次行动")
    assert score_report(right, truth).wrong_numbers == []
    assert f"round {spike['round']} spiked to {spike['actions']} actions" in \
        [claim for claim, ok in score_report(right, truth).facts if ok]
    assert score_report(wrong, truth).wrong_numbers == [
        f"round {spike['round']} actions: said {spike['actions'] + 7}, is {spike['actions']}"]


def test_writers_prompts_ask_for_the_requirements_language_and_leave_english_ones_as_they_were() -> None:
    chinese = outline_messages("市民会如何看待垃圾按袋计费新规？", {})[0]["content"]
    english = outline_messages("How will residents react to the congestion charge?", {})[0]["content"]
    assert "in Simplified Chinese, the language of the requirement" in chinese
    assert "Chinese" not in english and english == outline_messages("How?", {})[0]["content"]


def test_the_readme_is_a_readme_and_its_test_command_is_the_one_ci_runs() -> None:
    """What it is, try it, tests, configure, deploy, links: the manual is docs/guide.md, the figures docs/benchmarks.md."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert ci in readme, ci
