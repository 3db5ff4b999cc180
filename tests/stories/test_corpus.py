"""The `llm` style's corpus and its truth: statements as LLM agents write them, each with its argument and stance.

Pure file writing, no daemon: the simulator's own folders, read back as the read models name them.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from simreportd.simulator.mirofish_folder import write_mirofish
from simreportd.simulator.quality import facts_of, score_report
from simreportd.simulator.scenario import SCENARIOS
from simreportd.simulator.simulate import simulate
from simreportd.simulator.truth import template_pattern

from ..conftest import PYTHON, TIMEOUT

SEEDS = (1, 2, 3, 5)  # 2 and 5 tell the Chinese scenario
STATEMENTS = {"CREATE_POST": ("post", "post_id", "content"), "QUOTE_POST": ("post", "new_post_id", "quote_content"),
              "CREATE_COMMENT": ("comment", "comment_id", "content")}


def statements(folder: Path) -> dict[str, str]:
    """Every post, quote and comment the action files hold, by the id the read models give it."""
    out = {}
    for platform in ("twitter", "reddit"):
        for raw in (folder / platform / "actions.jsonl").read_text(encoding="utf-8").splitlines():
            line = json.loads(raw)
            kind = STATEMENTS.get(line.get("action_type", ""))
            if kind:
                out[f"{kind[0]}:{platform}:{line['action_args'][kind[1]]}"] = line["action_args"][kind[2]]
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple[Path, dict]]:
    out = {}
    for seed in SEEDS:
        folder = tmp_path_factory.mktemp(f"llm{seed}")
        simulate(folder, agents=40, rounds=16, seed=seed, style="llm")
        out[seed] = folder, json.loads((folder / "ground_truth.json").read_text(encoding="utf-8"))
    return out


def test_one_seed_writes_the_same_run_byte_for_byte(runs: dict, tmp_path: Path) -> None:
    folder, _ = runs[1]
    simulate(tmp_path, agents=40, rounds=16, seed=1, style="llm")
    for name in ("twitter/actions.jsonl", "reddit/actions.jsonl", "ground_truth.json"):
        assert (tmp_path / name).read_bytes() == (folder / name).read_bytes(), name
    configs = [json.loads((f / "simulation_config.json").read_bytes()) for f in (tmp_path, folder)]
    assert [c.pop("simulation_id") for c in configs] == [tmp_path.name, folder.name]  # named as MiroFish names it
    assert configs[0] == configs[1]


def test_one_seed_writes_the_same_run_whatever_the_processs_hash_seed(tmp_path: Path) -> None:
    written = []
    for hash_seed in ("17", "34"):  # two that order a pair of stances differently
        folder = tmp_path / hash_seed
        code = (f"from pathlib import Path; from simreportd.simulator.simulate import simulate; "
                f"simulate(Path({str(folder)!r}), agents=40, rounds=16, seed=4, style='llm')")
        subprocess.run([PYTHON, "-c", code], check=True, timeout=TIMEOUT, env={**os.environ, "PYTHONHASHSEED": hash_seed})
        written.append([(folder / name).read_bytes() for name in ("twitter/actions.jsonl", "ground_truth.json")])
    assert written[0] == written[1]


def test_llm_agents_have_sentiment_biases_of_their_stance(runs: dict) -> None:
    folder, _ = runs[1]
    configs = json.loads((folder / "simulation_config.json").read_text(encoding="utf-8"))["agent_configs"]
    for c in configs:
        bias = c["sentiment_bias"]
        assert -1.0 <= bias <= 1.0 and (bias > 0 if c["stance"] == "supportive" else bias < 0
                                        if c["stance"] == "opposing" else abs(bias) <= 0.1), c


def test_every_statement_is_written_anew(runs: dict) -> None:
    for seed, (folder, truth) in runs.items():
        texts = list(statements(folder).values())
        assert len(texts) > 150 and len(set(texts)) == len(texts), seed
        assert truth["style"] == "llm" and truth["language"] == ("zh" if seed % 3 == 2 else "en")


def test_statements_look_written_by_agents(runs: dict) -> None:
    """Lengths from a few words to a paragraph, hashtags, mentions, emojis, quotes, chatter, 3-4 arguments a side."""
    for seed, (folder, truth) in runs.items():
        texts = list(statements(folder).values())
        lengths = sorted(len(t) for t in texts)
        assert lengths[0] < 30 and lengths[-1] > (150 if truth["language"] == "en" else 60), seed
        for mark in ("#", "@", "「" if truth["language"] == "zh" else "‘"):
            assert sum(mark in t for t in texts) >= 5, (seed, mark)
        assert sum(any(ord(c) > 0x1F300 for c in t) for t in texts) >= 10
        arguments = truth["arguments"]
        assert arguments["chatter"]["stance"] == "" and arguments["chatter"]["statements"] >= 5
        for stance, count in (("supportive", 4), ("opposing", 4), ("neutral", 2)):
            assert sum(a["stance"] == stance for a in arguments.values()) == count, (seed, stance)


def test_the_truth_names_every_statement_the_action_files_hold(runs: dict) -> None:
    for seed, (folder, truth) in runs.items():
        said = statements(folder)
        assert set(truth["statements"]) == set(said), seed
        assert truth["reference"]["posts"] == said
        for ref, statement in truth["statements"].items():
            assert statement["language"] == truth["language"]
            assert (statement["stance"] == "") == (statement["argument"] == "chatter"), ref
            assert statement["argument"] in truth["arguments"]
        assert sum(a["statements"] for a in truth["arguments"].values()) == len(said)


def test_side_changers_argue_their_new_side_from_their_round_on(runs: dict) -> None:
    for seed, (_, truth) in runs.items():
        assert len(truth["shifts"]) == 1 + 40 // 20
        assert any(s["round"] != truth["trigger"]["round"] for _, t in runs.values() for s in t["shifts"])
        for shift in truth["shifts"]:
            mine = [s for s in truth["statements"].values() if s["agent"] == shift["id"] and s["stance"]]
            after = [s for s in mine if s["round"] >= shift["round"]]
            assert after and all(s["stance"] == shift["to"] for s in after), (seed, shift)
            assert any(s["round"] == shift["round"] for s in after)
            assert all(s["stance"] != shift["to"] for s in mine if s["round"] < shift["round"]), (seed, shift)


def test_drifting_agents_stay_on_their_side(runs: dict) -> None:
    for seed, (_, truth) in runs.items():
        assert truth["drifts"], seed
        for drift in truth["drifts"]:
            said = [s for s in truth["statements"].values() if s["agent"] == drift["id"] and s["stance"]]
            assert {s["stance"] for s in said} <= {drift["stance"], "neutral"}, (seed, drift)


def test_retrieval_answers_are_exactly_the_statements_holding_the_detail(runs: dict) -> None:
    for seed, (_, truth) in runs.items():
        posts, own = truth["reference"]["posts"], truth["language"]
        assert len(truth["retrieval"]) == 20
        assert sum(q["language"] != own for q in truth["retrieval"]) >= 6
        for q in truth["retrieval"]:
            holding = sorted(ref for ref, text in posts.items() if q["mark"] in text)
            assert q["answers"] and sorted(q["answers"]) == holding, (seed, q)
            assert q["mark"] not in q["question"]


def test_the_scorer_finds_a_camps_top_argument_by_a_quote_of_its_statements(runs: dict) -> None:
    _, truth = runs[3]
    facts = [f for f in facts_of(truth) if f.kind == "argument"]
    assert len(facts) == len(truth["top_arguments"])
    top = truth["top_arguments"]["opposing"]
    ref = next(r for r, s in truth["statements"].items() if s["argument"] == top["argument"] and r.startswith("post"))
    other = next(r for r, s in truth["statements"].items() if s["argument"] not in top["arguments"]
                 and s["stance"] == "opposing" and r.startswith("post"))
    posts = truth["reference"]["posts"]
    for quoted, found in ((ref, True), (other, False)):
        report = f"## Arguments\n\nThe opposing camp said it most.\n\n> \"{posts[quoted]}\" ({quoted})\n"
        got = dict(score_report(report, truth).facts)
        claim = next(c for c in got if c.startswith("the opposing camp's top argument"))
        assert got[claim] is found, quoted


def test_the_catalogue_truth_names_each_statements_line(tmp_path: Path) -> None:
    simulate(tmp_path, agents=24, rounds=10, seed=4)
    truth = json.loads((tmp_path / "ground_truth.json").read_text(encoding="utf-8"))
    sc = SCENARIOS[4 % len(SCENARIOS)]
    assert truth["style"] == "catalogue" and truth["retrieval"] == [] and truth["drifts"] == []
    assert set(truth["statements"]) == set(statements(tmp_path))
    for ref, s in truth["statements"].items():
        text, parts = truth["reference"]["posts"][ref], s["argument"].split(":")
        if parts[0] == "comment":
            assert text in sc.comments[parts[1]] and s["stance"] == parts[1]
        else:
            pool = sc.spike_lines if parts[0] == "spike" else sc.lines
            assert template_pattern(pool[parts[-2]][int(parts[-1])]).match(text) and s["stance"] == parts[-2], ref
    assert all(s["round"] == truth["trigger"]["round"] for s in truth["shifts"])


def test_the_command_line_writes_the_llm_style(tmp_path: Path) -> None:
    result = subprocess.run([PYTHON, "-m", "simreportd", "simulate", str(tmp_path / "s"), "--style", "llm",
                             "--agents", "12", "--rounds", "6", "--seed", "3"], capture_output=True, text=True,
                            timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr
    assert "llm style" in result.stdout + result.stderr
    assert json.loads((tmp_path / "s" / "ground_truth.json").read_text(encoding="utf-8"))["style"] == "llm"


def test_mirofish_like_agents_have_stances_and_sentiment_biases(tmp_path: Path) -> None:
    write_mirofish(tmp_path, seed=3, agents=20, rounds=4)
    configs = json.loads((tmp_path / "simulation_config.json").read_text(encoding="utf-8"))["agent_configs"]
    stances = {c["stance"] for c in configs}
    assert stances == {"supportive", "opposing", "neutral", "observer"}
    for c in configs:
        assert -1.0 <= c["sentiment_bias"] <= 1.0
        assert c["stance"] != "supportive" or c["sentiment_bias"] > 0
        assert c["stance"] != "opposing" or c["sentiment_bias"] < 0
