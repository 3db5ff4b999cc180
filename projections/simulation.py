"""The simulation model: what the report tools query (docs/architecture.md#read-models).

Per simulation generation: platforms, rounds, agents and profiles, posts/comments/quotes
with an FTS5 index, interaction edges (undone ones marked), activity counts. A pure fold:
each event becomes parameterised SQL writes; look-ups (who wrote post 42?) are
subqueries, so the fold itself reads nothing.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from simreportd.events.codec import Recorded
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
)

from .base import Write, by_type_name

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

KEY = "simulation_id = ? AND generation = ?"
AUTHOR_OF_POST = (f"(SELECT agent_id FROM sim_posts WHERE {KEY} AND platform = ? AND post_id = ?"
                  " AND kind IN ('post', 'quote') LIMIT 1)")  # comments number their own ids: not a post's author
AGENT_NAMED = f"(SELECT agent_id FROM sim_agents WHERE {KEY} AND name = ? LIMIT 1)"


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
    deferred_indexes = ("sim_posts_by_agent", "sim_posts_by_engagement", "sim_links_by_dst", "sim_links_follows")

    def apply(self, recorded: Recorded) -> Iterable[Write]:
        d = recorded.data
        return self.HANDLERS[recorded.type](self, d, (d["simulation_id"], d["generation"]), recorded.position)

    def apply_batch(self, batch: Iterable[Recorded]) -> Iterable[Write]:
        """The writes of a whole batch: those of `apply`, event by event, but the counters of every action
        tallied in memory and written last, a row each (they commute with every other write: see ROUND_ACTIONS),
        and the edges of each run of actions added to their links and targets by one statement each."""
        writes: list[Write] = []
        tally, edges, sayings = Tally(), EdgeTally(), Sayings()
        for recorded in batch:
            d, pos = recorded.data, recorded.position
            key = (d["simulation_id"], d["generation"])
            if recorded.type != "AgentActed" or d["action_type"] in UNDO or edges.targets(_created_post(d, pos)):
                writes.extend(edges.counts())  # what comes next reads, or would change, what the edges count
            if recorded.type == "AgentActed":
                tally.add(key, d["platform"], d["round"], d["agent_id"], d["action_type"])
                sayings.add(key, d, pos)
                writes.extend(_acted(d, key, pos, edges))
            else:
                writes.extend(self.HANDLERS[recorded.type](self, d, key, pos))
        return [*writes, *edges.counts(), *tally.writes(), *sayings.writes()]

    def _SimulationDiscovered(self, d: dict[str, Any], key: tuple[str, int], pos: int) -> Iterable[Write]:
        yield ("INSERT OR REPLACE INTO sim_generations VALUES (?, ?, ?, ?, ?, 'running', NULL, ?, NULL)",
               (*key, d["folder"], d.get("requirement", ""), json.dumps(d.get("config", {}), sort_keys=True), pos))
        for a in d.get("agents", []):
            yield ("INSERT OR REPLACE INTO sim_agents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (*key, a["agent_id"], a.get("name", ""), a.get("username", ""), a.get("bio", ""),
                    a.get("persona", ""), a.get("stance", ""), a.get("entity_type", ""), a.get("profession", ""),
                    a.get("influence")))
            text = " ".join(str(a.get(k) or "") for k in ("name", "username", "bio", "persona", "entity_type"))
            yield from _post_row(key, "", f"agent:{a['agent_id']}", "profile", None, None, a["agent_id"], None,
                                 text, None, None, pos)

    def _PlatformStarted(self, d: dict[str, Any], key: tuple[str, int], pos: int) -> Iterable[Write]:
        yield ("INSERT INTO sim_platforms (simulation_id, generation, platform, status, agents_count)"
               " VALUES (?, ?, ?, 'running', ?) ON CONFLICT DO UPDATE SET status = 'running'",
               (*key, d["platform"], d.get("agents_count")))

    def _RoundStarted(self, d: dict[str, Any], key: tuple[str, int], pos: int) -> Iterable[Write]:
        yield ("INSERT INTO sim_rounds (simulation_id, generation, platform, round, simulated_hour)"
               " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET simulated_hour = excluded.simulated_hour",
               (*key, d["platform"], d["round"], d.get("simulated_hour")))

    def _AgentActed(self, d: dict[str, Any], key: tuple[str, int], pos: int) -> Iterable[Write]:
        tally, edges = Tally(), EdgeTally()  # of one action: folding event by event is the batch fold's reference
        tally.add(key, d["platform"], d["round"], d["agent_id"], d["action_type"])
        yield from tally.writes()
        yield from _acted(d, key, pos, edges)
        yield from edges.counts()
        sayings = Sayings()
        sayings.add(key, d, pos)
        yield from sayings.writes()

    def _PlatformFinished(self, d: dict[str, Any], key: tuple[str, int], pos: int) -> Iterable[Write]:
        yield ("INSERT INTO sim_platforms (simulation_id, generation, platform, status, total_rounds, total_actions,"
               " all_rounds_ran) VALUES (?, ?, ?, 'finished', ?, ?, ?) ON CONFLICT DO UPDATE SET status = 'finished',"
               " total_rounds = excluded.total_rounds, total_actions = excluded.total_actions,"
               " all_rounds_ran = excluded.all_rounds_ran",
               (*key, d["platform"], d["total_rounds"], d.get("total_actions"), int(d["all_rounds_ran"])))

    def _SimulationCompleted(self, d: dict[str, Any], key: tuple[str, int], pos: int) -> Iterable[Write]:
        yield (f"UPDATE sim_generations SET status = 'completed', all_rounds_ran = ?, completed_position = ?"
               f" WHERE {KEY}", (int(d["all_rounds_ran"]), pos, *key))

    def _EnvironmentStatusChanged(self, d: dict[str, Any], key: tuple[str, int], pos: int) -> Iterable[Write]:
        yield ("INSERT OR REPLACE INTO sim_env VALUES (?, ?, ?, ?, ?, ?, ?)",
               (*key, d["status"], int(d.get("twitter_available", False)), int(d.get("reddit_available", False)),
                d.get("pid"), pos))

    def _IngestRejected(self, d: dict[str, Any], key: tuple[str, int], pos: int) -> Iterable[Write]:
        yield ("INSERT INTO sim_rejections VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
               (pos, *key, d["file"], d["offset"], d["reason"], d["excerpt"], d.get("lines", 1)))

    def _AgentInterviewed(self, d: dict[str, Any], key: tuple[str, int], pos: int) -> Iterable[Write]:
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


def _acted(d: dict[str, Any], key: tuple[str, int], pos: int, edges: EdgeTally) -> Iterable[Write]:
    """An action's writes but its counters: the statement it posted, the edge it made (counted in `edges`) or
    undid."""
    p, r, agent, kind, args = d["platform"], d["round"], d["agent_id"], d["action_type"], d["action_args"]
    if kind == "CREATE_POST":
        yield from _post_row(key, p, _ref("post", p, args.get("post_id"), pos), "post", args.get("post_id"),
                             None, agent, r, args.get("content"), None, None, pos)
    elif kind == "QUOTE_POST":
        yield from _post_row(key, p, _ref("post", p, args.get("new_post_id"), pos), "quote",
                             args.get("new_post_id"), args.get("quoted_id"), agent, r, args.get("quote_content"),
                             args.get("original_content"), args.get("original_author_name"), pos)
    elif kind == "CREATE_COMMENT":
        yield from _post_row(key, p, _ref("comment", p, args.get("comment_id"), pos), "comment",
                             args.get("comment_id"), args.get("post_id"), agent, r, args.get("content"),
                             None, None, pos)
    if kind in EDGES:
        yield _edge(key, p, r, agent, kind, args, pos, edges)
    elif kind in UNDO:
        yield from _undo(key, p, agent, UNDO[kind], _undone_target(UNDO[kind], args, p))


def _created_post(d: dict[str, Any], pos: int) -> str | None:
    """The ref of the post or quote an action creates, if it creates one."""
    if d.get("action_type") not in ("CREATE_POST", "QUOTE_POST"):
        return None
    native_id = d["action_args"].get("post_id" if d["action_type"] == "CREATE_POST" else "new_post_id")
    return _ref("post", d["platform"], native_id, pos)


def _ref(kind: str, platform: str, native_id: Any, position: int) -> str:
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
    instead of four upserts per action. The read model comes out the same (tests/test_folds.py)."""

    def __init__(self) -> None:
        self.rounds: Counter[tuple[Any, ...]] = Counter()
        self.agents: dict[tuple[Any, ...], list[int]] = {}
        self.mix: Counter[tuple[Any, ...]] = Counter()
        self.platforms: Counter[tuple[Any, ...]] = Counter()

    def add(self, key: tuple[str, int], p: str, r: int, agent: int, kind: str) -> None:
        self.rounds[(*key, p, r)] += 1
        actions_posts = self.agents.setdefault((*key, p, agent), [0, 0])
        actions_posts[0] += 1
        actions_posts[1] += kind in POSTING
        self.mix[(*key, p, kind)] += 1
        self.platforms[(*key, p)] += 1

    def writes(self) -> Iterator[Write]:
        yield from ((ROUND_ACTIONS, (*row, n)) for row, n in self.rounds.items())
        yield from ((AGENT_ACTIONS, (*row, *amounts)) for row, amounts in self.agents.items())
        yield from ((ACTION_MIX, (*row, n)) for row, n in self.mix.items())
        yield from ((PLATFORM_ACTIONS, (*row, n)) for row, n in self.platforms.items())


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
    folded (tests/test_camps_tally.py)."""

    def __init__(self) -> None:
        self.rows: dict[tuple[Any, ...], list[Any]] = {}

    def add(self, key: tuple[str, int], d: dict[str, Any], pos: int) -> None:
        said = STATEMENTS.get(d["action_type"])
        text = str(d["action_args"].get(said[3]) or "") if said else ""
        if not said or not text:
            return
        at = (d["round"] or 0, _ref(said[1], d["platform"], d["action_args"].get(said[2]), pos), pos)
        post = (*at, text) if said[0] != "comment" else None
        row = self.rows.get(name := (*key, d["agent_id"], argument_key(text)))
        if row is None:
            self.rows[name] = [1, (*at, text), at, int(post is not None), post]
            return
        row[0] += 1
        row[1], row[2] = min(row[1], (*at, text)), max(row[2], at)
        if post is not None:
            row[3] += 1
            row[4] = post if row[4] is None else min(row[4], post)

    def writes(self) -> Iterator[Write]:
        for name, (count, first, last, posts, post) in self.rows.items():
            yield SAYING, (*name, count, *first, *last, posts, *(post or (None,) * 4))


def _post_row(key: tuple[str, int], p: str, ref: str, kind: str, post_id: Any, parent: Any, agent: int,
              r: int | None, content: Any, quoted: Any, quoted_author: Any, pos: int) -> Iterable[Write]:
    text = str(content or "")
    yield ("INSERT INTO sim_posts (simulation_id, generation, platform, ref, kind, post_id, parent_post_id,"
           " agent_id, round, content, quoted_content, quoted_author, position)"
           " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
           (*key, p, ref, kind, post_id if isinstance(post_id, int) else None,
            parent if isinstance(parent, int) else None, agent, r, text, quoted, quoted_author, pos))
    yield ("INSERT INTO sim_posts_fts (rowid, content) VALUES (last_insert_rowid(), ?)", (han_spaced(text),))


HAN = re.compile(r"([\u3400-\u9fff\uf900-\ufaff])")


def han_spaced(text: str) -> str:
    """Han characters as single tokens (Chinese has no spaces, so unicode61 would index whole clauses).
    ASCII text, most posts of most runs, skips the search (2.4 us a post)."""
    return text if text.isascii() else HAN.sub(r" \1 ", text)


def _edge(key: tuple[str, int], p: str, r: int, agent: int, kind: str, args: dict[str, Any],
          pos: int, edges: EdgeTally) -> Write:
    """The edge; `edges` counts it into its link, its target agent's engagement and its target post's."""
    edge, id_key, name_key = EDGES[kind]
    target_id = args.get(id_key) if id_key else None
    name = str(args.get(name_key) or "") if name_key else ""
    target_ref = _ref("post", p, target_id, 0) if isinstance(target_id, int) else None
    edges.add(pos, (*key, p, target_id, target_ref) if target_ref is not None else None)
    return (f"INSERT INTO sim_edges VALUES (?, ?, ?, ?, ?, ?, ?, coalesce({AUTHOR_OF_POST}, {AGENT_NAMED}, ?), ?, ?, 0)",
            (pos, *key, p, r, edge, agent, *key, p, target_id, *key, name, _target_agent(edge, args), name, target_ref))


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

    def add(self, pos: int, post: tuple[Any, ...] | None) -> None:
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
    return (None if target_id is not None else name), _ref("post", p, args.get("post_id"), 0), target_id


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
