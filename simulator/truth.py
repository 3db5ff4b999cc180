"""The facts of a simulated story, written as `ground_truth.json` beside the simulation.

`simreportd simulate` tells its story on purpose, so it knows what a good report must
find: the trigger and the spike it caused, the platform that kept arguing, the camps,
the most engaged agents, the agents who changed sides and each camp's top argument.
`reference` holds the figures a report may quote (per round, per agent) and every post,
so a report's numbers and quotes can be checked. `statements` says which argument each post,
quote and comment makes and for which camp, `arguments` sums them up, and `retrieval` holds
questions whose answers are known statements. Ingest ignores this file; no tool reads it.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from typing import Any

from .llm_voice import TALKS
from .story import STANCES, Story

FILE = "ground_truth.json"
PLACEHOLDER = re.compile(r"\{(?:n|pct|p)\}")
TARGET_NAME = {"LIKE_POST": "post_author_name", "DISLIKE_POST": "post_author_name", "REPOST": "original_author_name",
               "QUOTE_POST": "original_author_name", "FOLLOW": "target_user_name",
               "LIKE_COMMENT": "comment_author_name"}
REACTIONS = ("CREATE_COMMENT", "LIKE_POST", "DISLIKE_POST", "REPOST", "QUOTE_POST")  # to a post named by its id


def template_pattern(template: str) -> re.Pattern[str]:
    """A regex matching every text a line template can produce (its placeholders filled with anything)."""
    return re.compile("^" + ".+?".join(re.escape(part) for part in PLACEHOLDER.split(template)) + "$")


def ground_truth(story: Story) -> dict[str, Any]:
    """Everything a report on this story should find, with the figures to check it against."""
    actions = [(p, line) for p in ("twitter", "reddit") for rnd in story.lines[p] for line in rnd]
    reference = _reference(story, actions)
    rounds = reference["rounds"]
    return {
        "simulation_id": story.simulation_id, "style": story.style, "topic": story.scenario.topic,
        "language": "en" if story.scenario.requirement.isascii() else "zh",
        "requirement": story.scenario.requirement, "questions": story.scenario.questions,
        "trigger": {"round": story.spike_round, "description": story.scenario.trigger,
                    "words": story.scenario.trigger_words},
        "spike": _spike(rounds, story.spike_round),
        "divergence": _divergence(rounds, story.spike_round, story.loud_platform),
        "camps": [{"stance": s, "size": len(m), "members": [{"id": a.agent_id, "name": a.name} for a in m]}
                  for s in STANCES if (m := [a for a in story.agents if a.stance == s])],
        "most_engaged": sorted(({"id": int(i), **{k: a[k] for k in ("name", "stance", "reactions")}}
                                for i, a in reference["agents"].items() if a["reactions"]),
                               key=lambda a: (-a["reactions"], a["id"]))[:3],
        "shifts": [{"id": i, "name": story.agents[i].name, "from": story.agents[i].stance, "to": to,
                    "round": story.shift_round(i)} for i, to in sorted(story.shifts.items())],
        "drifts": story.drifts,
        "top_arguments": _top_arguments(story, actions) if story.style == "catalogue" else _top_said(story),
        "coalitions": [{"stance": c.stance, "members": [{"id": i, "name": story.agents[i].name} for i in c.members],
                        "formed_round": c.rounds[-1], "platform": story.loud_platform,
                        "target_key": "agent_id" if c.native else "target_user_name"} for c in story.coalitions],
        "statements": story.statements,
        "arguments": _arguments(story),
        "retrieval": _retrieval(story),
        "reference": reference,
    }


def _spike(rounds: list[list[int]], spike: int) -> dict[str, Any]:
    row = next((r for r in rounds if r[0] == spike), [spike, 0, 0])
    before = [r[1] + r[2] for r in rounds if 0 < r[0] < spike]
    mean = sum(before) / len(before) if before else 0.0
    return {"round": spike, "actions": row[1] + row[2], "twitter": row[1], "reddit": row[2],
            "baseline_rounds": [1, spike - 1], "baseline_mean": round(mean, 2),
            "ratio": round((row[1] + row[2]) / mean, 2) if mean else None}


def _divergence(rounds: list[list[int]], spike: int, loud: str) -> dict[str, Any]:
    """After the trigger one platform keeps arguing: per-round means after it, on each platform."""
    after = [r for r in rounds if r[0] > spike]
    means = {p: round(sum(r[i] for r in after) / len(after), 2) if after else 0.0
             for i, p in ((1, "twitter"), (2, "reddit"))}
    quiet = "twitter" if loud == "reddit" else "reddit"
    return {"platform": loud, "quiet": quiet, "after_round": spike, "means_after": means,
            "totals_after": {p: sum(r[i] for r in after) for i, p in ((1, "twitter"), (2, "reddit"))},
            "ratio": round(means[loud] / means[quiet], 2) if means[quiet] else None}


def _reference(story: Story, actions: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Per-round counts, per-agent figures and every post's text, as the read models should hold them."""
    per_round: dict[int, list[int]] = {}
    agents: dict[int, dict[str, Any]] = {a.agent_id: {"name": a.name, "stance": a.stance, "actions": 0, "posts": 0,
                                                      "reactions": 0}
              for a in story.agents}
    named = Counter(a.name for a in story.agents)
    by_name = {a.name: a.agent_id for a in story.agents if named[a.name] == 1}  # two agents may share a name
    authors: dict[tuple[str, int], int] = {}  # (platform, post id) -> its author; comments' under negative ids
    posts: dict[str, str] = {}
    for platform, line in actions:
        kind, args, who = line["action_type"], line["action_args"], line["agent_id"]
        per_round.setdefault(line["round"], [line["round"], 0, 0])[1 if platform == "twitter" else 2] += 1
        agents[who]["actions"] += 1
        if kind in ("CREATE_POST", "QUOTE_POST", "CREATE_COMMENT"):
            agents[who]["posts"] += 1
        ref, text = _post_of(platform, kind, args)
        if ref:
            posts[ref] = text
        if kind in ("CREATE_POST", "QUOTE_POST", "CREATE_COMMENT"):
            authors[(platform, int(ref.split(":")[2]) * (-1 if kind == "CREATE_COMMENT" else 1))] = who
        target = _target(platform, kind, args, authors, by_name)
        if target is not None and target != who:
            agents[target]["reactions"] += 1
    return {"rounds": [per_round[r] for r in sorted(per_round)], "agents": {str(k): v for k, v in agents.items()},
            "posts": posts}


def _target(platform: str, kind: str, args: dict[str, Any], authors: dict[tuple[str, int], int],
            by_name: dict[str, int]) -> int | None:
    """Whom an action reacts to: the author of the post or comment it names by id, as the read models find
    them; else the agent its name names, where the name is one agent's."""
    if kind == "FOLLOW" and "agent_id" in args:  # the native environment's way
        return int(args["agent_id"])
    post = args.get("quoted_id", args.get("post_id")) if kind == "QUOTE_POST" else args.get("post_id")
    found = (authors.get((platform, -args["comment_id"])) if kind == "LIKE_COMMENT" and "comment_id" in args
             else authors.get((platform, post)) if kind in REACTIONS and isinstance(post, int) else None)
    return found if found is not None else by_name.get(args.get(TARGET_NAME.get(kind, ""), ""))


def _post_of(platform: str, kind: str, args: dict[str, Any]) -> tuple[str, str]:
    if kind == "CREATE_POST":
        return f"post:{platform}:{args['post_id']}", args["content"]
    if kind == "QUOTE_POST":
        return f"post:{platform}:{args['new_post_id']}", args["quote_content"]
    if kind == "CREATE_COMMENT":
        return f"comment:{platform}:{args['comment_id']}", args["content"]
    return "", ""


def _top_arguments(story: Story, actions: list[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per camp, the line template its posts used most (all templates tied for first), with the count."""
    sc = story.scenario
    templates = [(stance, t, template_pattern(t)) for pool in (sc.lines, sc.spike_lines)
                 for stance, ts in pool.items() for t in ts]
    counts: Counter[tuple[str, str]] = Counter()
    for _, line in actions:
        ref, text = _post_of("", line["action_type"], line["action_args"])
        match = next(((s, t) for s, t, rx in templates if ref.startswith("post") and rx.match(text)), None)
        if match:
            counts[match] += 1
    out: dict[str, dict[str, Any]] = {}
    for stance in STANCES:
        mine = {t: n for (s, t), n in counts.items() if s == stance}
        if mine:
            top = max(mine.values())
            out[stance] = {"count": top, "templates": sorted(t for t, n in mine.items() if n == top)}
    return out


def _arguments(story: Story) -> dict[str, dict[str, Any]]:
    """Every argument made: its camp, a one-line summary, how many statements make it and how many agents."""
    made: dict[str, list[dict[str, Any]]] = {}
    for statement in story.statements.values():
        made.setdefault(statement["argument"], []).append(statement)
    return {argument: {"stance": said[0]["stance"] if argument != "chatter" else "",
                       "summary": _summary(story, argument), "statements": len(said),
                       "authors": len({s["agent"] for s in said})} for argument, said in sorted(made.items())}


def _summary(story: Story, argument: str) -> str:
    """The llm style's summary; in the catalogue style, the line itself (or what the stock replies are)."""
    if argument in story.summaries:
        return story.summaries[argument]
    parts = argument.split(":")
    if parts[0] == "comment":
        return f"a stock reply of the {parts[1]} camp"
    pool = story.scenario.spike_lines if parts[0] == "spike" else story.scenario.lines
    return pool[parts[-2]][int(parts[-1])]


def _top_said(story: Story) -> dict[str, dict[str, Any]]:
    """Per camp, the argument its posts and quotes made most (ties: every tied argument, the first named)."""
    counts = Counter((s["stance"], s["argument"]) for ref, s in story.statements.items()
                     if ref.startswith("post:") and s["stance"])
    out: dict[str, dict[str, Any]] = {}
    for stance in STANCES:
        mine = {a: n for (st, a), n in counts.items() if st == stance}
        if mine:
            top = max(mine.values())
            tied = sorted(a for a, n in mine.items() if n == top)
            out[stance] = {"count": top, "argument": tied[0], "arguments": tied, "templates": []}
    return out


CROSS_LINGUAL = 7  # of the 20 questions, asked in the other language than the posts'


def _retrieval(story: Story) -> list[dict[str, Any]]:
    """The llm style's questions about planted details, each with exactly the statements holding its answer."""
    if story.style != "llm":
        return []
    talk = TALKS[story.scenario.short]
    rng = random.Random(f"{story.simulation_id}:retrieval")
    planted = sorted(story.plants)
    rng.shuffle(planted)
    planted = planted[:20]
    other = set(rng.sample(planted, min(CROSS_LINGUAL, len(planted))))
    own = talk.register.language
    out = []
    for i in planted:
        detail = talk.details[i]
        language = ("zh" if own == "en" else "en") if i in other else own
        out.append({"question": detail.questions[language], "language": language, "mark": detail.mark,
                    "answers": sorted(story.plants[i], key=_ref_order)})
    return out


def _ref_order(ref: str) -> tuple[str, str, int]:
    kind, platform, number = ref.split(":")
    return kind, platform, int(number)
