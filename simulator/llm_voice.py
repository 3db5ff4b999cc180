"""The `llm` style's voice: every statement written anew, as LLM agents write them.

A statement is composed from one of its argument's differently worded cores, with what people add around
an argument: an opener or a closer, a second wording and some personal context (a paragraph), a mention,
hashtags, emojis, a typo, a quote of the post it answers. Replies back or argue against the post they answer.
Agents have tics (lower case, emojis, hashtags, long or short posts) and a favourite argument; drifting agents
change both at their drift round and stay on their side. No text is said twice: a repeat is composed again.
"""

from __future__ import annotations

import random
from typing import Any

from .story import Agent, Said, Story
from .talk import Talk
from .talk_en import CONGESTION, PROCTORING
from .talk_zh import BAG_FEE

TALKS = {"congestion charge": CONGESTION, "AI proctoring": PROCTORING, "垃圾按袋计费": BAG_FEE}
SIDES = ("supportive", "opposing")
TICS = {"lower": 0.15, "emoji": 0.35, "hashtag": 0.3, "verbose": 0.3, "terse": 0.2}
CHATTER = 0.1  # share of statements that are off topic
DOUBT = 0.12  # share of a partisan's statements that ask the neutral camp's questions (a neutral's: report news)
TRIES = 40


class LlmVoice:
    """One voice for the whole story (both platforms), so no text repeats anywhere in the run."""

    def __init__(self, story: Story, rng: random.Random) -> None:
        self.story, self.rng = story, rng
        self.talk: Talk = TALKS[story.scenario.short]
        self.used: set[str] = set()
        self.pending: dict[str, list[int]] = {}  # argument -> the details still to plant in its statements
        for i, detail in enumerate(self.talk.details):
            self.pending.setdefault(detail.argument, []).append(i)
        self.planted: dict[int, int] = {}
        self.tics = {a.agent_id: (self._tics(), self._tics()) for a in story.agents}  # before, after a drift
        # stances in order, not as a set: a set of strings iterates by the process's hash seed, and each draws
        self.favourites = {(a.agent_id, s): self._two_favourites(s) for a in story.agents for s in
                           dict.fromkeys((a.stance, story.shifts.get(a.agent_id, a.stance)))}
        self.drift_rounds = self._drifters()

    # -- the writer's requests ---------------------------------------------------------------------
    def post(self, agent: Agent, round_no: int, spike: bool) -> Said:
        return self._say(agent, round_no, self._argument(agent, round_no, spike), None)

    def quote(self, agent: Agent, round_no: int, spike: bool, target: dict[str, Any]) -> Said:
        return self._say(agent, round_no, self._argument(agent, round_no, spike), target, quoting=True)

    def comment(self, agent: Agent, round_no: int, target: dict[str, Any]) -> Said:
        spike = round_no >= self.story.spike_round
        return self._say(agent, round_no, self._argument(agent, round_no, spike), target)

    # -- what to argue ----------------------------------------------------------------------------
    def _argument(self, agent: Agent, round_no: int, spike: bool) -> str:
        """Mostly the agent's side's arguments (its favourite more often, a trigger argument after the trigger);
        sometimes chatter, a partisan's neutral question (never after changing sides) or a neutral's news."""
        stance = self.story.stance_at(agent, round_no)
        turned = self._turned(agent, round_no)
        roll = self.rng.random()
        if roll < CHATTER and not self._just_turned(agent, round_no):
            return "chatter"
        if stance in SIDES and not turned and roll < CHATTER + DOUBT:
            return self.rng.choice(self._regular("neutral"))
        if stance == "neutral" and roll < CHATTER + DOUBT:  # the undecided pass on the news
            return "spike:observer:0" if spike and self.rng.random() < 0.5 else self.rng.choice(self._regular("observer"))
        trigger = f"spike:{stance}:0"
        if spike and trigger in self.talk.arguments and self.rng.random() < (0.4 if stance in SIDES and not turned
                                                                             else 0.65):
            return trigger
        regular = self._regular(stance)
        favourite = self._favourite(agent, stance, round_no)
        return self.rng.choices(regular, [4 if a == favourite else 1 for a in regular])[0]

    def _regular(self, stance: str) -> list[str]:
        return [a for a in self.talk.arguments if a.startswith(f"{stance}:")]

    def _turned(self, agent: Agent, round_no: int) -> bool:
        return agent.agent_id in self.story.shifts and round_no >= self.story.shift_round(agent.agent_id)

    def _just_turned(self, agent: Agent, round_no: int) -> bool:
        return self._turned(agent, round_no) and round_no <= self.story.shift_round(agent.agent_id) + 1

    def _favourite(self, agent: Agent, stance: str, round_no: int) -> str:
        first, second = self.favourites.get((agent.agent_id, stance), ("", ""))
        drift = self.drift_rounds.get(agent.agent_id)
        return second if drift is not None and round_no >= drift else first

    def _tics_of(self, agent: Agent, round_no: int) -> set[str]:
        before, after = self.tics[agent.agent_id]
        drift = self.drift_rounds.get(agent.agent_id)
        return after if drift is not None and round_no >= drift else before

    # -- how to say it ----------------------------------------------------------------------------
    def _say(self, agent: Agent, round_no: int, argument: str, target: dict[str, Any] | None,
             quoting: bool = False) -> Said:
        stance = "" if argument == "chatter" else argument.split(":")[-2]  # the camp the argument speaks for
        waiting = self._detail(argument, round_no)
        detail = waiting[1] if waiting else None
        planted = self.talk.details[detail].said[self.planted.get(detail, 0)] if detail is not None else ""
        for attempt in range(TRIES):
            text = self._compose(agent, round_no, argument, target, quoting, planted, attempt)
            if text not in self.used:
                break
        else:
            text = f"{text}{self.talk.register.joiner}{self.rng.randint(2, 99)}"
        self.used.add(text)
        if waiting:
            queue, detail = waiting
            self.planted[detail] = self.planted.get(detail, 0) + 1
            if self.planted[detail] == len(self.talk.details[detail].said):
                self.pending[queue].remove(detail)
        return Said(text, argument, stance, detail)

    def _detail(self, argument: str, round_no: int) -> tuple[str, int] | None:
        """Mostly, the next detail waiting to be planted in this argument's statements; late in the run, one still
        waiting for another argument of the same camp (so a rarely voiced argument's detail is told too)."""
        queue = self.pending.get(argument)
        rare = argument.startswith(("spike:", "observer"))  # few statements make these: plant in every one
        if queue and round_no >= 1 and (rare or self.rng.random() < 0.85):
            return argument, queue[0]
        if round_no >= self.story.rounds * 0.75:
            camp = argument.split(":")[-2] if argument != "chatter" else ""
            late = [(a, q[0]) for a, q in self.pending.items() if q and (a.split(":")[-2] if a != "chatter" else "") == camp]
            return late[0] if late else None
        return None

    def _compose(self, agent: Agent, round_no: int, argument: str, target: dict[str, Any] | None,
                 quoting: bool, planted: str, attempt: int) -> str:
        reg, rng, tics = self.talk.register, self.rng, self._tics_of(agent, round_no)
        body = [self._core(argument, tics, attempt)]
        if argument != "chatter" and ("verbose" in tics or rng.random() < 0.2 + 0.05 * min(attempt, 6)):
            second = self._core(argument, {"verbose"}, attempt)
            if second.lower() != body[0].lower():
                body.append(second)
            if rng.random() < 0.6:
                body.insert(rng.randrange(len(body) + 1), rng.choice(reg.asides))
        if planted:
            body.insert(rng.randrange(1, len(body) + 1), planted)
        lead = self._lead(agent, round_no, argument, target, quoting)
        if rng.random() < 0.2 + 0.03 * attempt:
            body.append(rng.choice(reg.closers))
        text = reg.joiner.join([*lead, *body])
        return self._decorate(text, agent, tics, attempt, "" if argument == "chatter" else argument.split(":")[-2])

    def _core(self, argument: str, tics: set[str], attempt: int) -> str:
        """One wording of the argument (its short one more often for terse agents), with a number and a typo."""
        reg, rng = self.talk.register, self.rng
        cores = reg.chatter if argument == "chatter" else self.talk.arguments[argument].cores
        short = argument != "chatter" and ("terse" in tics and rng.random() < 0.6 or rng.random() < 0.12)
        core = cores[0] if short else rng.choice(cores[1:] if argument != "chatter" else cores)
        core = core.replace("{n}", str(rng.randint(3, 40)))
        if rng.random() < 0.08 + 0.02 * attempt:
            core = self._typo(core)
        return core.lower() if "lower" in tics and reg.language == "en" else core

    def _typo(self, text: str) -> str:
        """A slip of the keyboard: a known misspelling, or (English) two letters swapped in a long word."""
        reg, rng = self.talk.register, self.rng
        slips = [(right, wrong) for right, wrong in reg.typos if right in text]
        if slips and rng.random() < 0.6:
            right, wrong = rng.choice(slips)
            return text.replace(right, wrong, 1)
        words = text.split(" ")
        long = [i for i, w in enumerate(words) if len(w) >= 6 and w.isalpha()]
        if reg.language != "en" or not long:
            return text
        i = rng.choice(long)
        j = rng.randrange(1, len(words[i]) - 2)
        w = words[i]
        words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2:]
        return " ".join(words)

    def _lead(self, agent: Agent, round_no: int, argument: str, target: dict[str, Any] | None,
              quoting: bool) -> list[str]:
        """What comes before the argument: a side-changer's confession, a reply's verdict on the post it answers
        (when both argue the topic and the reply takes a side) and maybe a quote of it, or an opener."""
        reg, rng = self.talk.register, self.rng
        if self._just_turned(agent, round_no) and rng.random() < 0.8:
            return [rng.choice(reg.changed)]
        if target is None:
            return [rng.choice(reg.openers)] if rng.random() < 0.3 else []
        mine, theirs = argument.split(":")[-2] if argument != "chatter" else "", target.get("stance", "")
        judging = mine in (*SIDES, "neutral") and theirs and rng.random() < 0.75
        lead = [rng.choice(reg.rebut if theirs != mine else reg.agree)] if judging else []
        snippet = self._snippet(target["content"])
        if snippet and (quoting and rng.random() < 0.7 or lead and rng.random() < 0.25):
            who = self.story.agents[target["agent_id"]]
            handle = who.username if reg.language == "en" else who.name
            lead.insert(0, rng.choice(reg.quoting).format(q=snippet, who=handle))
        return lead

    def _snippet(self, text: str) -> str:
        """The start of another statement, as people quote it; never a planted detail (its answers are exact)."""
        if self.talk.register.language == "en":
            words = text.split()
            snippet = " ".join(words[:7]) + ("…" if len(words) > 7 else "")
        else:
            snippet = text[:12] + ("…" if len(text) > 12 else "")
        return "" if any(d.mark in snippet for d in self.talk.details) else snippet

    def _decorate(self, text: str, agent: Agent, tics: set[str], attempt: int, stance: str) -> str:
        """A mention, hashtags (on topic only) and emojis, as the agent's tics and chance have it."""
        reg, rng = self.talk.register, self.rng
        if rng.random() < 0.15 + 0.03 * attempt:
            other = rng.choice([a for a in self.story.agents if a.agent_id != agent.agent_id])
            handle = f"@{other.username if reg.language == 'en' else other.name}"
            text = f"{handle} {text}" if rng.random() < 0.5 else f"{text} cc {handle}" if reg.language == "en" \
                else f"{text} {handle}"
        if stance and rng.random() < (0.55 if "hashtag" in tics else 0.15) + 0.03 * attempt:
            pool = self.talk.hashtags.get(stance, ()) + self.talk.hashtags[""]
            text = f"{text} {' '.join(rng.sample(pool, rng.randint(1, min(2, len(pool)))))}"
        if rng.random() < (0.7 if "emoji" in tics else 0.2) + 0.03 * attempt:
            text = f"{text}{' ' if reg.language == 'en' else ''}{''.join(rng.choices(reg.emojis, k=rng.randint(1, 3)))}"
        return text

    # -- who each agent is ------------------------------------------------------------------------
    def _tics(self) -> set[str]:
        tics = {t for t, p in TICS.items() if self.rng.random() < p}
        return tics - {"terse"} if "verbose" in tics else tics

    def _two_favourites(self, stance: str) -> tuple[str, str]:
        regular = self._regular(stance)
        if not regular:
            return "", ""
        first = self.rng.choice(regular)
        others = [a for a in regular if a != first] or [first]
        return first, self.rng.choice(others)

    def _drifters(self) -> dict[int, int]:
        """About one partisan in six, never a side-changer, changes its favourite argument and tics at a round."""
        story = self.story
        pool = [a.agent_id for a in story.agents if a.stance in SIDES and a.agent_id not in story.shifts]
        chosen = sorted(self.rng.sample(pool, min(len(pool), max(1, len(pool) // 6))))
        return {i: self.rng.randint(min(3, story.rounds), max(3, story.rounds - 2)) for i in chosen}

    def drifts(self) -> list[dict[str, Any]]:
        """The drifting agents, for the truth: their round, their favourite argument before and after."""
        out = []
        for i, round_no in sorted(self.drift_rounds.items()):
            agent = self.story.agents[i]
            first, second = self.favourites[(i, agent.stance)]
            out.append({"id": i, "name": agent.name, "stance": agent.stance, "round": round_no, "from": first,
                        "to": second})
        return out

    def summaries(self) -> dict[str, str]:
        """Every argument's one-line summary, chatter included."""
        return {**{a: arg.summary for a, arg in self.talk.arguments.items()}, "chatter": "off-topic chatter"}
