"""A guided report states the engine's whole analysis, so it scores at least what the offline writer scores on
the same run, on every measure of the scorer; the model's sentences stand apart, marked as its own. The
scripted model server over real HTTP, an English story and a Chinese one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

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
    sentences[0]["text"] = "Put plainly: " + sentences[0]["text"]
    return {"content": json.dumps({"sentences": sentences})}


async def test_the_models_own_reading_stands_marked_over_the_data_and_its_copies_do_not(tmp_path: Path,
                                                                                      small_sim: Path) -> None:
    with FakeLLM(script=adds_a_reading) as llm:
        _, _, (_, events) = await report_once(guided_config(tmp_path, llm.base_url, mode="guided"), small_sim)
    for content in (e.data["content"] for e in events if e.type == "SectionCompleted"):
        reading, data = content.split("From the data:", 1)
        assert "_The model's reading" in reading and "Put plainly: " in reading
        assert reading.count(". ") <= 2  # the copied fact stands once, under the data, not twice
