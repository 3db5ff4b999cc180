"""The pieces of a simulated story: its scenario, its agents, and the story itself with what each statement says.

Types only; scenario.py decides a story and writes its lines.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

FIRST = ["Mei", "Jonas", "Amara", "Luis", "Priya", "Tomasz", "Hana", "Kofi", "Elena", "Ravi", "Sofia", "Dmitri",
         "Aiko", "Mateo", "Fatima", "Liam", "Zara", "Chen", "Noor", "Oskar", "Ines", "Tariq", "Yuki", "Bea"]
LAST = ["Lin", "Weber", "Okafor", "Garcia", "Nair", "Kowalski", "Sato", "Mensah", "Rossi", "Iyer", "Costa",
        "Ivanov", "Tanaka", "Silva", "Haddad", "Byrne", "Ahmed", "Zhou", "Karimi", "Berg", "Duarte", "Aziz"]
ENTITY_TYPES = ["Resident", "Shop owner", "Commuter", "Journalist", "City official", "Student", "Cyclist",
                "Delivery driver", "Researcher", "Parent"]
STANCES = ["supportive", "opposing", "neutral", "observer"]


@dataclass(frozen=True)
class Scenario:
    topic: str
    short: str
    requirement: str
    trigger: str
    hot_topics: list[str]
    lines: dict[str, list[str]]
    spike_lines: dict[str, list[str]]
    comments: dict[str, list[str]]
    shift: tuple[tuple[str, ...], str] = (("supportive", "neutral"), "opposing")
    names: tuple[list[str], list[str], str] = (FIRST, LAST, " ")
    entity_types: list[str] = field(default_factory=lambda: ENTITY_TYPES)
    questions: list[dict[str, Any]] = field(default_factory=list)
    trigger_words: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Agent:
    agent_id: int
    name: str
    username: str
    entity_type: str
    stance: str
    activity: float
    influence: float
    bio: str
    age: int
    mbti: str
    country: str


@dataclass(frozen=True)
class Coalition:
    """Agents of one stance who follow each other: pair by pair, one pair a round, from `rounds[0]`."""

    stance: str
    members: tuple[int, ...]
    rounds: tuple[int, ...]  # the round each pair (members[i], members[i + 1]) follows each other
    native: bool  # the follows name their target as the native environment does (`agent_id`), not by name


@dataclass
class Story:
    """A whole simulation decided up front: agents, and per platform the lines of each round.

    `statements` says, per post, quote and comment (by the id the read models give it), which argument it
    makes and for which camp; `plants` which statements hold each planted detail of the `llm` style's talk."""

    simulation_id: str
    scenario: Scenario
    agents: list[Agent]
    rounds: int
    spike_round: int
    start: datetime
    loud_platform: str = "reddit"
    shifts: dict[int, str] = field(default_factory=dict)
    lines: dict[str, list[list[dict[str, Any]]]] = field(default_factory=dict)
    coalitions: list[Coalition] = field(default_factory=list)
    style: str = "catalogue"
    shift_rounds: dict[int, int] = field(default_factory=dict)  # the first round on the new side (else the trigger's)
    statements: dict[str, dict[str, Any]] = field(default_factory=dict)
    plants: dict[int, list[str]] = field(default_factory=dict)
    drifts: list[dict[str, Any]] = field(default_factory=list)
    summaries: dict[str, str] = field(default_factory=dict)

    def shift_round(self, agent_id: int) -> int:
        return self.shift_rounds.get(agent_id, self.spike_round)

    def stance_at(self, agent: Agent, round_no: int) -> str:
        """The camp an agent speaks for in a round: a shifted agent speaks for its new side from its shift round."""
        if agent.agent_id in self.shifts and round_no >= self.shift_round(agent.agent_id):
            return self.shifts[agent.agent_id]
        return agent.stance

    def note(self, ref: str, said: Said, agent: Agent, round_no: int) -> None:
        """Record what a statement argues (and the detail planted in it) under the id the read models give it."""
        language = "en" if self.scenario.requirement.isascii() else "zh"
        self.statements[ref] = {"argument": said.argument, "stance": said.stance, "agent": agent.agent_id,
                                "round": round_no, "language": language}
        if said.detail is not None:
            self.plants.setdefault(said.detail, []).append(ref)


@dataclass(frozen=True)
class Said:
    """A statement and what it argues: `argument` ("supportive:2", "spike:opposing:0", "comment:neutral",
    "chatter", ...), `stance` the camp it argues for ("" for chatter), `detail` the planted detail it holds."""

    text: str
    argument: str
    stance: str
    detail: int | None = None
