"""What an agent says, and which argument it makes: the `catalogue` style's voice (a fixed sentence per argument).

A voice answers three requests of the platform writer (a post, a quote, a reply) with a `Said`: the text
and the argument it makes for a stance. The `llm` style's voice is in llm_voice.py.
"""

from __future__ import annotations

import random
from typing import Any, Protocol

from .story import Agent, Said, Story


class Voice(Protocol):
    def post(self, agent: Agent, round_no: int, spike: bool) -> Said: ...

    def quote(self, agent: Agent, round_no: int, spike: bool, target: dict[str, Any]) -> Said: ...

    def comment(self, agent: Agent, round_no: int, target: dict[str, Any]) -> Said: ...


class CatalogueVoice:
    """Agents repeat their camp's catalogue lines, numbers filled in; replies are stock phrases.

    Draws from the platform writer's own generator, so the catalogue runs stay what they always were."""

    def __init__(self, story: Story, rng: random.Random) -> None:
        self.story, self.rng = story, rng

    def post(self, agent: Agent, round_no: int, spike: bool) -> Said:
        """A camp line (a trigger line more often after the trigger), said from the agent's side in that round."""
        sc = self.story.scenario
        after = spike and self.rng.random() < 0.6
        stance = self.story.stance_at(agent, round_no)
        templates = (sc.spike_lines if after else sc.lines)[stance]
        template = self.rng.choice(templates)
        text = template.format(n=self.rng.randint(3, 40), pct=self.rng.randint(12, 68),
                               p=f"£{self.rng.randint(4, 15)}")
        return Said(text, f"{'spike:' if after else ''}{stance}:{templates.index(template)}", stance)

    def quote(self, agent: Agent, round_no: int, spike: bool, target: dict[str, Any]) -> Said:
        return self.post(agent, round_no, spike)

    def comment(self, agent: Agent, round_no: int, target: dict[str, Any]) -> Said:
        stance = self.story.stance_at(agent, round_no)
        return Said(self.rng.choice(self.story.scenario.comments[stance]), f"comment:{stance}", stance)
