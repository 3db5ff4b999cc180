"""The `auto` probe (docs/formats.md#claim-check, `[agent] mode = "auto"`): one guided draft whose sheet holds
the run's checkable findings, and whether the model stated them.

Pure. Restating the run's size passes any claim check and shows nothing of what a section asks of a model, so
the sheet holds no size: only findings the engine can check (the largest camp or a tie, the leading platform
and by how much, the trigger's round). A model may write freely (react) only when its sentences keep every
claim supported and state at least two of them (one, when the run has only one) in words of their own (a copy of the
sheet shows nothing); else it writes guided.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..checks import claims
from ..findings.phrases import Phrases, phrases_for
from ..findings.statements import largest_camps, largest_said
from .guided import copied


@dataclass(frozen=True)
class Finding:
    """A fact of the probe's sheet, and what a sentence must hold to state it: one string of each group."""

    fact: str
    groups: tuple[tuple[str, ...], ...]

    def stated_in(self, text: str) -> bool:
        said = text.lower()
        return all(any(word.lower() in said for word in group) for group in self.groups)


def findings(context: dict[str, Any]) -> list[Finding]:
    """The run's checkable findings, from the planning context, in the report's language."""
    say = phrases_for(str(context.get("requirement") or ""))
    return [f for f in (_camp(context, say), _platform(context, say), _event(context, say)) if f is not None]


def _camp(context: dict[str, Any], say: Phrases) -> Finding | None:
    stances = {s: n for s, n in (context.get("stances") or {}).items() if s}
    largest = largest_camps(stances)
    if not largest:
        return None
    sizes = say.listing([say.camp_size(stances[s], s) for s in sorted(stances, key=lambda s: (-stances[s], s))])
    fact = largest_said(stances, say, "largest", "tied", sizes=sizes)
    tie = ("tie", "tied", "equal", "same", "并列", "相同") if len(largest) > 1 else ()
    return Finding(fact, (*((s, say.stance(s)) for s in largest), *([tie] if tie else [])))


def _platform(context: dict[str, Any], say: Phrases) -> Finding | None:
    totals = {p: int(v.get("actions") or 0) if isinstance(v, dict) else int(v)  # {platform: {"actions": n, ...}}
              for p, v in (context.get("platforms") or {}).items()}
    if len(totals) < 2:
        return None  # one platform leads nothing
    (lead, lead_n), (other, other_n) = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))[:2]
    if lead_n == other_n:
        return None
    ratio = f"{lead_n / other_n:.2f}" if other_n else ""
    fact = say("probe_led", lead=lead.capitalize(), lead_n=lead_n, other=other.capitalize(), other_n=other_n,
               ratio=say("ratio", ratio=ratio) if ratio else "")
    return Finding(fact, ((lead,), (str(other_n), *((ratio,) if ratio else ()))))


def _event(context: dict[str, Any], say: Phrases) -> Finding | None:
    events = context.get("scheduled_events") or []
    if not events or events[0]["round"] > int(context.get("rounds") or 0):
        return None
    n = events[0]["round"]
    return Finding(say("probe_event", round=n), ((f"round {n}", f"第{n}轮"),))


def needed(found: list[Finding]) -> int:
    """How many findings a model must state to write freely."""
    return min(2, len(found))


def stated(body: str, found: list[Finding]) -> int:
    """How many of the findings the kept sentences state in words of their own: the sheet copied back (as
    Qwen2.5-Coder-0.5B does) shows only that a model can copy."""
    sheet = "\n".join(f.fact for f in found)
    own = " ".join(s for s in claims.sentences(body) if not copied(s, sheet))
    return sum(f.stated_in(own) for f in found)
