"""The simulation model: what the report tools query (docs/architecture.md#read-models).

Per simulation generation: platforms, rounds, agents and profiles, posts/comments/quotes
with an FTS5 index, interaction edges (undone ones marked), activity counts. A pure fold:
each event becomes parameterised SQL writes; look-ups (who wrote post 42?) are answered by
what the batch fold holds of its own folds (`authors.py`), else by subqueries, so the fold
itself reads nothing.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from simreportd.events.codec import Recorded, RecordedRow, loads
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

from .authors import UNKNOWN, Authors
from .projection import Write, by_type_name
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

# Action -> (edge kind, how the target is named in action_args)
EDGES = {
    "LIKE_POST": ("like", "post_id", "post_author_name"),
    "DISLIKE_POST": ("dislike", "post_id", "post_author_name"),
    "REPOST": ("repost", "post_id", "original_author_name"),
    "QUOTE_POST": ("quote", "quoted_id", "original_author_name"),
    "CREATE_COMMENT": ("comment", "post_id", None),
    "LIKE_COMMENT": ("like_comment", None, "comment_author_name"),
    "DISLIKE_COMMENT": ("dislike_comment", None, "comment_author_name"),
    "FOLLOW": ("follow", None, "target_user_name"),
    "MUTE": ("mute", None, "target_user_name"),
}
UNDO = {"UNFOLLOW": "follow", "UNLIKE_POST": "like", "UNDO_LIKE_POST": "like", "UNDO_DISLIKE_POST": "dislike",
        "UNMUTE": "mute", "UNDO_REPOST": "repost"}

# The only events but actions whose writes read or write what a run's posts and edges do (every other one
# writes its own rows: a round's hour, a platform's status, a rejection), so the only ones a run stops at.
WRITES_POSTS = frozenset({SimulationDiscovered.TYPE, SimulationGenerationStarted.TYPE})

KEY = "simulation_id = ? AND generation = ?"
AUTHOR_OF_POST = (f"(SELECT agent_id FROM sim_posts WHERE {KEY} AND platform = ? AND post_id = ?"
                  " AND kind IN ('post', 'quote') LIMIT 1)")  # comments number their own ids: not a post's author
# A name two agents hold names neither: a follow by a shared name has no target, not the first agent of the name.
AGENT_NAMED = f"(SELECT min(agent_id) FROM sim_agents WHERE {KEY} AND name = ? HAVING count(*) = 1)"


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
        """`apply_rows` of events read as `Recorded`."""
        return self._fold_run((r.type, r.data, r.position, r.stream) for r in batch)  # raw: as `apply_rows`

    def apply_rows(self, rows: Iterable[RecordedRow]) -> Iterable[Write]:
        """`apply_batch` of plain rows (`codec.RecordedRow`), as the runner reads every event."""
        # Raw: a `Recorded` an event, and its lazy data, cost more than folding most actions; the data is decoded
        # here once (codec.loads, what `Recorded.data` reads it with).
        return self._fold_run((r[3], loads(r[7]), Position(r[0]), r[1]) for r in rows)

    def _fold_run(self, batch: Iterable[tuple[str, dict[str, Any], Position, str]]) -> list[Write]:
        """The writes of a batch of (type, data, position): those of `apply`, event by event, but the counters of every
        action tallied in memory and written last, a row each (they commute with every other write: see tallies.ROUND_ACTIONS),
        the edges of each run of actions added to their links and targets by one statement each, and the run's
        posts and their search rows written together (`Posts`), each statement once for the run."""
        writes: list[Write] = []
        tally, edges, posts, sayings = Tally(), EdgeTally(), Posts(self.authors), Sayings()
        acted = AgentActed.TYPE  # bound once: a pydantic class's attribute costs ~50 ns a lookup, most events are actions
        for kind_of_event, d, pos, stream in batch:
            key = (acted_simulation(d, stream), d["generation"])  # an action's stream names its simulation
            if kind_of_event != acted:
                if kind_of_event in WRITES_POSTS:  # its posts take the ids after the run's
                    writes += [*posts.writes(), *edges.counts()]
                    self.authors.started(key, d.get("agents", []))
                writes.extend(self.HANDLERS[kind_of_event](self, d, key, pos))
                continue
            kind, args = acted_action(d)
            if kind in UNDO or (kind in CREATES_POST and edges.targets(_created_post(d["platform"], kind, args, pos))):
                writes += [*posts.writes(), *edges.counts()]
            tally.add(key, d["platform"], d["round"], d["agent_id"], kind)
            sayings.add(key, d, kind, args, pos)
            _acted(d, kind, args, key, pos, edges, posts, writes)
        return [*writes, *posts.writes(), *edges.counts(), *tally.writes(), *sayings.writes()]

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
        tally.add(key, d["platform"], d["round"], d["agent_id"], kind)
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
        writes.extend(_undo(key, p, agent, UNDO[kind], _undone_target(UNDO[kind], args, p)))


CREATES_POST = frozenset({"CREATE_POST", "QUOTE_POST"})


def _created_post(platform: str, kind: str, args: dict[str, Any], pos: Position) -> str | None:
    """The ref of the post or quote an action creates, if it creates one."""
    if kind not in CREATES_POST:
        return None
    return citation("post", platform, args.get("post_id" if kind == "CREATE_POST" else "new_post_id"), pos)


# A post's row and its search row, by explicit rowids: a run's posts take the ids after the table's last, in
# order (what autoincrement gave them one at a time), and its search rows the same ids, counted back from the
# last: two statements a run, where `last_insert_rowid()` made each post two statements of its own.
POST = ("INSERT INTO sim_posts (id, simulation_id, generation, platform, ref, kind, post_id, parent_post_id,"
        " agent_id, round, content, quoted_content, quoted_author, position)"
        " VALUES ((SELECT coalesce(max(id), 0) + 1 FROM sim_posts), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
POST_SEARCH = "INSERT INTO sim_posts_fts (rowid, content) VALUES ((SELECT max(id) FROM sim_posts) - ?, ?)"


class Posts:
    """The posts of a run of events, written together by `writes()`; their authors, by post id, for the edges
    that target them before then (the table holds every post written before the run)."""

    def __init__(self, memory: Authors | None = None) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.texts: list[str] = []
        self.authors: dict[tuple[Any, ...], int] = {}
        self.memory = memory  # the fold's, told every post as it is added (None: a fold of one event)

    def add(self, key: tuple[str, int], p: str, ref: str, kind: str, post_id: Any, parent: Any, agent: int,
            r: int | None, content: Any, quoted: Any, quoted_author: Any, pos: Position) -> None:
        text = str(content or "")
        post_id = post_id if isinstance(post_id, int) else None
        self.rows.append((*key, p, ref, kind, post_id, parent if isinstance(parent, int) else None, agent, r, text,
                          quoted, quoted_author, pos))
        self.texts.append(text)
        if post_id is not None and kind in ("post", "quote"):
            self.authors.setdefault((*key, p, post_id), agent)
            if self.memory is not None:
                self.memory.posted(key, p, post_id, agent)

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


HAN = re.compile(r"([\u3400-\u9fff\uf900-\ufaff])")


def han_spaced(text: str) -> str:
    """Han characters as single tokens (Chinese has no spaces, so unicode61 would index whole clauses).
    ASCII text, most posts of most runs, skips the search (2.4 us a post)."""
    return text if text.isascii() else HAN.sub(r" \1 ", text)


EDGE = (f"INSERT INTO sim_edges VALUES (?, ?, ?, ?, ?, ?, ?, coalesce({AUTHOR_OF_POST}, ?, {AGENT_NAMED}, ?), ?, ?, 0)")
EDGE_KNOWN = "INSERT INTO sim_edges VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)"  # its target found in memory


def _edge(key: tuple[str, int], p: str, r: int, agent: int, kind: str, args: dict[str, Any],
          pos: Position, edges: EdgeTally, posts: Posts) -> Write:
    """The edge; `edges` counts it into its link, its target agent's engagement and its target post's. Its
    target post's author: the first such post written, else the first of the run's posts not written yet."""
    edge, id_key, name_key = EDGES[kind]
    target_id = args.get(id_key) if id_key else None
    # One rule for the batch fold and the fold of one event: only a number names a post, as `Posts.add` keeps
    # them. A post id in text ("4") would match post 4 in SQL (by the column's affinity) but not in memory.
    target_id = target_id if isinstance(target_id, int) else None
    name = str(args.get(name_key) or "") if name_key else ""
    target_ref = citation("post", p, target_id, Position(0)) if target_id is not None else None
    edges.add(pos, (*key, p, target_id, target_ref) if target_ref is not None else None)
    if posts.memory is not None and (dst := _known_target(posts.memory, key, p, target_id, name)) is not UNKNOWN:
        return EDGE_KNOWN, (pos, *key, p, r, edge, agent, _target_agent(edge, args) if dst is None else dst, name,
                            target_ref)
    return EDGE, (pos, *key, p, r, edge, agent, *key, p, target_id, posts.author(key, p, target_id), *key, name,
                  _target_agent(edge, args), name, target_ref)


def _known_target(memory: Authors, key: tuple[str, int], p: str, target_id: Any, name: str) -> int | None | object:
    """What `EDGE`'s coalesce of the target post's author and the agent named would give, from memory (the run's
    posts are in it too, after the file's); `UNKNOWN` where memory cannot say."""
    author = memory.author(key, p, target_id)
    return memory.named(key, name) if author is None else author


SHARES, COMMENTS, LIKES = ("repost", "quote"), ("comment",), ("like", "like_comment")
EDGE_LINKS = ("INSERT INTO sim_links SELECT simulation_id, generation, src_agent, kind, dst_agent, count(*), 0"
              " FROM sim_edges WHERE position BETWEEN ? AND ? AND dst_agent IS NOT NULL"
              " GROUP BY simulation_id, generation, src_agent, kind, dst_agent"
              " ON CONFLICT DO UPDATE SET count = count + excluded.count")
EDGE_ENGAGEMENT = ("INSERT INTO sim_engagement SELECT simulation_id, generation, dst_agent, count(*),"
                   f" sum(kind IN {SHARES}), sum(kind IN ('{COMMENTS[0]}')), sum(kind IN {LIKES})"
                   " FROM sim_edges WHERE position BETWEEN ? AND ? AND dst_agent != src_agent"
                   " GROUP BY simulation_id, generation, dst_agent ON CONFLICT DO UPDATE SET"
                   " reactions = reactions + excluded.reactions, shares = shares + excluded.shares,"
                   " comments = comments + excluded.comments, likes = likes + excluded.likes")
POST_ENGAGEMENT = f"UPDATE sim_posts SET engagement = engagement + ? WHERE {KEY} AND platform = ? AND post_id = ? AND ref = ?"


class EdgeTally:
    """The edges of a run of actions, added to their links and their targets' engagement by a few statements:
    two set-wise over the run's positions, one per target post. Whatever reads or changes these counters, or
    creates a post the run targets, must come after `counts()`; sequential folding does one edge a run."""

    def __init__(self) -> None:
        self._begin()

    def _begin(self) -> None:
        self.span: tuple[int, int] | None = None  # first and last position of the run's edges
        self.posts: Counter[tuple[Any, ...]] = Counter()  # (simulation, generation, platform, post_id, ref) -> edges
        self.refs: set[str] = set()

    def add(self, pos: Position, post: tuple[Any, ...] | None) -> None:
        self.span = (self.span[0] if self.span else pos, pos)
        if post is not None:
            self.posts[post] += 1
            self.refs.add(post[-1])

    def targets(self, ref: str | None) -> bool:
        return ref in self.refs

    def counts(self) -> list[Write]:
        """The writes that count the run's edges, and a new run begins."""
        writes: list[Write] = [(EDGE_LINKS, self.span), (EDGE_ENGAGEMENT, self.span)] if self.span else []
        writes += [(POST_ENGAGEMENT, (n, *post)) for post, n in self.posts.items()]
        self._begin()
        return writes


def _target_agent(edge: str, args: dict[str, Any]) -> int | None:
    """A follow's or mute's target by id, when its name is missing: the native environment writes the followee
    under `agent_id` (docs/formats.md#action-lines; SimSwarm's coalition detector missed it), OASIS under `followee_id`."""
    if edge not in ("follow", "mute"):
        return None
    return next((args[k] for k in ("agent_id", "followee_id") if type(args.get(k)) is int), None)


def _undone_target(edge: str, args: dict[str, Any], p: str) -> tuple[str | None, str, int | None]:
    """What an undo names: (target name, target post ref, target agent id). A follow or mute undone by the
    target's id alone (OASIS's `followee_id`) matches on that id, not on every follow without a name."""
    name = args.get("target_user_name") or args.get("post_author_name") or ""
    target_id = _target_agent(edge, args) if not name else None
    return (None if target_id is not None else name), citation("post", p, args.get("post_id"), Position(0)), target_id


def _undo(key: tuple[str, int], p: str, agent: int, edge: str,
          target: tuple[str | None, str, int | None]) -> Iterable[Write]:
    """Mark the agent's latest live `edge` to `target` (a name, a post ref or an agent id) undone, and take it off
    the counters."""
    undone = (f"(SELECT max(position) FROM sim_edges WHERE {KEY} AND platform = ? AND kind = ? AND src_agent = ?"
              " AND undone = 0 AND (dst_name = ? OR target_ref = ? OR dst_agent = ?))")
    args = (*key, p, edge, agent, *target)
    yield (f"UPDATE sim_links SET undone = undone + 1 WHERE {KEY} AND src_agent = ? AND kind = ? AND dst_agent ="
           f" (SELECT dst_agent FROM sim_edges WHERE position = {undone})", (*key, agent, edge, *args))
    yield (f"UPDATE sim_engagement SET reactions = reactions - 1, shares = shares - ?, comments = comments - ?,"
           f" likes = likes - ? WHERE {KEY} AND agent_id = (SELECT dst_agent FROM sim_edges WHERE position = {undone}"
           " AND dst_agent != src_agent)", (*_reaction(edge), *key, *args))
    yield ("INSERT INTO sim_platforms (simulation_id, generation, platform, status, undone) SELECT ?, ?, ?, 'running', 1"
           f" WHERE EXISTS (SELECT 1 FROM sim_edges WHERE position = {undone}) ON CONFLICT DO UPDATE SET"
           " undone = undone + 1", (*key, p, *args))  # an upsert: a batch writes the row's counters last
    yield f"UPDATE sim_edges SET undone = 1 WHERE position = {undone}", args


def _reaction(edge: str) -> tuple[int, int, int]:
    """How an edge counts in its target's engagement: (shares, comments, likes)."""
    return int(edge in SHARES), int(edge in COMMENTS), int(edge in LIKES)
