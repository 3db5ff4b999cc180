"""The claim check reads who did what to whom, in English and Chinese, and Chinese text sentence by sentence:
pure tests of agent/checks/claims.py and agent/checks/relations.py, no loop, no disk."""

from __future__ import annotations

import json
from typing import Any

from simreportd.agent.checks import claims
from simreportd.agent.report import guided

ROWS = [{"round": r, "twitter": 10 + 2 * r, "reddit": 30 - 3 * r} for r in range(0, 11)]  # Reddit leads early
CONTEXT = {"stances": {"supportive": 6, "opposing": 4, "neutral": 2},
           "scheduled_events": [{"round": 5, "description": "The council votes"}]}


def analytics(active: list[str], engaged: list[str], shifts: list[tuple[str, str, str, int]],
              chains: list[tuple[str, str]] = (), expressed: dict[str, int] | None = None) -> str:  # type: ignore[assignment]
    """A `simulation_analytics` result with these roles (and an `insight_forge`-like list of chains)."""
    agent: dict[str, Any] = {n: {"name": n, "ref": f"agent:{i}"} for i, n in enumerate(
        dict.fromkeys([*active, *engaged, *(s[0] for s in shifts), *(n for c in chains for n in c)]))}
    return json.dumps({
        "total_actions": sum(r["twitter"] + r["reddit"] for r in ROWS),
        "actions_by_platform": {"twitter": sum(r["twitter"] for r in ROWS), "reddit": sum(r["reddit"] for r in ROWS)},
        "per_round": ROWS, "most_active_agents": [agent[n] for n in active],
        "most_engaged_agents": [agent[n] for n in engaged],
        "interaction_chains": [{"from": agent[a]["ref"], "from_name": a, "to": agent[b]["ref"], "to_name": b,
                                "kind": "like", "count": 3} for a, b in chains],
        "camps": {"stance_shifts": [{"name": n, "agent": agent[n]["ref"], "stated_stance": was, "now_speaks_for": now,
                                     "from_round": r} for n, was, now, r in shifts],
                  "expressed": expressed or {}}})


EN = analytics(active=["Sofia Mensah", "Noor Rossi"], engaged=["Kofi Sato"],
               shifts=[("Luis Iyer", "supportive", "opposing", 7)], chains=[("Tariq Iyer", "Kofi Sato")])
ZH = analytics(active=["吴伟", "刘静"], engaged=["王芳"],
               shifts=[("朱娟", "supportive", "opposing", 6), ("张超", "opposing", "supportive", 8)])


def dropped(text: str, result: str) -> list[list[str]]:
    return [u.claims for u in claims.check(text, claims.evidence([result], CONTEXT)).unsupported]


def test_the_invented_relation_of_the_issue_is_dropped_and_named() -> None:
    """The sheet says Sofia and Noor were the most active and others reacted most to Kofi: not that they did."""
    invented = "The debate is dominated by Sofia Mensah and Noor Rossi, who reacted most to Kofi Sato."
    true = ("The most active agents were Sofia Mensah and Noor Rossi. Others reacted most to Kofi Sato (agent:2). "
            "Tariq Iyer liked the posts of Kofi Sato 3 times.")
    ev = claims.evidence([EN], CONTEXT)
    verdict = claims.check(f"{invented} {true}", ev)
    assert [u.claims for u in verdict.unsupported] == [["Sofia Mensah reacted to Kofi Sato",
                                                        "Noor Rossi reacted to Kofi Sato"]]
    assert claims.keep(f"{invented} {true}", verdict) == true


def test_roles_said_of_the_wrong_agents_are_dropped() -> None:
    assert dropped("Kofi Sato was the most active agent.", EN) == [["Kofi Sato most active"]]
    assert dropped("Others reacted most to Noor Rossi.", EN) == [["others reacted most to Noor Rossi"]]
    assert dropped("Sofia Mensah drew the most reactions.", EN) == [["Sofia Mensah most reacted to"]]
    assert dropped("Noor Rossi changed sides.", EN) == [["Noor Rossi changed sides"]]
    assert dropped("No agent changed sides.", EN) == [["no one changed sides"]]
    assert dropped("Kofi Sato reacted most to Tariq Iyer.", EN) == [["Kofi Sato reacted to Tariq Iyer"]]
    assert dropped("Round 5 was the most active round for Kofi Sato. Sofia Mensah, followed by Kofi Sato, wrote.",
                   EN) == []  # no role: a round is most active, "followed by" is an order


def test_who_changed_sides_is_checked_for_the_camps_and_the_timing() -> None:
    assert dropped("Luis Iyer, supportive by profile, spoke for the opposing camp after the event.", EN) == []
    assert dropped("Luis Iyer switched to the supportive camp.", EN) == [["Luis Iyer changed to supportive"]]
    assert dropped("Luis Iyer changed sides from the neutral camp.", EN) == [["Luis Iyer changed from neutral"]]
    assert dropped("Luis Iyer changed sides before the event.", EN) == [["Luis Iyer changed sides in round 7"]]
    # Qwen on seed 25: Amara Tanaka was the most reacted to, and never changed sides
    assert dropped("Kofi Sato's statements moved to another camp than their profile's.", EN) == [
        ["Kofi Sato changed sides"]]
    assert dropped("Luis Iyer's statements moved to another camp than their profile's.", EN) == []


def test_the_largest_camp_and_the_leading_platform_are_checked() -> None:
    assert dropped("The supportive camp is the largest. Twitter led.", EN) == []
    assert dropped("The opposing camp is the largest.", EN) == [["the opposing camp is the largest"]]
    assert dropped("Reddit led before round 3. Twitter led after round 3.", EN) == []
    assert dropped("Reddit led after round 3.", EN) == [["reddit led"]]
    summary = claims.evidence([], {"platforms": {"twitter": {"actions": 40}, "reddit": {"actions": 70}}})
    assert [u.claims for u in claims.check("Reddit led. Twitter led.", summary).unsupported] == [["twitter led"]]
    tied = analytics([], [], [], expressed={"supportive": 5, "opposing": 5})
    ev = claims.evidence([tied], {"stances": {"supportive": 3, "opposing": 3}})
    [wrong] = claims.check("The supportive camp is the largest.", ev).unsupported  # a tie has no largest camp
    assert wrong.claims == ["the supportive camp is the largest"]


def test_the_chinese_invented_relation_is_dropped_sentence_by_sentence() -> None:
    """Chinese names are read as substrings of the text; a Chinese paragraph is several sentences."""
    text = ("吴伟和刘静的观点会占上风，因为他们的发言转向了与档案不同的阵营。朱娟和张超改变了立场。"
            "最活跃的参与者是吴伟和刘静。其他人回应最多的是王芳 (agent:2)。")
    ev = claims.evidence([ZH], CONTEXT)
    assert len(claims.sentences(text)) == 4
    verdict = claims.check(text, ev)
    assert [u.claims for u in verdict.unsupported] == [["吴伟 changed sides", "刘静 changed sides"]]
    assert claims.keep(text, verdict) == "朱娟和张超改变了立场。最活跃的参与者是吴伟和刘静。其他人回应最多的是王芳 (agent:2)。"
    assert dropped("王芳最活跃。吴伟回应了王芳。", ZH) == [["王芳 most active"], ["吴伟 reacted to 王芳"]]
    assert dropped("反对方人数最多。朱娟 (agent:3，档案立场为支持方) 自第6轮起为支持方发声。", ZH) == [
        ["the opposing camp is the largest"], ["朱娟 changed to supportive"]]


def test_a_ratio_next_to_han_characters_is_read_as_a_ratio_of_the_rounds_after() -> None:
    """After round 5 Twitter had 130 actions to Reddit's 30 (4.33 times): a ratio needs no operands beside it."""
    ev = claims.evidence([EN], CONTEXT)
    said = "第5轮之后，Twitter上的讨论持续升温，是Reddit的4.33倍。Reddit的行动是Twitter的4.8倍。"
    assert [u.claims for u in claims.check(said, ev).unsupported] == [["4.8倍"]]
    assert claims.sentences("他说：“很好。”然后离开了。第二句！") == ["他说：“很好。”", "然后离开了。", "第二句！"]


def test_a_guided_draft_with_an_invented_relation_keeps_only_its_true_sentences() -> None:
    facts = ["The most active agents were Sofia Mensah and Noor Rossi.", "Others reacted most to Kofi Sato."]
    draft = json.dumps({"sentences": [
        {"text": "The debate is dominated by Sofia Mensah and Noor Rossi, who reacted most to Kofi Sato.", "facts": [1, 2]},
        {"text": "Kofi Sato drew the most reactions.", "facts": [2]}]})
    body, cited, verdict = guided.draft(draft, facts, claims.evidence([EN], CONTEXT))
    assert body.startswith("Kofi Sato drew the most reactions.") and "dominated" not in body and cited == [2]
    assert [u.claims for u in verdict.unsupported] == [["Sofia Mensah reacted to Kofi Sato",
                                                        "Noor Rossi reacted to Kofi Sato"]]


def test_a_chinese_sheets_fallback_line_is_chinese() -> None:
    assert guided.fallback(["最活跃的参与者是吴伟和刘静。"]).startswith(guided.NO_DRAFT[1])
    assert guided.fallback(["The most active agents were Sofia Mensah."]).startswith(guided.NO_DRAFT[0])


def test_the_sheet_never_cuts_a_fact_inside_a_quotation() -> None:
    text = ('Ann Lee (agent:1) said \u201cThe memo is fake. Nobody checked it.\u201d in round 5 (post:twitter:9). '
            'Twitter averaged 12.5 actions per round. Bo Chen wrote "Buses first. Stadiums never." in round 6.')
    assert guided.whole_quotations(claims.SENTENCE.split(text)) == [
        'Ann Lee (agent:1) said \u201cThe memo is fake. Nobody checked it.\u201d in round 5 (post:twitter:9).',
        "Twitter averaged 12.5 actions per round.", 'Bo Chen wrote "Buses first. Stadiums never." in round 6.']


def test_the_round_a_sentence_gives_the_trigger_is_its_round() -> None:
    wrong = "In the first round, the scenario's scheduled event landed with 30 actions."  # Qwen on seed 21
    assert dropped(wrong, EN) == [["the scheduled event in round 1"]]
    assert dropped("The scheduled event landed in round 7.", EN) == [["the scheduled event in round 7"]]
    assert dropped("预定事件发生在第3轮。", EN) == [["the scheduled event in round 3"]]
    for right in ("Round 5 is when the scenario's scheduled event landed.", "In the fifth round, the trigger hit.",
                  "预定事件发生在第5轮。", "Before round 5, Twitter averaged 20 actions per round."):
        assert dropped(right, EN) == [], right


def test_who_dominated_is_among_the_most_active_or_most_reacted_to() -> None:
    wrong = "Residents will react to the proposed charge by 12 statements, with Luis Iyer and Tariq Iyer dominating."
    assert dropped(wrong, EN) == [["Luis Iyer dominated the debate", "Tariq Iyer dominated the debate"]]
    assert dropped("朱娟主导了讨论。", ZH) == [["朱娟 dominated the debate"]]
    for right in ("The debate was dominated by Sofia Mensah and Kofi Sato.", "吴伟主导了讨论。",
                  "The debate is dominated by a mix of arguments about cleaner air."):
        assert dropped(right, EN if right.isascii() else ZH) == [], right


def test_a_name_before_an_id_is_that_agents() -> None:
    result = json.dumps({"most_active_agents": [{"ref": "agent:23", "name": "Jonas Tanaka"},
                                                {"ref": "agent:32", "name": "Tariq Karimi"}]})
    wrong = ("The agents behind the statements the question search found include Mateo Weber (agent:2, neutral: 12 "
             "actions), Tariq Karimi (agent:23) and Hana Okafor (agent:30)), together from round 13.")  # Qwen, seed 22
    assert "Tariq Karimi is not agent:23" in dropped(wrong, result)[0]
    assert dropped("Tariq Karimi (agent:32) and Jonas Tanaka (agent:23) were the most active.", result) == []


def with_stances(result: str, stances: dict[str, str], expressed: dict[str, int] | None = None) -> str:
    """`result` with its agents' profile stances (as a search hit's `agent` holds them) and camps by statements."""
    value = json.loads(result)
    value["hits"] = [{"agent": {"name": n, "ref": f"agent:{30 + i}", "stance": s}} for i, (n, s) in
                     enumerate(stances.items())]
    value["camps"]["expressed"] = expressed or {}
    return json.dumps(value, ensure_ascii=False)


def test_who_has_the_upper_hand_is_of_the_camp_given_it_and_a_camp_given_it_is_the_largest() -> None:
    """Qwen on seed 23 put 李晓东 (supportive) at the head of the opposing side: "占上风的是胡伟和李晓东"."""
    zh = with_stances(ZH, {"胡伟": "opposing", "李晓东": "supportive", "朱娟": "supportive"}, {"opposing": 9, "supportive": 7})
    qwen = ("垃圾按袋计费新规的反对方人数最多，占上风的是胡伟 (agent:30) 和李晓东 (agent:31)，"
            "他们提出的主要观点包括：按袋计费只是收钱。")
    assert dropped(qwen, zh) == [["李晓东 (supportive) has the upper hand for the opposing camp"]]
    assert dropped("反对方占上风，领先的是胡伟。", zh) == []
    assert dropped("旁观方占上风。", zh) == [["the observer camp has the upper hand"]]
    assert dropped("朱娟在反对方中胜出。", zh) == []  # she came to speak for the opposing camp
    en = with_stances(EN, {"Kofi Sato": "opposing", "Noor Rossi": "supportive"})
    assert dropped("The opposing camp gained the upper hand, led by Noor Rossi.", en) == [
        ["Noor Rossi (supportive) has the upper hand for the opposing camp"]]
    assert dropped("Kofi Sato is winning the debate.", en) == [["Kofi Sato (opposing) has the upper hand"]]
    for right in ("The supportive camp prevailed.", "Noor Rossi leads the supportive camp.", "Noor Rossi won the debate.",
                  "The charge leads to higher fares, Kofi Sato said.", "Twitter leads, with Kofi Sato most reacted to."):
        assert dropped(right, en) == [], right


def test_a_sentence_of_the_engines_figures_in_other_words_adds_no_finding() -> None:
    """Qwen on seed 21: the camps said again in its own words stood as its reading; it states nothing new."""
    engine = "By their profiles the 40 agents split into 16 neutral, 12 supportive, 10 opposing and 2 observers."
    said = "Residents split into camps, with 40 agents split into 16 neutral, 12 supportive, and 10 opposing camps."
    assert not guided.novel(said, engine) and not guided.adds(said, engine)
    assert guided.novel("The neutral camp is 1.6x the opposing one.", engine)  # a ratio the engine never gives
    assert guided.novel("反对方占上风的是胡伟 (agent:1)。", "反对方人数最多。胡伟 (agent:1) 写道。")
