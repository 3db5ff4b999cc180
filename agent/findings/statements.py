"""The statements of each kind of section, one writer per kind: each states only what the tools returned.

The offline writer's sections are these; guided mode states them under "From the data" whatever the model writes.
"""

from __future__ import annotations

from collections.abc import Mapping

from simreportd.events.base import Platform

from ..tools.tool_answers import Chain, Statement
from .facts import Facts, camp_sizes, cap, covered, last_round, questions, quote, spanned, who
from .phrases import ENGLISH, Phrases

PLATFORMS: tuple[Platform, ...] = ("reddit", "twitter")


def largest_camps(stances: Mapping[str, int]) -> list[str]:
    """The camps with the most agents: one, or several when they are tied (a tie is said as a tie)."""
    most = max((n for s, n in stances.items() if s), default=0)
    return sorted(s for s, n in stances.items() if s and n == most) if most else []


def largest_said(stances: Mapping[str, int], say: Phrases, one: str, tied: str, **values: str) -> str:
    """The phrase `one` naming the largest camp, or `tied` naming the camps tied as the largest ('' if none)."""
    largest = largest_camps(stances)
    if len(largest) > 1:
        return say(tied, stances=say.listing([say.stance(s) for s in largest]), **values)
    return say(one, stance=say.stance(largest[0]), **values) if largest else ""


def ran(f: Facts) -> list[Platform]:
    """The platforms the run has, as its context lists them (both when it does not say)."""
    listed = f.background.get("platforms") or {}
    return [p for p in PLATFORMS if p in listed] or list(PLATFORMS)


def timeline(f: Facts) -> str:
    """The timeline section: the totals, the turning points, the pivot against the rounds before it, what was said
    then, and the phases."""
    a, say = f.analytics, f.say
    if not a:
        return say("no_analytics_rounds")
    totals, platforms = a.get("actions_by_platform", {}), ran(f)
    out = [say("recorded", total=a.get("total_actions", 0), twitter=totals.get("twitter", 0),
               reddit=totals.get("reddit", 0), rounds=a.get("rounds", 0)) if len(platforms) > 1 else
           say("recorded_one", total=a.get("total_actions", 0), platform=cap(platforms[0]), rounds=a.get("rounds", 0))]
    points = a.get("turning_points", [])
    for i, p in enumerate(points[:3]):
        first, last = p.get("baseline_rounds") or [p["round"] - 1, p["round"] - 1]
        out.append(say("turning", lead=say("turning_first" if i == 0 else "turning_next"), round=p["round"],
                       volume=p["volume"], ratio=p["ratio"], first=first, last=last, mean=p["rolling_mean"]))
    if not points and f.pivot is not None:
        out.append(say("no_turning"))
    row, before = f.at(f.pivot), f.side(after=False)
    if row and before and f.pivot is not None:
        mean = round(sum(r["total"] for r in before) / spanned(before), 2)
        out.append(say("against_before", round=f.pivot, total=row["total"],
                       ratio=round(row["total"] / mean, 2) if mean else 0, covered=covered(before, say), mean=mean,
                       more=_percent_more(f)))
    if f.event:
        out.append(say("event", round=f.event["round"], description=f.event.get("description", "")))
    elif f.unreached:
        out.append(say("unreached", round=f.unreached["round"], last=last_round(f.rounds[-1])))
    said = list({p["content"]: p for p in reversed(f.posts()) if p["round"] == f.pivot}.values())[::-1][:2]
    if said:
        out.append(say("said_in_round", round=f.pivot) + "\n\n" + "\n\n".join(quote(p, say) for p in said))
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
    platforms = ran(f)
    if len(platforms) == 1:
        return _phases_one(f, platforms[0])
    (tb, nb), (rb, _) = f.means("twitter", False), f.means("reddit", False)
    (ta, na), (ra, _) = f.means("twitter", True), f.means("reddit", True)
    parts = []
    if nb:
        parts.append(f.say("before_means", round=f.pivot, twitter=tb, reddit=rb,
                           covered=covered(f.side(after=False), f.say)))
    if na:
        parts.append(f.say("after_means", round=f.pivot, twitter=ta, reddit=ra,
                           covered=covered(f.side(after=True), f.say)))
    return ("" if f.say.language == "zh" else " ").join(parts)


def _phases_one(f: Facts, platform: Platform) -> str:
    """Mean volume before and after the pivot on the run's only platform."""
    parts = []
    for after, key in ((False, "before_mean_one"), (True, "after_mean_one")):
        mean, n = f.means(platform, after)
        if n:
            parts.append(f.say(key, round=f.pivot, platform=cap(platform), mean=mean, covered=covered(f.side(after), f.say)))
    return ("" if f.say.language == "zh" else " ").join(parts)


def _camps(f: Facts) -> str:
    say, out = f.say, []
    sizes = camp_sizes(f.background, say)
    if sizes:
        out.append(say("split", agents=f.background.get("agents_count", 0), sizes=sizes))
    grouped = f.camps.get("grouped_by") or {}
    if grouped.get("note") and not grouped.get("meaning"):
        out.append(say("by_wording", why=grouped["note"]))
    out += camp_arguments(f)
    forge = (f.seen.get("insight_forge") or [{}])[0]
    agents = forge.get("agents", [])
    if agents:
        out.append(say("forge_agents", agents=say.listing(
            [say("forge_agent", who=who(a), stance=say.stance(a["stance"]), actions=a["actions"]) for a in agents[:5]])))
    out.append(coalitions(f))
    out += _interviews(f)
    return "\n\n".join(p for p in out if p)


def camp_arguments(f: Facts, follow_up: bool = True) -> list[str]:
    """Each camp's most repeated argument (the largest camp first), quoted, and with `follow_up` its next."""
    say, out = f.say, []
    arguments = f.camps.get("arguments") or {}
    stances = f.background.get("stances") or {}
    for stance in sorted(arguments, key=lambda s: (-stances.get(s, 0), s)):
        top = arguments[stance][0]
        ex = top["example"]
        out.append(say("camp_argument", stance=say.stance(stance), statements=say.count(top["statements"], "statement"),
                       authors=say.count(top["authors"], "agent"), name=ex["name"], agent=ex["agent"])
                   + f"\n\n> \"{ex['content']}\" ({ex['ref']})")
        if follow_up and len(arguments[stance]) > 1:
            nxt = arguments[stance][1]
            out.append(say("camp_next", stance=say.stance(stance), statements=say.count(nxt["statements"], "statement"))
                       + f"\n\n> \"{nxt['example']['content']}\" ({nxt['example']['ref']})")
    return out or [say("no_arguments")]


def reacted_to(f: Facts) -> str:
    """The agents others reacted to most (reposts, quotes, comments, likes), with their figures."""
    engaged, say = f.analytics.get("most_engaged_agents", []), f.say
    if not engaged:
        return ""
    return say("reacted_to", agents=say.listing(
        [say("engaged_agent", who=who(x), stance=say.stance(x["stance"]), reactions=x["reactions"],
             shares=x["shares"], comments=x["comments"], likes=x["likes"]) for x in engaged[:3]]))


def coalitions(f: Facts) -> str:
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
                  members=say.listing([who(m) + ")" for m in c["members"]]), round=c["formed_round"])
              for c in found[:3]]
    count = result["coalitions_found"]
    return say("coalitions", count=count, s="s" if count > 1 else "", groups=say("group_sep").join(groups), across=across)


def _interviews(f: Facts) -> list[str]:
    """Every interviewed agent's answer, saying how it was given (live, or in persona)."""
    result, say = (f.seen.get("interview_agents") or [{}])[0], f.say
    items = result.get("interviews", [])
    if not items:
        return []
    out = [say("asked", note=result.get("note", ""))]
    for item in items:
        agent = item["agent"]
        out.append(say("answered", who=who(agent), stance=say.stance(agent["stance"]) or say("no_stance"),
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
    out.append(divergence_sentence(f))
    by_round = [r for r in divergence.get("by_round", []) if r["round"] > 0]
    widest = max(by_round, key=lambda r: (r["value"], -r["round"]), default=None)
    if widest:
        row = next(r for r in f.rounds if r["round"] == widest["round"])
        out.append(say("furthest", rounds=say.rounds(row["round"], last_round(row)), twitter=row["twitter"],
                       reddit=row["reddit"], value=widest["value"]))
    mix = a.get("action_mix", {})
    for platform in sorted(mix):
        out.append(say("mix", platform=cap(platform), actions=", ".join(
            say("mix_item", action=m["action"], count=m["count"]) for m in mix[platform][:3])))
    posts = f.posts()
    after = [p for p in posts if f.pivot is not None and p["round"] is not None and p["round"] > f.pivot]
    for platform in f.loud():
        mine = [p for p in after if p["platform"] == platform]
        if mine:
            out.append(say("still_said", platform=cap(platform), round=f.pivot) + "\n\n" + quote(mine[0], say))
    if posts and not after:
        out.append(quote(posts[0], say))  # nothing said after the pivot was found: what the searches did find
    return "\n\n".join(p for p in out if p)


def divergence_sentence(f: Facts) -> str:
    """Which platform kept arguing after the pivot, by how much, against which baseline."""
    if f.pivot is None:
        return ""
    platforms = ran(f)
    if len(platforms) == 1:
        mean, n = f.means(platforms[0], True)
        return f.say("only_platform", round=f.pivot, platform=cap(platforms[0]), mean=mean,
                     covered=covered(f.side(True), f.say)) if n else ""
    loud, quiet = f.loud()
    (lm, n), (qm, _) = f.means(loud, True), f.means(quiet, True)
    if not n:
        return ""
    ratio = f.say("ratio", ratio=round(lm / qm, 2)) if qm else ""
    return f.say("divergence", round=f.pivot, loud=cap(loud), loud_mean=lm, quiet_mean=qm, quiet=cap(quiet),
                 covered=covered(f.side(True), f.say), ratio=ratio)


def _drivers(f: Facts) -> str:
    a, say = f.analytics, f.say
    out = []
    active = a.get("most_active_agents", [])
    if active:
        out.append(say("most_active", agents=say.listing(
            [say("active_agent", who=who(x), stance=say.stance(x["stance"]), actions=x["actions"], posts=x["posts"])
             for x in active[:5]])))
    engaged = a.get("most_engaged_agents", [])
    if engaged:
        out.append(reacted_to(f))
    out += stance_shifts(f)
    forge = (f.seen.get("insight_forge") or [{}])[0]
    chains = [c for c in forge.get("interaction_chains", []) if c["count"] > 1]
    if chains:
        about = say("chains_about", query=forge["query"]) if forge.get("query") else ""
        out.append(say("chains", about=about, chains="; ".join(chain(c, say) for c in chains[:5])))
    out.append(agent_profile(f))
    posts = [p for p in f.posts() if engaged and p["agent"]["ref"] == engaged[0]["ref"]]
    if posts:
        out.append(say("own_words", name=engaged[0]["name"]) + "\n\n" + quote(posts[0], say))
    return "\n\n".join(out) or say("no_activity")


def chain(c: Chain, say: Phrases = ENGLISH) -> str:
    """`Jonas Zhou (agent:3) reposted the posts of Tariq Kowalski (agent:4) 2 times` (`their own posts`)."""
    verb, noun = say.chain_verb(c["kind"])
    other = f"{c['to_name']} ({c['to']})"
    if c["from"] == c["to"]:
        whom = say("own", noun=noun) if noun else say("themselves")
    else:
        whom = say("of_other", noun=noun, other=other) if noun else other
    return say("chain", source=f"{c['from_name']} ({c['from']})", verb=verb, whom=whom, count=c["count"])


def agent_profile(f: Facts) -> str:
    """The most engaged-with agent's trajectory: when and where they acted, with whom they engaged."""
    p, say = (f.seen.get("agent_profile") or [{}])[0], f.say
    if not p or not p.get("actions"):
        return ""
    a, by = p["agent"], p["by_platform"]
    out = say("profile", who=who(a), actions=p["actions"], twitter=by["twitter"],
              reddit=by["reddit"], active=p["active_rounds"], first=p["first_round"], last=p["last_round"],
              statements=p["statements"])
    gave = [c for c in p.get("engaged_with", []) if c["count"] > 1][:3]
    if gave:
        out += say("engaged_most", others=say.listing(
            [say("engaged_other", name=c["to_name"], ref=c["to"], kind=c["kind"], count=c["count"]) for c in gave]))
    return out


def stance_shifts(f: Facts) -> list[str]:
    """The agents who changed sides, with what they said after: a sentence each for a few, one listing them all
    for more (a sentence each would loop), then the words of the first two."""
    shifts, say = f.camps.get("stance_shifts") or [], f.say
    if not shifts:
        return [say("no_shift")] if f.camps else []
    count = f.camps.get("side_changers")
    cut = "truncated" in f.analytics and (count is None or count > len(shifts))
    agents = say.count(len(shifts) if count is None else count, "agent")
    out = [say("moved", counted=say(("changed_at_least" if count is None else "changed_first") if cut else "changed",
                                    agents=agents))]
    if len(shifts) > SHIFTS_APART:
        out.append(say("shift_list", shifts=say.listing([say(
            "shift_item", name=s["name"], agent=s["agent"], stated=say.stance(s["stated_stance"]), round=s["from_round"],
            n=s["statements_after"], now=say.stance(s["now_speaks_for"])) for s in shifts])))
    listed = len(shifts) > SHIFTS_APART
    for s in shifts[:SHIFTS_QUOTED if listed else SHIFTS_APART]:
        said = say("shift_words", name=s["name"], agent=s["agent"]) if listed else say(
            "shift", name=s["name"], agent=s["agent"], stated=say.stance(s["stated_stance"]), round=s["from_round"],
            n=s["statements_after"], now=say.stance(s["now_speaks_for"]))
        out.append(said + f"\n\n> \"{s['example']['content']}\" ({s['example']['ref']})")
    return out


def _answers(f: Facts) -> str:
    """Each requirement question restated, then answered from the figures and quotes gathered."""
    out = []
    for question in questions(f.requirement):
        q = question.lower()
        if any(w in q for w in ("twitter", "reddit", "platform", "平台")):
            answer = [divergence_sentence(f) or f.say("no_platform_answer")]
        elif any(w in q for w in ("argument", "concern", "dominate", "spread", "观点", "担忧", "占上风")):
            answer = _answer_arguments(f, fastest=any(w in q for w in ("fastest", "spread", "最快", "传播")))
        else:
            answer = _answer_reaction(f, question)
        out.append(f"**{question}**\n\n" + "\n\n".join(a for a in answer if a))
    return "\n\n".join(out) or f.say("no_requirement_question")


def _answer_reaction(f: Facts, question: str) -> list[str]:
    """The camps' sizes, who moved, and what the search for `question` found said in the agents' words."""
    say = f.say
    out = [largest_said(f.background.get("stances") or {}, say, "largest", "tied", sizes=camp_sizes(f.background, say))]
    shifts = (f.camps.get("stance_shifts") or [])
    if shifts:
        out.append(say("moved_after", round=f.pivot, shifts=say.listing(
            [say("moved_agent", name=s["name"], agent=s["agent"], stated=say.stance(s["stated_stance"]),
                 now=say.stance(s["now_speaks_for"]), round=s["from_round"]) for s in shifts])))
    found = _found_for(f, question)
    if found:
        out.append(quote(found, say))
    return out


def _found_for(f: Facts, question: str) -> Statement | None:
    """The first statement the section's search for `question` returned from the pivot on (a reaction is what
    was said once the trigger landed; the same whichever sections ran before: parallel sections must write
    what sequential ones do)."""
    results = [r for r in f.seen.get("quick_search", []) if r.get("query") == question]
    said = [p for r in results for p in r.get("results", [])
            if p.get("kind") in ("post", "quote", "comment") and p.get("content")
            and (f.pivot is None or int(p.get("round") or 0) >= f.pivot)]
    return said[0] if said else None


def _answer_arguments(f: Facts, fastest: bool = False) -> list[str]:
    """Each camp's most made argument with a statement that makes it: a concern answered with a concern; asked
    how fast they spread, the round the debate spread fastest follows them (a round alone answers nothing)."""
    arguments, say = f.camps.get("arguments") or {}, f.say
    out = []
    stances = f.background.get("stances") or {}
    for stance in sorted(arguments, key=lambda s: (-stances.get(s, 0), s)):
        top = arguments[stance][0]
        out.append(say("dominant", stance=say.stance(stance), statements=say.count(top["statements"], "statement"))
                   + f"\n\n> \"{top['example']['content']}\" ({top['example']['ref']})")
    volume = f.volume_at(f.pivot)
    if fastest and volume is not None and out:
        out.append(say("spread", round=f.pivot, total=volume))
    return out


SHIFTS_APART = 3  # side-changers given a sentence each; more are listed in one sentence
SHIFTS_QUOTED = 2  # and then the first two quoted: a third line of the same frame would read as a loop

WRITERS = {"timeline": timeline, "camps": _camps, "platforms": _platforms, "drivers": _drivers, "answers": _answers}
