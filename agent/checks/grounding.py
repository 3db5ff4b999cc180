"""Is a section grounded? Every blockquote must occur in an observation of that section, and every
cited id must come from the tools (docs/formats.md#upstream-failure-modes: invented facts). Pure text checks.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

QUOTE_LINE = re.compile(r"^>\s*(.+?)\s*$", re.M)
CITATION = re.compile(r"\b((?:post|comment):(?:twitter|reddit):[\w]+|agent:\d+)\b")
TRAILING_REF = re.compile(r"\s*[\(\[]\s*(?:(?:post|comment):\w+:\w+|agent:\d+)(?:\s*,\s*[^)\]]*)?[\)\]]\s*$")
QUOTE_MARKS = "\"'“”‘’«»"
MARK = " [not found in the evidence]"


@dataclass(frozen=True)
class Grounding:
    ungrounded_quotes: list[str]
    unknown_ids: list[str]
    quotes: int = 0  # every quote checked, grounded or not
    known_ids: int = 0  # distinct ids cited that the tools returned

    @property
    def citations(self) -> int:
        """What the section cites from its evidence: grounded quotes and known ids."""
        return self.quotes - len(self.ungrounded_quotes) + self.known_ids

    @property
    def ok(self) -> bool:
        return not self.ungrounded_quotes and not self.unknown_ids

    def feedback(self) -> str:
        parts = ["Rejected: some of the section is not supported by the tool results."]
        if self.ungrounded_quotes:
            parts.append("These quotes do not occur verbatim in any tool result of this section: "
                         + "; ".join(f'"{q[:120]}"' for q in self.ungrounded_quotes) + ".")
        if self.unknown_ids:
            parts.append("These ids appear in no tool result: " + ", ".join(self.unknown_ids) + ".")
        parts.append("Quote only text copied exactly from a tool result, cite only ids the tools returned, "
                     "and write the section again.")
        return " ".join(parts)


def evidence_texts(results: list[str]) -> list[str]:
    """Every string inside the tools' JSON results (and the raw text of non-JSON results)."""
    texts: list[str] = []
    for result in results:
        try:
            _strings(json.loads(result), texts)
        except ValueError:
            texts.append(result)
    return texts


def _strings(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)


def quoted_text(line: str) -> str:
    """The words a blockquote line quotes: without its trailing citation and quotation marks."""
    return TRAILING_REF.sub("", line).strip().strip(QUOTE_MARKS).strip()


def check(body: str, section_results: list[str], known_ids: set[str]) -> Grounding:
    """Quotes must occur in this section's results; ids must be among those any tool returned."""
    texts = evidence_texts(section_results)
    quotes = [q for q in (quoted_text(line) for line in QUOTE_LINE.findall(body)) if q]
    missing = [q for q in quotes if not any(q in text for text in texts)]
    cited = set(CITATION.findall(body))
    return Grounding(missing, sorted(cited - known_ids), len(quotes), len(cited & known_ids))


def ids_in(results: list[str]) -> set[str]:
    return {m for result in results for m in CITATION.findall(result)}


def mark(body: str, grounding: Grounding) -> str:
    """Flag each ungrounded quote in place, so a reader sees which ones the evidence lacks."""
    flagged = set(grounding.ungrounded_quotes)

    def flag(match: re.Match[str]) -> str:
        return match.group(0) + MARK if quoted_text(match.group(1)) in flagged else match.group(0)

    return QUOTE_LINE.sub(flag, body)
