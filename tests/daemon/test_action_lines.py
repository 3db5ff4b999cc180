"""An action's event data is the simulator's line (docs/events.md#agent-actions): stored as it came, read by the
fold to the rows an older store's events (the fields themselves) fold to."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from simreportd.daemon.ingest import parse, values
from simreportd.daemon.ingest.ingestor import SimulationIngestor
from simreportd.daemon.ingest.parse import Bad
from simreportd.events import SQLiteEventStore
from simreportd.events.codec import Encoded, Recorded
from simreportd.events.models import AgentActed, acted_fields
from simreportd.projections.runner import ProjectionRunner, views_path_for
from simreportd.projections.simulation import SimulationModel
from simreportd.simulator.simulate import simulate

pytestmark = pytest.mark.anyio

OURS = ("simulation_id", "generation", "platform", "source")
# Lines a simulator may write that the fold must read as ingest checked them: a type not in capitals, no
# arguments, a key of ours inside the line, an edge to a post written in the same batch.
ODD = [
    {"round": 4, "agent_id": 1, "agent_name": "A", "action_type": "create_post",
     "action_args": {"content": "lower case", "post_id": 9001}},
    {"round": 4, "agent_id": 2, "action_type": "LIKE_POST", "action_args": {"post_id": 9001}},
    {"round": 4, "agent_id": 3, "action_type": "DO_NOTHING"},
    {"round": 4, "agent_id": 2, "action_type": "QUOTE_POST", "generation": 7, "source": "mine",
     "action_args": {"quoted_id": 9001, "new_post_id": 9002, "quote_content": "q"}},
]


def write_run(folder: Path) -> list[bytes]:
    simulate(folder, agents=8, rounds=3, seed=1)
    odd = [json.dumps(obj).encode() for obj in ODD]
    with (folder / "twitter" / "actions.jsonl").open("ab") as f:
        f.write(b"".join(raw + b"\n" for raw in odd))
    return odd


async def fold_digest(path: Path) -> dict[str, str]:
    async with SQLiteEventStore(path) as store, \
            ProjectionRunner(store, views_path_for(path), [SimulationModel()]) as views:
        await views.catch_up()
        return await views.digest()


async def test_an_action_is_stored_as_its_line_came_and_the_batch_names_its_file_once(tmp_path: Path) -> None:
    folder = tmp_path / "sim_l"
    odd = write_run(folder)
    async with SQLiteEventStore(tmp_path / "events.sqlite3") as store:
        await SimulationIngestor(store, folder).check()
        events = await store.read_stream("simulation-sim_l")
        again = len(events)
        await SimulationIngestor(store, folder).check()  # a fresh ingestor folds the position from the log
        assert len(await store.read_stream("simulation-sim_l")) == again
    acted = [e for e in events if e.type == "AgentActed"]
    assert {e.schema_version for e in acted} == {AgentActed.ACTION_VERSION, AgentActed.LINE_VERSION}
    [plain] = [e.raw_data for e in acted if e.data["round"] == 4 and e.data["agent_id"] == 1]
    assert plain.endswith(odd[0].decode()[1:])  # the lower-case line, as it came, after the keys put in front
    assert plain.startswith('{"generation":1,"platform":"twitter","round":')  # the stream names the simulation
    assert all(e.event.simulation_id == "sim_l" for e in acted)
    [named] = [e.data for e in acted if e.data["round"] == 4 and e.data["action_type"] == "QUOTE_POST"]
    assert (named["generation"], named["platform"], named["quote_content"] if "quote_content" in named else
            named["action_args"]["quote_content"]) == (1, "twitter", "q")  # names keys of ours: ours win
    lines = {line for p in ("twitter", "reddit") for line in (folder / p / "actions.jsonl").read_bytes().splitlines()}
    for event in acted:
        if event.data["round"] == 4 and event.data["action_type"] == "QUOTE_POST":
            continue
        line = {k: v for k, v in event.data.items() if k not in OURS}
        assert any(json.loads(raw) == line for raw in lines if b'"event_type"' not in raw) or \
            event.data["action_args"].get("post_id") is not None  # a seed post: its copy's id added
    with_source = [e for e in acted if e.schema_version == AgentActed.LINE_VERSION]
    assert len(with_source) < len(acted) / 10  # the batch's last action, and a line naming our keys
    assert all(e.data["source"]["offset"] < e.data["source"]["end"] for e in with_source)
    assert all("source" not in e.data and "simulation_id" not in e.data for e in acted if e not in with_source)


def as_fields(r: Recorded) -> AgentActed:
    """An action as the oldest ingest stored it: the model's fields (schema version 1)."""
    return AgentActed(**{**acted_fields(r.data, r.stream), "action_type": r.data["action_type"].upper(),
                         "action_args": r.data.get("action_args") or {}})


def as_led_line(r: Recorded) -> Encoded:
    """An action as ingest stored it before version 3: its line led by `simulation_id`, `generation`, `platform`
    and `source` (schema version 2; the batch's last action is stored so still)."""
    if r.schema_version == AgentActed.LINE_VERSION:
        return Encoded("AgentActed", r.raw_data, AgentActed.LINE_VERSION)
    lead = {"simulation_id": r.event.simulation_id, "generation": r.data["generation"], "platform": r.data["platform"],
            "source": {"offset": 0, "end": 1}}
    return Encoded("AgentActed", json.dumps({**lead, **{k: v for k, v in r.data.items() if k not in OURS}}),
                   AgentActed.LINE_VERSION)


@pytest.mark.parametrize(("older", "version"), [(as_fields, 1), (as_led_line, AgentActed.LINE_VERSION)])
async def test_a_store_of_an_older_action_form_folds_to_the_rows_of_the_lines(
        tmp_path: Path, older: Callable[[Recorded], AgentActed | Encoded], version: int) -> None:
    """The same run as an older ingest stored it reads into the same models and folds to the same rows."""
    folder = tmp_path / "sim_o"
    write_run(folder)
    new, old = tmp_path / "new" / "events.sqlite3", tmp_path / "old" / "events.sqlite3"
    async with SQLiteEventStore(new) as store:
        await SimulationIngestor(store, folder).check()
        recorded = await store.read_all(0, 100_000)
    async with SQLiteEventStore(old) as store:
        for r in recorded:
            await store.append(r.stream, [r.event if r.type != "AgentActed" else older(r)])
        stored = await store.read_all(0, 100_000)
    assert {r.schema_version for r in stored if r.type == "AgentActed"} == {version}
    assert [r.event for r in stored if r.type == "AgentActed"] == [r.event for r in recorded if r.type == "AgentActed"]
    assert await fold_digest(old) == await fold_digest(new)


@pytest.mark.parametrize("number", [2**63, 2**64 - 1, 2**64, 10**30, -(2**63) - 1])
def test_an_integer_beyond_64_bits_is_refused_where_orjson_would_take_it(number: int) -> None:
    line = json.dumps({"round": 1, "agent_id": 1, "action_type": "X", "action_args": {"n": number}}).encode()
    assert parse.parse_line(line, "twitter") == Bad("integer at $.action_args.n is out of the 64-bit range") or \
        "64-bit range" in parse.parse_line(line, "twitter").reason  # type: ignore[union-attr]


def test_a_19_digit_integer_that_fits_is_taken() -> None:
    line = json.dumps({"round": 1, "agent_id": 2**63 - 1, "action_type": "X"}).encode()
    assert parse.parse_line(line, "twitter").fields["agent_id"] == 2**63 - 1  # type: ignore[union-attr]


json_like = st.text(st.sampled_from('{}[]":,0123456789.eE+-truefalsn \\ud8c0a'), max_size=40).map(str.encode)
numbers = st.integers(-(2**70), 2**70).map(lambda n: json.dumps({"n": n}).encode())


@settings(max_examples=300, deadline=None)
@given(st.one_of(json_like, numbers, st.binary(max_size=60)))
@example(b'{"n": 18446744073709551616}')
@example(b'{"n": 9223372036854775808}')
@example(b'[1e999]')
def test_orjson_at_the_door_takes_only_what_the_strict_decoder_takes_as_it_reads_it(raw: bytes) -> None:
    """orjson reads a line whole or hands it to `values.loads`: what it takes, the strict decoder takes too, as
    the same value (a repeated key aside: both keep the last)."""
    taken = values.line(raw)
    if taken is values.REFUSED:
        return
    assert json.dumps(values.loads(raw)) == json.dumps(taken)
