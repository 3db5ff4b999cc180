"""Tool results as MiroFish's report panels read them: our JSON answer, written out as text.

MiroFish's frontend (`frontend/src/components/Step4Report.vue`, `parseInsightForge`,
`parsePanorama`, `parseInterview`, `parseQuickSearch`) does not read JSON: it finds fixed
markers in the text its own tools write (`### 【关键事实】`, `**采访主题:**`, `找到 N 条`, ...) and
builds its panels from the lines after them. The agent-log line a MiroFish dashboard reads
therefore carries this text; our events keep the JSON, and our own API and trace show that.

The markers are the interface, so they are kept exactly; everything around them is ours.
A result that is not the JSON object we expect (a bounded result cut to fit, an old event)
is shown as it came: the frontend's default panel prints raw text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

QUOTED = re.compile(r"“([^”]{8,400})”")  # the quotes a persona answer cites, as our interviewer writes them


def tool_text(tool: str, result: str, requirement: str = "") -> str:
    """The text MiroFish's panel for `tool` parses, from our JSON `result` (unchanged for other tools)."""
    render = RENDERERS.get(tool)
    if render is None:
        return result
    try:
        value = json.loads(result)
    except ValueError:
        return result
    if not isinstance(value, dict):
        return result
    return render(value, requirement)


def _statement(item: Any) -> str:
    """One statement on a line: `[ref] Name (round N, platform): text`, quotes and line breaks flattened."""
    if not isinstance(item, dict):
        return _flat(item)
    agent = _dict(item.get("agent"))
    where = ", ".join(str(p) for p in (f"round {item['round']}" if "round" in item else "", item.get("platform"))
                      if p)
    text = _flat(item.get("content", ""))
    return f"[{item.get('ref', '')}] {agent.get('name', '?')}" + (f" ({where})" if where else "") + f": {text}"


def _flat(value: Any) -> str:
    """A value on one line, without the double quotes the panels strip from the ends of a fact."""
    return " ".join(str(value).split()).replace('"', "'")


def _numbered(items: Iterable[str]) -> list[str]:
    return [f"{n}. {text}" for n, text in enumerate(items, 1)]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def quick_search(result: dict[str, Any], requirement: str) -> str:
    found = _list(result.get("results"))
    return "\n".join([f"搜索查询: {_flat(result.get('query', ''))}", f"找到 {len(found)} 条 matching statements", "",
                      "### 相关事实:", *_numbered(_statement(item) for item in found)])


def insight_forge(result: dict[str, Any], requirement: str) -> str:
    questions = [q for q in _list(result.get("sub_questions")) if isinstance(q, dict)]
    evidence = [item for q in questions for item in _list(q.get("evidence"))]
    agents = [a for a in _list(result.get("agents")) if isinstance(a, dict)]
    chains = [c for c in _list(result.get("interaction_chains")) if isinstance(c, dict)]
    lines = [f"分析问题: {_flat(result.get('query', ''))}", f"预测场景: {_flat(requirement) or '-'}", "",
             f"- 相关预测事实: {len(evidence)}", f"- 涉及实体: {len(agents)}", f"- 关系链: {len(chains)}", "",
             "### 分析的子问题", *_numbered(_flat(q.get("question", "")) for q in questions), "",
             "### 【关键事实】 statements found for the sub-questions",
             *_numbered(f'"{_statement(item)}"' for item in evidence), "", "### 【核心实体】"]
    for agent in agents:
        lines += [f"- **{_flat(agent.get('name', '?'))}** ({_flat(agent.get('type') or agent.get('stance') or 'agent')})",
                  f"  摘要: \"{_flat(agent.get('bio', ''))}\"", f"  相关事实: {int(agent.get('actions') or 0)}"]
    lines += ["", "### 【关系链】"]
    lines += [f"- {_flat(c.get('from_name', c.get('from', '?')))} --[{_flat(c.get('kind', ''))} x{c.get('count', 1)}]--> "
              f"{_flat(c.get('to_name', c.get('to', '?')))}" for c in chains]
    return "\n".join(lines)


def panorama_search(result: dict[str, Any], requirement: str) -> str:
    current, earlier = _list(result.get("current_statements")), _list(result.get("superseded_statements"))
    names: dict[str, str] = {}
    for item in (*current, *earlier):
        agent = _dict(item.get("agent")) if isinstance(item, dict) else {}
        if agent.get("name"):
            names.setdefault(str(agent["name"]), str(agent.get("stance") or "agent"))
    return "\n".join([
        f"查询: {_flat(result.get('query', ''))}", f"总节点数: {len(names)}", f"总边数: {int(result.get('matches') or 0)}",
        f"当前有效事实: {len(current)}", f"历史/过期事实: {len(earlier)}", "",
        "### 【当前有效事实】 the latest statements on the topic", *_numbered(_statement(i) for i in current), "",
        "### 【历史/过期事实】 statements later ones superseded or undid", *_numbered(_statement(i) for i in earlier), "",
        "### 【涉及实体】", *[f"- **{_flat(name)}** ({_flat(stance)})" for name, stance in names.items()]])


def interview_agents(result: dict[str, Any], requirement: str) -> str:
    interviews = [i for i in _list(result.get("interviews")) if isinstance(i, dict)]
    questions = [_flat(q) for q in _list(result.get("questions"))]
    lines = [f"**采访主题:** {_flat(result.get('topic', ''))}", f"**采访人数:** {len(interviews)} / {len(interviews)}",
             "", "### 采访对象选择理由"]
    for n, item in enumerate(interviews, 1):
        agent = _dict(item.get("agent"))
        lines.append(f"{n}. **{_flat(agent.get('name', '?'))}（index={item.get('agent_id', '?')}）**："
                     f"{_flat(agent.get('stance') or 'no stated')} stance, among the most active on the topic")
    lines += ["", "---", "### 采访实录"]
    for n, item in enumerate(interviews, 1):
        lines += _interview_block(n, item, questions)
    lines += ["", "### 采访摘要与核心观点", _flat(result.get("note", "")) or f"{len(interviews)} agents answered."]
    return "\n".join(lines)


def _interview_block(n: int, item: dict[str, Any], questions: list[str]) -> list[str]:
    agent = _dict(item.get("agent"))
    answer = str(item.get("answer", ""))
    platform = {"twitter": "【Twitter平台回答】", "reddit": "【Reddit平台回答】"}.get(str(item.get("platform")), "")
    asked = questions or [_flat(item.get("question", ""))]
    quotes = QUOTED.findall(answer)[:3]
    return ["", f"#### 采访 #{n}: {_flat(agent.get('stance') or 'agent')}",
            f"**{_flat(agent.get('name', '?'))}** ({_flat(agent.get('ref', ''))}, {_flat(item.get('mode', ''))})",
            f"_简介: {_flat(agent.get('bio', '') or agent.get('stance', ''))}_", "",
            "**Q:** " + "\n".join(_numbered(asked)), "", f"**A:** {platform}\n{answer.strip()}", "",
            "**关键引言:**", *[f'> "{_flat(q)}"' for q in quotes], "", "---"]


RENDERERS: dict[str, Callable[[dict[str, Any], str], str]] = {
    "quick_search": quick_search, "insight_forge": insight_forge, "panorama_search": panorama_search,
    "interview_agents": interview_agents}
