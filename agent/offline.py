"""The offline writer: a deterministic, data-only stand-in for a language model.

It answers the very requests the runner records, through the same loop: it plans from
the context, calls the tools the prompt offers, and writes each section only from what
those tools returned (real figures, verbatim quotes with their ids). Its output says
that no language model wrote it. No network, no randomness, no clock.
"""

from __future__ import annotations

import json
import re
from typing import Any

from simreportd.events.models import LLMRequested, TokenUsage, ToolCallRequest

from .outline import fallback_outline
from .providers import Completion, estimate_tokens

NOTE = "Written by simreportd's offline writer from the simulation data, without a language model."
DATA_BLOCK = re.compile(r"<simulation_data>\n(.*?)\n</simulation_data>", re.S)
RESULT_BLOCK = re.compile(r'<tool_result name="(\w+)">\n(.*?)\n</tool_result>', re.S)
SECTION_LINE = re.compile(r"^Write section (\d+): (.+?)\. ", re.M)
REPORT_LINE = re.compile(r"^Report: (.+)$", re.M)
QUOTED_REF = re.compile(r'^> ".*" \((\w+:\w+:\w+)\)$', re.M)


class OfflineProvider:
    name = "offline"

    async def complete(self, request: LLMRequested, messages: list[dict[str, Any]], attempt: int) -> Completion:
        content, calls = (_outline(messages) if request.purpose == "outline" else _section(request, messages))
        if request.protocol == "text" and calls:
            content = "".join(f'<tool_call>{json.dumps({"name": c.name, "parameters": c.arguments})}</tool_call>'
                              for c in calls[:1])
            calls = []
        elif request.protocol == "text":
            content = f"Final Answer: {content}"
        prompt = sum(estimate_tokens(str(m.get("content") or "")) for m in messages)
        usage = TokenUsage(prompt_tokens=prompt, completion_tokens=estimate_tokens(content), estimated=True)
        return Completion(content, calls, usage, "tool_calls" if calls else "stop")


def _outline(messages: list[dict[str, Any]]) -> tuple[str, list[ToolCallRequest]]:
    blocks = DATA_BLOCK.findall(messages[-1]["content"])
    context = json.loads(blocks[-1].replace("<\\/simulation_data", "</simulation_data")) if blocks else {}
    title, summary, sections = fallback_outline(context)
    return json.dumps({"title": title, "summary": f"{summary} {NOTE}", "sections": sections}), []


def _observations(messages: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for message in messages:
        for name, body in RESULT_BLOCK.findall(str(message.get("content") or "")):
            try:
                found.setdefault(name, []).append(json.loads(body.replace("<\\/tool_result", "</tool_result")))
            except ValueError:
                continue
    return found


def _section(request: LLMRequested, messages: list[dict[str, Any]]) -> tuple[str, list[ToolCallRequest]]:
    opening = next(m["content"] for m in messages if m["role"] == "user")
    match = SECTION_LINE.search(opening)
    title = match.group(2) if match else ""
    report = REPORT_LINE.search(opening)
    topic = (report.group(1).split(":")[0] if report else title).strip()
    seen = _observations(messages)
    done = sum(len(v) for v in seen.values())
    plan = _plan(title, topic)
    if request.tools and done < len(plan):
        name, args = plan[done]
        return "", [ToolCallRequest(id=f"{request.call_id}-t1", name=name, arguments=args)]
    quoted_before = set(QUOTED_REF.findall(opening))
    blocks = DATA_BLOCK.findall(opening)
    background = json.loads(blocks[1].replace("<\\/simulation_data", "</simulation_data")) if len(blocks) > 1 else {}
    seen["_background"] = [background]
    return _write(title, seen, quoted_before), []


def _plan(title: str, topic: str) -> list[tuple[str, dict[str, Any]]]:
    """Which tools a section of this kind consults, in order (always 4: within the default 3..5)."""
    t = title.lower()
    if "camp" in t or "argument" in t:
        return [("quick_search", {"query": topic, "limit": 10}), ("insight_forge", {"query": topic}),
                ("panorama_search", {"query": topic}), ("interview_agents", {"interview_topic": topic,
                                                                              "max_agents": 4})]
    if "twitter" in t or "reddit" in t or "platform" in t:
        return [("simulation_analytics", {}), ("panorama_search", {"query": topic}),
                ("quick_search", {"query": topic, "limit": 10}), ("insight_forge", {"query": topic})]
    if "who" in t or "drove" in t or "agent" in t:
        return [("simulation_analytics", {}), ("insight_forge", {"query": topic}),
                ("quick_search", {"query": topic, "limit": 10}), ("panorama_search", {"query": topic})]
    return [("simulation_analytics", {}), ("panorama_search", {"query": topic}),
            ("quick_search", {"query": topic, "limit": 10}), ("insight_forge", {"query": topic})]


def _write(title: str, seen: dict[str, list[dict[str, Any]]], quoted_before: set[str]) -> str:
    """The section text; posts already quoted by earlier sections are used only when nothing else fits."""
    seen = {**seen, "_quoted_before": [{"refs": sorted(quoted_before)}]}
    t = title.lower()
    analytics = (seen.get("simulation_analytics") or [{}])[0]
    if "camp" in t or "argument" in t:
        paragraphs = _camps(seen)
    elif "twitter" in t or "reddit" in t or "platform" in t:
        paragraphs = _platforms(analytics, seen)
    elif "who" in t or "drove" in t or "agent" in t:
        paragraphs = _drivers(analytics, seen)
    else:
        paragraphs = _timeline(analytics, seen)
    paragraphs.append(f"_{NOTE}_")
    return "\n\n".join(p for p in paragraphs if p)


def _quote(post: dict[str, Any]) -> str:
    agent = post["agent"]
    who = f"{agent['name'] or agent['ref']} ({agent['ref']}, {agent['stance'] or 'no stated stance'}, round {post['round']})"
    return f"{who} wrote on {post['platform'].capitalize()}:\n\n> \"{post['content']}\" ({post['ref']})"


def _posts(seen: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Every post the tools returned, once each, in the order the tools ranked them."""
    posts: dict[str, dict[str, Any]] = {}
    for result in seen.get("quick_search", []):
        for post in result.get("results", []):
            posts.setdefault(post["ref"], post)
    for result in seen.get("insight_forge", []):
        for finding in result.get("sub_questions", []):
            for post in finding.get("evidence", []):
                posts.setdefault(post["ref"], post)
    for result in seen.get("panorama_search", []):
        for post in result.get("current_statements", []):
            posts.setdefault(post["ref"], post)
    before = set((seen.get("_quoted_before") or [{}])[0].get("refs", []))
    usable = [p for p in posts.values() if p.get("kind") in ("post", "quote", "comment") and p.get("content")]
    return sorted(usable, key=lambda p: p["ref"] in before)  # stable: fresh quotes first, tool order kept


def _timeline(analytics: dict[str, Any], seen: dict[str, list[dict[str, Any]]]) -> list[str]:
    if not analytics:
        return ["The analytics tool returned nothing, so the round-by-round picture cannot be drawn."]
    rounds = analytics.get("per_round", [])
    totals = analytics.get("actions_by_platform", {})
    out = [f"The simulation recorded {analytics.get('total_actions', 0)} actions over {analytics.get('rounds', 0)} "
           f"rounds plus the seed posts of round 0: {totals.get('twitter', 0)} on Twitter and "
           f"{totals.get('reddit', 0)} on Reddit."]
    busiest = analytics.get("busiest_round")
    points = analytics.get("turning_points", [])
    if points:
        described = "; ".join(f"round {p['round']} with {p['volume']} actions, {p['ratio']}x the mean of the "
                              f"rounds before it ({p['rolling_mean']})" for p in points[:3])
        out.append(f"Volume did not grow evenly. The turning points were {described}.")
    elif busiest:
        out.append(f"No round reached twice the rolling mean; the busiest was round {busiest['round']} "
                   f"with {busiest['total']} actions.")
    spike = points[0]["round"] if points else (busiest["round"] if busiest else None)
    background = (seen.get("_background") or [{}])[0]
    events = [e for e in background.get("scheduled_events", []) if e.get("round") == spike]
    if events:
        out.append(f"Round {spike} is when the scheduled event of the scenario landed: "
                   f"\u201c{events[0].get('description', '')}\u201d")
    posts = [p for p in _posts(seen) if spike is not None and p["round"] == spike]
    posts += [t["first"] for r in seen.get("panorama_search", []) for t in r.get("timeline", [])
              if t["round"] == spike and t["first"]["ref"] not in {p["ref"] for p in posts}]
    if posts:
        out.append(f"What was being said in round {spike}:\n\n" + "\n\n".join(_quote(p) for p in posts[:2]))
    after = [r for r in rounds if spike is not None and r["round"] > spike]
    if after:
        spanned = sum(r.get("last_round", r["round"]) - r["round"] + 1 for r in after)  # rows may sum spans
        out.append(f"After round {spike} activity averaged {sum(r['total'] for r in after) / spanned:.1f} actions "
                   f"per round across {spanned} rounds.")
    return out


def _camps(seen: dict[str, list[dict[str, Any]]]) -> list[str]:
    posts = _posts(seen)
    by_stance: dict[str, list[dict[str, Any]]] = {}
    for post in posts:
        by_stance.setdefault(post["agent"]["stance"] or "unstated", []).append(post)
    if not by_stance:
        return ["The searches found no statements on this topic, so no camp can be described from evidence."]
    counts = ", ".join(f"{len(v)} from {k} agents" for k, v in sorted(by_stance.items(), key=lambda kv: (-len(kv[1]), kv[0])))
    out = [f"The searches returned {len(posts)} distinct statements on the topic: {counts}."]
    for stance, items in sorted(by_stance.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        out.append(f"The {stance} camp:\n\n" + _quote(items[0]))
    forge = (seen.get("insight_forge") or [{}])[0]
    agents = forge.get("agents", [])
    if agents:
        listed = ", ".join(f"{a['name']} ({a['ref']}, {a['stance']}, {a['actions']} actions)" for a in agents[:5])
        out.append(f"The agents behind these statements include {listed}.")
    out.extend(_interviews(seen))
    return out


def _interviews(seen: dict[str, list[dict[str, Any]]]) -> list[str]:
    """What the interviewed agents said, with how they answered (live, or in persona)."""
    result = (seen.get("interview_agents") or [{}])[0]
    items = result.get("interviews", [])
    if not items:
        return []
    out = [f"Asked directly ({result.get('note', '')}), {len(items)} agents answered:"]
    for item in items[:3]:
        agent = item["agent"]
        out.append(f"{agent['name']} ({agent['ref']}, {agent['stance'] or 'no stated stance'}, {item['mode']}):\n\n"
                   f"> {item['answer']}")
    return out


def _platforms(analytics: dict[str, Any], seen: dict[str, list[dict[str, Any]]]) -> list[str]:
    if not analytics:
        return ["The analytics tool returned nothing, so the platforms cannot be compared."]
    divergence = analytics.get("divergence", {})
    by_round = [r for r in divergence.get("by_round", []) if r["round"] > 0]
    widest = max(by_round, key=lambda r: (r["value"], -r["round"]), default=None)
    totals = analytics.get("actions_by_platform", {})
    out = [f"Overall divergence between the platforms was {divergence.get('overall', 0)} "
           f"(|Twitter - Reddit| / total: {totals.get('twitter', 0)} against {totals.get('reddit', 0)} actions)."]
    if widest:
        row = next(r for r in analytics["per_round"] if r["round"] == widest["round"])
        out.append(f"The platforms were furthest apart in round {widest['round']} (divergence {widest['value']}: "
                   f"{row['twitter']} actions on Twitter, {row['reddit']} on Reddit).")
    points = analytics.get("turning_points", [])
    if points:
        out.append(_before_after(analytics["per_round"], points[0]["round"]))
    mix = analytics.get("action_mix", {})
    for platform in sorted(mix):
        out.append(f"On {platform.capitalize()} the most common actions were "
                   + ", ".join(f"{m['action']} ({m['count']})" for m in mix[platform][:3]) + ".")
    posts = _posts(seen)
    for platform in ("twitter", "reddit"):
        mine = [p for p in posts if p["platform"] == platform]
        if mine:
            out.append(_quote(mine[0]))
    return out


def _before_after(per_round: list[dict[str, Any]], pivot: int) -> str:
    """Mean actions per round on each platform before and after the first turning point."""
    def mean(rows: list[dict[str, Any]], platform: str) -> float:
        return sum(r[platform] for r in rows) / len(rows) if rows else 0.0
    before = [r for r in per_round if 0 < r["round"] < pivot]
    after = [r for r in per_round if r["round"] > pivot]
    return (f"Before the turning point in round {pivot}, Twitter averaged {mean(before, 'twitter'):.1f} actions "
            f"per round and Reddit {mean(before, 'reddit'):.1f}; after it, Twitter averaged "
            f"{mean(after, 'twitter'):.1f} and Reddit {mean(after, 'reddit'):.1f}.")


def _drivers(analytics: dict[str, Any], seen: dict[str, list[dict[str, Any]]]) -> list[str]:
    active = analytics.get("most_active_agents", [])
    out = []
    if active:
        out.append("The most active agents were " + ", ".join(
            f"{a['name']} ({a['ref']}, {a['stance']}: {a['actions']} actions, {a['posts']} posts)" for a in active[:5])
            + ".")
    engaged = analytics.get("most_engaged_agents", [])
    if engaged:
        out.append("Others reacted most to " + ", ".join(
            f"{a['name']} ({a['ref']}, {a['stance']}: {a['reactions']} reactions, of which {a['shares']} reposts "
            f"or quotes, {a['comments']} comments and {a['likes']} likes)" for a in engaged[:3]) + ".")
    forge = (seen.get("insight_forge") or [{}])[0]
    chains = [c for c in forge.get("interaction_chains", []) if c["count"] > 1]
    if chains:
        out.append("The strongest interaction chains: " + "; ".join(
            f"{c['from_name']} ({c['from']}) {c['kind']} {c['to_name']} ({c['to']}) x{c['count']}"
            for c in chains[:5]) + ".")
    posts = [p for p in _posts(seen) if active and p["agent"]["ref"] == active[0]["ref"]]
    if posts:
        out.append(f"In {active[0]['name']}'s own words:\n\n" + _quote(posts[0]))
    return out or ["The tools returned no activity data for this simulation."]
