"""Who wrote a post, and which agent a name names, held in memory by the simulation fold (docs/architecture.md#read-models).

An edge's target agent is the author of the post it targets, else the one agent its name names (none where
several agents hold the name). The fold looked both
up with two subqueries in every edge's insert; `Authors` answers them from memory instead, for the generations
whose every post and agent it folded itself (from their `SimulationDiscovered` or `SimulationGenerationStarted`
on). For any other generation, or a value SQL would compare by its type affinity (a post id that is not an int,
a name that is not text), it answers `UNKNOWN` and the fold asks SQL as before. The runner calls `forget` when
the file holds folds this memory did not see (another process folded, a rollback, a rebuild). No I/O.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from typing import Any

UNKNOWN = object()  # what memory cannot say: the fold's subqueries decide
_NONE = -1  # no author, in a platform's array of authors by post id
_SPARSE_FROM = 1 << 16  # ids past twice the array's length plus this go in a dict: memory stays a few bytes a post
# Posts remembered at most, all generations together: past it memory lets go of every generation it holds, which
# SQL answers for from then on. A simulator's ids are not always dense (a round's may start at a million), and a
# fold's peak memory must not grow with the run: at about 60 bytes a post in the dict, this is 3 MB at most.
MAX_POSTS = 50_000

Key = tuple[str, int]  # (simulation_id, generation)


class _Platform:
    """The authors of one platform's posts and quotes, by post id: an array while the ids are dense (OASIS counts
    from 1), a dict for the rest."""

    __slots__ = ("dense", "sparse")

    def __init__(self) -> None:
        self.dense = array("q")
        self.sparse: dict[int, int] = {}

    def first(self, post_id: int, agent: int) -> None:
        """Record `agent` as the author of `post_id` unless a post with that id came before."""
        if self.author(post_id) is not None:
            return
        dense = self.dense
        if 0 <= post_id < 2 * len(dense) + _SPARSE_FROM:
            if post_id >= len(dense):
                dense.extend([_NONE] * (post_id + 1 - len(dense)))
            dense[post_id] = agent
        else:
            self.sparse[post_id] = agent

    def author(self, post_id: int) -> int | None:
        if 0 <= post_id < len(self.dense) and (found := self.dense[post_id]) != _NONE:
            return found
        return self.sparse.get(post_id)


class Authors:
    """The authors of posts and the agents' names of the generations folded from their start."""

    def __init__(self) -> None:
        self.forget()

    def forget(self) -> None:
        """Hold nothing: every answer is `UNKNOWN` until a generation is folded from its start again."""
        self._posts: dict[tuple[Key, str], _Platform] = {}
        self._names: dict[Key, dict[str, int | None] | None] = {}  # None: a name or id SQL would compare by affinity
        self._agents: dict[Key, dict[Any, Any]] = {}  # agent id -> name, in the rows' order
        self._lost: set[Key] = set()  # generations memory gave up on: SQL answers for them from then on
        self._held = 0  # posts remembered

    def started(self, key: Key, agents: Iterable[dict[str, Any]]) -> None:
        """A generation's first event: its agents, as the fold writes them (INSERT OR REPLACE, in order)."""
        if key in self._lost:
            return
        rows = self._agents.setdefault(key, {})
        self._names.setdefault(key, {})
        for agent in agents:
            rows.pop(agent["agent_id"], None)  # a replaced row comes after the others
            rows[agent["agent_id"]] = agent.get("name", "")
        plain = all(type(i) is int and type(n) is str for i, n in rows.items())
        names: dict[str, int | None] = {}
        for agent_id, name in rows.items():
            names[name] = None if name in names else agent_id  # a name two agents hold names neither of them
        self._names[key] = names if plain else None

    def knows(self, key: Key) -> bool:
        """Whether memory holds every post and agent of the generation `key`."""
        return key in self._names

    def posted(self, key: Key, platform: str, post_id: int, agent: int) -> None:
        """A post or quote with an int id folded (in the order the fold writes them)."""
        if key not in self._names:
            return
        if type(agent) is not int or agent < 0:  # not what the array holds: this generation goes to SQL
            del self._names[key]
            self._lost.add(key)
            return
        platform_posts = self._posts.get((key, platform))
        if platform_posts is None:
            platform_posts = self._posts[(key, platform)] = _Platform()
        platform_posts.first(post_id, agent)
        self._held += 1
        if self._held > MAX_POSTS:
            self._let_go()

    def _let_go(self) -> None:
        """Hold nothing more of the generations held now: SQL answers for them from now on."""
        lost = self._lost | self._names.keys()
        self.forget()
        self._lost = lost

    def author(self, key: Key, platform: str, post_id: Any) -> int | None | object:
        """The agent of the first post or quote with this id in the generation, None if none, or `UNKNOWN`."""
        if key not in self._names or (post_id is not None and type(post_id) is not int):
            return UNKNOWN
        platform_posts = self._posts.get((key, platform))
        return None if post_id is None or platform_posts is None else platform_posts.author(post_id)

    def named(self, key: Key, name: str) -> int | None | object:
        """The one agent of the generation with this name, None if none or several, or `UNKNOWN`."""
        names = self._names.get(key)
        return UNKNOWN if names is None else names.get(name)

    def target(self, key: Key, platform: str, post_id: Any, name: str) -> int | None | object:
        """An edge's target agent: the author of post `post_id` (None: no post), else the agent `name` names; None
        if neither, `UNKNOWN` where memory cannot say."""
        author = self.author(key, platform, post_id)
        return self.named(key, name) if author is None else author
