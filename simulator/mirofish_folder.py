"""Write a simulation folder as MiroFish's parallel runner over OASIS v0.2.5 really leaves it.

What is read from which file: docs/guide.md#what-is-read-from-where.

Our own words for what the upstream code does (read, not copied; the tests cite the upstream lines):
- Each platform has an OASIS database with the v0.2.5 tables (`oasis/social_platform/schema/*.sql`); every
  action is a `trace` row whose `info` holds what that action records in `platform.py` (a repost only
  `reposted_id` and `new_post_id`, a follow only `follow_id`, a mute only `mutee_id`, ...), JSON with
  non-ASCII escaped. Twitter's `created_at` is the step counter, which only an `env.step` advances; Reddit's
  a scaled wall-clock time.
- The runner logs the seed posts as round 0 before they exist (no ids), steps the environment, then in each
  round that has active agents steps again and copies every new `trace` row past the last rowid it read
  (starting at 0: the seed posts come again, with their ids) into `actions.jsonl`, keeping only some keys of
  `info` and adding names and texts joined from the tables. `refresh` and `sign_up` rows are not copied.
- A round with no active agent writes `round_start` and `round_end` only: no step, the clock stays.
- Interviews after the last round are `trace` rows of the database, never lines of `actions.jsonl`.

`MirofishRun` plays the run round by round, so a test can ingest it mid-run; `truth` is what really happened.
"""

from __future__ import annotations

import csv
import json
import random
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE user (user_id INTEGER PRIMARY KEY AUTOINCREMENT, agent_id INTEGER, user_name TEXT, name TEXT,
    bio TEXT, created_at DATETIME, num_followings INTEGER DEFAULT 0, num_followers INTEGER DEFAULT 0);
CREATE TABLE post (post_id INTEGER PRIMARY KEY AUTOINCREMENT, user_id INTEGER, original_post_id INTEGER,
    content TEXT DEFAULT '', quote_content TEXT, created_at DATETIME, num_likes INTEGER DEFAULT 0,
    num_dislikes INTEGER DEFAULT 0, num_shares INTEGER DEFAULT 0, num_reports INTEGER DEFAULT 0);
CREATE TABLE comment (comment_id INTEGER PRIMARY KEY AUTOINCREMENT, post_id INTEGER, user_id INTEGER,
    content TEXT, created_at DATETIME DEFAULT CURRENT_TIMESTAMP, num_likes INTEGER DEFAULT 0,
    num_dislikes INTEGER DEFAULT 0);
CREATE TABLE follow (follow_id INTEGER PRIMARY KEY AUTOINCREMENT, follower_id INTEGER, followee_id INTEGER,
    created_at DATETIME);
CREATE TABLE mute (mute_id INTEGER PRIMARY KEY AUTOINCREMENT, muter_id INTEGER, mutee_id INTEGER,
    created_at DATETIME);
CREATE TABLE "like" (like_id INTEGER PRIMARY KEY AUTOINCREMENT, user_id INTEGER, post_id INTEGER,
    created_at DATETIME);
CREATE TABLE dislike (dislike_id INTEGER PRIMARY KEY AUTOINCREMENT, user_id INTEGER, post_id INTEGER,
    created_at DATETIME);
CREATE TABLE comment_like (comment_like_id INTEGER PRIMARY KEY AUTOINCREMENT, user_id INTEGER,
    comment_id INTEGER, created_at DATETIME);
CREATE TABLE comment_dislike (comment_dislike_id INTEGER PRIMARY KEY AUTOINCREMENT, user_id INTEGER,
    comment_id INTEGER, created_at DATETIME);
CREATE TABLE trace (user_id INTEGER, created_at DATETIME, action TEXT, info TEXT,
    PRIMARY KEY(user_id, created_at, action, info));
CREATE TABLE rec (user_id INTEGER, post_id INTEGER, PRIMARY KEY(user_id, post_id));
"""

# The actions the runner lets each platform's agents choose (run_parallel_simulation.py), lower-cased.
CHOICES = {
    "twitter": ("create_post", "like_post", "repost", "follow", "do_nothing", "quote_post"),
    "reddit": ("like_post", "dislike_post", "create_post", "create_comment", "like_comment", "dislike_comment",
               "search_posts", "search_user", "trend", "refresh", "do_nothing", "follow", "mute"),
}
KEPT = ("content", "post_id", "comment_id", "quoted_id", "new_post_id", "follow_id", "query", "like_id",
        "dislike_id")  # the info keys the runner copies into action_args; the others are dropped
NOT_COPIED = ("refresh", "sign_up")
NAMES = ["林晓", "王磊", "陈静", "Alice Moore", "张伟", "刘洋", "Ben Carter", "赵敏", "孙悦", "周杰", "吴芳", "郑浩"]
SAYINGS = ["监考软件侵犯隐私，我们必须反对！", "AI proctoring keeps exams fair.", "学校应该先听听学生的意见。",
           "我支持新规定，作弊问题太严重了。", "Nobody asked the students.", "数据会被存多久？没人说清楚。"]
SAID_FOR = ("opposing", "supportive", "neutral", "supportive", "opposing", "neutral")  # each saying's camp
# MiroFish's config generator gives every agent a `stance` (supportive, opposing, neutral or observer) and a
# `sentiment_bias` from -1.0 (negative) to 1.0 (positive): backend/app/services/simulation_config_generator.py:51-79
# (AgentActivityConfig, lines 73 and 76), asked of the LLM per agent at lines 858-859 and read back at 896-897
# (666ghj/MiroFish at 54f1291). Our weights and ranges are our own choice.
STANCE_WEIGHTS = {"supportive": 3, "opposing": 3, "neutral": 2, "observer": 1}
BIAS = {"supportive": (0.2, 0.9), "opposing": (-0.9, -0.2), "neutral": (-0.2, 0.2), "observer": (-0.1, 0.1)}
QUESTIONS = ["你现在怎么看这项政策？", "What changed your mind?"]


class MirofishRun:
    """One run of the parallel runner over both platforms, written into `folder` as it goes."""

    def __init__(self, folder: Path, seed: int = 1, agents: int = 8, rounds: int = 6,
                 platforms: tuple[str, ...] = ("twitter", "reddit"), databases: bool = True,
                 asleep: frozenset[int] | None = None, seeded: bool = True) -> None:
        """`asleep`: simulated hours no agent is active in (their rounds idle, as the config says); by default
        every hour is awake and two rounds draw no agent at random. `seeded`: the config has seed posts."""
        self.folder, self.rounds, self.platforms = folder, rounds, platforms
        self.rng = random.Random(seed)
        self.names = {i: NAMES[i % len(NAMES)] + ("" if i < len(NAMES) else str(i)) for i in range(agents)}
        self.stances = _stances(random.Random(f"{seed}:stances"), agents)
        self.keep_databases = databases
        idle = self.rng.sample(range(1, rounds + 1), k=min(2, rounds - 1))
        self.idle = {1, *idle[:1]} if seed % 2 else set(idle)  # odd seeds: round 1 idle, the seeds come again later
        self.awake = [h for h in range(24) if h not in (asleep or ())]
        if asleep is not None:
            self.idle = {r for r in range(1, rounds + 1) if (r - 1) % 24 in asleep}
        seeds = [(self.rng.randrange(agents), c) for c in self.rng.sample(SAYINGS, 3)]
        self.seeds = seeds if seeded else []
        self.truth: dict[str, Any] = {"platforms": {}, "idle_rounds": sorted(self.idle), "rounds": rounds,
                                      "stances": {str(i): s for i, s in self.stances.items()}}
        self.platform_runs = {p: _Platform(self, p) for p in platforms}

    def write_setup(self) -> None:
        """simulation_config.json and both profile files, as MiroFish's backend prepares them."""
        self.folder.mkdir(parents=True, exist_ok=True)
        config = {"simulation_id": self.folder.name, "simulation_requirement": "学生如何看待AI监考？",
                  "time_config": {"total_simulation_hours": self.rounds, "minutes_per_round": 60},
                  "agent_configs": [{"agent_id": i, "entity_name": n, "entity_type": "Student", "activity_level": 0.5,
                                     "active_hours": self.awake, **self.stances[i]} for i, n in self.names.items()],
                  "event_config": {"initial_posts": [{"content": c, "poster_type": "Student", "poster_agent_id": a}
                                                     for a, c in self.seeds], "hot_topics": ["AI监考"]}}
        (self.folder / "simulation_config.json").write_text(json.dumps(config, ensure_ascii=False, indent=2),
                                                              encoding="utf-8")
        with (self.folder / "twitter_profiles.csv").open("w", encoding="utf-8", newline="") as f:
            out = csv.writer(f)
            out.writerow(["user_id", "name", "username", "user_char", "description"])
            out.writerows([i, n, f"user{i}", "", f"{n}的简介"] for i, n in self.names.items())
        profiles = [{"user_id": i, "username": f"user{i}", "name": n, "bio": f"{n}的简介", "persona": ""}
                    for i, n in self.names.items()]
        (self.folder / "reddit_profiles.json").write_text(json.dumps(profiles, ensure_ascii=False), encoding="utf-8")

    def start(self) -> None:
        """Setup, the databases with their sign-ups, `simulation_start` and round 0 (the seed posts)."""
        self.write_setup()
        for run in self.platform_runs.values():
            run.start()

    def play_round(self, round_no: int) -> None:
        for run in self.platform_runs.values():
            run.play_round(round_no)

    def finish(self, interviews: int = 2) -> None:
        """`simulation_end`, then interviews answered in the live environment (database rows only)."""
        for run in self.platform_runs.values():
            run.finish()
            run.interview(interviews)
            run.close()
        self.write_run_state()
        if not self.keep_databases:
            for p in self.platforms:
                (self.folder / f"{p}_simulation.db").unlink(missing_ok=True)

    def write_run_state(self) -> None:
        """run_state.json as MiroFish's backend leaves a completed run (simulation_runner.py:100-180)."""
        state: dict[str, Any] = {"simulation_id": self.folder.name, "runner_status": "completed",
                                 "current_round": self.rounds, "total_rounds": self.rounds}
        for p in self.platforms:
            state |= {f"{p}_completed": True, f"{p}_current_round": self.rounds}
        (self.folder / "run_state.json").write_text(json.dumps(state), encoding="utf-8")

    def run(self) -> dict[str, Any]:
        """The whole run at once; its ground truth."""
        self.start()
        for round_no in range(1, self.rounds + 1):
            self.play_round(round_no)
        self.finish()
        return self.truth


class _Platform:
    """One platform's OASIS database, its runner loop and its actions.jsonl."""

    def __init__(self, run: MirofishRun, platform: str) -> None:
        self.run, self.platform, self.rng = run, platform, run.rng
        self.db: sqlite3.Connection | None = None
        self.step_no, self.last_rowid, self.logged = 0, 0, 0
        self.start_time = datetime(2026, 3, 1, 8, 0, 0)
        self.truth: dict[str, Any] = {"actions": [], "interviews": [], "posts": {}, "comments": {}}
        run.truth["platforms"][platform] = self.truth

    # -- files -------------------------------------------------------------------------------------
    def log(self, entry: dict[str, Any]) -> None:
        """Append one line the way the action logger does: open, append, close; Chinese written raw."""
        path = self.run.folder / self.platform / "actions.jsonl"
        path.parent.mkdir(exist_ok=True)
        with path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(entry, ensure_ascii=False) + "\n")

    def now(self) -> int | str:
        """`created_at`: Twitter's step counter (an integer), Reddit's scaled wall-clock time."""
        if self.platform == "twitter":
            return self.step_no
        return str(self.start_time + timedelta(minutes=37 * self.step_no, seconds=self.rng.randrange(60)))

    def trace(self, user: int, action: str, info: dict[str, Any]) -> None:
        assert self.db is not None
        self.db.execute("INSERT INTO trace VALUES (?, ?, ?, ?)", (user, self.now(), action, json.dumps(info)))
        self.db.commit()  # OASIS commits every action

    # -- the runner's loop ---------------------------------------------------------------------------
    def start(self) -> None:
        self.db = sqlite3.connect(self.run.folder / f"{self.platform}_simulation.db")
        self.db.execute("PRAGMA synchronous = OFF")  # a commit per action as OASIS makes, not a wait for the disk each
        self.db.executescript(SCHEMA)
        for agent, name in self.run.names.items():
            self.db.execute("INSERT INTO user VALUES (?, ?, ?, ?, ?, ?, 0, 0)",
                            (agent, agent, f"user{agent}", name, f"{name}的简介", self.now()))
            self.trace(agent, "sign_up", {"name": name, "user_name": f"user{agent}", "bio": f"{name}的简介"})
        self.log({"timestamp": _stamp(), "event_type": "simulation_start", "platform": self.platform,
                  "total_rounds": self.run.rounds * 2, "agents_count": len(self.run.names)})  # wrong on purpose
        self.log({"round": 0, "timestamp": _stamp(), "event_type": "round_start", "simulated_hour": 0})
        for agent, content in self.run.seeds:  # logged before they exist: no post id
            self.log(_line(0, agent, self.run.names[agent], "CREATE_POST", {"content": content}))
        self.logged += len(self.run.seeds)
        for agent, content in self.rng.sample(self.run.seeds, len(self.run.seeds)):  # the step runs them at once
            post_id = self.create_post(agent, content)
            self.truth["actions"].append({"round": 0, "agent_id": agent, "action_type": "CREATE_POST",
                                          "post_id": post_id, "content": content})
        if self.run.seeds:  # the runner steps round 0 only for seed posts
            self.end_step()
        self.log({"round": 0, "timestamp": _stamp(), "event_type": "round_end", "actions_count": len(self.run.seeds)})

    def end_step(self) -> None:
        self.step_no += 1  # env.step advances the clock (Twitter's created_at) once per step

    def play_round(self, round_no: int) -> None:
        hour = ((round_no - 1) * 60 // 60) % 24
        self.log({"round": round_no, "timestamp": _stamp(), "event_type": "round_start", "simulated_hour": hour})
        if round_no in self.run.idle:
            self.log({"round": round_no, "timestamp": _stamp(), "event_type": "round_end", "actions_count": 0})
            return
        active = self.rng.sample(sorted(self.run.names), k=max(2, len(self.run.names) // 2))
        for agent in active:
            self.trace(agent, "refresh", {"posts": self.feed()})  # every LLM action starts with a refresh
            self.act(round_no, agent, self.rng.choice(CHOICES[self.platform]))
        self.end_step()
        count = self.copy_new_rows(round_no)
        self.log({"round": round_no, "timestamp": _stamp(), "event_type": "round_end", "actions_count": count})

    def copy_new_rows(self, round_no: int) -> int:
        """Copy the trace rows past the last rowid read into actions.jsonl, as the runner's fetch does."""
        assert self.db is not None
        rows = self.db.execute("SELECT rowid, user_id, action, info FROM trace WHERE rowid > ? ORDER BY rowid",
                               (self.last_rowid,)).fetchall()
        count = 0
        for rowid, user, action, info in rows:
            self.last_rowid = rowid
            if action in NOT_COPIED:
                continue
            args = {k: v for k, v in json.loads(info).items() if k in KEPT}
            self.add_context(action, args)
            self.log(_line(round_no, user, self.run.names[user], action.upper(), args))
            count += 1
        self.logged += count
        return count

    def finish(self) -> None:
        self.log({"timestamp": _stamp(), "event_type": "simulation_end", "platform": self.platform,
                  "total_rounds": self.run.rounds, "total_actions": self.logged})

    def interview(self, count: int) -> None:
        """Answers given after the run: `interview` trace rows with prompt, response and interview_id."""
        for agent in self.rng.sample(sorted(self.run.names), k=count):
            prompt = self.rng.choice(QUESTIONS)
            response = f"{self.run.names[agent]}：我还是担心隐私问题。"
            interview_id = f"{self.now()}_{agent}"
            self.trace(agent, "interview", {"prompt": prompt, "response": response, "interview_id": interview_id})
            self.truth["interviews"].append({"agent_id": agent, "prompt": prompt, "response": response,
                                             "interview_id": interview_id})
            self.end_step()

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None

    # -- what the runner joins in from the tables (its enrichment) ------------------------------------
    def add_context(self, action: str, args: dict[str, Any]) -> None:
        posts, comments = self.truth["posts"], self.truth["comments"]
        if action in ("like_post", "dislike_post") and args.get("post_id") in posts:
            post = posts[args["post_id"]]
            args.update(post_content=post["content"], post_author_name=self.run.names[post["agent_id"]])
        elif action == "repost" and args.get("new_post_id") in posts:
            original = posts[posts[args["new_post_id"]]["original"]]
            args.update(original_content=original["content"], original_author_name=self.run.names[original["agent_id"]])
        elif action == "quote_post" and args.get("quoted_id") in posts:
            original = posts[args["quoted_id"]]
            args.update(original_content=original["content"], original_author_name=self.run.names[original["agent_id"]],
                        quote_content=posts[args["new_post_id"]]["quote"])
        elif action == "follow":
            args["target_user_name"] = self.run.names[self.truth["follows"][args["follow_id"]]]
        elif action in ("like_comment", "dislike_comment") and args.get("comment_id") in comments:
            comment = comments[args["comment_id"]]
            args.update(comment_content=comment["content"], comment_author_name=self.run.names[comment["agent_id"]])

    # -- the platform's actions ---------------------------------------------------------------------
    def feed(self) -> list[dict[str, Any]]:
        return [{"post_id": i, "content": p["content"]} for i, p in list(self.truth["posts"].items())[-3:]]

    def create_post(self, agent: int, content: str) -> int:
        assert self.db is not None
        cur = self.db.execute("INSERT INTO post (user_id, content, created_at) VALUES (?, ?, ?)",
                              (agent, content, self.now()))
        post_id = int(cur.lastrowid or 0)
        self.truth["posts"][post_id] = {"agent_id": agent, "content": content, "original": None}
        self.trace(agent, "create_post", {"content": content, "post_id": post_id})
        return post_id

    def act(self, round_no: int, agent: int, action: str) -> None:
        """Perform one action as OASIS does; note it in the truth with the target it really had."""
        if action == "refresh":
            self.trace(agent, "refresh", {"posts": self.feed()})
            return  # the runner never copies a refresh: not an action of the run
        if not self.truth["posts"]:
            action = "create_post"  # nothing to act on yet (a run with no seed posts): the first act is a post
        fact: dict[str, Any] = {"round": round_no, "agent_id": agent, "action_type": action.upper()}
        handler = getattr(self, "_" + action, None)
        fact.update(handler(agent) if handler else self._plain(agent, action))
        self.truth["actions"].append(fact)

    def _plain(self, agent: int, action: str) -> dict[str, Any]:
        info: dict[str, Any] = {"query": self.rng.choice(["监考", "privacy"])} if action.startswith("search") else {}
        if action == "trend":
            info = {"posts": self.feed()}
        self.trace(agent, action, info)
        return {}

    def _target_post(self) -> int:
        return int(self.rng.choice(sorted(self.truth["posts"])))

    def _create_post(self, agent: int) -> dict[str, Any]:
        content = self.saying(agent)
        return {"post_id": self.create_post(agent, content), "content": content}

    def saying(self, agent: int) -> str:
        """A saying of the agent's camp (observers say the neutral ones), drawn as one of all the sayings is."""
        camp = self.run.stances[agent]["stance"]
        mine = [s for s, said_for in zip(SAYINGS, SAID_FOR) if said_for == (camp if camp != "observer" else "neutral")]
        return mine[self.rng.randrange(len(SAYINGS)) % len(mine)]

    def _like_post(self, agent: int, table: str = "like") -> dict[str, Any]:
        assert self.db is not None
        post_id = self._target_post()
        cur = self.db.execute(f'INSERT INTO "{table}" (user_id, post_id, created_at) VALUES (?, ?, ?)',
                              (agent, post_id, self.now()))
        self.trace(agent, f"{table}_post", {"post_id": post_id, f"{table}_id": cur.lastrowid})
        return {"post_id": post_id}

    def _dislike_post(self, agent: int) -> dict[str, Any]:
        return self._like_post(agent, "dislike")

    def _repost(self, agent: int) -> dict[str, Any]:
        assert self.db is not None
        target = self._target_post()
        root = self.truth["posts"][target]["original"] or target  # a repost of a repost shares the root
        cur = self.db.execute("INSERT INTO post (user_id, original_post_id, created_at) VALUES (?, ?, ?)",
                              (agent, root, self.now()))
        new_id = int(cur.lastrowid or 0)
        self.truth["posts"][new_id] = {"agent_id": agent, "content": "", "original": root}
        self.trace(agent, "repost", {"reposted_id": target, "new_post_id": new_id})
        return {"post_id": root, "new_post_id": new_id}

    def _quote_post(self, agent: int) -> dict[str, Any]:
        assert self.db is not None
        target, quote = self._target_post(), self.saying(agent)
        content = self.truth["posts"][target]["content"]
        cur = self.db.execute("INSERT INTO post (user_id, original_post_id, content, quote_content, created_at)"
                              " VALUES (?, ?, ?, ?, ?)", (agent, target, content, quote, self.now()))
        new_id = int(cur.lastrowid or 0)
        self.truth["posts"][new_id] = {"agent_id": agent, "content": content, "original": target, "quote": quote}
        self.trace(agent, "quote_post", {"quoted_id": target, "new_post_id": new_id})
        return {"quoted_id": target, "new_post_id": new_id}

    def _other(self, agent: int) -> int:
        return self.rng.choice([a for a in self.run.names if a != agent])

    def _follow(self, agent: int) -> dict[str, Any]:
        assert self.db is not None
        followee = self._other(agent)
        cur = self.db.execute("INSERT INTO follow (follower_id, followee_id, created_at) VALUES (?, ?, ?)",
                              (agent, followee, self.now()))
        self.truth.setdefault("follows", {})[cur.lastrowid] = followee
        self.trace(agent, "follow", {"follow_id": cur.lastrowid})
        return {"target_agent_id": followee}

    def _mute(self, agent: int) -> dict[str, Any]:
        assert self.db is not None
        mutee = self._other(agent)
        self.db.execute("INSERT INTO mute (muter_id, mutee_id, created_at) VALUES (?, ?, ?)",
                        (agent, mutee, self.now()))
        self.trace(agent, "mute", {"mutee_id": mutee})
        return {"target_agent_id": mutee}

    def _create_comment(self, agent: int) -> dict[str, Any]:
        assert self.db is not None
        post_id, content = self._target_post(), self.saying(agent)
        cur = self.db.execute("INSERT INTO comment (post_id, user_id, content, created_at) VALUES (?, ?, ?, ?)",
                              (post_id, agent, content, self.now()))
        comment_id = int(cur.lastrowid or 0)
        self.truth["comments"][comment_id] = {"agent_id": agent, "content": content, "post_id": post_id}
        self.trace(agent, "create_comment", {"content": content, "comment_id": comment_id})
        return {"post_id": post_id, "comment_id": comment_id, "content": content}

    def _like_comment(self, agent: int, kind: str = "like") -> dict[str, Any]:
        assert self.db is not None
        if not self.truth["comments"]:
            return self._create_comment(agent) | {"action_type": "CREATE_COMMENT"}
        comment_id = self.rng.choice(sorted(self.truth["comments"]))
        cur = self.db.execute(f"INSERT INTO comment_{kind} (user_id, comment_id, created_at) VALUES (?, ?, ?)",
                              (agent, comment_id, self.now()))
        self.trace(agent, f"{kind}_comment", {"comment_id": comment_id, f"comment_{kind}_id": cur.lastrowid})
        return {"comment_id": comment_id, "target_agent_id": self.truth["comments"][comment_id]["agent_id"]}

    def _dislike_comment(self, agent: int) -> dict[str, Any]:
        return self._like_comment(agent, "dislike")


def _stances(rng: random.Random, agents: int) -> dict[int, dict[str, Any]]:
    """Each agent's stance (the first four one of each) and a sentiment bias in its stance's range."""
    out = {}
    for i in range(agents):
        stance = list(STANCE_WEIGHTS)[i] if i < len(STANCE_WEIGHTS) else rng.choices(
            list(STANCE_WEIGHTS), list(STANCE_WEIGHTS.values()))[0]
        out[i] = {"stance": stance, "sentiment_bias": round(rng.uniform(*BIAS[stance]), 2)}
    return out


def _line(round_no: int, agent: int, name: str, action_type: str, args: dict[str, Any]) -> dict[str, Any]:
    """An action line with exactly the logger's keys, in its order."""
    return {"round": round_no, "timestamp": _stamp(), "agent_id": agent, "agent_name": name,
            "action_type": action_type, "action_args": args, "result": None, "success": True}


def _stamp() -> str:
    return datetime.now().isoformat()  # local naive time, as the logger writes it


def write_mirofish(folder: Path, seed: int = 1, agents: int = 8, rounds: int = 6, databases: bool = True,
                   asleep: frozenset[int] | None = None, seeded: bool = True) -> dict[str, Any]:
    """Write a whole run into `folder` and its ground truth beside it (`mirofish_truth.json`); return the truth."""
    truth = MirofishRun(folder, seed, agents, rounds, databases=databases, asleep=asleep, seeded=seeded).run()
    (folder / TRUTH_FILE).write_text(json.dumps(truth, ensure_ascii=False, default=str), encoding="utf-8")
    return truth


TRUTH_FILE = "mirofish_truth.json"
