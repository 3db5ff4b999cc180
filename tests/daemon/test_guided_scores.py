"""A guided report states the engine's whole analysis, so it scores at least what the offline writer scores on
the same run, on every measure of the scorer; the model's sentences stand apart, marked as its own. The
scripted model server over real HTTP, an English story and a Chinese one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from simreportd.agent.guided import SYSTEM
from simreportd.daemon.config import Config
from simreportd.simulator.quality import Score, score_report
from simreportd.simulator.simulate import simulate
from simreportd.simulator.truth import FILE as GROUND_TRUTH

from ..conftest import make_config
from ..fake_llm import FakeLLM
from .test_guided import copies_the_sheet, guided_config
from .test_report_llm import report_once

pytestmark = pytest.mark.anyio


def markdown_of(events: list) -> str:
    return "\n\n".join(f"## {e.data['title']}\n\n{e.data['content']}" for e in events if e.type == "SectionCompleted")


def measures(score: Score) -> dict[str, float]:
    """Every measure of the scorer, signed so that more is better (quotes as the share grounded: guided mode
    runs no persona interviews, so it quotes fewer)."""
    quotes = score.quotes_grounded + len(score.quotes_ungrounded)
    return {"facts": score.recovered, "wrong numbers": -len(score.wrong_numbers),
            "invented names": -len(score.hallucinated), "quotes grounded": score.quotes_grounded / max(1, quotes),
            "questions": sum(ok for _, ok in score.questions)}


def apart(config: Config, root: Path) -> Config:
    """`config` with its own store and output folder, reading the shared simulations."""
    return config.with_paths(store=root / "events.sqlite3", roots=[root.parent / "sims"], output_dir=root / "reports")


@pytest.mark.parametrize("seed", [3, 2])  # an English story and a Chinese one
async def test_a_guided_report_scores_at_least_the_offline_writers_on_every_measure(tmp_path: Path,
                                                                                    seed: int) -> None:
    folder = tmp_path / "sims" / f"sim_seed{seed}"
    simulate(folder, agents=12, rounds=6, seed=seed)
    truth = json.loads((folder / GROUND_TRUTH).read_text(encoding="utf-8"))
    offline = apart(make_config(tmp_path, llm={"provider": "offline"}, reports={"auto": False}), tmp_path / "offline")
    _, _, (_, offline_events) = await report_once(offline, folder)
    with FakeLLM(script=copies_the_sheet) as llm:
        config = apart(guided_config(tmp_path, llm.base_url, mode="guided"), tmp_path / "guided")
        _, _, (_, events) = await report_once(config, folder)
    engine, guided = measures(score_report(markdown_of(offline_events), truth)), measures(
        score_report(markdown_of(events), truth))
    assert engine["facts"] > 0 and engine["questions"] > 0
    assert {k: v for k, v in guided.items() if v < engine[k]} == {}, (guided, engine)
    none = "_The model's sentences only restated" if seed == 3 else "_模型的句子只是复述"
    sections = [e.data["content"] for e in events if e.type == "SectionCompleted"]
    assert all(s.startswith(none) for s in sections)  # it copied facts 1 and 2: the report says it added nothing
    assert not any("Facebook" in s or "_The model's reading" in s for s in sections)


def adds_a_reading(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any] | None:
    """A model that reads fact 1 in words of its own, then copies fact 2."""
    reply = copies_the_sheet(body, message)
    if reply is None:
        return None
    sentences = json.loads(reply["content"])["sentences"][:2]
    sentences[0]["text"] = OWN_READING
    return {"content": json.dumps({"sentences": sentences})}


OWN_READING = "Read together, these facts show where the debate turned."


async def test_the_models_own_reading_stands_marked_over_the_data_and_its_copies_do_not(tmp_path: Path,
                                                                                      small_sim: Path) -> None:
    with FakeLLM(script=adds_a_reading) as llm:
        _, _, (_, events) = await report_once(guided_config(tmp_path, llm.base_url, mode="guided"), small_sim)
    for content in (e.data["content"] for e in events if e.type == "SectionCompleted"):
        reading, data = content.split("From the data:", 1)
        assert "_The model's reading" in reading and OWN_READING in reading
        assert reading.count(". ") <= 2  # the copied fact stands once, under the data, not twice


# Qwen2.5-Coder-0.5B's sentences on seed 21 (40 agents x 16 rounds), word for word: the trigger put in the first round,
# copies of the engine's facts, one with another fact's tail garbled onto it, the requirement's questions said again.
QWEN_SEED_21 = {
    "Round 8": [  # its figures are the sheet's (3.23x before the round was corrected); its round is not the trigger's
        {"text": "In the first round, the scenario's scheduled event landed with 65 actions, which was 3.42x the mean "
                 "of rounds 5-7 (19.0).", "facts": [1, 3]}],
    "The camps": [
        {"text": "Residents will react to the proposed downtown congestion charge by their profiles, with neutral, "
                 "supportive, and opposing camps forming. The neutral camp's most repeated argument came up in 12 "
                 "statements by 8 agents; Tomasz Zhou (agent:4) put it first.", "facts": [1, 3]},
        {"text": "The supportive camp's most repeated argument came up in 10 statements by 6 agents; Ines Iyer "
                 "(agent:0) put it first.", "facts": [2, 4]}],
    "Who drove": [
        {"text": "Residents will react to the proposed downtown congestion charge, which arguments dominate. The "
                 "debate will differ between Twitter and Reddit.", "facts": [1, 3]},
        {"text": "Hana Sato (agent:5) is neutral by profile, but from round 8 on, all 5 of their statements spoke "
                 "for the opposing camp: Aiko Haddad (agent:21) 2 times.", "facts": [1, 3]},
        {"text": "Amara Zhou (agent:8) is neutral by profile, but from round 8 on, all 4 of their statements spoke "
                 "for the opposing camp: Aiko Haddad (agent:21) 3 times.", "facts": [1, 3]}],
}
NOT_READINGS = ["The neutral camp's most repeated argument", "The supportive camp's most repeated argument",
                "which arguments dominate", "The debate will differ", "is neutral by profile"]


def qwen_on_seed_21(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any] | None:
    if body["messages"][0]["content"] != SYSTEM:
        return None
    asked = body["messages"][1]["content"]
    said = next((s for key, s in QWEN_SEED_21.items() if f"Section: {key}" in asked), QWEN_SEED_21["Who drove"][:1])
    return {"content": json.dumps({"sentences": said}) + "."}


async def test_a_wrong_trigger_round_copied_facts_and_restated_questions_are_not_the_models_reading(tmp_path: Path) -> None:
    folder = tmp_path / "sims" / "sim_seed21"
    simulate(folder, agents=40, rounds=16, seed=21)
    with FakeLLM(script=qwen_on_seed_21) as llm:
        _, _, (_, events) = await report_once(guided_config(tmp_path, llm.base_url, mode="guided"), folder)
    sections = {e.data["title"]: e.data["content"] for e in events if e.type == "SectionCompleted"}
    drivers = next(c for t, c in sections.items() if t.startswith("Who drove"))
    assert drivers.startswith("_The model's sentences only restated the data below")
    for content in sections.values():
        reading = content.split("From the data:", 1)[0]
        assert not [s for s in NOT_READINGS if s in reading], reading
    assert not [c for c in sections.values() if "In the first round" in c]
    [dropped] = [e.data["claims"]["unsupported"] for e in events if e.type == "DraftWritten" and e.data["section_index"] == 1]
    assert dropped[0]["claims"] == ["the scheduled event in round 1"]
    camps = next(c for t, c in sections.items() if t.startswith("The camps"))
    assert camps.split("From the data:", 1)[0].count("Residents will react") == 1  # its own words stand, marked
