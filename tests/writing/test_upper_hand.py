"""Who has the upper hand, as a model says it: an agent given the lead for a camp it does not stand in is dropped and
named in the verdict, a true such sentence stands as the model's reading; and every guided report says whether the
model added a finding of its own. The scripted model server over real HTTP, an English story and a Chinese one."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from simreportd.agent.report.guided import REPORT_ADDED, REPORT_NONE, SYSTEM
from simreportd.simulator.simulate import simulate
from simreportd.simulator.truth import FILE as GROUND_TRUTH

from ..fake_llm import FakeLLM
from .test_guided import copies_the_sheet, guided_config
from .test_report_llm import report_once

pytestmark = pytest.mark.anyio

CAMPS = {"supportive": "支持方", "opposing": "反对方", "neutral": "中立方", "observer": "旁观方"}
AGENT = re.compile(r"([\u4e00-\u9fff]{2,3}|[A-Z][a-z]+ [A-Z][a-z]+) [(（]agent:(\d+)[,，] ?(supportive|opposing|neutral|observer|"
                   r"支持方|反对方|中立方|旁观方)")


def two_camps(sheet: str, changers: set[str]) -> dict[str, tuple[str, str]] | None:
    """The first agent the sheet shows of each of two camps, of those who kept their side: {camp: (name, ref)}."""
    first: dict[str, tuple[str, str]] = {}
    for name, number, camp in AGENT.findall(sheet):
        if name in changers:
            continue
        camp = next((en for en, zh in CAMPS.items() if zh == camp), camp)
        first.setdefault(camp, (name, f"agent:{number}"))
    return first if len(first) >= 2 else None


def says_who_leads(written: list[tuple[str, str]], changers: set[str]) -> Any:
    """Qwen's seed-23 sentence in kind (an agent put at the head of a camp it does not stand in) and a true one,
    each pair of which appended to `written`."""
    def script(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any] | None:
        if body["messages"][0]["content"] != SYSTEM:
            return None
        sheet = body["messages"][1]["content"]
        camps = two_camps(sheet, changers)
        if camps is None:
            return copies_the_sheet(body, message)
        (a, (name_a, ref_a)), (b, (name_b, ref_b)) = list(camps.items())[:2]
        fact = int(re.findall(r"^\[(\d+)\]", sheet, re.M)[0])
        if re.search(r"[\u4e00-\u9fff]", name_a):
            pair = (f"{CAMPS[b]}占上风的是{name_a} ({ref_a})", f"在{CAMPS[a]}中占上风的是{name_a} ({ref_a})")
        else:
            pair = (f"The {b} camp gained the upper hand, led by {name_a} ({ref_a})",
                    f"{name_b} ({ref_b}) has the upper hand for the {b} camp")
        written.append(pair)
        end = "。" if pair[0][-1] == ")" and "占" in pair[0] else "."
        return {"content": json.dumps({"sentences": [{"text": t + end, "facts": [fact]} for t in pair]},
                                      ensure_ascii=False)}
    return script


@pytest.mark.parametrize("seed", [3, 2])  # an English story and a Chinese one
async def test_an_agent_given_the_lead_for_another_camp_is_dropped_and_a_true_lead_stands(tmp_path: Path,
                                                                                         seed: int) -> None:
    folder = tmp_path / "sims" / f"sim_seed{seed}"
    simulate(folder, agents=12, rounds=6, seed=seed)
    written: list[tuple[str, str]] = []
    changers = {s["name"] for s in json.loads((folder / GROUND_TRUTH).read_text(encoding="utf-8"))["shifts"]}
    with FakeLLM(script=says_who_leads(written, changers)) as llm:
        _, _, (state, events) = await report_once(guided_config(tmp_path, llm.base_url, mode="guided"), folder)
    assert written, "no sheet showed agents of two camps"
    dropped = [c for e in events if e.type == "DraftWritten" for u in e.data["claims"]["unsupported"] for c in u["claims"]]
    assert any("has the upper hand for the" in c for c in dropped), dropped
    shown = "\n".join(e.data["content"] for e in events if e.type == "SectionCompleted")
    assert not any(wrong in shown for wrong, _ in written)  # named in the verdict (above), never shown
    assert any(true in shown for _, true in written)  # the true one stands as the model's reading
    reading = "_The model's reading" if seed == 3 else "_模型的解读"
    assert reading in shown and shown.rstrip().endswith(REPORT_ADDED[seed == 2])
    assert state.verdict is not None and state.verdict.status == "completed"


@pytest.mark.parametrize("seed", [3, 2])
async def test_a_report_whose_model_only_restates_says_so_in_every_section_and_at_its_end(tmp_path: Path,
                                                                                         seed: int) -> None:
    folder = tmp_path / "sims" / f"sim_seed{seed}"
    simulate(folder, agents=12, rounds=6, seed=seed)
    with FakeLLM(script=copies_the_sheet) as llm:
        _, _, (_, events) = await report_once(guided_config(tmp_path, llm.base_url, mode="guided"), folder)
    sections = [e.data["content"] for e in events if e.type == "SectionCompleted"]
    none = ("_The model's sentences only restated", "_No draft of the model") if seed == 3 else ("_模型的句子只是复述",
                                                                                                   "_模型的草稿没有")
    assert sections and all(s.startswith(none) for s in sections)
    assert sections[-1].rstrip().endswith(REPORT_NONE[seed == 2])
    assert not any(REPORT_NONE[seed == 2] in s for s in sections[:-1])
