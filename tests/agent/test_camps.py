"""The camps' reading of side changes (agent/tools/camps.py), on sayings built by hand."""

from __future__ import annotations

from typing import Any

from simreportd.agent.tools.camps import camps_from_sayings, statement_stances

STANCES = {1: "supportive", 2: "supportive", 3: "neutral", 4: "opposing", 5: "opposing", 6: "opposing",
           7: "supportive", 8: "supportive"}


def sayings(said: dict[tuple[int, str], list[int]]) -> list[tuple[Any, ...]]:
    """Rows as the fold's tally keeps them: per (agent, argument) the rounds of its posts."""
    rows, position = [], 0
    for (agent, key), rounds in said.items():
        position += 1
        first, last = (rounds[0], f"post:twitter:{position}", position), (rounds[-1], f"post:twitter:{position}x", 0)
        rows.append((agent, key, f"A{agent}", STANCES[agent], len(rounds), *first, key, *last, len(rounds), *first,
                     key))
    return rows


def test_partisans_who_turn_together_are_all_found_though_their_profiles_vote_their_new_argument_back() -> None:
    """Two supporters turn at round 5 and, with a neutral agent who turns at round 6, are the only authors of
    one new argument: their profiles' stances vote it into their old camp, which hid some of them."""
    rows = sayings({
        **{(a, "buses first"): [1] for a in (1, 2, 7, 8)},
        **{(a, "the charge is a tax"): [1, 2] for a in (4, 5, 6)},
        **{(a, "scrap the rule"): [2] for a in (4, 5)},
        (1, "the charge is a tax"): [5], (2, "the charge is a tax"): [5],
        (1, "the video says it all"): [6], (2, "the video says it all"): [6], (3, "the video says it all"): [6],
        (1, "scrap the rule"): [7], (2, "scrap the rule"): [7],
        (3, "wait and see"): [1], (3, "the charge is a tax"): [7], (3, "scrap the rule"): [8],
    })
    shifts = {s["agent_id"]: (s["stated_stance"], s["now_speaks_for"], s["from_round"])
              for s in camps_from_sayings(rows)["stance_shifts"]}
    # agent 3 from round 7: in round 6 they wrote only the argument whose other authors are turning, which
    # no vote then places
    assert shifts == {1: ("supportive", "opposing", 5), 2: ("supportive", "opposing", 5),
                      3: ("neutral", "opposing", 7)}
    assert statement_stances(rows)[(1, "the video says it all")] == "opposing"
    assert camps_from_sayings(rows)["expressed"] == {"opposing": 6, "supportive": 2}
