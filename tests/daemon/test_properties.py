"""Property tests (docs/architecture.md#untrusted-input): whatever a line, a profile or a config holds, ingest never raises and
every event it makes can be stored and folded."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from simreportd.daemon.config import load_config
from simreportd.daemon.ingest import values as checked
from simreportd.daemon.ingest.folder import read_setup
from simreportd.daemon.ingest.ingest_state import IngestState, events_for_lines, parse_lines
from simreportd.daemon.ingest.parse import Parsed, parse_line, plain_action
from simreportd.daemon.ingest.tail import FileIdentity, Line
from simreportd.errors import ConfigError
from simreportd.events.codec import Encoded, Recorded, decode, encode
from simreportd.events.models import (
    AgentActed,
    DomainEvent,
    IngestRejected,
    SimulationDiscovered,
    acted_action,
    acted_fields,
)
from simreportd.projections.simulation import SimulationModel

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

text = st.text(st.characters(codec=None, categories=None), max_size=20) | st.sampled_from(["s\ud800", "\udfff", ""])
scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | text)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
                      max_leaves=30)
deep = st.integers(1, 400).map(lambda n: '{"a":' * n + "1" + "}" * n)
GOOD = {"round": 1, "timestamp": "t", "agent_id": 1, "agent_name": "A", "action_type": "CREATE_POST",
        "action_args": {"content": "x"}, "result": None, "success": True}
KEYS = st.sampled_from([*GOOD, "event_type", "platform", "simulated_hour", "total_rounds", "post_id"])
EVENT_TYPES = st.sampled_from(["simulation_start", "round_start", "round_end", "simulation_end"])


def dumps(value: Any) -> bytes:
    """JSON as a hostile writer could produce it: NaN, huge ints and escaped lone surrogates included."""
    return json.dumps(value, allow_nan=True).encode()


hostile_lines = st.one_of(
    st.binary(max_size=200),
    st.builds(lambda changes: dumps({**GOOD, **changes}), st.dictionaries(KEYS, values, max_size=4)),
    st.builds(lambda kind, changes: dumps({"event_type": kind, **changes}), EVENT_TYPES,
              st.dictionaries(KEYS, values, max_size=4)),
    deep.map(lambda nested: dumps(GOOD).replace(b'{"content": "x"}', nested.encode())),
    st.integers(1, 6000).map(lambda n: dumps(GOOD).replace(b'"round": 1', b'"round": ' + b"9" * n)),
)


def fold(events: list[DomainEvent | Encoded]) -> None:
    """Encode and fold events into a fresh simulation model, as the store and the runner would."""
    model, conn = SimulationModel(), sqlite3.connect(":memory:")
    conn.executescript(model.schema)
    for position, event in enumerate(events, 1):
        if event.type_name not in model.types:
            continue
        recorded = Recorded(position, "simulation-p", position, event.type_name, event.SCHEMA_VERSION, str(position),
                            "2026-01-01T00:00:00Z", encode(event))
        for sql, params in model.apply(recorded):
            conn.execute(sql, params)
    conn.close()


@PROPERTY
@given(st.lists(hostile_lines, min_size=1, max_size=5))
def test_any_line_becomes_an_event_that_is_stored_and_folded(raws: list[bytes]) -> None:
    state = IngestState("p")
    discovered = SimulationDiscovered(simulation_id="p", generation=1, folder="/p")
    state.apply(discovered)
    lines, offset = [], 0
    for raw in raws:
        raw = raw.replace(b"\n", b" ")
        lines.append(Line(offset, offset + len(raw) + 1, raw))
        offset += len(raw) + 1
    events = events_for_lines(state, "twitter/actions.jsonl", "twitter", FileIdentity(1, offset, "h"), lines)
    accounted = sum(e.lines if isinstance(e, IngestRejected) else 1 for e in events)  # a run of bad lines: one
    assert accounted == len(raws)  # event, counting them all
    fold([discovered, *events])


@PROPERTY
@given(st.lists(hostile_lines, min_size=1, max_size=5))
@example([b'{"round": 0, "agent_id": 0, "action_type": "like_post", "platform": null}'])  # our key, no args, lower
@example([b'{"event_type":"round_start","round":0}'])  # a round's event is written as text too: not an action
def test_an_action_is_stored_as_its_line_and_read_into_its_model(raws: list[bytes]) -> None:
    """Ingest stores an action's line without building its model (docs/events.md#agent-actions): the line's
    keys and values, ours in front; the model must read every one of them, as the fold reads it."""
    state = IngestState("p")
    state.apply(SimulationDiscovered(simulation_id="p", generation=1, folder="/p"))
    lines = [Line(i * 1000, i * 1000 + 999, raw.replace(b"\n", b" "), tail="t" if i else None)
             for i, raw in enumerate([dumps(GOOD), *raws])]
    made = events_for_lines(state, "twitter/actions.jsonl", "twitter", FileIdentity(1, 9000, "h"), lines)
    actions = [event for event in made if isinstance(event, Encoded) and event.type_name == "AgentActed"]  # not a round's
    assert actions, "the good line is an action"
    action_lines = [line for line, item in zip(lines, parse_lines(lines, "twitter"), strict=True)
                    if isinstance(item, Parsed) and item.kind == "action"]
    for event, action_line in zip(actions, action_lines, strict=True):  # one action a line, in order
        data = json.loads(event.data)
        stored = {k: v for k, v in data.items() if k not in ("simulation_id", "generation", "platform", "source")}
        line = json.loads(action_line.raw)
        assert stored == {k: v for k, v in line.items() if k not in data or k in stored}
        model = decode(event.type_name, event.SCHEMA_VERSION, data, "simulation-p")
        assert isinstance(model, AgentActed) and acted_action(data) == (model.action_type, model.action_args)
        assert (model.simulation_id, model.generation, model.platform) == ("p", 1, "twitter")


@PROPERTY
@given(hostile_lines)
@example(b'{"round": 1, "agent_id": 1, "action_type": "CREATE_POST", "action_args": {}, "n": ' + b"9" * 19 + b"}")
@example(dumps({**GOOD, "action_type": "like_post"}))
def test_a_line_taken_without_a_model_gets_the_verdict_parse_line_and_the_model_give(raw: bytes) -> None:
    """`plain_action` (ingest's road for a chunk's plain lines) takes only what `parse_line` takes, as the same
    fields, and what it takes the model reads; a line with a long integer never reaches it."""
    raw = raw.replace(b"\n", b" ")
    checked_line = parse_line(raw, "twitter")
    taken = None if checked.has_long_integer(raw) else plain_action(raw, "twitter")
    if taken is None:
        return
    assert checked_line == taken and taken.fields is not None
    ours = {"simulation_id": "p", "generation": 1, "platform": "twitter", "source": None}  # ours win, as in ingest
    model = AgentActed.model_validate(acted_fields({**taken.fields, **ours}, "simulation-p"))
    assert (model.round, model.agent_id, model.action_type) == (
        taken.fields["round"], taken.fields["agent_id"], taken.fields["action_type"])


json_like = st.text(st.sampled_from('{}[]":,0123456789.eE+-truefalsn \\ud8c0a'), max_size=40)


def outcome(text: str | bytes) -> tuple[str, str]:
    """What `loads` makes of a text: its value as exact JSON text, or the reason it refuses it."""
    try:
        return "value", json.dumps(checked.loads(text))
    except checked.BadValue as exc:
        return "refused", exc.reason


def repeats_a_key(text: str | bytes) -> bool:
    """Whether an object in the JSON text names a key twice (the last value is the one kept)."""
    repeats: list[bool] = []
    try:
        json.loads(text, object_pairs_hook=lambda pairs: repeats.append(len(pairs) > len(dict(pairs))) or dict(pairs))
    except (ValueError, RecursionError):
        return False
    return any(repeats)


@PROPERTY
@given(st.one_of(values.map(dumps), json_like, st.binary(max_size=60), hostile_lines))
@example(b'{"a": 9223372036854775808, "a": 1}')
def test_fast_decoding_reads_every_text_as_the_strict_decoder_does(monkeypatch: Any, text: str | bytes) -> None:
    """The fast parser is a shortcut: with it or without it, the same value or the same reason. One
    difference is allowed: a value a repeated key drops is checked only by the strict decoder."""
    fast = outcome(text)
    with monkeypatch.context() as patched:
        patched.setattr(checked, "_fast", lambda _text: checked._REFUSED)
        strict = outcome(text)
    if strict != fast:
        assert (strict[0], fast[0]) == ("refused", "value") and repeats_a_key(text), (strict, fast)


def write_folder(folder: Path, config: bytes, reddit: bytes, twitter_csv: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "simulation_config.json").write_bytes(config)
    (folder / "reddit_profiles.json").write_bytes(reddit)
    (folder / "twitter_profiles.csv").write_text(twitter_csv, encoding="utf-8", errors="surrogatepass")


agent_entries = st.lists(st.dictionaries(st.sampled_from(["agent_id", "user_id", "entity_name", "name", "bio",
                                                           "influence_weight", "karma", "persona"]), values),
                         max_size=4)
csv_rows = st.lists(st.tuples(st.integers() | text, text), max_size=4).map(
    lambda rows: "user_id,name,username,user_char,description\n" + "".join(f"{a},{b},u,,d\n" for a, b in rows))


@PROPERTY
@given(config=st.one_of(values.map(dumps), agent_entries.map(lambda a: dumps({"agent_configs": a,
                                                                              "simulation_requirement": "q"})),
                        deep.map(str.encode)),
       reddit=agent_entries.map(dumps) | st.binary(max_size=50), twitter_csv=csv_rows)
def test_any_setup_files_give_a_discovery_that_is_stored_and_folded(tmp_path: Path, config: bytes, reddit: bytes,
                                                                    twitter_csv: str) -> None:
    folder = tmp_path / "sim"
    write_folder(folder, config, reddit, twitter_csv)
    setup = read_setup(folder)
    fold([SimulationDiscovered(simulation_id="p", generation=1, folder=str(folder), requirement=setup.requirement,
                               config=setup.config, agents=setup.agents)])


toml_values = st.one_of(st.integers().map(str), st.floats().map(repr), text.map(json.dumps),
                        st.integers(1, 3000).map(lambda n: "[" * n), st.sampled_from(["inf", "nan", "true", '"\\ud800"']))


@PROPERTY
@given(st.lists(st.tuples(st.sampled_from(["store", "watch", "server", "llm", "nope"]),
                          st.sampled_from(["path", "roots", "port", "host", "allowed_hosts", "max_line_bytes", "x"]),
                          toml_values), max_size=4) | st.binary(max_size=100).map(lambda b: [("raw", "", b)]))
def test_any_config_file_loads_or_gives_a_config_error(tmp_path: Path, entries: list) -> None:
    path = tmp_path / "config.toml"
    if entries and entries[0][0] == "raw":
        path.write_bytes(entries[0][2])
    else:
        path.write_text("".join(f"[{s}]\n{k} = {v}\n" for s, k, v in entries), encoding="utf-8", errors="surrogatepass")
    try:
        load_config(path, {})
    except ConfigError:
        pass
