"""Parse the lines of one read (a chunk) at once (docs/architecture.md#ingest).

A run writes thousands of plain action lines for every other one: each is parsed and checked in one loop, and
its stored text made there (`Acted`'s, the line with its lead in front), so that the append takes the chunk's
texts as they are and makes events only for the few other lines. What that loop does not take, `parse_line`
reads, as before. The checks a line's bytes need (integers past 64 bits, nesting) are made once a chunk. No I/O.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import orjson

from simreportd.events.models import Platform

from .parse import MAX_ACTION_TYPE, Bad, Parsed, parse_event, parse_line, plain_action
from .tail import Line
from .values import has_long_integer, may_nest_deeper

BOM = b"\xef\xbb\xbf"
OURS = frozenset({"simulation_id", "generation", "platform", "source"})  # what ingest puts in front of a line


class Chunk(NamedTuple):
    """A read's lines parsed: `parsed`, one a line; `texts`, the stored text of each plain action (`lead` in front
    of its own keys) and None for every other line, whose indexes are `others` (`texts` None: not made); `seeded`,
    whether an action is a post of round 0 (seeds to plan); `top`, the highest round of the plain actions; `mutes`,
    the index and agent of each plain MUTE; `light`, whether each plain action but the last is `TAKEN` in `parsed`
    (its fields not kept)."""

    parsed: list[Parsed | Bad]
    texts: list[str | None] | None
    lead: bytes | None
    others: list[int]
    seeded: bool
    top: int
    mutes: list[tuple[int, int]]
    light: bool = False
    refused: bool = False  # a line of it is refused


# What `parsed` holds for a plain action of a light chunk: its text is all the append needs. Its fields are not
# kept because thousands of parsed lines held until the chunk ends cost more than their parse (the memory
# they take is no longer in the cache when the next is parsed); a read of `fields` finds nothing.
TAKEN = Parsed("taken", "twitter", {})


def lead_of(generation: int, platform: str) -> str:
    """The text every stored action of `platform` in `generation` starts with, up to the line's own keys."""
    return f'{{"generation":{generation},"platform":"{platform}",'


def raw_line(line: Line) -> bytes:
    """A line's bytes without the byte order mark that may open a file."""
    return line.raw[len(BOM):] if line.offset == 0 and line.raw.startswith(BOM) else line.raw


def parse_lines(lines: list[Line], platform: Platform | None) -> list[Parsed | Bad]:
    """Each line parsed (a UTF-8 byte order mark at the start of a file is not part of its first line). Lines
    refused for the same reason share one `Bad`: a read of garbage costs its lines, not a reason each."""
    return parse_chunk(lines, platform).parsed


def parse_chunk(lines: list[Line], platform: Platform | None, lead: bytes | None = None, light: bool = False,
                joined: bytes | None = None) -> Chunk:
    """`parse_lines`, and with `lead` (a folder's platform) each plain action's stored text; `light`: keep no
    plain action's fields but the last's, unless a line is a seed or is refused (their plans read every line).
    `joined`: the lines' raws joined by line ends, as the read cut them (`tail.read_chunk`)."""
    chunk = b"\n".join([line.raw for line in lines]) if joined is None else joined
    if platform is None or has_long_integer(chunk):
        return _made_one_by_one(_parse_each(lines, platform, plain=False))
    if may_nest_deeper(chunk):
        return _made_one_by_one(_parse_each(lines, platform, plain=True))
    del chunk
    made = _parse_plain(lines, platform, lead, light and lead is not None)
    return _parse_plain(lines, platform, lead, False) if made.light and (made.seeded or made.refused) else made


def _made_one_by_one(parsed: list[Parsed | Bad]) -> Chunk:
    return Chunk(parsed, None, None, [], any(map(_is_seed, parsed)), -1, [])


def _is_seed(item: Parsed | Bad) -> bool:
    return type(item) is Parsed and item.kind == "action" and item.fields["round"] == 0 \
        and item.fields["action_type"] == "CREATE_POST"


def _parse_each(lines: list[Line], platform: Platform | None, plain: bool) -> list[Parsed | Bad]:
    """`parse_lines` a line at a time, `plain_action` first if `plain` (no line of the chunk has a long integer)."""
    out: list[Parsed | Bad] = []
    reasons: dict[str, Bad] = {}
    for line in lines:
        raw = raw_line(line)
        item = (plain and platform is not None and not line.too_long and plain_action(raw, platform)) \
            or _parse_one(line, raw, platform)
        out.append(reasons.setdefault(item.reason, item) if isinstance(item, Bad) else item)
    return out


def _parse_one(line: Line, raw: bytes, platform: Platform | None) -> Parsed | Bad:
    if line.too_long:
        return Bad(f"line longer than the limit ({line.end - line.offset - 1} bytes)")
    return parse_line(raw, platform)


def _parse_plain(lines: list[Line], platform: Platform, lead: bytes | None, light: bool) -> Chunk:
    """`parse_chunk` of a chunk with no long integer and no line nested too deep (checked on the chunk): what
    `plain_action` accepts, taken in one loop with its checks in line (no call or model a line: the loop runs
    for every line a run writes), and its text made; the other lines by `parse_line`."""
    out: list[Parsed | Bad] = []
    texts: list[str | None] = []
    others: list[int] = []
    mutes: list[tuple[int, int]] = []
    reasons: dict[str, Bad] = {}
    loads, refused, new, most = orjson.loads, orjson.JSONDecodeError, tuple.__new__, MAX_ACTION_TYPE
    seeded, top, last = False, -1, len(lines) - 1
    for line in lines:
        raw = line[2]
        if not line[3]:  # too long: its raw is an excerpt
            try:
                obj: Any = loads(raw)
            except refused:
                obj = None
            if type(obj) is dict:  # ints here have fewer than 19 digits: 64-bit
                round_no, agent, kind = obj.get("round"), obj.get("agent_id"), obj.get("action_type")
                if type(round_no) is int and type(agent) is int and round_no >= 0 and agent >= 0 \
                        and type(kind) is str and 0 < len(kind) <= most and kind.isupper() \
                        and type(obj.get("action_args")) is dict and "event_type" not in obj:
                    if round_no == 0 and kind == "CREATE_POST":
                        seeded = True
                    if lead is not None and raw[0] == 123 and "platform" not in obj and "source" not in obj \
                            and "generation" not in obj and "simulation_id" not in obj:
                        texts.append(raw.replace(b"{", lead, 1).decode())  # the "{" (123) opening the line
                        top = round_no if round_no > top else top
                        if kind == "MUTE":
                            mutes.append((len(out), agent))
                        if light and len(out) != last:
                            out.append(TAKEN)
                            continue
                    else:
                        others.append(len(out))
                        texts.append(None)
                    out.append(new(Parsed, ("action", platform, obj)))
                    continue
                if "event_type" in obj:  # a round's start or end: read already, as `parse_line` would read it
                    item = parse_event(obj, platform)
                    others.append(len(out))
                    texts.append(None)
                    out.append(reasons.setdefault(item.reason, item) if type(item) is Bad else item)
                    continue
        item = _parse_one(line, raw_line(line), platform)
        seeded = seeded or _is_seed(item)
        others.append(len(out))
        texts.append(None)
        out.append(reasons.setdefault(item.reason, item) if type(item) is Bad else item)
    return Chunk(out, texts if lead is not None else None, lead, others, seeded, top, mutes, light, bool(reasons))
