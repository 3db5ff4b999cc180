"""A model's persona answer to a user quotes the agent's own statements with their ids and takes no premise of the
question as fact; else the data-only answer stands in. Pure tests of the hold, then the scripted server over real
HTTP through a real interview."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from simreportd.daemon.cli.local import generate
from simreportd.daemon.interviews.persona import held
from simreportd.daemon.service import Daemon

from ..fake_llm import FakeLLM
from .test_report_llm import llm_config

pytestmark = pytest.mark.anyio

POSTS = [{"ref": "post:twitter:3", "content": "The charge is a tax on people who cannot work from home."}]
QUESTION = "Why did the stadium memo change your mind?"


def test_a_premise_of_the_question_and_talk_of_the_simulation_are_dropped_and_the_quote_stands() -> None:
    answer = ("The stadium memo was mentioned as changing my mind. I wrote \"The charge is a tax on people who cannot "
              "work from home.\" (post:twitter:3). The simulation data shows I care about commuters.")
    kept = held(answer, POSTS, QUESTION)
    assert kept == ("[persona, written by the model from my posts] I wrote \"The charge is a tax on people who "
                    "cannot work from home.\" (post:twitter:3).")


def test_an_answer_quoting_none_of_the_agents_statements_does_not_stand() -> None:
    assert held("The simulation data says I care about buses.", POSTS, QUESTION) is None
    assert held("I wrote \"buses are late\" (post:twitter:3).", POSTS, QUESTION) is None  # the id, not its words
    said = [{"ref": "post:reddit:8", "content": "The stadium memo changed my mind about the charge."}]
    kept = held("Yes: \"The stadium memo changed my mind about the charge.\" (post:reddit:8). The stadium memo "
                "mattered to me.", said, QUESTION)
    assert kept is not None and kept.endswith("The stadium memo mattered to me.")  # the premise is the agent's own


ASKED = "Why did the tram strike change your mind?"  # no agent of the run wrote of a tram strike


def takes_the_premise(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any] | None:
    """The small model of the issue: it takes the question's premise as fact and quotes nothing."""
    if "You answer as one simulated" not in body["messages"][0]["content"]:
        return None
    return {"content": "The tram strike was mentioned as changing my mind, as the simulation data shows."}


def quotes_a_post(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any] | None:
    if "You answer as one simulated" not in body["messages"][0]["content"]:
        return None
    posts = json.loads(re.findall(r"Posts:\n<simulation_data[^>]*>\n(.*?)\n</simulation_data>",
                                  body["messages"][1]["content"], re.S)[0])
    first = posts[0]
    return {"content": f"The tram strike changed my mind. I said \"{first['content']}\" ({first['ref']})."}


@pytest.mark.parametrize("script, lead", [(takes_the_premise, "[persona, from my profile and posts]"),
                                          (quotes_a_post, "[persona, written by the model from my posts]")])
async def test_a_user_interview_in_persona_quotes_the_agent_and_takes_no_premise(
        tmp_path: Path, small_sim: Path, script: Any, lead: str) -> None:
    with FakeLLM(script=script) as llm:
        async with Daemon(llm_config(tmp_path, llm.base_url), folders=[small_sim]) as daemon:
            await daemon.watcher.check(small_sim)
            report_id = await daemon.reports.request(small_sim.name)
            await generate(daemon, report_id)
            answer = (await daemon.interviews.ask(report_id, 1, ASKED))["answer"]
        asked = [r for r in llm.requests if "You answer as one simulated" in r["messages"][0]["content"]]
    assert asked and "word for word" in asked[-1]["messages"][0]["content"]  # the rules were in the prompt
    assert answer.startswith(lead) and re.search(r"\((?:post|comment):(?:twitter|reddit):\d+\)", answer)
    assert "tram strike" not in answer.lower() and "simulation" not in answer.lower()
