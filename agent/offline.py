"""The offline writer: a deterministic, data-only stand-in for a language model, written as an analyst.

It answers the very requests the runner records, through the same loop: it plans an outline
that follows this simulation (its trigger, its camps, its platforms), calls the tools with
queries drawn from each section's topic, and writes each section only from what those tools
returned: real figures with their baselines stated, verbatim quotes with their ids, side-changers
and coalitions where the data shows them, and a closing section that answers the requirement's
questions. No network, no randomness, no clock; the byline is in the summary, once.
"""

from __future__ import annotations

import json
import re
from typing import Any

from simreportd.events.models import LLMRequested, TokenUsage, ToolCallRequest

from .outline import run_summary, topic_of
from .providers import Completion, estimate_tokens

NOTE = "Written by simreportd's offline writer from the simulation data, without a language model."
DATA_BLOCK = re.compile(r"<simulation_data>\n(.*?)\n</simulation_data>", re.S)
RESULT_BLOCK = re.compile(r'<tool_result name="(\w+)">\n(.*?)\n</tool_result>', re.S)
SECTION_LINE = re.compile(r"^Write section (\d+): (.+?)\. (.*)$", re.M)
QUOTED_REF = re.compile(r'^> ".*" \((\w+:\w+:\w+)\)$', re.M)
STANCE_ORDER = ("supportive", "opposing", "neutral", "observer")
# What each kind of section is about, as its outline description says it (the dispatch key).
KINDS = {
    "timeline": "Volume per round and platform, the turning points against their baselines, and what set them off.",
    "camps": "Which stances formed, how big each camp is and what each camp argued most, in the agents' own words.",
    "platforms": "Platform divergence overall and after the trigger, and what each platform kept talking about.",
    "drivers": "The most active and most engaged-with agents, who reacted to whom, and the agents who changed sides.",
    "answers": "Each question of the requirement, answered from the evidence of the sections above.",
}


class OfflineProvider:
    name = "offline"

    async def context_window(self, model: str) -> int:
        """The offline writer reads any length: its conversations are never shortened."""
        return 1_000_000

    async def complete(self, request: LLMRequested, messages: list[dict[str, Any]], attempt: int) -> Completion:
        if request.purpose == "chat":
            from .offline_chat import chat_reply  # it builds on this module's writers

            content, calls = chat_reply(request, messages)
        else:
            content, calls = _outline(messages) if request.purpose == "outline" else _section(request, messages)
        if request.protocol == "text" and calls:
            content = "".join(f'<tool_call>{json.dumps({"name": c.name, "parameters": c.arguments})}</tool_call>'
                              for c in calls[:1])
            calls = []
        elif request.protocol == "text":
            content = f"Final Answer: {content}"
        prompt = sum(estimate_tokens(str(m.get("content") or "")) for m in messages)
        usage = TokenUsage(prompt_tokens=prompt, completion_tokens=estimate_tokens(content), estimated=True)
        return Completion(content, calls, usage, "tool_calls" if calls else "stop")


# --- the outline ---------------------------------------------------------------------------------


def _outline(messages: list[dict[str, Any]]) -> tuple[str, list[ToolCallRequest]]:
    blocks = DATA_BLOCK.findall(messages[-1]["content"])
    context = json.loads(blocks[-1].replace("<\\/simulation_data", "</simulation_data")) if blocks else {}
    title, summary, sections = analyst_outline(context)
    return json.dumps({"title": title, "summary": f"{summary} {NOTE}", "sections": sections}), []


def analyst_outline(context: dict[str, Any]) -> tuple[str, str, list[dict[str, str]]]:
    """(title, summary, sections) shaped by this simulation: its trigger, its largest camp, its platforms."""
    topic = topic_of(context)
    event, rounds = reached_event(context), int(context.get("rounds") or 0)
    unreached = (context.get("scheduled_events") or [None])[0] if event is None else None
    stances = context.get("stances") or {}
    platforms = sorted((context.get("platforms") or {}).keys())
    largest = max(sorted(stances), key=lambda s: stances[s], default="")
    title = f"{topic[:1].upper() + topic[1:]}: " + (
        f"what happened when the round {event['round']} event hit" if event else
        f"the first {rounds} rounds, before the round {unreached['round']} event" if unreached else
        "how the simulated debate unfolded")
    summary = run_summary(context)
    sections = [{"title": f"Round {event['round']}: the scheduled event and the spike around it" if event
                 else "How the conversation moved, round by round", "description": KINDS["timeline"]},
                {"title": f"The camps: {largest} agents are the largest" if largest else "The camps and their arguments",
                 "description": KINDS["camps"]}]
    if len(platforms) > 1:
        sections.append({"title": "Where Twitter and Reddit parted ways", "description": KINDS["platforms"]})
    sections.append({"title": "Who drove the debate, and who changed sides", "description": KINDS["drivers"]})
    sections.append({"title": "Answers to the requirement's questions", "description": KINDS["answers"]})
    return title, summary, sections


def reached_event(context: dict[str, Any]) -> dict[str, Any] | None:
    """The run's first scheduled event if the rounds recorded have reached it: a partial report's run may
    not have, and a title must not promise what has not happened."""
    events = context.get("scheduled_events") or []
    return events[0] if events and events[0]["round"] <= int(context.get("rounds") or 0) else None


# --- one section ---------------------------------------------------------------------------------


def _section(request: LLMRequested, messages: list[dict[str, Any]]) -> tuple[str, list[ToolCallRequest]]:
    opening = next(m["content"] for m in messages if m["role"] == "user")
    match = SECTION_LINE.search(opening)
    kind = _kind(match.group(2) if match else "", match.group(3) if match else "")
    blocks = [b.replace("<\\/simulation_data", "</simulation_data") for b in DATA_BLOCK.findall(opening)]
    requirement = blocks[0] if blocks else ""
    background = json.loads(blocks[1]) if len(blocks) > 1 else {}
    seen = _observations(messages)
    done = sum(len(v) for v in seen.values())
    plan = _plan(kind, background, requirement, seen)
    if request.tools and done < len(plan):
        name, args = plan[done]
        return "", [ToolCallRequest(id=f"{request.call_id}-t1", name=name, arguments=args)]
    facts = Facts(seen, background, requirement, set(QUOTED_REF.findall(opening)))
    return WRITERS[kind](facts), []


def _kind(title: str, description: str) -> str:
    """Which kind of section this is: by its description when the outline is ours, else by its title."""
    for kind, text in KINDS.items():
        if description.startswith(text[:30]):
            return kind
    t = title.lower()
    for kind, words in (("answers", ("answer", "question", "conclusion")), ("camps", ("camp", "argument")),
                        ("platforms", ("twitter", "reddit", "platform")), ("drivers", ("who", "drove", "agent"))):
        if any(w in t for w in words):
            return kind
    return "timeline"


def _observations(messages: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for message in messages:
        for name, body in RESULT_BLOCK.findall(str(message.get("content") or "")):
            try:
                found.setdefault(name, []).append(json.loads(body.replace("<\\/tool_result", "</tool_result")))
            except ValueError:
                continue
    return found


def _plan(kind: str, background: dict[str, Any], requirement: str,
          seen: dict[str, list[dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls a section makes, with queries drawn from its own topic (3 to 4: the default budget is 5, and
    a section that spends it all is asked for its last word in a conversation this writer cannot place)."""
    topics = list(background.get("hot_topics") or []) or [topic_of(background)]
    events = background.get("scheduled_events") or []
    trigger = events[0].get("description", "") if events else topics[0]
    analytics = (seen.get("simulation_analytics") or [{}])[0]
    if kind == "timeline":
        return [("simulation_analytics", {}), ("quick_search", {"query": trigger, "limit": 10}),
                ("panorama_search", {"query": topics[0]}), *_rise(analytics, background)]
    if kind == "camps":
        return [("simulation_analytics", {}), ("insight_forge", {"query": _questions(requirement)[-1] if requirement
                                                                 else topics[0]}),
                ("coalitions", {}), ("interview_agents", {"interview_topic": topics[0], "max_agents": 4})]
    if kind == "platforms":
        return [("simulation_analytics", {}), ("panorama_search", {"query": trigger}),
                ("quick_search", {"query": " ".join(topics[2:4]) or topics[0], "limit": 6})]
    if kind == "drivers":
        engaged = analytics.get("most_engaged_agents") or [{}]
        shifts = (analytics.get("camps") or {}).get("stance_shifts") or []
        about = shifts[0]["example"]["content"] if shifts else topics[0]
        profile = [("agent_profile", {"agent": engaged[0]["ref"]})] if engaged[0] else []
        return [("simulation_analytics", {}), ("quick_search", {"query": engaged[0].get("name") or topics[0],
                                                                "limit": 10}),
                ("insight_forge", {"query": about}), *profile]
    asked = [("quick_search", {"query": q, "limit": 5}) for q in _questions(requirement)[:4]]
    return [("simulation_analytics", {}), *asked, ("panorama_search", {"query": topics[0]})][:max(3, 1 + len(asked))]


def _rise(analytics: dict[str, Any], background: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The `calculate` call for how much busier the pivot round was than the rounds before it, in percent."""
    f = Facts({"simulation_analytics": [analytics]}, background, "", set())
    row, before = f.at(f.pivot), f.side(after=False)
    total = sum(r["total"] for r in before)
    if row is None or not total:
        return []
    return [("calculate", {"expression": f"({row['total']} / {total} * {_spanned(before)} - 1) * 100"})]


def _questions(requirement: str) -> list[str]:
    """The requirement's questions, one by one ('How ..., which ..., and how ...?' is three)."""
    parts = re.split(r"[?？]\s*|,\s*(?:and\s+)?(?=(?:which|what|how|where|who|why|when)\b)", requirement)
    out = [p.strip().rstrip(",") for p in parts if len(p.strip()) > 3]
    return [q[:1].upper() + q[1:] + ("？" if re.search(r"[\u4e00-\u9fff]", q) else "?") for q in out]


class Facts:
    """What the tools returned for a section, with the derived figures every writer needs."""

    def __init__(self, seen: dict[str, list[dict[str, Any]]], background: dict[str, Any], requirement: str,
                 quoted_before: set[str]) -> None:
        self.seen, self.background, self.requirement, self.quoted_before = seen, background, requirement, quoted_before
        self.analytics = (seen.get("simulation_analytics") or [{}])[0]
        self.rounds = [r for r in self.analytics.get("per_round", [])]
        self.camps = self.analytics.get("camps") or {}
        events = background.get("scheduled_events") or []
        points = self.analytics.get("turning_points") or []
        busiest = self.analytics.get("busiest_round")
        last = max((_last(r) for r in self.rounds), default=None)
        # A partial report's run may not have reached its scheduled event yet: then it is no pivot.
        self.event = events[0] if events and (last is None or events[0]["round"] <= last) else None
        self.unreached = events[0] if events and self.event is None else None
        self.pivot: int | None = (self.event["round"] if self.event else points[0]["round"] if points
                                  else busiest["round"] if busiest else None)

    def posts(self) -> list[dict[str, Any]]:
        """Every statement the searches returned, once each, fresh ones (not quoted by earlier sections) first."""
        found: dict[str, dict[str, Any]] = {}
        for result in self.seen.get("quick_search", []):
            for post in result.get("results", []):
                found.setdefault(post["ref"], post)
        for result in self.seen.get("insight_forge", []):
            for finding in result.get("sub_questions", []):
                for post in finding.get("evidence", []):
                    found.setdefault(post["ref"], post)
        for result in self.seen.get("panorama_search", []):
            for post in result.get("current_statements", []) + [t["first"] for t in result.get("timeline", [])]:
                found.setdefault(post["ref"], post)
        usable = [p for p in found.values() if p.get("kind") in ("post", "quote", "comment") and p.get("content")]
        return sorted(usable, key=lambda p: p["ref"] in self.quoted_before)

    def at(self, round_no: int | None) -> dict[str, Any] | None:
        """The row of exactly that round; None if a long run's rows sum it into a span with others."""
        return next((r for r in self.rounds if r["round"] == round_no and _last(r) == round_no), None)

    def side(self, after: bool) -> list[dict[str, Any]]:
        """The rows wholly after the pivot, or wholly before it (round 0 left out): a span of rounds that
        holds the pivot belongs to neither."""
        if self.pivot is None:
            return []
        pivot = self.pivot
        return [r for r in self.rounds if (r["round"] > pivot if after else 0 < r["round"] and _last(r) < pivot)]

    def means(self, platform: str, after: bool) -> tuple[float, int]:
        """Mean actions per round on a platform after the pivot (or before it), and the rounds."""
        rows = self.side(after)
        return (round(sum(r[platform] for r in rows) / _spanned(rows), 2) if rows else 0.0), _spanned(rows)

    def loud(self) -> tuple[str, str]:
        """(the platform busier after the pivot, the other one)."""
        tw, rd = self.means("twitter", True)[0], self.means("reddit", True)[0]
        return ("reddit", "twitter") if rd >= tw else ("twitter", "reddit")


def _cap(platform: str) -> str:
    return platform.capitalize()


def _who(agent: dict[str, Any]) -> str:
    return f"{agent.get('name') or agent['ref']} ({agent['ref']}"


def _quote(post: dict[str, Any]) -> str:
    agent = post["agent"]
    return (f"{_who(agent)}, {agent['stance'] or 'no stated stance'}, round {post['round']}) wrote on "
            f"{_cap(post['platform'])}:\n\n> \"{post['content']}\" ({post['ref']})")


def _listing(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1] if items else ""


def _n(count: int, noun: str) -> str:
    """`1 statement`, `5 statements`: a count with its noun in the right number."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _rounds(first: int, last: int) -> str:
    return f"round {first}" if first == last else f"rounds {first}-{last}"


def _last(row: dict[str, Any]) -> int:
    """The last round a per-round row counts (rows of long runs sum spans of rounds)."""
    return int(row.get("last_round", row["round"]))


def _spanned(rows: list[dict[str, Any]]) -> int:
    """How many rounds the rows count."""
    return sum(_last(r) - r["round"] + 1 for r in rows)


def _covered(rows: list[dict[str, Any]]) -> str:
    """`rounds A-B` for the rows' rounds."""
    return _rounds(rows[0]["round"], _last(rows[-1]))


def _camp_sizes(background: dict[str, Any]) -> str:
    stances = background.get("stances") or {}
    ordered = sorted((s for s in stances if s), key=lambda s: (-stances[s], s))
    return _listing([f"{stances[s]} {s}{'s' if s == 'observer' and stances[s] > 1 else ''}" for s in ordered])


# --- the writers, one per kind of section ----------------------------------------------------------


def _timeline(f: Facts) -> str:
    a = f.analytics
    if not a:
        return "The analytics tool returned nothing, so the round-by-round picture cannot be drawn."
    totals = a.get("actions_by_platform", {})
    out = [f"The simulation recorded {a.get('total_actions', 0)} actions in total: {totals.get('twitter', 0)} on "
           f"Twitter and {totals.get('reddit', 0)} on Reddit, over {a.get('rounds', 0)} rounds after the "
           f"seed posts."]
    points = a.get("turning_points", [])
    for i, p in enumerate(points[:3]):
        first, last = p.get("baseline_rounds") or [p["round"] - 1, p["round"] - 1]
        lead = "The first turning point was" if i == 0 else "Another turning point was"
        out.append(f"{lead} round {p['round']} with {p['volume']} actions, {p['ratio']}x the mean of rounds "
                   f"{first}-{last} ({p['rolling_mean']}).")
    if not points and f.pivot is not None:
        out.append("No round reached twice the mean of the three rounds before it.")
    row, before = f.at(f.pivot), f.side(after=False)
    if row and before and f.pivot is not None:
        mean = round(sum(r["total"] for r in before) / _spanned(before), 2)
        out.append(f"Against all the rounds before it, round {f.pivot} with {row['total']} actions was "
                   f"{round(row['total'] / mean, 2) if mean else 0}x the mean of {_covered(before)} ({mean})"
                   + _percent_more(f) + ".")
    if f.event:
        out.append(f"Round {f.event['round']} is when the scenario's scheduled event landed:\n\n"
                   f"> \u201c{f.event.get('description', '')}\u201d")
    elif f.unreached:
        out.append(f"The scenario's scheduled event, set for round {f.unreached['round']}, had not happened by the "
                   f"last round recorded ({_last(f.rounds[-1])}).")
    said = list({p["content"]: p for p in reversed(f.posts()) if p["round"] == f.pivot}.values())[::-1][:2]
    if said:
        out.append(f"What agents said in round {f.pivot}:\n\n" + "\n\n".join(_quote(p) for p in said))
    out.append(_phases(f))
    return "\n\n".join(p for p in out if p)


def _percent_more(f: Facts) -> str:
    """`, N% more than that mean`, as the calculate tool worked it out, or nothing."""
    computed = (f.seen.get("calculate") or [{}])[0].get("result")
    return f", {round(computed, 1):g}% more than that mean" if isinstance(computed, int | float) else ""


def _phases(f: Facts) -> str:
    """Mean volume per platform before and after the pivot, each baseline named."""
    if f.pivot is None:
        return ""
    (tb, nb), (rb, _) = f.means("twitter", False), f.means("reddit", False)
    (ta, na), (ra, _) = f.means("twitter", True), f.means("reddit", True)
    parts = []
    if nb:
        parts.append(f"Before round {f.pivot}, Twitter averaged {tb} actions per round and Reddit averaged {rb} "
                     f"({_covered(f.side(after=False))}).")
    if na:
        parts.append(f"After round {f.pivot}, Twitter averaged {ta} actions per round and Reddit averaged {ra} "
                     f"({_covered(f.side(after=True))}).")
    return " ".join(parts)


def _camps(f: Facts) -> str:
    out = []
    sizes = _camp_sizes(f.background)
    if sizes:
        out.append(f"By their profiles the {f.background.get('agents_count', 0)} agents split into {sizes}.")
    arguments = f.camps.get("arguments") or {}
    stances = f.background.get("stances") or {}
    for stance in sorted(arguments, key=lambda s: (-stances.get(s, 0), s)):
        top = arguments[stance][0]
        ex = top["example"]
        out.append(f"The {stance} camp's most repeated argument came up in {_n(top['statements'], 'statement')} by "
                   f"{_n(top['authors'], 'agent')}; {ex['name']} ({ex['agent']}) put it first:\n\n"
                   f"> \"{ex['content']}\" ({ex['ref']})")
        if len(arguments[stance]) > 1:
            nxt = arguments[stance][1]
            out.append(f"Next in the {stance} camp ({_n(nxt['statements'], 'statement')}):\n\n"
                       f"> \"{nxt['example']['content']}\" ({nxt['example']['ref']})")
    if not arguments:
        out.append("The analytics found no argument repeated within a camp.")
    forge = (f.seen.get("insight_forge") or [{}])[0]
    agents = forge.get("agents", [])
    if agents:
        out.append("The agents behind the statements the question search found include " + _listing(
            [f"{_who(a)}, {a['stance']}: {a['actions']} actions)" for a in agents[:5]]) + ".")
    out.append(_coalitions(f))
    out += _interviews(f)
    return "\n\n".join(p for p in out if p)


def _coalitions(f: Facts) -> str:
    """The groups whose members follow each other within a camp, the largest first, and the bridges between camps."""
    result = (f.seen.get("coalitions") or [{}])[0]
    if not result:
        return ""
    found = result.get("coalitions", [])
    bridges = result.get("cross_camp_mutual_follows", 0)
    across = f" {bridges} mutual follows crossed camps." if bridges else " No mutual follow crossed camps."
    if not found:
        return (f"No group of {result.get('min_size', 3)} or more agents followed each other within a camp "
                f"({result.get('mutual_follows', 0)} mutual follows in all).{across}")
    groups = [f"{c['size']} {c['camp']} agents ({_listing([_who(m) + ')' for m in c['members']])}), "
              f"together from round {c['formed_round']}" for c in found[:3]]
    return (f"{result['coalitions_found']} coalition{'s' if result['coalitions_found'] > 1 else ''} of agents who follow "
            f"each other and speak for the same camp formed: " + "; ".join(groups) + "." + across)


def _interviews(f: Facts) -> list[str]:
    """Every interviewed agent's answer, saying how it was given (live, or in persona)."""
    result = (f.seen.get("interview_agents") or [{}])[0]
    items = result.get("interviews", [])
    if not items:
        return []
    out = [f"Asked directly ({result.get('note', '')}), {len(items)} agents answered:"]
    for item in items:
        agent = item["agent"]
        out.append(f"{_who(agent)}, {agent['stance'] or 'no stated stance'}, {item['mode']}):\n\n> {item['answer']}")
    return out


def _platforms(f: Facts) -> str:
    a = f.analytics
    if not a:
        return "The analytics tool returned nothing, so the platforms cannot be compared."
    totals = a.get("actions_by_platform", {})
    divergence = a.get("divergence", {})
    out = [f"Over the whole run there were {totals.get('twitter', 0)} actions on Twitter and {totals.get('reddit', 0)} "
           f"on Reddit, an overall divergence of {divergence.get('overall', 0)} (|Twitter - Reddit| / total)."]
    out.append(_divergence_sentence(f))
    by_round = [r for r in divergence.get("by_round", []) if r["round"] > 0]
    widest = max(by_round, key=lambda r: (r["value"], -r["round"]), default=None)
    if widest:
        row = next(r for r in f.rounds if r["round"] == widest["round"])
        out.append(f"They were furthest apart in {_rounds(row['round'], _last(row))}: {row['twitter']} actions on "
                   f"Twitter against {row['reddit']} on Reddit (divergence {widest['value']}).")
    mix = a.get("action_mix", {})
    for platform in sorted(mix):
        out.append(f"On {_cap(platform)} the most common actions were "
                   + ", ".join(f"{m['action']} ({m['count']})" for m in mix[platform][:3]) + ".")
    posts = f.posts()
    for platform in f.loud():
        mine = [p for p in posts if p["platform"] == platform and f.pivot is not None and p["round"] > f.pivot]
        if mine:
            out.append(f"Still being said on {_cap(platform)} after round {f.pivot}:\n\n" + _quote(mine[0]))
    return "\n\n".join(p for p in out if p)


def _divergence_sentence(f: Facts) -> str:
    """Which platform kept arguing after the pivot, by how much, against which baseline."""
    if f.pivot is None:
        return ""
    loud, quiet = f.loud()
    (lm, n), (qm, _) = f.means(loud, True), f.means(quiet, True)
    if not n:
        return ""
    ratio = f", {round(lm / qm, 2)}x as many" if qm else ""
    return (f"After round {f.pivot}, {_cap(loud)} kept the debate going: {_cap(loud)} averaged {lm} actions per "
            f"round against {qm} on {_cap(quiet)} over the {n} rounds that followed{ratio}.")


def _drivers(f: Facts) -> str:
    a = f.analytics
    out = []
    active = a.get("most_active_agents", [])
    if active:
        out.append("The most active agents were " + _listing(
            [f"{_who(x)}, {x['stance']}: {x['actions']} actions, {x['posts']} posts)" for x in active[:5]]) + ".")
    engaged = a.get("most_engaged_agents", [])
    if engaged:
        out.append("Others reacted most to " + _listing(
            [f"{_who(x)}, {x['stance']}: {x['reactions']} reactions, of which {x['shares']} reposts or quotes, "
             f"{x['comments']} comments and {x['likes']} likes)" for x in engaged[:3]]) + ".")
    out += _shifts(f)
    forge = (f.seen.get("insight_forge") or [{}])[0]
    chains = [c for c in forge.get("interaction_chains", []) if c["count"] > 1]
    if chains:
        about = f" around \u201c{forge['query']}\u201d" if forge.get("query") else ""
        out.append(f"The strongest interaction chains{about}: " + "; ".join(_chain(c) for c in chains[:5]) + ".")
    out.append(_profile(f))
    posts = [p for p in f.posts() if engaged and p["agent"]["ref"] == engaged[0]["ref"]]
    if posts:
        out.append(f"In {engaged[0]['name']}'s own words:\n\n" + _quote(posts[0]))
    return "\n\n".join(out) or "The tools returned no activity data for this simulation."


CHAIN_VERBS = {"like": ("liked", "posts"), "dislike": ("disliked", "posts"), "repost": ("reposted", "posts"),
               "quote": ("quoted", "posts"), "comment": ("commented on", "posts"),
               "like_comment": ("liked", "comments"), "dislike_comment": ("disliked", "comments"),
               "follow": ("followed", ""), "mute": ("muted", "")}


def _chain(c: dict[str, Any]) -> str:
    """`Jonas Zhou (agent:3) reposted the posts of Tariq Kowalski (agent:4) 2 times` (`their own posts`)."""
    verb, noun = CHAIN_VERBS.get(c["kind"], (c["kind"], ""))
    other = f"{c['to_name']} ({c['to']})"
    if c["from"] == c["to"]:
        whom = f"their own {noun}" if noun else "themselves"
    else:
        whom = f"the {noun} of {other}" if noun else other
    return f"{c['from_name']} ({c['from']}) {verb} {whom} {c['count']} times"


def _profile(f: Facts) -> str:
    """The most engaged-with agent's trajectory: when and where they acted, with whom they engaged."""
    p = (f.seen.get("agent_profile") or [{}])[0]
    if not p or not p.get("actions"):
        return ""
    a, by = p["agent"], p["by_platform"]
    out = (f"{_who(a)}) took {p['actions']} actions; {by['twitter'] + by['reddit']} of them were posts, reactions or follows, "
           f"{by['twitter']} on Twitter and {by['reddit']} on Reddit, in {p['active_rounds']} rounds from round "
           f"{p['first_round']} to round {p['last_round']}, {p['statements']} of them posts, quotes or comments.")
    gave = [c for c in p.get("engaged_with", []) if c["count"] > 1][:3]
    if gave:
        out += " They engaged most with " + _listing(
            [f"{c['to_name']} ({c['to']}, {c['kind']} x{c['count']})" for c in gave]) + "."
    return out


def _shifts(f: Facts) -> list[str]:
    shifts = f.camps.get("stance_shifts") or []
    if not shifts:
        return ["No agent's statements moved from one camp to another."] if f.camps else []
    counted = f"{_n(len(shifts), 'agent')} changed sides" if "truncated" not in f.analytics else \
        f"At least {_n(len(shifts), 'agent')} changed sides (the analytics were shortened to fit: these are the first)"
    out = [f"{counted}: their statements moved to another camp than their profile's."]
    for s in shifts:
        out.append(f"{s['name']} ({s['agent']}) is {s['stated_stance']} by profile, but from round {s['from_round']} "
                   f"on, all {s['statements_after']} of their statements spoke for the {s['now_speaks_for']} camp:\n\n"
                   f"> \"{s['example']['content']}\" ({s['example']['ref']})")
    return out


def _answers(f: Facts) -> str:
    """Each requirement question restated, then answered from the figures and quotes gathered."""
    out = []
    for question in _questions(f.requirement):
        q = question.lower()
        if any(w in q for w in ("twitter", "reddit", "platform", "平台")):
            answer = [_divergence_sentence(f) or "The platforms cannot be compared from the data."]
        elif any(w in q for w in ("argument", "concern", "dominate", "spread", "观点", "担忧", "占上风")):
            answer = _answer_arguments(f)
        else:
            answer = _answer_reaction(f)
        out.append(f"**{question}**\n\n" + "\n\n".join(a for a in answer if a))
    return "\n\n".join(out) or "The requirement asks no question this writer can answer from the data."


def _answer_reaction(f: Facts) -> list[str]:
    stances = f.background.get("stances") or {}
    largest = max(sorted(s for s in stances if s), key=lambda s: stances[s], default="")
    out = [f"The {largest} camp is the largest: the agents split into {_camp_sizes(f.background)}." if largest else ""]
    shifts = (f.camps.get("stance_shifts") or [])
    if shifts:
        out.append(f"The reaction moved after round {f.pivot}: " + _listing(
            [f"{s['name']} ({s['agent']}, {s['stated_stance']} by profile) spoke for the {s['now_speaks_for']} camp "
             f"from round {s['from_round']}" for s in shifts]) + ".")
    return out


def _answer_arguments(f: Facts) -> list[str]:
    arguments = f.camps.get("arguments") or {}
    out = []
    row = f.at(f.pivot)
    if row:
        out.append(f"The debate spread fastest in round {f.pivot}, with {row['total']} actions.")
    stances = f.background.get("stances") or {}
    for stance in sorted(arguments, key=lambda s: (-stances.get(s, 0), s)):
        top = arguments[stance][0]
        out.append(f"The {stance} camp's dominant argument ({_n(top['statements'], 'statement')}):\n\n"
                   f"> \"{top['example']['content']}\" ({top['example']['ref']})")
    return out


WRITERS = {"timeline": _timeline, "camps": _camps, "platforms": _platforms, "drivers": _drivers, "answers": _answers}
