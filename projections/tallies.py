"""What the simulation fold tallies in memory over a batch and writes last, a row per key instead of a write
per action: the activity counters (`Tally`), and what each agent said per argument (`Sayings`), so that a
run's camps read a row per agent and argument instead of every statement. And the citation ids
(`post:twitter:12`) the fold and the tallies share."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any

from simreportd.events.positions import Position

from .projection import Write


def citation(kind: str, platform: str, native_id: Any, position: int) -> str:
    """Citation id: the simulator's own id when it gave one, else one made from the event position."""
    return f"{kind}:{platform}:{native_id}" if isinstance(native_id, int) else f"{kind}:{platform}:e{position}"


# Counter upserts: the last parameters are amounts added to the row the others name. Sums commute with
# every other write of this model (none reads these columns), so a batch may add them up first.
ROUND_ACTIONS = ("INSERT INTO sim_rounds (simulation_id, generation, platform, round, actions) VALUES (?, ?, ?, ?, ?)"
                 " ON CONFLICT DO UPDATE SET actions = actions + excluded.actions")
AGENT_ACTIONS = ("INSERT INTO sim_activity VALUES (?, ?, ?, ?, ?, ?)"
                 " ON CONFLICT DO UPDATE SET actions = actions + excluded.actions, posts = posts + excluded.posts")
ACTION_MIX = ("INSERT INTO sim_action_mix VALUES (?, ?, ?, ?, ?)"
              " ON CONFLICT DO UPDATE SET count = count + excluded.count")
PLATFORM_ACTIONS = ("INSERT INTO sim_platforms (simulation_id, generation, platform, status, actions)"
                    " VALUES (?, ?, ?, 'running', ?) ON CONFLICT DO UPDATE SET actions = actions + excluded.actions")
POSTING = frozenset({"CREATE_POST", "QUOTE_POST", "CREATE_COMMENT"})


class Tally:
    """The counters of many actions added up in memory: a row per round, agent, action type and platform
    instead of four upserts per action. The read model comes out the same (tests/projections/test_folds.py)."""

    def __init__(self) -> None:
        self.platforms: dict[tuple[str, int, str], _PlatformTally] = {}

    def add(self, simulation_id: str, generation: int, p: str, r: int, agent: int, kind: str) -> None:
        """Count an action of `kind` by `agent` in round `r` of platform `p`."""
        t = self.platforms.get((simulation_id, generation, p))
        if t is None:
            t = self.platforms[(simulation_id, generation, p)] = _PlatformTally()
        t.actions += 1
        t.rounds[r] = t.rounds.get(r, 0) + 1
        t.mix[kind] = t.mix.get(kind, 0) + 1
        actions_posts = t.agents.get(agent)
        if actions_posts is None:
            actions_posts = t.agents[agent] = [0, 0]
        actions_posts[0] += 1
        actions_posts[1] += kind in POSTING

    def writes(self) -> Iterator[Write]:
        tallies = self.platforms.items()
        yield from ((ROUND_ACTIONS, (*base, r, n)) for base, t in tallies for r, n in t.rounds.items())
        yield from ((AGENT_ACTIONS, (*base, a, *amounts)) for base, t in tallies for a, amounts in t.agents.items())
        yield from ((ACTION_MIX, (*base, kind, n)) for base, t in tallies for kind, n in t.mix.items())
        yield from ((PLATFORM_ACTIONS, (*base, t.actions)) for base, t in tallies)


class _PlatformTally:
    """One platform's counters in a `Tally` (keyed by plain values: a tuple a counter cost twice the time)."""

    __slots__ = ("actions", "rounds", "agents", "mix")

    def __init__(self) -> None:
        self.actions = 0
        self.rounds: dict[int, int] = {}
        self.agents: dict[int, list[int]] = {}
        self.mix: dict[str, int] = {}



# What an action says, for the camps: (kind, citation prefix, its id's argument, its text's argument).
STATEMENTS = {"CREATE_POST": ("post", "post", "post_id", "content"),
              "QUOTE_POST": ("quote", "post", "new_post_id", "quote_content"),
              "CREATE_COMMENT": ("comment", "comment", "comment_id", "content")}
DIGITS, SPACES = re.compile(r"\d+"), re.compile(r"\s+")
At = tuple[int, str, int]  # a statement's place in its run: (round, ref, position), the order the camps read
# A statement's place kept where it is earlier (<) or later (>) than the place already kept: (columns, compared).
_PLACES = ((("first_round", "first_ref", "first_position", "first_content"), "<"),
           (("last_round", "last_ref", "last_position"), ">"),
           (("post_round", "post_ref", "post_position", "post_content"), "<"))
SAYING = ("INSERT INTO sim_sayings VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET"
          " statements = statements + excluded.statements, posts = posts + excluded.posts, " + ", ".join(
              f"{column} = CASE WHEN excluded.{columns[2]} IS NOT NULL AND ({columns[2]} IS NULL OR"
              f" (excluded.{columns[0]}, excluded.{columns[1]}, excluded.{columns[2]}) {compared}"
              f" ({columns[0]}, {columns[1]}, {columns[2]})) THEN excluded.{column} ELSE {column} END"
              for columns, compared in _PLACES for column in columns))


@functools.lru_cache(maxsize=4096)  # the same texts repeat (a repost, a template)
def argument_key(text: str) -> str:
    """The text of a statement with digits masked and spaces folded: one key per argument."""
    return SPACES.sub(" ", DIGITS.sub("#", text.strip().lower()))


class Sayings:
    """What each agent said, per argument, for the camps: how often, where first and last, and the first post
    or quote, so that finding a run's camps reads a row per agent and argument, not every statement. Kept per
    batch like `Tally`, and written last (nothing in the fold reads it); the same rows however the log is
    folded (tests/agent/test_camps_tally.py)."""

    def __init__(self) -> None:
        self.rows: dict[tuple[Any, ...], list[Any]] = {}

    def add(self, key: tuple[str, int], d: dict[str, Any], kind: str, args: dict[str, Any], pos: Position) -> None:
        """Count the action `d` (of `kind`, with `args`) if it says something."""
        said = STATEMENTS.get(kind)
        text = str(args.get(said[3]) or "") if said else ""
        if said and text:
            self.said(key, d["agent_id"], said[0] != "comment", d["round"],
                      citation(said[1], d["platform"], args.get(said[2]), pos), pos, text)

    def said(self, key: tuple[str, int], agent: Any, is_post: bool, round_no: Any, ref: str, pos: int,
             text: str) -> None:
        """Count one statement with text: `add`'s, and the page fold's, which knows its fields already."""
        at = (round_no or 0, ref, pos)
        first = (*at, text)
        post = first if is_post else None
        name = (*key, agent, argument_key(text))
        row = self.rows.get(name)
        if row is None:
            self.rows[name] = [1, first, at, int(is_post), post]
            return
        row[0] += 1
        if first < row[1]:
            row[1] = first
        if at > row[2]:
            row[2] = at
        if post is not None:
            row[3] += 1
            if row[4] is None or post < row[4]:
                row[4] = post

    def writes(self) -> Iterator[Write]:
        for name, (count, first, last, posts, post) in self.rows.items():
            yield SAYING, (*name, count, *first, *last, posts, *(post or (None,) * 4))
