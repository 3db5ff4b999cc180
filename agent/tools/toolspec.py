"""The report tools as the model sees them: names, descriptions, JSON schemas (docs/architecture.md#tools).

Pure data. `agent/tools/simulation_tools.py` implements them against the simulation model.
"""

from __future__ import annotations

from typing import Any

TOOL_SPECS: dict[str, dict[str, Any]] = {
    "insight_forge": {
        "description": "Deep analysis of one question: splits it into sub-questions, searches each, profiles "
        "the agents involved (stance, activity) and the interaction chains between them (reposts, quotes, "
        "comments, likes, follows).",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
    "panorama_search": {
        "description": "The whole timeline of a topic across rounds: current statements separated from "
        "earlier ones that later statements or undone actions superseded.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string"}, "include_expired": {"type": "boolean", "default": True}},
            "required": ["query"]},
    },
    "quick_search": {
        "description": "Ranked keyword search over posts, comments, quotes and profiles of this simulation.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string"}, "limit": {"type": "integer", "default": 10, "minimum": 1, "maximum": 50}},
            "required": ["query"]},
    },
    "simulation_analytics": {
        "description": "Actions per round per platform, turning points (rounds with at least 2x the rolling "
        "mean volume), Twitter/Reddit divergence, the most active and most engaged-with agents, the action mix, and "
        "the camps: each stance's most repeated arguments and the agents whose statements changed sides.",
        "parameters": {"type": "object", "properties": {}},
    },
    "interview_agents": {
        "description": "Interview simulated agents about a topic (live when the simulation environment is "
        "alive, otherwise in persona from their profile and posts).",
        "parameters": {"type": "object", "properties": {
            "interview_topic": {"type": "string"},
            "max_agents": {"type": "integer", "default": 5, "minimum": 1, "maximum": 10}},
            "required": ["interview_topic"]},
    },
    "agent_profile": {
        "description": "One agent's actions per round, side change, posts and interactions. agent: an id or name.",
        "parameters": {"type": "object", "properties": {"agent": {"type": "string"}}, "required": ["agent"]},
    },
    "coalitions": {
        "description": "Agents who follow each other and share a stance: size, members, round formed.",
        "parameters": {"type": "object", "properties": {"min_size": {"type": "integer"}}},
    },
    "calculate": {
        "description": "Arithmetic for the ratios you state: numbers, + - * / ** %, parentheses. Not evidence.",
        "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]},
    },
}

REPORT_TOOLS = ("insight_forge", "panorama_search", "quick_search", "simulation_analytics", "interview_agents",
                "agent_profile", "coalitions", "calculate")
UNCOUNTED_TOOLS = frozenset({"calculate"})  # cheap, no evidence: never counted toward [agent] min_tool_calls


def counts_as_evidence(tool: str) -> bool:
    """Whether a call of `tool` counts toward `[agent] min_tool_calls` (reading the simulation does)."""
    return tool not in UNCOUNTED_TOOLS


def openai_tools(names: list[str]) -> list[dict[str, Any]]:
    """The `tools` argument of a chat completion for these tool names."""
    return [{"type": "function", "function": {"name": n, **TOOL_SPECS[n]}} for n in names]


def text_protocol_catalogue(names: list[str]) -> str:
    """How the text protocol describes the tools inside the system prompt."""
    lines = []
    for name in names:
        spec = TOOL_SPECS[name]
        params = ", ".join(spec["parameters"]["properties"]) or "no parameters"
        lines.append(f"- {name}({params}): {spec['description']}")
    return "\n".join(lines)
