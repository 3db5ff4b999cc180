"""Guided mode for small models: the engine runs the tools, the model writes from a numbered fact sheet, the
claim check keeps what the sheet supports; drafts; the auto probe. The scripted server over real HTTP."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from simreportd.agent.report.guided import SYSTEM
from simreportd.simulator.quality import score_report
from simreportd.simulator.simulate import simulate
from simreportd.simulator.truth import FILE as GROUND_TRUTH

from ..fake_llm import FakeLLM
from ..stories.test_weak_model import replay_report_in
from .test_report_llm import llm_config, report_once

pytestmark = pytest.mark.anyio

INVENTED = "On Facebook, 9,876 users agreed."


def copies_the_sheet(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any] | None:
    """A small model in guided mode: it restates facts 1 and 2 and adds one sentence of its own."""
    if body["messages"][0]["content"] != SYSTEM:
        return None
    sheet = dict(re.findall(r"^\[(\d+)\] (.+)$", body["messages"][1]["content"], re.M))
    sentences = [{"text": sheet[n], "facts": [int(n)]} for n in ("1", "2") if n in sheet and not sheet[n].startswith(">")]
    return {"content": json.dumps({"sentences": [*sentences, {"text": INVENTED, "facts": [1]}]})}


def guided_config(tmp_path: Path, base_url: str, **agent: object) -> Any:
    config = llm_config(tmp_path, base_url)
    return config.model_copy(update={"agent": config.agent.model_copy(update=agent)})


async def test_guided_sections_keep_only_what_the_sheet_supports_and_the_best_of_their_drafts(
        tmp_path: Path, small_sim: Path) -> None:
    with FakeLLM(script=copies_the_sheet) as llm:
        config = guided_config(tmp_path, llm.base_url, mode="guided", drafts=2, response_format="json_object")
        _, report_id, (state, events) = await report_once(config, small_sim)
    drafts = [e.data for e in events if e.type == "DraftWritten"]
    sections = [e.data for e in events if e.type == "SectionCompleted"]
    assert len(drafts) == 2 * len(sections) and all(d["cited"] == [1, 2] or d["cited"] == [1] for d in drafts)
    assert not any(e.type == "ToolCalled" and e.data["tool"] == "interview_agents" for e in events)
    for section in sections:
        assert "From the data:" in section["content"] and "Facebook" not in section["content"]
        assert [u["sentence"] for u in section["claims"]["unsupported"]] == [INVENTED] and section["draft"] == 1
        assert not any(p.startswith("cites 0") for p in section["problems"])  # a quote from the sheet is listed
    guided_requests = [r for r in llm.requests if r["messages"][0]["content"] == SYSTEM]
    assert guided_requests and all(r["response_format"]["type"] == "json_object" for r in guided_requests)
    assert all("tools" not in r for r in guided_requests)  # the engine called the tools, not the model
    # each section had a sentence removed: named in its verdict (above), never shown, so the report stands
    assert state.verdict is not None and state.verdict.status == "completed" and not state.verdict.problems
    assert (await replay_report_in(tmp_path, report_id)).divergence is None  # recorded drafts replay exactly


async def test_auto_mode_probes_the_model_and_records_its_choice(tmp_path: Path, small_sim: Path) -> None:
    with FakeLLM(script=copies_the_sheet) as llm:
        config = guided_config(tmp_path, llm.base_url, mode="auto")
        _, report_id, (state, events) = await report_once(config, small_sim)
    [chosen] = [e.data for e in events if e.type == "WritingModeChosen"]
    assert chosen["mode"] == "guided" and chosen["probe_claims"] > chosen["probe_supported"]  # it invented
    assert any(e.type == "DraftWritten" for e in events)
    assert [e.type for e in events].index("WritingModeChosen") < [e.type for e in events].index("SectionStarted")
    assert (await replay_report_in(tmp_path, report_id)).divergence is None


def only_invents(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any] | None:
    if body["messages"][0]["content"] != SYSTEM:
        return None
    return {"content": json.dumps({"sentences": [{"text": INVENTED, "facts": [1]}]})}


async def test_a_guided_section_no_draft_survives_shows_the_data_names_the_draft_and_stands(tmp_path: Path,
                                                                              small_sim: Path) -> None:
    with FakeLLM(script=only_invents) as llm:
        _, _, (state, events) = await report_once(guided_config(tmp_path, llm.base_url, mode="guided"), small_sim)
    sections = [e.data for e in events if e.type == "SectionCompleted"]
    assert all(s["content"].startswith("_No draft of the model survived") and s["draft"] == 0 for s in sections)
    drafts = [e.data for e in events if e.type == "DraftWritten"]
    assert drafts and all(d["claims"]["unsupported"][0]["sentence"] == INVENTED for d in drafts)  # named, not shown
    assert not any(INVENTED in s["content"] for s in sections) and not any(s["problems"] for s in sections)
    assert not any(r["messages"][0]["content"].startswith("You plan") or "Plan the report" in
                   r["messages"][0]["content"] for r in llm.requests)  # the engine planned the outline
    assert state.verdict is not None and state.verdict.status == "completed"  # every shown sentence is checked


@pytest.mark.parametrize("seed", [3, 2])  # an English story and a Chinese one
async def test_the_guided_answers_section_restates_each_question_over_the_facts_that_answer_it(
        tmp_path: Path, seed: int) -> None:
    folder = tmp_path / "sims" / f"sim_seed{seed}"
    simulate(folder, agents=12, rounds=6, seed=seed)
    with FakeLLM(script=copies_the_sheet) as llm:
        _, report_id, (state, events) = await report_once(guided_config(tmp_path, llm.base_url, mode="guided"), folder)
    sections = [e.data for e in events if e.type == "SectionCompleted"]
    answers = sections[-1]["content"]
    truth = json.loads((folder / GROUND_TRUTH).read_text(encoding="utf-8"))
    asked = [q["question"] for q in truth["questions"]]
    assert [answers.index(f"**{q}**") for q in asked] == sorted(answers.index(f"**{q}**") for q in asked)
    assert answers.count("From the data:" if seed == 3 else "数据中的事实：") == len(asked)  # every question's facts
    markdown = "\n\n".join(f"## {s['title']}\n\n{s['content']}" for s in sections)
    score = score_report(markdown, truth)
    assert all(ok for _, ok in score.questions) and not score.wrong_numbers and not score.hallucinated
    assert all(not s["claims"]["unsupported"] or s["claims"]["unsupported"][0]["sentence"] == INVENTED
               for s in sections)
    assert (await replay_report_in(tmp_path, report_id)).divergence is None


def cut_after_one_sentence(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any] | None:
    """A draft the length limit cut inside its second sentence: the JSON does not parse."""
    reply = copies_the_sheet(body, message)
    if reply is None:
        return None
    first = json.loads(reply["content"])["sentences"][0]
    return {"content": '{"sentences": [' + json.dumps(first) + ', {"text": "On Twi', "finish_reason": "length"}


async def test_a_draft_cut_by_the_length_limit_keeps_its_whole_sentences_and_no_json(tmp_path: Path,
                                                                                    small_sim: Path) -> None:
    with FakeLLM(script=cut_after_one_sentence) as llm:
        _, _, (state, events) = await report_once(guided_config(tmp_path, llm.base_url, mode="guided"), small_sim)
    drafts = [e.data for e in events if e.type == "DraftWritten"]
    assert drafts and all(d["cited"] == [1] and d["claims"]["cut"] for d in drafts)
    for section in (e.data for e in events if e.type == "SectionCompleted"):
        assert section["draft"] == 1 and '"text"' not in section["content"] and "{" not in section["content"]
