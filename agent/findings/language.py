"""The language a simulation's text is in, so a report (and a persona's answer) is written in it.

Pure: no I/O. Two languages are told apart, the two the simulators write: Chinese, by its Han
characters, and English, everything else (the prompts and the offline writer's default).
"""

from __future__ import annotations

import re
from typing import Literal

Language = Literal["en", "zh"]
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
LATIN = re.compile(r"[A-Za-z]")
HAN_SHARE = 0.2  # "Twitter和Reddit上的讨论有何不同？" is Chinese; "How did 王伟 react?" is English


def language_of(text: str) -> Language:
    """`zh` when Han characters are a fifth or more of the text's letters (names and platform names in
    Latin letters do not outweigh a Chinese sentence), else `en`."""
    han, latin = len(HAN.findall(text)), len(LATIN.findall(text))
    return "zh" if han and han / (han + latin) >= HAN_SHARE else "en"


def writing_rule(requirement: str) -> str:
    """The line a writer's prompt adds when the requirement is not in English (the prompts' own language):
    write in the requirement's language, quoting agents in theirs. Empty for English, so English prompts,
    and the reports recorded with them, stay as they were."""
    if language_of(requirement) != "zh":
        return ""
    return ("Write everything you write (titles, summary, section text, answers) in Simplified Chinese, the "
            "language of the requirement; quote agents verbatim in the language they wrote in.")
