"""The report scorer's verdicts on hand-made reports, and the ground truth the simulator writes."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from simreportd.simulator.quality import score_report
from simreportd.simulator.simulate import simulate
from simreportd.simulator.truth import FILE

from ..conftest import PYTHON, TIMEOUT, write_config


@pytest.fixture(scope="module")
def truth(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("sims") / "sim_truth"
    simulate(folder, agents=24, rounds=10, seed=4)
    return json.loads((folder / FILE).read_text(encoding="utf-8"))


def perfect(t: dict[str, Any]) -> str:
    """A report stating every fact of the story, with figures and quotes taken from the ground truth."""
    spike, div, ref = t["spike"], t["divergence"], t["reference"]
    agents = ref["agents"]
    loud, quiet = div["platform"], div["quiet"]
    camps = ", ".join(f"{c['size']} {c['stance']}" for c in t["camps"])
    lines = ["# Report", "", "## What happened", "",
             f"The scheduled event landed in round {t['trigger']['round']}. Round {spike['round']} had "
             f"{spike['actions']} actions.", "",
             f"After round {div['after_round']}, {loud.capitalize()} averaged {div['means_after'][loud]} actions per "
             f"round and {quiet.capitalize()} averaged {div['means_after'][quiet]}.", "",
             f"The agents split into {camps}.", ""]
    for e in t["most_engaged"]:
        lines += [f"{e['name']} (agent:{e['id']}) drew {e['reactions']} reactions.", ""]
    for s in t["shifts"]:
        lines += [f"{s['name']} (agent:{s['id']}) moved to the {s['to']} camp.", ""]
    posts = ref["posts"]
    from simreportd.simulator.truth import template_pattern
    for top in t["top_arguments"].values():
        rx = template_pattern(top["templates"][0])
        post_ref = next(r for r, text in sorted(posts.items()) if rx.match(text))
        lines += [f"> \"{posts[post_ref]}\" ({post_ref})", ""]
    first = min(agents, key=int)
    lines += [f"{agents[first]['name']} (agent:{first}) made {agents[first]['actions']} actions.", ""]
    return "\n".join(lines)


def test_a_perfect_report_recovers_every_fact_with_no_error(truth: dict[str, Any]) -> None:
    score = score_report(perfect(truth), truth)
    assert [c for c, ok in score.facts if not ok] == []
    assert score.wrong_numbers == [] and score.numbers_checked >= 5
    assert score.hallucinated == [] and score.quotes_ungrounded == []
    assert score.quotes_grounded == len(truth["top_arguments"])


def test_one_wrong_number_is_found(truth: dict[str, Any]) -> None:
    first = min(truth["reference"]["agents"], key=int)
    actions = truth["reference"]["agents"][first]["actions"]
    report = perfect(truth).replace(f"made {actions} actions", f"made {actions + 3} actions")
    score = score_report(report, truth)
    assert score.wrong_numbers == [f"agent:{first} actions: said {actions + 3}, is {actions}"]


def test_an_invented_agent_is_found(truth: dict[str, Any]) -> None:
    report = perfect(truth) + "\nJohn Smith (agent:999) led the debate. Mei Zhou also posted.\n"
    names = {a["name"] for a in truth["reference"]["agents"].values()}
    score = score_report(report, truth)
    assert "agent:999 does not exist" in score.hallucinated
    assert ("Mei Zhou is no agent of this simulation" in score.hallucinated) == ("Mei Zhou" not in names)


def test_a_name_on_the_wrong_id_and_a_misquote_are_found(truth: dict[str, Any]) -> None:
    agents = truth["reference"]["agents"]
    a, b = sorted(agents, key=int)[:2]
    ref, text = sorted(truth["reference"]["posts"].items())[0]
    report = perfect(truth) + f"\n{agents[a]['name']} (agent:{b}) agreed.\n\n> \"{text} Really.\" ({ref})\n"
    score = score_report(report, truth)
    assert f"{agents[a]['name']} is not agent:{b} ({agents[b]['name']})" in score.hallucinated
    assert len(score.quotes_ungrounded) == 1


def test_a_missing_fact_is_not_recovered(truth: dict[str, Any]) -> None:
    spike = truth["spike"]
    report = perfect(truth).replace(f"had {spike['actions']} actions", "was busy")
    missed = [c for c, ok in score_report(report, truth).facts if not ok]
    assert missed == [f"round {spike['round']} spiked to {spike['actions']} actions"]


def test_ground_truth_varies_with_the_seed_and_holds_a_chinese_story(tmp_path: Path) -> None:
    truths = []
    for seed in range(1, 7):
        simulate(tmp_path / f"s{seed}", agents=24, rounds=12, seed=seed)
        truths.append(json.loads((tmp_path / f"s{seed}" / FILE).read_text(encoding="utf-8")))
    assert len({t["trigger"]["round"] for t in truths}) > 1
    assert {t["divergence"]["platform"] for t in truths} == {"twitter", "reddit"}
    assert "zh" in {t["language"] for t in truths}
    assert all(t["shifts"] for t in truths)


def test_interaction_chains_read_as_sentences() -> None:
    """`reposted the posts of X 2 times`, `liked their own posts`: not `repost X x2`."""
    from simreportd.agent.findings import statements

    def chain(kind: str, to: int = 4) -> str:
        return statements.chain({"from": "agent:3", "from_name": "Jonas Zhou", "to": f"agent:{to}",
                      "to_name": "Tariq Kowalski" if to == 4 else "Jonas Zhou", "kind": kind, "count": 2})

    assert chain("repost") == "Jonas Zhou (agent:3) reposted the posts of Tariq Kowalski (agent:4) 2 times"
    assert chain("follow") == "Jonas Zhou (agent:3) followed Tariq Kowalski (agent:4) 2 times"
    assert chain("like", to=3) == "Jonas Zhou (agent:3) liked their own posts 2 times"


def test_a_long_runs_report_states_no_wrong_figure(tmp_path: Path) -> None:
    """Past 60 rounds the analytics sum the rounds into spans: the offline writer names a span as one and
    averages a side of the pivot over the spans wholly on it, and the scorer checks both."""
    folder = tmp_path / "sims" / "sim_long"
    simulate(folder, agents=60, rounds=90, seed=2)
    config = write_config(tmp_path, auto=False)
    run = subprocess.run([PYTHON, "-m", "simreportd", "-c", str(config), "report", str(folder), "--wait"],
                         capture_output=True, text=True, timeout=TIMEOUT * 2)
    assert run.returncode == 0, run.stderr
    text = (tmp_path / "reports" / run.stdout.split()[-1] / "full_report.md").read_text(encoding="utf-8")
    score = score_report(text, json.loads((folder / FILE).read_text(encoding="utf-8")))
    assert score.wrong_numbers == [] and score.numbers_checked >= 25
    assert re.search(r"两者差距最大的是第\d+-\d+轮：Twitter上\d+次行动", text)  # seed 2's story is in Chinese


def test_the_scorer_checks_a_span_of_rounds_by_its_sums_and_a_listed_group_by_its_members(
        truth: dict[str, Any]) -> None:
    rounds, agents = {r[0]: r for r in truth["reference"]["rounds"]}, truth["reference"]["agents"]
    first, second = sorted(rounds)[1:3]
    twitter = rounds[first][1] + rounds[second][1]
    [a, b] = sorted(agents, key=int)[:2]
    stance = agents[a]["stance"]
    listing = f"2 {stance} agents ({agents[a]['name']} (agent:{a}) and {agents[b]['name']} (agent:{b})) follow each other."
    right = f"They were furthest apart in rounds {first}-{second}: {twitter} actions on Twitter."
    wrong = f"They were furthest apart in rounds {first}-{second}: {twitter + 5} actions on Twitter."
    assert score_report(f"# R\n\n{right}\n\n{listing}\n", truth).wrong_numbers == []
    assert score_report(f"# R\n\n{wrong}\n", truth).wrong_numbers == [
        f"rounds {first}-{second} on Twitter: said {twitter + 5}, is {twitter}"]
    assert score_report(f"# R\n\n2 {stance} agents argued.\n", truth).wrong_numbers  # a camp's size, and wrong


def test_a_scheduled_event_the_run_has_not_reached_is_no_pivot() -> None:
    """A partial report's run may stop before its scheduled event: the writer says so instead of placing it."""
    from simreportd.agent.findings.facts import Facts
    from simreportd.agent.findings.statements import timeline

    rows = [{"round": r, "twitter": 10 + (30 if r == 6 else 0), "reddit": 10, "total": 20 + (30 if r == 6 else 0),
             "divergence": 0.0} for r in range(0, 9)]
    analytics = {"per_round": rows, "total_actions": sum(r["total"] for r in rows), "rounds": 8,
                 "actions_by_platform": {"twitter": 120, "reddit": 90}, "busiest_round": rows[6],
                 "turning_points": [{"round": 6, "volume": 50, "ratio": 2.5, "rolling_mean": 20}]}
    background = {"scheduled_events": [{"round": 20, "description": "The ministry's memo leaks."}]}
    facts = Facts({"simulation_analytics": [analytics]}, background, "", set())
    assert facts.event is None and facts.pivot == 6
    text = timeline(facts)
    assert "set for round 20, had not happened by the last round recorded (8)" in text
    assert "The ministry's memo leaks" not in text
    reached = Facts({"simulation_analytics": [analytics]}, {"scheduled_events": [{"round": 6}]}, "", set())
    assert reached.event == {"round": 6} and reached.pivot == 6


def test_the_truth_credits_a_like_to_the_author_of_the_post_it_names_not_a_namesake(tmp_path: Path) -> None:
    """Six hundred agents share some names; a like names its post by id, and its author is who drew it."""
    folder = tmp_path / "sims" / "sim_many"
    simulate(folder, agents=600, rounds=4, seed=1)
    truth = json.loads((folder / FILE).read_text(encoding="utf-8"))
    agents = truth["reference"]["agents"]
    names: dict[str, list[str]] = {}
    for agent_id, agent in agents.items():
        names.setdefault(agent["name"], []).append(agent_id)
    authors, liked = {}, set()
    for line in (folder / "twitter" / "actions.jsonl").read_text(encoding="utf-8").splitlines():
        action = json.loads(line)
        if action.get("action_type") == "CREATE_POST":
            authors[action["action_args"]["post_id"]] = str(action["agent_id"])
        elif action.get("action_type") == "LIKE_POST" and authors.get(action["action_args"]["post_id"]) not in (
                None, str(action["agent_id"])):
            liked.add(authors[action["action_args"]["post_id"]])
    namesakes = [a for ids in names.values() if len(ids) > 1 for a in ids if a in liked]
    assert len(namesakes) >= 10  # enough agents who share a name and whose posts others liked
    assert all(agents[a]["reactions"] >= 1 for a in namesakes)
