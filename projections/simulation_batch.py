"""The simulation model's fold of a page of events: the rows `SimulationModel.apply` gives event by event, in
far fewer statements (docs/architecture.md#read-models).

Every action's counters are tallied in memory and written last, a row each (they commute with every other write:
see tallies.ROUND_ACTIONS). Actions fold in runs: a run's edges are inserted, then its posts and their search
rows, then its edges added to their links and targets' engagement by one statement each; a run ends where an
event reads or changes what it holds (an undo, a post an edge of the run targets, a generation's start). Its
writes come out as runs of one statement and its parameter rows (`Run`), built as lists here: a write an action
and grouping them again cost the fold more Python than SQLite spent on the rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pydantic_core import from_json

from simreportd.events.codec import loads
from simreportd.events.models import AgentActed
from simreportd.events.streams import simulation_id_of

from .authors import UNKNOWN, Authors
from .projection import Run, Write
from .simulation_writes import (
    EDGE,
    EDGE_ENGAGEMENT,
    EDGE_KNOWN,
    EDGE_LINKS,
    EDGES,
    POST,
    POST_ENGAGEMENT,
    POST_SEARCH,
    UNDO,
    han_spaced,
    target_agent,
    undo_writes,
    undone_target,
)
from .tallies import POSTING, Sayings, Tally, citation

Event = tuple[str, dict[str, Any], int, str]  # (type, data, position, stream)
Handler = Callable[[dict[str, Any], tuple[str, int], Any], Iterable[Write]]
ACTED = AgentActed.TYPE  # bound once: a pydantic class's attribute costs ~50 ns a lookup


class PageFold:
    """One page's fold: `fold` the page's events, then take `runs()`. `authors` is the model's memory of its
    own folds, which the page's posts and agents are added to as they are folded."""

    def __init__(self, handlers: dict[str, Handler], starts: frozenset[str], authors: Authors) -> None:
        self.handlers, self.starts, self.authors = handlers, starts, authors
        self.out: list[Run] = []
        self.tally, self.sayings = Tally(), Sayings()
        self.sims: dict[str, str] = {}  # stream -> the simulation its name says
        self._begin()

    def _begin(self) -> None:
        """A new run of actions."""
        self.known: list[tuple[Any, ...]] = []  # EDGE_KNOWN's rows: edges whose target memory knows
        self.asked: list[tuple[Any, ...]] = []  # EDGE's rows: edges whose target SQL finds
        self.posts: list[tuple[Any, ...]] = []  # POST's rows
        self.texts: list[str] = []  # their search texts
        self.run_authors: dict[tuple[Any, ...], Any] = {}  # (simulation, generation, platform, post id) -> agent
        self.first: int | None = None  # the position of the run's first edge
        self.last = 0  # and of its last
        self.targets: dict[tuple[Any, ...], int] = {}  # (simulation, generation, platform, post_id, ref) -> edges
        self.refs: set[str] = set()

    def runs(self) -> list[Run]:
        """The page's writes, in order: the last run's, then the counters and sayings."""
        self.flush()
        tally = self.tally.writes()
        sayings = list(self.sayings.writes())
        for sql, params in tally:
            self.emit(sql, params)
        if sayings:
            self.out.append((sayings[0][0], [params for _, params in sayings]))
        return self.out

    def emit(self, sql: str, params: tuple[Any, ...]) -> None:
        """One write, in order after the others (with the last run if it is of the same statement)."""
        out = self.out
        if out and out[-1][0] == sql:
            out[-1][1].append(params)
        else:
            out.append((sql, [params]))

    def flush(self) -> None:
        """End the run of actions: its edges, posts, search rows and counts, in that order."""
        out = self.out
        if self.known:
            out.append((EDGE_KNOWN, self.known))
        if self.asked:
            out.append((EDGE, self.asked))
        if self.posts:
            out.append((POST, self.posts))
            last = len(self.texts) - 1
            out.append((POST_SEARCH, [(last - i, han_spaced(text)) for i, text in enumerate(self.texts)]))
        if self.first is not None:
            span = (self.first, self.last)
            out.append((EDGE_LINKS, [span]))
            out.append((EDGE_ENGAGEMENT, [span]))
        if self.targets:
            out.append((POST_ENGAGEMENT, [(n, *post) for post, n in self.targets.items()]))
        self._begin()

    def fold(self, events: Iterable[Event]) -> None:
        """Fold the events, in order."""
        sims = self.sims
        for kind_of_event, d, pos, stream in events:
            sim = d.get("simulation_id")  # an action's stream names its simulation
            if sim is None:
                sim = sims.get(stream)
                if sim is None:
                    sim = sims[stream] = simulation_id_of(stream)
            if kind_of_event == ACTED:
                self.acted(d, sim, pos)
            else:
                self.other(kind_of_event, d, (sim, d["generation"]), pos)

    def other(self, kind_of_event: str, d: dict[str, Any], key: tuple[str, int], pos: int) -> None:
        """An event but an action: its handler's writes, after the run if it starts a generation (its posts take
        the ids after the run's)."""
        if kind_of_event in self.starts:
            self.flush()
            self.authors.started(key, d.get("agents", []))
        for sql, params in self.handlers[kind_of_event](d, key, pos):
            self.emit(sql, params)

    def acted(self, d: dict[str, Any], sim: str, pos: int) -> None:
        """An action: its counters, what it says, the post it makes and the edge it makes or undoes."""
        gen, p, r, agent = d["generation"], d["platform"], d["round"], d["agent_id"]
        kind = d["action_type"].upper()
        args = d.get("action_args") or {}
        self.tally.add(sim, gen, p, r, agent, kind)
        if kind in POSTING:
            self.posted(kind, args, sim, gen, p, r, agent, pos)
        edge = EDGES.get(kind)
        if edge is not None:
            self.edge(edge, args, sim, gen, p, r, agent, pos)
        elif kind in UNDO:
            self.flush()
            for sql, params in undo_writes((sim, gen), p, agent, UNDO[kind], undone_target(UNDO[kind], args, p)):
                self.emit(sql, params)

    def posted(self, kind: str, args: dict[str, Any], sim: str, gen: int, p: str, r: int, agent: int,
               pos: int) -> None:
        """A post, quote or comment: its row and search row in the run (after it, if an edge of the run targets
        it: that edge came before the post), its author in memory, and what it says."""
        if kind == "CREATE_COMMENT":
            post_id, parent, content, quoted, quoted_author = (
                args.get("comment_id"), args.get("post_id"), args.get("content"), None, None)
            ref, made = citation("comment", p, post_id, pos), "comment"
        else:
            if kind == "CREATE_POST":
                post_id, parent, content, quoted, quoted_author = (
                    args.get("post_id"), None, args.get("content"), None, None)
                made = "post"
            else:
                post_id, parent, content, quoted, quoted_author = (
                    args.get("new_post_id"), args.get("quoted_id"), args.get("quote_content"),
                    args.get("original_content"), args.get("original_author_name"))
                made = "quote"
            ref = citation("post", p, post_id, pos)
            if ref in self.refs:
                self.flush()
        text = str(content or "")
        post_id = post_id if isinstance(post_id, int) else None
        self.posts.append((sim, gen, p, ref, made, post_id, parent if isinstance(parent, int) else None, agent, r,
                           text, quoted, quoted_author, pos))
        self.texts.append(text)
        if post_id is not None and made != "comment":
            self.run_authors.setdefault((sim, gen, p, post_id), agent)
            self.authors.posted((sim, gen), p, post_id, agent)
        if text:
            self.sayings.said((sim, gen), agent, made != "comment", r, ref, pos, text)

    def edge(self, edge: tuple[str, str | None, str | None], args: dict[str, Any], sim: str, gen: int, p: str,
             r: int, agent: int, pos: int) -> None:
        """An edge's row in the run, counted into its link and its targets' engagement when the run ends. Its
        target agent: the author of its target post (the first written, else the run's first), else the agent
        its name names, from memory where it holds the generation, else by SQL."""
        kind, id_key, name_key = edge
        target_id = args.get(id_key) if id_key else None
        # Only a number names a post, as `posted` keeps them (a "4" would match post 4 in SQL, not in memory).
        target_id = target_id if isinstance(target_id, int) else None
        name = str(args.get(name_key) or "") if name_key else ""
        if self.first is None:
            self.first = pos
        self.last = pos
        if target_id is not None:
            target_ref = f"post:{p}:{target_id}"
            post = (sim, gen, p, target_id, target_ref)
            self.targets[post] = self.targets.get(post, 0) + 1
            self.refs.add(target_ref)
        else:
            target_ref = None
        dst = self.authors.target((sim, gen), p, target_id, name)
        if dst is not UNKNOWN:
            self.known.append((pos, sim, gen, p, r, kind, agent, target_agent(kind, args) if dst is None else dst,
                               name, target_ref))
        else:
            run_author = self.run_authors.get((sim, gen, p, target_id)) if self.run_authors else None
            self.asked.append((pos, sim, gen, p, r, kind, agent, sim, gen, p, target_id, run_author, sim, gen, name,
                               target_agent(kind, args), name, target_ref))


def decoded(texts: list[str]) -> list[Any]:
    """`codec.loads` of each text: its parser mapped over the page, without a Python call a text; each text alone
    only if the page holds one only Python's parser takes (a lone surrogate)."""
    try:
        return list(map(from_json, texts))
    except ValueError:
        return [loads(text) for text in texts]
