"""Tool calls a weak model makes mechanically (docs/formats.md#upstream-failure-modes: mechanical tool use).

Pure. Small models copy what is in front of them: a tool's description as its query, the keys of the last
result as arguments, the same call again. `mechanical` says why a call's arguments are a copy (the call is
refused with a hint); `repeat_of` finds an identical earlier call, whose result is restated as a reminder
instead of counted again as evidence.
"""

from __future__ import annotations

import json
import re
from typing import Any

from simreportd.events.models import ToolCalled, ToolObserved

from ..tools.toolspec import TOOL_SPECS

WORD = re.compile(r"[a-z0-9_]+")
COPIED = 0.6  # share of an argument's words found, in order, in a description: a copy


def _words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def _copied_from(value: str, source: str) -> bool:
    """Most of `value`'s words (at least four) occur in `source`: a copy, not a question."""
    words = _words(value)
    if len(words) < 4:
        return False
    pool = set(_words(source))
    return sum(w in pool for w in words) >= COPIED * len(words) and len(words) >= 4 \
        and " ".join(words[:4]) in " ".join(_words(source))


def result_keys(observations: list[ToolObserved]) -> set[str]:
    """The keys of earlier results (two levels deep): what a model copies back as arguments."""
    keys: set[str] = set()
    for o in observations:
        try:
            value = json.loads(o.result)
        except ValueError:
            continue
        for item in [value, *(v for v in value.values() if isinstance(v, dict))] if isinstance(value, dict) else []:
            keys.update(k for k in item if isinstance(k, str))
    return keys


def mechanical(tool: str, arguments: dict[str, Any], observations: list[ToolObserved]) -> str | None:
    """Why these arguments are a copy (a hint for the model), or None when they are the model's own."""
    params = set(TOOL_SPECS.get(tool, {}).get("parameters", {}).get("properties", {}))
    keys = result_keys(observations)
    copied_keys = sorted(k for k in arguments if k not in params and k in keys)
    if copied_keys:
        return (f"Refused: {', '.join(copied_keys)} are keys of an earlier result, not arguments of {tool} "
                f"(it takes {', '.join(sorted(params)) or 'no arguments'}).")
    for name, value in arguments.items():
        if not isinstance(value, str):
            continue
        for other, spec in TOOL_SPECS.items():
            if _copied_from(value, spec["description"]):
                return (f"Refused: {name} repeats the description of {other}. Ask about what this section needs, "
                        "in a few words of your own (a stance, an agent, a round, an argument).")
        words = _words(value)
        if words and len(words) <= 6 and all(w in keys for w in words) and any("_" in w for w in words) \
                and value.isascii():
            return (f"Refused: {name} lists keys of an earlier result ({value[:80]}). Search for a topic, an agent "
                    "or a round in your own words.")
    return None


def repeat_of(tool: str, arguments: dict[str, Any], earlier: list[ToolCalled]) -> ToolCalled | None:
    """An earlier call of the same tool with the same arguments (spacing and case aside), if any."""
    wanted = _canonical(arguments)
    return next((c for c in earlier if c.tool == tool and c.repeat_of is None
                 and _canonical(c.arguments) == wanted), None)


def _canonical(arguments: dict[str, Any]) -> str:
    return json.dumps({k: " ".join(_words(v)) if isinstance(v, str) else v for k, v in arguments.items()},
                      sort_keys=True)


def reminder(earlier: ToolCalled) -> str:
    """The result of a repeated call: a reminder of the earlier one, which is not new evidence."""
    return json.dumps({"reminder": f"{earlier.tool} was called with these arguments already ({earlier.call_id}); "
                       "its result is above and is the same. This is not new evidence: call another tool, "
                       "or other arguments, or write the final answer."}, sort_keys=True)
