"""A long run's per-round rows summed into spans (agent/tools/simulation_tools.py, `compress_rounds`): the sums
kept, and a span beginning at the round after a scheduled event, so that what came after it is averaged alone."""

from __future__ import annotations

from typing import Any

import pytest

from simreportd.agent.tools.simulation_tools import compress_rounds

ROWS: list[dict[str, Any]] = [{"round": r, "twitter": r * 3, "reddit": 100 - r, "total": 100 + 2 * r}
                              for r in range(0, 61)]


@pytest.mark.parametrize("begins", [None, 37, 1, 60, 99])
def test_spans_keep_every_rounds_sums_and_one_begins_where_asked(begins: int | None) -> None:
    spans = compress_rounds(ROWS, 60, begins)
    assert len(spans) <= 60 and [s["round"] for s in spans] == sorted(s["round"] for s in spans)
    assert sum(s["twitter"] for s in spans) == sum(r["twitter"] for r in ROWS)
    assert all(s["round"] <= s["last_round"] < t["round"] for s, t in zip(spans, spans[1:]))
    if begins is not None and begins <= 60:
        assert begins in [s["round"] for s in spans]  # the rounds after the event are not summed with it


def test_a_short_run_keeps_its_rounds() -> None:
    assert compress_rounds(ROWS[:40], 60, 20) == ROWS[:40]
