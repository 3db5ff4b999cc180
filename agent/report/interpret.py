"""Read a model's reply: tool calls, final answer, outline JSON, and the guards of docs/formats.md#upstream-failure-modes.

Pure text handling, tolerant of what real servers send: `<think>` blocks, code fences,
arguments as strings, tool calls written as text by models that were given native tools.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from simreportd.events.models import OutlineSection, ToolCallRequest

from .prompts import ECHOES

THINK = re.compile(r"<think>.*?(</think>|$)", re.S | re.I)
TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(</tool_call>|$)", re.S)
FINAL = re.compile(r"^\s*\**Final Answer\**\s*:\s*", re.M | re.I)
OBSERVATION = re.compile(r"(^\s*\**Observation\**\s*:|<tool_result|<observation)", re.M | re.I)
HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.M)
FENCE = re.compile(r"```[\w-]*[ \t]*\n?(.*?)```", re.S)
MARKUP = re.compile(r"</?\s*(simulation_data|tool_result|tool_call|tool_response|observation|think|function[\w=\".-]*)"
                    r"\b[^>]*>", re.I)
RAW_CALL = re.compile(r'<tool_call>|"tool_calls?"\s*:|^\s*\{\s*"(name|tool)"\s*:\s*"\w+"\s*,\s*"(arguments|parameters)"',
                      re.S | re.M)


@dataclass(frozen=True)
class Reply:
    """What a reply asks for, after the guards ran."""

    thought: str
    tool_calls: list[ToolCallRequest]
    final: str | None
    stripped_observation: bool


def read_reply(content: str, native_calls: list[ToolCallRequest], call_id: str, protocol: str) -> Reply:
    """Split a reply into thought, tool calls and final answer; strip self-written observations."""
    text = THINK.sub("", content or "")
    text, stripped = strip_observations(text)
    text_calls, text = extract_text_tool_calls(text, call_id)
    json_calls, text = extract_json_tool_calls(text, call_id, len(text_calls))
    calls = list(native_calls) + text_calls + json_calls
    match = FINAL.search(text)
    if match:
        return Reply(text[: match.start()].strip(), calls, text[match.end():].strip(), stripped)
    if protocol == "native" and not calls and text.strip():
        return Reply("", calls, text.strip(), stripped)  # native models answer without a marker
    return Reply(text.strip(), calls, None, stripped)


def strip_observations(text: str) -> tuple[str, bool]:
    """Cut everything from the first observation the model wrote itself."""
    match = OBSERVATION.search(text)
    return (text[: match.start()], True) if match else (text, False)


def extract_text_tool_calls(text: str, call_id: str) -> tuple[list[ToolCallRequest], str]:
    """`<tool_call>{"name": ..., "parameters": {...}}</tool_call>` blocks, and the text without them."""
    calls = []
    for n, match in enumerate(TOOL_CALL.finditer(text), 1):
        try:
            obj = json.loads(match.group(1))
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("name"), str):
            args = obj.get("parameters", obj.get("arguments", {}))
            calls.append(ToolCallRequest(id=f"{call_id}-t{n}", name=obj["name"], arguments=coerce_arguments(args)))
    return calls, TOOL_CALL.sub("", text)


def extract_json_tool_calls(text: str, call_id: str, numbered: int = 0) -> tuple[list[ToolCallRequest], str]:
    """Tool calls written as JSON, fenced or bare: `{"name": ..., "arguments"|"parameters": {...}}`."""
    calls: list[ToolCallRequest] = []
    spans: list[tuple[int, int]] = []
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            obj, end = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if _is_call(obj):
            calls.append(ToolCallRequest(id=f"{call_id}-t{numbered + len(calls) + 1}", name=obj["name"],
                                         arguments=coerce_arguments(obj.get("arguments", obj.get("parameters")))))
            spans.append((start, end))
        start = text.find("{", end)
    for a, b in reversed(spans):
        text = text[:a] + text[b:]
    return calls, FENCE.sub(lambda m: m.group(0) if m.group(1).strip() else "", text) if calls else text


def _is_call(obj: object) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("name"), str) and bool(obj["name"].strip()) \
        and ("arguments" in obj or "parameters" in obj)


def coerce_arguments(args: object) -> dict[str, Any]:
    """Arguments arrive as a dict, a JSON string, or junk; always return a dict."""
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            return {"_unparsed": args}
    return args if isinstance(args, dict) else {}


def is_raw_tool_call(text: str) -> bool:
    """True when a would-be section is really an unexecuted tool call."""
    return bool(RAW_CALL.search(text))


def clean_body(text: str) -> str:
    """A section body without headings (they become bold lines) and without surrounding space."""
    return HEADING.sub(lambda m: f"**{m.group(1).strip('*# ')}**", text).strip()


def strip_echoes(text: str, echoes: tuple[str, ...] = ECHOES) -> tuple[str, bool]:
    """The text without lines that repeat our own instructions (`echoes`), stray protocol tags or answer markers."""
    cleaned = MARKUP.sub("", FINAL.sub("", text))
    folded = [e.lower() for e in echoes]
    lines = [line for line in cleaned.splitlines() if not any(e in line.lower() for e in folded)]
    result = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return result, result != text.strip()


class Outline(BaseModel):
    model_config = ConfigDict(extra="ignore")
    title: str = Field(min_length=1, max_length=300)
    summary: str = Field(default="", max_length=3000)
    sections: list[OutlineSection] = Field(min_length=2, max_length=5)


def parse_outline(content: str) -> Outline | str:
    """The outline in a reply, or a one-line reason why there is none. No JSON mode needed."""
    text = THINK.sub("", content or "")
    start, end = text.find("{"), text.rfind("}")
    if start == -1 or end <= start:
        return "no JSON object found"
    try:
        return Outline.model_validate_json(text[start:end + 1])
    except ValidationError as exc:
        first = exc.errors()[0]
        return f"{'.'.join(str(p) for p in first['loc']) or 'outline'}: {first['msg']}"
