"""What the `llm` style's agents can say about a scenario, as data: arguments, registers and planted details.

An argument is one idea worded several different ways (its cores), so two statements of one argument
share meaning, not words. A detail is a distinctive fact planted in one or two statements of an argument
so that a question asked in other words (or another language) has a known answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Argument:
    summary: str
    cores: tuple[str, ...]  # the same idea in different words, a few words to several sentences; {n} is a number


@dataclass(frozen=True)
class Detail:
    argument: str  # planted in statements of this argument ("chatter" for off-topic talk)
    mark: str  # the distinctive words every planted sentence holds
    said: tuple[str, ...]  # the sentences planted, one per statement
    questions: dict[str, str]  # "en"/"zh": the question a user asks about it, in their own words


@dataclass(frozen=True)
class Register:
    """How people write in one language: glue around an argument, chatter, and their tics."""

    language: str
    joiner: str  # between sentences
    openers: tuple[str, ...]
    closers: tuple[str, ...]
    agree: tuple[str, ...]  # a reply's opening when it backs the post it answers
    rebut: tuple[str, ...]  # ... when it argues back
    changed: tuple[str, ...]  # the opening of an agent's first statements after changing sides
    quoting: tuple[str, ...]  # frames a quote of another statement; {q} is the quote, {who} its author
    asides: tuple[str, ...]  # personal context that lengthens a statement into a paragraph
    chatter: tuple[str, ...]
    emojis: tuple[str, ...]
    typos: tuple[tuple[str, str], ...] = ()  # (right, wrong) swaps; English also swaps letters


@dataclass(frozen=True)
class Talk:
    register: Register
    arguments: dict[str, Argument]  # "supportive:0", "spike:opposing:0", "neutral:1", "observer:0", ...
    hashtags: dict[str, tuple[str, ...]]  # per stance, "" for any statement
    details: tuple[Detail, ...] = field(default_factory=tuple)
