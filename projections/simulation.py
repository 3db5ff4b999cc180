"""The simulation model: what the report tools query (docs/architecture.md#read-models).

Per simulation generation: platforms, rounds, agents and profiles, posts/comments/quotes
with an FTS5 index, interaction edges (undone ones marked), activity counts. A pure fold:
each event becomes parameterised SQL writes; look-ups (who wrote post 42?) are answered by
what the batch fold holds of its own folds (`authors.py`), else by subqueries, so the fold
itself reads nothing.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import Any

from simreportd.events.codec import Recorded, RecordedRow
from simreportd.events.models import (
    AgentActed,
    AgentInterviewed,
    EnvironmentStatusChanged,
    IngestRejected,
    PlatformFinished,
    PlatformStarted,
    RoundStarted,
    SimulationCompleted,
    SimulationDiscovered,
    SimulationGenerationStarted,
    acted_action,
    acted_simulation,
)
from simreportd.events.positions import Position

from .authors import Authors
from .projection import Run, Write, by_type_name
from .simulation_batch import PageFold, decoded
from .simulation_writes import (
    EDGE,
    EDGE_ENGAGEMENT,
    EDGE_LINKS,
    EDGES,
    KEY,
    POST,
    POST_ENGAGEMENT,
    POST_SEARCH,
    UNDO,
    han_spaced,
    target_agent,
    undo_writes,
    undone_target,
)
from .tallies import Sayings, Tally, citation

SCHEMA = """
CREATE TABLE IF NOT EXISTS sim_generations (
    simulation_id TEXT, generation INTEGER, folder TEXT, requirement TEXT, config TEXT,
    status TEXT, all_rounds_ran INTEGER, started_position INTEGER, completed_position INTEGER,
    PRIMARY KEY (simulation_id, generation));
CREATE TABLE IF NOT EXISTS sim_agents (
    simulation_id TEXT, generation INTEGER, agent_id INTEGER, name TEXT, username TEXT, bio TEXT,
    persona TEXT, stance TEXT, entity_type TEXT, profession TEXT, influence REAL,
    PRIMARY KEY (simulation_id, generation, agent_id));
CREATE INDEX IF NOT EXISTS sim_agents_by_name ON sim_agents (simulation_id, generation, name);
CREATE TABLE IF NOT EXISTS sim_platforms (
    simulation_id TEXT, generation INTEGER, platform TEXT, status TEXT, agents_count INTEGER,
    total_rounds INTEGER, total_actions INTEGER, all_rounds_ran INTEGER, actions INTEGER DEFAULT 0,
    undone INTEGER DEFAULT 0, PRIMARY KEY (simulation_id, generation, platform));
CREATE TABLE IF NOT EXISTS sim_rounds (
    simulation_id TEXT, generation INTEGER, platform TEXT, round INTEGER, simulated_hour INTEGER,
    actions INTEGER DEFAULT 0, PRIMARY KEY (simulation_id, generation, platform, round));
CREATE TABLE IF NOT EXISTS sim_activity (
    simulation_id TEXT, generation INTEGER, platform TEXT, agent_id INTEGER, actions INTEGER DEFAULT 0,
    posts INTEGER DEFAULT 0, PRIMARY KEY (simulation_id, generation, platform, agent_id));
CREATE TABLE IF NOT EXISTS sim_action_mix (
    simulation_id TEXT, generation INTEGER, platform TEXT, action_type TEXT, count INTEGER DEFAULT 0,
    PRIMARY KEY (simulation_id, generation, platform, action_type));
CREATE TABLE IF NOT EXISTS sim_posts (
    id INTEGER PRIMARY KEY, simulation_id TEXT, generation INTEGER, platform TEXT, ref TEXT, kind TEXT,
    post_id INTEGER, parent_post_id INTEGER, agent_id INTEGER, round INTEGER, content TEXT,
    quoted_content TEXT, quoted_author TEXT, position INTEGER, engagement INTEGER DEFAULT 0);
CREATE INDEX IF NOT EXISTS sim_posts_by_id ON sim_posts (simulation_id, generation, platform, post_id);
CREATE INDEX IF NOT EXISTS sim_posts_by_agent ON sim_posts (simulation_id, generation, agent_id);
CREATE INDEX IF NOT EXISTS sim_posts_by_row ON sim_posts (simulation_id, generation, id);
CREATE INDEX IF NOT EXISTS sim_posts_by_engagement ON sim_posts (simulation_id, generation, engagement DESC, id)
    WHERE kind IN ('post', 'quote');
CREATE VIRTUAL TABLE IF NOT EXISTS sim_posts_fts USING fts5(
    content, content='sim_posts', content_rowid='id', tokenize='unicode61 remove_diacritics 2');
-- dst_agent: the author of the post the action names by id, else the one agent of the name it gives (a name
-- several agents hold gives none).
CREATE TABLE IF NOT EXISTS sim_edges (
    position INTEGER PRIMARY KEY, simulation_id TEXT, generation INTEGER, platform TEXT, round INTEGER,
    kind TEXT, src_agent INTEGER, dst_agent INTEGER, dst_name TEXT, target_ref TEXT, undone INTEGER DEFAULT 0);
CREATE INDEX IF NOT EXISTS sim_edges_by_src ON sim_edges (simulation_id, generation, src_agent, kind, dst_agent);
CREATE TABLE IF NOT EXISTS sim_links (
    simulation_id TEXT, generation INTEGER, src_agent INTEGER, kind TEXT, dst_agent INTEGER, count INTEGER,
    undone INTEGER DEFAULT 0, PRIMARY KEY (simulation_id, generation, src_agent, kind, dst_agent));
CREATE INDEX IF NOT EXISTS sim_links_by_dst ON sim_links (simulation_id, generation, dst_agent);
CREATE INDEX IF NOT EXISTS sim_links_follows ON sim_links (simulation_id, generation, src_agent, dst_agent)
    WHERE kind = 'follow';
CREATE TABLE IF NOT EXISTS sim_engagement (
    simulation_id TEXT, generation INTEGER, agent_id INTEGER, reactions INTEGER, shares INTEGER, comments INTEGER,
    likes INTEGER, PRIMARY KEY (simulation_id, generation, agent_id));
CREATE TABLE IF NOT EXISTS sim_env (
    simulation_id TEXT PRIMARY KEY, generation INTEGER, status TEXT, twitter_available INTEGER,
    reddit_available INTEGER, pid INTEGER, position INTEGER);
CREATE TABLE IF NOT EXISTS sim_interviews (
    position INTEGER PRIMARY KEY, simulation_id TEXT, generation INTEGER, platform TEXT, agent_id INTEGER,
    agent_name TEXT, prompt TEXT, response TEXT);
CREATE TABLE IF NOT EXISTS sim_sayings (
    simulation_id TEXT, generation INTEGER, agent_id INTEGER, argument TEXT, statements INTEGER,
    first_round INTEGER, first_ref TEXT, first_position INTEGER, first_content TEXT,
    last_round INTEGER, last_ref TEXT, last_position INTEGER,
    posts INTEGER, post_round INTEGER, post_ref TEXT, post_position INTEGER, post_content TEXT,
    PRIMARY KEY (simulation_id, generation, agent_id, argument));
CREATE TABLE IF NOT EXISTS sim_rejections (
    position INTEGER PRIMARY KEY, simulation_id TEXT, generation INTEGER, file TEXT, "offset" INTEGER,
    reason TEXT, excerpt TEXT, lines INTEGER);
"""

# The only events but actions whose writes read or write what a run's posts and edges do (every other one
# writes its own rows: a round's hour, a platform's status, a rejection), so the only ones a run stops at.
WRITES_POSTS = frozenset({SimulationDiscovered.TYPE, SimulationGenerationStarted.TYPE})


class SimulationModel:
    """Projection of the simulation streams into the tables above."""

    name = "simulation"
    schema = SCHEMA
    tables = ("sim_generations", "sim_agents", "sim_platforms", "sim_rounds", "sim_activity", "sim_action_mix",
              "sim_posts", "sim_edges", "sim_links", "sim_engagement", "sim_env", "sim_rejections", "sim_interviews",
              "sim_sayings")
    extra_tables = ("sim_posts_fts",)
    # For the tools only; each is dirtied all over by any page of actions (1M actions folded from empty in
    # 41.5-44.0 s with them built at the end, 46.6-48.7 s keeping them). The fold's own lookups use the others.
    # The follows' index, and dst_agent in the edges', find a run's mutual follows and the rounds they formed
    # in by seeks (the coalitions tool at 1M actions: 73 + 123 ms -> 29 + 10 ms).
    deferred_indexes = ("sim_posts_by_agent", "sim_posts_by_engagement", "sim_posts_by_row", "sim_links_by_dst",
                        "sim_links_follows")

    def __init__(self) -> None:
        self.authors = Authors()  # what `apply_batch` folded, for the edges' targets (authors.py)

    def forget(self) -> None:
        """The file holds folds this object did not make (another process's, a rollback, a rebuild): let go of
        what `apply_batch` holds in memory, so that it asks the file instead."""
        self.authors.forget()

    def apply(self, recorded: Recorded) -> Iterable[Write]:
        d = recorded.data  # raw: the one-event fold is the batch fold's reference, on the same dicts
        key = (acted_simulation(d, recorded.stream), d["generation"])  # an action's stream names its simulation
        return self.HANDLERS[recorded.type](self, d, key, recorded.position)

    def apply_batch(self, batch: Iterable[Recorded]) -> Iterable[Write]:
        """The writes of `apply_rows`, of events read as `Recorded`, one by one."""
        page = self._page()
        page.fold([(r.type, r.data, r.position, r.stream) for r in batch])  # raw: as `apply_rows`
        return [(sql, params) for sql, rows in page.runs() for params in rows]

    def apply_rows(self, rows: Iterable[RecordedRow]) -> list[Run]:
        """The writes of a page of plain rows (`codec.RecordedRow`, as the runner reads every event): those of
        `apply`, event by event, in far fewer statements (simulation_batch.py)."""
        # Raw: a `Recorded` an event, and its lazy data, cost more than folding most actions; the data is decoded
        # here once (as codec.loads, what `Recorded.data` reads it with).
        rows = rows if isinstance(rows, list) else list(rows)
        page = self._page()
        page.fold(zip([r[3] for r in rows], decoded([r[7] for r in rows]), [r[0] for r in rows], [r[1] for r in rows]))
        return page.runs()

    def _page(self) -> PageFold:
        """A page's fold, with this model's handlers of the events but actions and its memory of its folds."""
        handlers = {name: handler.__get__(self) for name, handler in self.HANDLERS.items()}
        return PageFold(handlers, WRITES_POSTS, self.authors)

    def _SimulationDiscovered(self, d: dict[str, Any], key: tuple[str, int], pos: Position) -> Iterable[Write]:
        yield ("INSERT OR REPLACE INTO sim_generations VALUES (?, ?, ?, ?, ?, 'running', NULL, ?, NULL)",
               (*key, d["folder"], d.get("requirement", ""), json.dumps(d.get("config", {}), sort_keys=True), pos))
        for a in d.get("agents", []):
            yield ("INSERT OR REPLACE INTO sim_agents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (*key, a["agent_id"], a.get("name", ""), a.get("username", ""), a.get("bio", ""),
                    a.get("persona", ""), a.get("stance", ""), a.get("entity_type", ""), a.get("profession", ""),
                    a.get("influence")))
        posts = Posts()
        for a in d.get("agents", []):
            text = " ".join(str(a.get(k) or "") for k in ("name", "username", "bio", "persona", "entity_type"))
            posts.add(key, "", f"agent:{a['agent_id']}", "profile", None, None, a["agent_id"], None, text, None, None,
                      pos)
        yield from posts.writes()

    def _PlatformStarted(self, d: dict[str, Any], key: tuple[str, int], pos: Position) -> Iterable[Write]:
        yield ("INSERT INTO sim_platforms (simulation_id, generation, platform, status, agents_count)"
               " VALUES (?, ?, ?, 'running', ?) ON CONFLICT DO UPDATE SET status = 'running'",
               (*key, d["platform"], d.get("agents_count")))

    def _RoundStarted(self, d: dict[str, Any], key: tuple[str, int], pos: Position) -> Iterable[Write]:
        yield ("INSERT INTO sim_rounds (simulation_id, generation, platform, round, simulated_hour)"
               " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET simulated_hour = excluded.simulated_hour",
               (*key, d["platform"], d["round"], d.get("simulated_hour")))

    def _AgentActed(self, d: dict[str, Any], key: tuple[str, int], pos: Position) -> Iterable[Write]:
        tally, edges, posts = Tally(), EdgeTally(), Posts()  # of one action: the batch fold's reference
        kind, args = acted_action(d)
        tally.add(*key, d["platform"], d["round"], d["agent_id"], kind)
        yield from tally.writes()
        writes: list[Write] = []
        _acted(d, kind, args, key, pos, edges, posts, writes)
        yield from posts.writes()
        yield from writes
        yield from edges.counts()
        sayings = Sayings()
        sayings.add(key, d, kind, args, pos)
        yield from sayings.writes()

    def _PlatformFinished(self, d: dict[str, Any], key: tuple[str, int], pos: Position) -> Iterable[Write]:
        yield ("INSERT INTO sim_platforms (simulation_id, generation, platform, status, total_rounds, total_actions,"
               " all_rounds_ran) VALUES (?, ?, ?, 'finished', ?, ?, ?) ON CONFLICT DO UPDATE SET status = 'finished',"
               " total_rounds = excluded.total_rounds, total_actions = excluded.total_actions,"
               " all_rounds_ran = excluded.all_rounds_ran",
               (*key, d["platform"], d["total_rounds"], d.get("total_actions"), int(d["all_rounds_ran"])))

    def _SimulationCompleted(self, d: dict[str, Any], key: tuple[str, int], pos: Position) -> Iterable[Write]:
        yield (f"UPDATE sim_generations SET status = 'completed', all_rounds_ran = ?, completed_position = ?"
               f" WHERE {KEY}", (int(d["all_rounds_ran"]), pos, *key))

    def _EnvironmentStatusChanged(self, d: dict[str, Any], key: tuple[str, int], pos: Position) -> Iterable[Write]:
        yield ("INSERT OR REPLACE INTO sim_env VALUES (?, ?, ?, ?, ?, ?, ?)",
               (*key, d["status"], int(d.get("twitter_available", False)), int(d.get("reddit_available", False)),
                d.get("pid"), pos))

    def _IngestRejected(self, d: dict[str, Any], key: tuple[str, int], pos: Position) -> Iterable[Write]:
        yield ("INSERT INTO sim_rejections VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
               (pos, *key, d["file"], d["offset"], d["reason"], d["excerpt"], d.get("lines", 1)))

    def _AgentInterviewed(self, d: dict[str, Any], key: tuple[str, int], pos: Position) -> Iterable[Write]:
        """An interview the simulator's database recorded after the run: shown with the run, never an action."""
        yield ("INSERT INTO sim_interviews VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
               (pos, *key, d["platform"], d["agent_id"], d.get("agent_name", ""), d.get("prompt", ""),
                d.get("response", "")))

    HANDLERS = by_type_name({
        AgentInterviewed: _AgentInterviewed, SimulationDiscovered: _SimulationDiscovered,
        SimulationGenerationStarted: _SimulationDiscovered,
        PlatformStarted: _PlatformStarted, RoundStarted: _RoundStarted, AgentActed: _AgentActed,
        PlatformFinished: _PlatformFinished, SimulationCompleted: _SimulationCompleted,
        EnvironmentStatusChanged: _EnvironmentStatusChanged, IngestRejected: _IngestRejected})
    types = frozenset(HANDLERS)


def _acted(d: dict[str, Any], kind: str, args: dict[str, Any], key: tuple[str, int], pos: Position,
           edges: EdgeTally, posts: Posts, writes: list[Write]) -> None:
    """An action's writes but its counters (`kind` and `args` as `acted_action` reads them), added to `writes`:
    the statement it posted (into `posts`), the edge it made (counted in `edges`) or undid."""
    p, r, agent = d["platform"], d["round"], d["agent_id"]
    if kind == "CREATE_POST":
        posts.add(key, p, citation("post", p, args.get("post_id"), pos), "post", args.get("post_id"), None, agent, r,
                  args.get("content"), None, None, pos)
    elif kind == "QUOTE_POST":
        posts.add(key, p, citation("post", p, args.get("new_post_id"), pos), "quote", args.get("new_post_id"),
                  args.get("quoted_id"), agent, r, args.get("quote_content"), args.get("original_content"),
                  args.get("original_author_name"), pos)
    elif kind == "CREATE_COMMENT":
        posts.add(key, p, citation("comment", p, args.get("comment_id"), pos), "comment", args.get("comment_id"),
                  args.get("post_id"), agent, r, args.get("content"), None, None, pos)
    if kind in EDGES:
        writes.append(_edge(key, p, r, agent, kind, args, pos, edges, posts))
    elif kind in UNDO:
        writes.extend(undo_writes(key, p, agent, UNDO[kind], undone_target(UNDO[kind], args, p)))


class Posts:
    """The posts of one event, written together by `writes()`; their authors, by post id, for its edge (the
    table holds every post written before)."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.texts: list[str] = []
        self.authors: dict[tuple[Any, ...], int] = {}

    def add(self, key: tuple[str, int], p: str, ref: str, kind: str, post_id: Any, parent: Any, agent: int,
            r: int | None, content: Any, quoted: Any, quoted_author: Any, pos: Position) -> None:
        text = str(content or "")
        post_id = post_id if isinstance(post_id, int) else None
        self.rows.append((*key, p, ref, kind, post_id, parent if isinstance(parent, int) else None, agent, r, text,
                          quoted, quoted_author, pos))
        self.texts.append(text)
        if post_id is not None and kind in ("post", "quote"):
            self.authors.setdefault((*key, p, post_id), agent)

    def author(self, key: tuple[str, int], p: str, post_id: Any) -> int | None:
        """The agent of the run's first post or quote with this id, if the run has one."""
        return self.authors.get((*key, p, post_id)) if self.authors else None

    def writes(self) -> list[Write]:
        """The run's rows and search rows; a new run begins."""
        n = len(self.rows)
        writes: list[Write] = [(POST, row) for row in self.rows]
        writes += [(POST_SEARCH, (n - 1 - i, han_spaced(text))) for i, text in enumerate(self.texts)]
        self.rows, self.texts, self.authors = [], [], {}
        return writes


def _edge(key: tuple[str, int], p: str, r: int, agent: int, kind: str, args: dict[str, Any],
          pos: Position, edges: EdgeTally, posts: Posts) -> Write:
    """The edge; `edges` counts it into its link, its target agent's engagement and its target post's. Its
    target post's author: the first such post written, else the first of the event's posts."""
    edge, id_key, name_key = EDGES[kind]
    target_id = args.get(id_key) if id_key else None
    # One rule for the batch fold and the fold of one event: only a number names a post, as `Posts.add` keeps
    # them. A post id in text ("4") would match post 4 in SQL (by the column's affinity) but not in the batch's memory.
    target_id = target_id if isinstance(target_id, int) else None
    name = str(args.get(name_key) or "") if name_key else ""
    target_ref = citation("post", p, target_id, Position(0)) if target_id is not None else None
    edges.add(pos, (*key, p, target_id, target_ref) if target_ref is not None else None)
    return EDGE, (pos, *key, p, r, edge, agent, *key, p, target_id, posts.author(key, p, target_id), *key, name,
                  target_agent(edge, args), name, target_ref)


class EdgeTally:
    """The edge of one action, added to its link and its targets' engagement as the batch fold adds a run's
    (simulation_batch.py): two set-wise statements over its position, one for its target post."""

    def __init__(self) -> None:
        self._begin()

    def _begin(self) -> None:
        self.span: tuple[int, int] | None = None  # first and last position of the run's edges
        self.posts: Counter[tuple[Any, ...]] = Counter()  # (simulation, generation, platform, post_id, ref) -> edges

    def add(self, pos: Position, post: tuple[Any, ...] | None) -> None:
        self.span = (self.span[0] if self.span else pos, pos)
        if post is not None:
            self.posts[post] += 1

    def counts(self) -> list[Write]:
        """The writes that count the run's edges, and a new run begins."""
        writes: list[Write] = [(EDGE_LINKS, self.span), (EDGE_ENGAGEMENT, self.span)] if self.span else []
        writes += [(POST_ENGAGEMENT, (n, *post)) for post, n in self.posts.items()]
        self._begin()
        return writes


