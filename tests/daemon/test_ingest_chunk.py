"""A chunk of lines taken at once (daemon/ingest/chunk.py) makes the same append, and leaves ingest's fold in the
same state, as the same lines taken one by one."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from simreportd.daemon.ingest.chunk import TAKEN, lead_of, parse_chunk, parse_lines
from simreportd.daemon.ingest.ingest_state import IngestState, _whole, batch_for_lines
from simreportd.daemon.ingest.tail import FileIdentity, Line, read_chunk, read_lines
from simreportd.events.batch import EventBatch

KEY, IDENTITY, META = "twitter/actions.jsonl", FileIdentity(7, 10**6, "h"), {"correlation_id": "ingest-x"}


def action(round_no: int, agent: int, kind: str = "LIKE_POST", **more: Any) -> bytes:
    line = {"round": round_no, "timestamp": "t", "agent_id": agent, "agent_name": "Ünal", "action_type": kind,
            "action_args": {"post_id": 3, "content": "naïve {x}"}, "success": True, **more}
    return json.dumps(line, ensure_ascii=False).encode()


POOL = [
    action(1, 2), action(2, 5, "MUTE"), action(0, 1, "CREATE_POST"), action(3, 4, "like_post"),
    action(4, 4, platform="reddit"), action(5, 1, source={"file": "x"}), action(1, 1, generation=9),
    b'{"event_type": "round_start", "round": 2, "simulated_hour": 9}',
    b'{"event_type": "round_end", "round": 2, "actions_count": 3}',
    b'{"event_type": "simulation_start", "platform": "twitter", "agents_count": 3}',
    b'{"event_type": "simulation_end", "total_rounds": 2, "total_actions": 9}',
    b' ' + action(2, 3), b'not json', b'{"round": 1}', action(2, 2, "\\u0073ource"),
    b'{"round": 1, "agent_id": 1, "action_type": "X", "action_args": {}, "n": 12345678901234567890123}',
]


def as_lines(raws: list[bytes], bom: bool = False) -> list[Line]:
    lines, offset = [], 0
    for i, raw in enumerate(raws):
        raw = (b"\xef\xbb\xbf" + raw) if bom and i == 0 else raw
        lines.append(Line(offset, offset + len(raw) + 1, raw, tail="t" if i == len(raws) - 1 else None))
        offset += len(raw) + 1
    return lines


def both(lines: list[Line], extra: dict[int, dict[str, Any]]) -> tuple[tuple[EventBatch, IngestState], ...]:
    """The batch and the state of the chunk's road, of a light chunk's (no plain action's fields kept) and of the
    line by line one."""
    out = []
    for road in ("whole", "light", "lines"):
        state = IngestState("s", generation=2)
        chunk = None if road == "lines" else parse_chunk(lines, "twitter", lead_of(2, "twitter").encode(),
                                                         light=road == "light")
        parsed = chunk.parsed if chunk else parse_lines(lines, "twitter")
        out.append((batch_for_lines(state, KEY, "twitter", IDENTITY, lines, parsed, frozenset(), extra, META, chunk),
                    state))
    return tuple(out)


def assert_same(lines: list[Line], extra: dict[int, dict[str, Any]] | None = None) -> None:
    (fast, fast_state), (light, light_state), (slow, slow_state) = both(lines, extra or {})
    assert (fast.types, fast.versions, fast.datas) == (slow.types, slow.versions, slow.datas)
    assert (light.types, light.versions, light.datas) == (slow.types, slow.versions, slow.datas)
    assert fast_state == slow_state == light_state


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(POOL), min_size=1, max_size=12), st.booleans(),
       st.dictionaries(st.integers(0, 11), st.just({"content": "from the database"}), max_size=2))
def test_a_chunk_makes_what_its_lines_make_one_by_one(raws: list[bytes], bom: bool,
                                                      extra: dict[int, dict[str, Any]]) -> None:
    lines = as_lines(raws, bom)
    assert_same(lines, {i: args for i, args in extra.items() if i < len(lines)})


def test_a_plain_chunk_is_taken_as_its_texts() -> None:
    raws = [b'{"event_type": "round_start", "round": 1}', *(action(1, i, "MUTE" if i == 3 else "LIKE_POST")
                                                            for i in range(6)), b'{"event_type": "round_end", "round": 1}']
    lines = as_lines(raws)
    chunk = parse_chunk(lines, "twitter", lead_of(2, "twitter").encode())
    state = IngestState("s", generation=2)
    assert chunk.texts is not None and _whole(state, KEY, IDENTITY, "twitter", lines, frozenset(), chunk)
    assert chunk.texts[1] == '{"generation":2,"platform":"twitter",' + raws[1].decode()[1:]
    assert chunk.others == [0, 7] and chunk.mutes == [(4, 3)] and not chunk.seeded
    light = parse_chunk(lines, "twitter", lead_of(2, "twitter").encode(), light=True)
    assert light.light and light.texts == chunk.texts and light.parsed[1] is TAKEN
    assert light.parsed[-1] == chunk.parsed[-1] and light.mutes == chunk.mutes
    assert_same(lines)
    (fast, state), _, _ = both(lines, {})
    assert fast.types == ["RoundStarted", *["AgentActed"] * 6, "RoundEnded"]
    assert state.version == 8 and state.mutes == {"twitter:3": 1} and state.last_round == {"twitter": 1}
    assert state.files[KEY].end == lines[-1].end and state.last_round_end == {"twitter": 1}


def test_a_light_chunk_with_a_seed_or_a_refused_line_keeps_every_line() -> None:
    """Seeds are planned, and a refused line joined into its run, from every line's fields: such a chunk is not
    light, whatever was asked."""
    for odd in (action(0, 1, "CREATE_POST"), b"not json"):
        lines = as_lines([action(1, 2), odd, action(1, 3), action(1, 4)])
        chunk = parse_chunk(lines, "twitter", lead_of(2, "twitter").encode(), light=True)
        assert not chunk.light and TAKEN not in chunk.parsed
        assert chunk == parse_chunk(lines, "twitter", lead_of(2, "twitter").encode())
        assert_same(lines)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from([*POOL, b"", b"x" * 40]), max_size=12), st.sampled_from([b"", b'{"round": 1']),
       st.integers(0, 3), st.booleans())
def test_a_read_gives_its_lines_joined_as_the_chunk_joins_them(raws: list[bytes], partial: bytes, skip: int,
                                                               bom: bool) -> None:
    """`read_chunk`'s bytes are what `parse_chunk` would join (a line past the limit: none), and its lines
    `read_lines`'."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "actions.jsonl"
        path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + b"".join(raw + b"\n" for raw in raws) + partial)
        offset = sum(len(raw) + 1 for raw in raws[:skip]) + (3 if bom and skip else 0) if skip < len(raws) else 0
        lines, joined = read_chunk(path, offset, 64)
        assert lines == read_lines(path, offset, 64)
        if not lines or any(line.too_long for line in lines):
            assert joined is None
        else:
            assert joined == b"\n".join(line.raw for line in lines)
            for light in (False, True):
                assert parse_chunk(lines, "twitter", lead_of(2, "twitter").encode(), light, joined) == \
                    parse_chunk(lines, "twitter", lead_of(2, "twitter").encode(), light)
