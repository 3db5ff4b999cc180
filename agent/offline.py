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

from .offline_phrases import EN, ENGLISH, ZH, Phrases, phrases_for
from .outline import run_summary, topic_of
from .providers import Completion, estimate_tokens

DATA_BLOCK = re.compile(r"<simulation_data>\n(.*?)\n</simulation_data>", re.S)
RESULT_BLOCK = re.compile(r'<tool_result name="(\w+)">\n(.*?)\n</tool_result>', re.S)
SECTION_LINE = re.compile(r"^Write section (\d+): (.+?)\. (.*)$", re.M)
QUOTED_REF = re.compile(r'^> ".*" \((\w+:\w+:\w+)\)$', re.M)
STANCE_ORDER = ("supportive", "opposing", "neutral", "observer")
# What each kind of section is about, as its outline description says it (the dispatch key), in each language.
KINDS = {language: {kind: table[f"d_{kind}"] for kind in ("timeline", "camps", "platforms", "drivers", "answers")}
         for language, table in (("en", EN), ("zh", ZH))}


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
    say = phrases_for(str(context.get("requirement") or ""))
    return json.dumps({"title": title, "summary": f"{summary} {say('note')}", "sections": sections}), []


def analyst_outline(context: dict[str, Any]) -> tuple[str, str, list[dict[str, str]]]:
    """(title, summary, sections) shaped by this simulation: its trigger, its largest camp, its platforms; in the
    language of its requirement."""
    say = phrases_for(str(context.get("requirement") or ""))
    topic = topic_of(context)
    topic = topic[:1].upper() + topic[1:]
    event, rounds = reached_event(context), int(context.get("rounds") or 0)
    unreached = (context.get("scheduled_events") or [None])[0] if event is None else None
    stances = context.get("stances") or {}
    platforms = sorted((context.get("platforms") or {}).keys())
    largest = max(sorted(stances), key=lambda s: stances[s], default="")
    title = say("title_event", topic=topic, round=event["round"]) if event else \
        say("title_before", topic=topic, rounds=rounds, round=unreached["round"]) if unreached else \
        say("title_plain", topic=topic)
    sections = [{"title": say("s_event", round=event["round"]) if event else say("s_rounds"),
                 "description": KINDS[say.language]["timeline"]},
                {"title": say("s_camps_largest", stance=say.stance(largest)) if largest else say("s_camps"),
                 "description": KINDS[say.language]["camps"]}]
    if len(platforms) > 1:
        sections.append({"title": say("s_platforms"), "description": KINDS[say.language]["platforms"]})
    sections.append({"title": say("s_drivers"), "description": KINDS[say.language]["drivers"]})
    sections.append({"title": say("s_answers"), "description": KINDS[say.language]["answers"]})
    return title, run_summary(context, say), sections


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
    for kind, text in (*KINDS["en"].items(), *KINDS["zh"].items()):
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
        self.say = phrases_for(requirement)  # the report is written in the requirement's language
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


def _quote(post: dict[str, Any], say: Phrases = ENGLISH) -> str:
    agent = post["agent"]
    return (say("quote_lead", who=_who(agent), stance=say.stance(agent["stance"]) or say("no_stance"),
                round=post["round"], platform=_cap(post["platform"]))
            + f"\n\n> \"{post['content']}\" ({post['ref']})")


def _listing(items: list[str], say: Phrases = ENGLISH) -> str:
    return say.listing(items)


def _last(row: dict[str, Any]) -> int:
    """The last round a per-round row counts (rows of long runs sum spans of rounds)."""
    return int(row.get("last_round", row["round"]))


def _spanned(rows: list[dict[str, Any]]) -> int:
    """How many rounds the rows count."""
    return sum(_last(r) - r["round"] + 1 for r in rows)


def _covered(rows: list[dict[str, Any]], say: Phrases) -> str:
    """`rounds A-B` for the rows' rounds."""
    return say.rounds(rows[0]["round"], _last(rows[-1]))


def _camp_sizes(background: dict[str, Any], say: Phrases) -> str:
    stances = background.get("stances") or {}
    ordered = sorted((s for s in stances if s), key=lambda s: (-stances[s], s))
    return say.listing([say.camp_size(stances[s], s) for s in ordered])


# --- the writers, one per kind of section ----------------------------------------------------------


def _timeline(f: Facts) -> str:
    a, say = f.analytics, f.say
    if not a:
        return say("no_analytics_rounds")
    totals = a.get("actions_by_platform", {})
    out = [say("recorded", total=a.get("total_actions", 0), twitter=totals.get("twitter", 0),
               reddit=totals.get("reddit", 0), rounds=a.get("rounds", 0))]
    points = a.get("turning_points", [])
    for i, p in enumerate(points[:3]):
        first, last = p.get("baseline_rounds") or [p["round"] - 1, p["round"] - 1]
        out.append(say("turning", lead=say("turning_first" if i == 0 else "turning_next"), round=p["round"],
                       volume=p["volume"], ratio=p["ratio"], first=first, last=last, mean=p["rolling_mean"]))
    if not points and f.pivot is not None:
        out.append(say("no_turning"))
    row, before = f.at(f.pivot), f.side(after=False)
    if row and before and f.pivot is not None:
        mean = round(sum(r["total"] for r in before) / _spanned(before), 2)
        out.append(say("against_before", round=f.pivot, total=row["total"],
                       ratio=round(row["total"] / mean, 2) if mean else 0, covered=_covered(before, say), mean=mean,
                       more=_percent_more(f)))
    if f.event:
        out.append(say("event", round=f.event["round"], description=f.event.get("description", "")))
    elif f.unreached:
        out.append(say("unreached", round=f.unreached["round"], last=_last(f.rounds[-1])))
    said = list({p["content"]: p for p in reversed(f.posts()) if p["round"] == f.pivot}.values())[::-1][:2]
    if said:
        out.append(say("said_in_round", round=f.pivot) + "\n\n" + "\n\n".join(_quote(p, say) for p in said))
    out.append(_phases(f))
    return "\n\n".join(p for p in out if p)


def _percent_more(f: Facts) -> str:
    """`, N% more than that mean`, as the calculate tool worked it out, or nothing."""
    computed = (f.seen.get("calculate") or [{}])[0].get("result")
    return f.say("percent_more", percent=f"{round(computed, 1):g}") if isinstance(computed, int | float) else ""


def _phases(f: Facts) -> str:
    """Mean volume per platform before and after the pivot, each baseline named."""
    if f.pivot is None:
        return ""
    (tb, nb), (rb, _) = f.means("twitter", False), f.means("reddit", False)
    (ta, na), (ra, _) = f.means("twitter", True), f.means("reddit", True)
    parts = []
    if nb:
        parts.append(f.say("before_means", round=f.pivot, twitter=tb, reddit=rb,
                           covered=_covered(f.side(after=False), f.say)))
    if na:
        parts.append(f.say("after_means", round=f.pivot, twitter=ta, reddit=ra,
                           covered=_covered(f.side(after=True), f.say)))
    return ("" if f.say.language == "zh" else " ").join(parts)


def _camps(f: Facts) -> str:
    say, out = f.say, []
    sizes = _camp_sizes(f.background, say)
    if sizes:
        out.append(say("split", agents=f.background.get("agents_count", 0), sizes=sizes))
    arguments = f.camps.get("arguments") or {}
    stances = f.background.get("stances") or {}
    for stance in sorted(arguments, key=lambda s: (-stances.get(s, 0), s)):
        top = arguments[stance][0]
        ex = top["example"]
        out.append(say("camp_argument", stance=say.stance(stance), statements=say.count(top["statements"], "statement"),
                       authors=say.count(top["authors"], "agent"), name=ex["name"], agent=ex["agent"])
                   + f"\n\n> \"{ex['content']}\" ({ex['ref']})")
        if len(arguments[stance]) > 1:
            nxt = arguments[stance][1]
            out.append(say("camp_next", stance=say.stance(stance), statements=say.count(nxt["statements"], "statement"))
                       + f"\n\n> \"{nxt['example']['content']}\" ({nxt['example']['ref']})")
    if not arguments:
        out.append(say("no_arguments"))
    forge = (f.seen.get("insight_forge") or [{}])[0]
    agents = forge.get("agents", [])
    if agents:
        out.append(say("forge_agents", agents=say.listing(
            [say("forge_agent", who=_who(a), stance=say.stance(a["stance"]), actions=a["actions"]) for a in agents[:5]])))
    out.append(_coalitions(f))
    out += _interviews(f)
    return "\n\n".join(p for p in out if p)


def _coalitions(f: Facts) -> str:
    """The groups whose members follow each other within a camp, the largest first, and the bridges between camps."""
    result, say = (f.seen.get("coalitions") or [{}])[0], f.say
    if not result:
        return ""
    found = result.get("coalitions", [])
    bridges = result.get("cross_camp_mutual_follows", 0)
    across = say("across", n=bridges) if bridges else say("not_across")
    if not found:
        return say("no_coalition", size=result.get("min_size", 3), mutual=result.get("mutual_follows", 0), across=across)
    groups = [say("coalition", size=c["size"], camp=say.stance(c["camp"]),
                  members=say.listing([_who(m) + ")" for m in c["members"]]), round=c["formed_round"])
              for c in found[:3]]
    count = result["coalitions_found"]
    return say("coalitions", count=count, s="s" if count > 1 else "", groups=say("group_sep").join(groups), across=across)


def _interviews(f: Facts) -> list[str]:
    """Every interviewed agent's answer, saying how it was given (live, or in persona)."""
    result, say = (f.seen.get("interview_agents") or [{}])[0], f.say
    items = result.get("interviews", [])
    if not items:
        return []
    out = [say("asked", note=result.get("note", ""), count=len(items))]
    for item in items:
        agent = item["agent"]
        out.append(say("answered", who=_who(agent), stance=say.stance(agent["stance"]) or say("no_stance"),
                       mode=say.mode(item["mode"])) + f"\n\n> {item['answer']}")
    return out


def _platforms(f: Facts) -> str:
    a, say = f.analytics, f.say
    if not a:
        return say("no_analytics_platforms")
    totals = a.get("actions_by_platform", {})
    divergence = a.get("divergence", {})
    out = [say("whole_run", twitter=totals.get("twitter", 0), reddit=totals.get("reddit", 0),
               divergence=divergence.get("overall", 0))]
    out.append(_divergence_sentence(f))
    by_round = [r for r in divergence.get("by_round", []) if r["round"] > 0]
    widest = max(by_round, key=lambda r: (r["value"], -r["round"]), default=None)
    if widest:
        row = next(r for r in f.rounds if r["round"] == widest["round"])
        out.append(say("furthest", rounds=say.rounds(row["round"], _last(row)), twitter=row["twitter"],
                       reddit=row["reddit"], value=widest["value"]))
    mix = a.get("action_mix", {})
    for platform in sorted(mix):
        out.append(say("mix", platform=_cap(platform), actions=", ".join(
            say("mix_item", action=m["action"], count=m["count"]) for m in mix[platform][:3])))
    posts = f.posts()
    for platform in f.loud():
        mine = [p for p in posts if p["platform"] == platform and f.pivot is not None and p["round"] > f.pivot]
        if mine:
            out.append(say("still_said", platform=_cap(platform), round=f.pivot) + "\n\n" + _quote(mine[0], say))
    return "\n\n".join(p for p in out if p)


def _divergence_sentence(f: Facts) -> str:
    """Which platform kept arguing after the pivot, by how much, against which baseline."""
    if f.pivot is None:
        return ""
    loud, quiet = f.loud()
    (lm, n), (qm, _) = f.means(loud, True), f.means(quiet, True)
    if not n:
        return ""
    ratio = f.say("ratio", ratio=round(lm / qm, 2)) if qm else ""
    return f.say("divergence", round=f.pivot, loud=_cap(loud), loud_mean=lm, quiet_mean=qm, quiet=_cap(quiet), n=n,
                 ratio=ratio)


def _drivers(f: Facts) -> str:
    a, say = f.analytics, f.say
    out = []
    active = a.get("most_active_agents", [])
    if active:
        out.append(say("most_active", agents=say.listing(
            [say("active_agent", who=_who(x), stance=say.stance(x["stance"]), actions=x["actions"], posts=x["posts"])
             for x in active[:5]])))
    engaged = a.get("most_engaged_agents", [])
    if engaged:
        out.append(say("reacted_to", agents=say.listing(
            [say("engaged_agent", who=_who(x), stance=say.stance(x["stance"]), reactions=x["reactions"],
                 shares=x["shares"], comments=x["comments"], likes=x["likes"]) for x in engaged[:3]])))
    out += _shifts(f)
    forge = (f.seen.get("insight_forge") or [{}])[0]
    chains = [c for c in forge.get("interaction_chains", []) if c["count"] > 1]
    if chains:
        about = say("chains_about", query=forge["query"]) if forge.get("query") else ""
        out.append(say("chains", about=about, chains="; ".join(_chain(c, say) for c in chains[:5])))
    out.append(_profile(f))
    posts = [p for p in f.posts() if engaged and p["agent"]["ref"] == engaged[0]["ref"]]
    if posts:
        out.append(say("own_words", name=engaged[0]["name"]) + "\n\n" + _quote(posts[0], say))
    return "\n\n".join(out) or say("no_activity")


def _chain(c: dict[str, Any], say: Phrases = ENGLISH) -> str:
    """`Jonas Zhou (agent:3) reposted the posts of Tariq Kowalski (agent:4) 2 times` (`their own posts`)."""
    verb, noun = say.chain_verb(c["kind"])
    other = f"{c['to_name']} ({c['to']})"
    if c["from"] == c["to"]:
        whom = say("own", noun=noun) if noun else say("themselves")
    else:
        whom = say("of_other", noun=noun, other=other) if noun else other
    return say("chain", source=f"{c['from_name']} ({c['from']})", verb=verb, whom=whom, count=c["count"])


def _profile(f: Facts) -> str:
    """The most engaged-with agent's trajectory: when and where they acted, with whom they engaged."""
    p, say = (f.seen.get("agent_profile") or [{}])[0], f.say
    if not p or not p.get("actions"):
        return ""
    a, by = p["agent"], p["by_platform"]
    out = say("profile", who=_who(a), actions=p["actions"], acts=by["twitter"] + by["reddit"], twitter=by["twitter"],
              reddit=by["reddit"], active=p["active_rounds"], first=p["first_round"], last=p["last_round"],
              statements=p["statements"])
    gave = [c for c in p.get("engaged_with", []) if c["count"] > 1][:3]
    if gave:
        out += say("engaged_most", others=say.listing(
            [say("engaged_other", name=c["to_name"], ref=c["to"], kind=c["kind"], count=c["count"]) for c in gave]))
    return out


def _shifts(f: Facts) -> list[str]:
    shifts, say = f.camps.get("stance_shifts") or [], f.say
    if not shifts:
        return [say("no_shift")] if f.camps else []
    agents = say.count(len(shifts), "agent")
    counted = say("changed" if "truncated" not in f.analytics else "changed_at_least", agents=agents)
    out = [say("moved", counted=counted)]
    for s in shifts:
        out.append(say("shift", name=s["name"], agent=s["agent"], stated=say.stance(s["stated_stance"]),
                       round=s["from_round"], n=s["statements_after"], now=say.stance(s["now_speaks_for"]))
                   + f"\n\n> \"{s['example']['content']}\" ({s['example']['ref']})")
    return out


def _answers(f: Facts) -> str:
    """Each requirement question restated, then answered from the figures and quotes gathered."""
    out = []
    for question in _questions(f.requirement):
        q = question.lower()
        if any(w in q for w in ("twitter", "reddit", "platform", "平台")):
            answer = [_divergence_sentence(f) or f.say("no_platform_answer")]
        elif any(w in q for w in ("argument", "concern", "dominate", "spread", "观点", "担忧", "占上风")):
            answer = _answer_arguments(f)
        else:
            answer = _answer_reaction(f)
        out.append(f"**{question}**\n\n" + "\n\n".join(a for a in answer if a))
    return "\n\n".join(out) or f.say("no_requirement_question")


def _answer_reaction(f: Facts) -> list[str]:
    say = f.say
    stances = f.background.get("stances") or {}
    largest = max(sorted(s for s in stances if s), key=lambda s: stances[s], default="")
    out = [say("largest", stance=say.stance(largest), sizes=_camp_sizes(f.background, say)) if largest else ""]
    shifts = (f.camps.get("stance_shifts") or [])
    if shifts:
        out.append(say("moved_after", round=f.pivot, shifts=say.listing(
            [say("moved_agent", name=s["name"], agent=s["agent"], stated=say.stance(s["stated_stance"]),
                 now=say.stance(s["now_speaks_for"]), round=s["from_round"]) for s in shifts])))
    return out


def _answer_arguments(f: Facts) -> list[str]:
    arguments, say = f.camps.get("arguments") or {}, f.say
    out = []
    row = f.at(f.pivot)
    if row:
        out.append(say("spread", round=f.pivot, total=row["total"]))
    stances = f.background.get("stances") or {}
    for stance in sorted(arguments, key=lambda s: (-stances.get(s, 0), s)):
        top = arguments[stance][0]
        out.append(say("dominant", stance=say.stance(stance), statements=say.count(top["statements"], "statement"))
                   + f"\n\n> \"{top['example']['content']}\" ({top['example']['ref']})")
    return out


WRITERS = {"timeline": _timeline, "camps": _camps, "platforms": _platforms, "drivers": _drivers, "answers": _answers}
