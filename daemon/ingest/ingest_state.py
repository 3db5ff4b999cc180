"""What ingest knows about one simulation, as a fold of its own stream (docs/architecture.md#the-two-rules).

The tail position of every file travels in the `source` of the events it produced, so
this fold *is* the bookkeeping: there is nothing else that could disagree with the log.
No I/O here: `events_for_lines` turns already-read lines into events and folds them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, cast

import orjson

from simreportd.events.batch import EventBatch
from simreportd.events.codec import Encoded, Recorded, encode
from simreportd.events.models import (
    AgentActed,
    AgentInterviewed,
    DomainEvent,
    EnvironmentStatusChanged,
    IngestRejected,
    Platform,
    PlatformFinished,
    PlatformStarted,
    RoundEnded,
    RoundStarted,
    SimulationCompleted,
    SimulationDiscovered,
    SimulationGenerationStarted,
    Source,
    acted_action,
)

from .chunk import OURS, Chunk, lead_of, parse_lines, raw_line
from .oasis import Interview
from .parse import Bad, Parsed, line_value, parse_row
from .tail import FileIdentity, Line
from .values import clean_text, fits


@dataclass(frozen=True)
class FileMark:
    """How far a file was read, and what it looked like there."""

    ino: int
    head: str
    end: int
    tail: str | None = None  # None in logs written before tails were recorded: not checked

    def holds(self, identity: FileIdentity, same_bytes: Callable[[FileMark], bool]) -> bool:
        """Whether `identity` is still the file this mark was taken on, up to the mark."""
        return ((self.ino, self.head) == (identity.ino, identity.head) and identity.size >= self.end
                and (self.tail is None or same_bytes(self)))


@dataclass
class IngestState:
    """Fold of a `simulation-<id>` stream: generation, file offsets, platform progress."""

    simulation_id: str
    version: int = 0
    generation: int = 0
    files: dict[str, FileMark] = field(default_factory=dict)
    retired: dict[str, list[FileMark]] = field(default_factory=dict)
    started: set[Platform] = field(default_factory=set)
    finished: dict[str, bool] = field(default_factory=dict)
    last_round_end: dict[str, int] = field(default_factory=dict)
    last_round: dict[str, int] = field(default_factory=dict)
    completed: bool = False
    env_status: str | None = None
    unreadable: dict[str, str] = field(default_factory=dict)  # file -> why it was not read, as last recorded
    mutes: dict[str, int] = field(default_factory=dict)  # "platform:agent" -> MUTE actions so far (finds the nth)

    def apply(self, event: DomainEvent) -> None:
        """Fold one event of this simulation's stream (an action by `apply_action`, as ingest folds its own)."""
        if isinstance(event, AgentActed):
            self.apply_action(event.model_dump())
            return
        self.version += 1
        if isinstance(event, SimulationDiscovered | SimulationGenerationStarted):
            self._new_generation(event.generation)
        source = getattr(event, "source", None)
        if source is not None:
            self.files[source.file] = FileMark(source.ino, source.head, source.end, source.tail)
        if isinstance(event, PlatformStarted):
            self.started.add(event.platform)
        elif isinstance(event, RoundEnded):
            self.last_round_end[event.platform] = event.round
        elif isinstance(event, PlatformFinished):
            self.finished[event.platform] = event.all_rounds_ran
        elif isinstance(event, SimulationCompleted):
            self.completed = True
        elif isinstance(event, EnvironmentStatusChanged):
            self.env_status = event.status
        elif isinstance(event, IngestRejected) and event.source is None:  # a whole file, not a line of it
            self.unreadable[event.file] = event.reason

    def apply_recorded(self, recorded: Recorded) -> None:
        """Fold one recorded event; an action (most of a stream) from its data, without building the model:
        `apply` on a million recorded actions took most of a restart's time."""
        if recorded.type == AgentActed.TYPE:
            self.apply_action(recorded.data)  # raw: a restart folds every action of a run here
        else:
            self.apply(recorded.event)

    def apply_action(self, data: dict[str, Any]) -> None:
        """Fold one `AgentActed` from its stored data (either version), as `apply` folds its model."""
        source = data.get("source")
        mark = None if source is None or "file" not in source else \
            (source["file"], FileMark(source["ino"], source["head"], source["end"], source.get("tail")))
        self.acted(data["platform"], data["round"], acted_action(data)[0], data["agent_id"], mark)

    def acted(self, platform: str, round_no: int, action_type: str, agent_id: int,
              mark: tuple[str, FileMark] | None) -> None:
        """Fold one action: `mark`, the file and how far it was read, comes with the last action of a batch."""
        self.version += 1
        if mark is not None:
            self.files[mark[0]] = mark[1]
        self.last_round[platform] = max(self.last_round.get(platform, 0), round_no)
        if action_type == "MUTE":
            self.count_mute(platform, agent_id)

    def took(self, platform: str, count: int, top: int) -> None:
        """Fold `count` actions of `platform` (none the last of its batch) whose highest round is `top`, at once:
        `acted` for each, less the MUTEs (`count_mute`)."""
        self.version += count
        self.last_round[platform] = max(self.last_round.get(platform, 0), top)

    def count_mute(self, platform: str, agent_id: int) -> None:
        """One more MUTE by the agent (which of its MUTEs an action is finds the muted in the database)."""
        key = f"{platform}:{agent_id}"
        self.mutes[key] = self.mutes.get(key, 0) + 1

    def _new_generation(self, generation: int) -> None:
        for key, mark in self.files.items():
            self.retired.setdefault(key, []).append(mark)
        self.generation = generation
        self.files, self.started, self.finished, self.last_round_end, self.last_round = {}, set(), {}, {}, {}
        self.completed, self.unreadable, self.mutes = False, {}, {}

    def classify(self, key: str, identity: FileIdentity, same_bytes: Callable[[FileMark], bool]) -> str:
        """What to do with a file: `tail` it, `adopt` it from 0, start a `new_generation`, or skip `stale`.

        `same_bytes(mark)` says whether the file still holds the bytes it held before `mark.end`
        (it reads the file; call this off the event loop).
        """
        mark = self.files.get(key)
        if mark is not None and mark.holds(identity, same_bytes):
            return "tail"
        if any(old.holds(identity, same_bytes) for old in self.retired.get(key, ())):
            return "stale"
        return "adopt" if mark is None else "new_generation"

    def offset_of(self, key: str) -> int:
        mark = self.files.get(key)
        return mark.end if mark else 0

    def completion(self, present: set[Platform]) -> SimulationCompleted | None:
        """`SimulationCompleted` once every present platform has ended, else None."""
        platforms = present | self.started
        if self.completed or not platforms or not platforms <= set(self.finished):
            return None
        return SimulationCompleted(simulation_id=self.simulation_id, generation=self.generation,
                                   platforms=sorted(platforms),
                                   all_rounds_ran=all(self.finished[p] for p in platforms))


RUN_EXCERPTS = 4  # lines quoted in a run's rejection beside its first


def events_for_lines(
    state: IngestState, key: str, platform: Platform | None, identity: FileIdentity, lines: list[Line],
    parsed: list[Parsed | Bad] | None = None, skip: frozenset[int] = frozenset(),
    extra: dict[int, dict[str, Any]] | None = None,
) -> list[DomainEvent | Encoded]:
    """One event per line (a rejection for a bad one), folded into `state` as they are made. Lines in `skip`
    (a seed post the runner logged again) make none; `extra` adds to a line's `action_args` what the database
    holds and the line dropped. The last event carries the file's identity (an action's line: `Acted`)."""
    out, _ = _line_events(state, key, platform, identity, lines, parsed, skip, extra)
    return [Encoded(ACTED, event, AgentActed.ACTION_VERSION) if isinstance(event, str) else event for event in out]


def batch_for_lines(
    state: IngestState, key: str, platform: Platform | None, identity: FileIdentity, lines: list[Line],
    parsed: list[Parsed | Bad], skip: frozenset[int], extra: dict[int, dict[str, Any]], meta: Mapping[str, Any],
    chunk: Chunk | None = None,
) -> EventBatch:
    """`events_for_lines`' events as one append's columns, every event with `meta`: what ingest appends. With
    the `chunk` these lines were parsed in (all of them), its texts are taken as they are (`_chunk_events`)."""
    if chunk is not None and platform is not None and _whole(state, key, identity, platform, lines, skip, chunk) \
            and not (chunk.light and any(extra.values())):
        datas, others = _chunk_events(state, key, platform, identity, lines, chunk, extra)
    else:  # a light chunk's plain actions kept no fields: its lines are read again
        datas, others = _line_events(state, key, platform, identity, lines,
                                     None if chunk is not None and chunk.light else parsed, skip, extra)
    types, versions = [ACTED] * len(datas), [AgentActed.ACTION_VERSION] * len(datas)
    for i in others:
        event = datas[i]
        assert not isinstance(event, str)
        types[i], versions[i], datas[i] = event.type_name, event.SCHEMA_VERSION, encode(event)
    return EventBatch(types, versions, cast(list[str], datas), meta)  # every event is its text now


def _whole(state: IngestState, key: str, identity: FileIdentity, platform: Platform, lines: list[Line],
           skip: frozenset[int], chunk: Chunk) -> bool:
    """Whether `_chunk_events` can take these lines: all of the chunk, none skipped or refused, its texts made with
    the lead of the state's generation."""
    return chunk.texts is not None and not skip and len(chunk.texts) == len(lines) \
        and chunk.lead == Acted(state, key, identity).lead(platform).encode() \
        and not any(type(chunk.parsed[i]) is Bad for i in chunk.others)


def _chunk_events(state: IngestState, key: str, platform: Platform, identity: FileIdentity, lines: list[Line],
                  chunk: Chunk, extra: dict[int, dict[str, Any]]) -> tuple[list[DomainEvent | Encoded | str], list[int]]:
    """`_line_events` of a whole chunk none of whose lines is refused or skipped: its texts as they are, an event
    made only for each other line, the last and one that `extra` completes; the texts' actions folded at once."""
    assert chunk.texts is not None
    out = cast(list[DomainEvent | Encoded | str], list(chunk.texts))  # each None is made below
    last = len(lines) - 1
    made = sorted({*chunk.others, *(i for i, added in extra.items() if added), last})
    plain = len(lines) - len(made)  # the lines taken as their text
    if plain:
        state.took(platform, plain, chunk.top)
    special = set(made)
    for i, agent in chunk.mutes:
        if i not in special:
            state.count_mute(platform, agent)
    acted = Acted(state, key, identity)
    for i in made:
        item, line = chunk.parsed[i], lines[i]
        assert type(item) is Parsed
        if item.kind == "action":
            added = extra.get(i)
            out[i] = acted.line(item, line.offset, line.end, line.tail if i == last else False, raw_line(line),
                                added if added and fits(added) else None)
        elif item.kind in ROUND_EVENTS:
            out[i] = _round_event(state, key, identity, line, item)
        else:
            event = _event_for_line(state, key, line, item, Source(**_source(key, identity, line.offset, line.end,
                                                                            line.tail)))
            state.apply(event)
            out[i] = event
    return out, made


ACTED = AgentActed.TYPE


def _line_events(
    state: IngestState, key: str, platform: Platform | None, identity: FileIdentity, lines: list[Line],
    parsed: list[Parsed | Bad] | None, skip: frozenset[int], extra: dict[int, dict[str, Any]] | None,
) -> tuple[list[DomainEvent | Encoded | str], list[int]]:
    """`events_for_lines`' events, an action line taken as it came as its data alone (a str), and the indexes of
    those that are not. Such an action is folded into `state` with the others of the chunk, at the end."""
    parsed = parse_lines(lines, platform) if parsed is None else parsed
    acted = Acted(state, key, identity)
    last = len(lines) - 1
    while last in skip:
        last -= 1
    lead = acted.lead(platform).encode() if platform is not None else None
    out: list[DomainEvent | Encoded | str] = []
    others: list[int] = []
    run: list[Line] = []  # the bad lines after a rejection, joined into it when the run ends
    taken, top = 0, -1  # actions taken as text, and their highest round
    for i, item in enumerate(parsed):
        if skip and i in skip:
            continue
        if type(item) is Parsed and item[0] == "action":
            if run:
                _join_run(state, key, identity, out, run)
            f, raw = item[2], lines[i][2]
            if lead is not None and i != last and raw[0] == 123 and "platform" not in f and "source" not in f \
                    and "generation" not in f and "simulation_id" not in f and not (extra and extra.get(i)):
                round_no = f["round"]  # `Acted.line`'s text, made in line: this runs for nearly every line
                top = round_no if round_no > top else top
                if f["action_type"] == "MUTE":
                    state.count_mute(item[1], f["agent_id"])
                out.append((lead + raw[1:]).decode())  # "{" (123) opens the line: `lead` opens the event
                taken += 1
                continue
            added = extra.get(i) if extra else None
            line = lines[i]
            others.append(len(out))
            out.append(acted.line(item, line.offset, line.end, line.tail if i == last else False, raw_line(line),
                                  added if added and fits(added) else None))
            continue
        line = lines[i]
        if isinstance(item, Bad) and out and isinstance(out[-1], IngestRejected):
            run.append(line)
            continue
        if run:
            _join_run(state, key, identity, out, run)
        others.append(len(out))
        if type(item) is Parsed and item.kind in ROUND_EVENTS:
            out.append(_round_event(state, key, identity, line, item))
            continue
        event = _event_for_line(state, key, line, item, Source(**_source(key, identity, line.offset, line.end,
                                                                        line.tail)))
        state.apply(event)
        out.append(event)
    if run:
        _join_run(state, key, identity, out, run)
    if taken:
        state.took(platform or "twitter", taken, top)
    return out, others


class SeedPlan(NamedTuple):
    """How much of a batch of lines to take now (`cut`), which lines are seed posts logged again (`skip`), and
    the post id each round-0 seed line gets from its copy (`ids`, by line index)."""

    cut: int
    skip: frozenset[int]
    ids: dict[int, dict[str, Any]]


def plan_seeds(parsed: list[Parsed | Bad], full: bool) -> SeedPlan:
    """The runner logs each seed post in round 0 without its id, then again in the first round that steps the
    environment, with its id (its first read of `trace` starts at rowid 0). A seed is one post: the round-0
    line, with the copy's id; the copy is skipped. Until the copies (and the line after them) or the run's end
    have been written, the seeds wait (`cut` stops before them), unless the batch is `full`."""
    n = len(parsed)
    seeds = [i for i, p in enumerate(parsed) if type(p) is Parsed and p[0] == "action" and p[2]["round"] == 0
             and p[2]["action_type"] == "CREATE_POST"]
    if not seeds:
        return SeedPlan(n, frozenset(), {})
    acts = [p.fields if isinstance(p, Parsed) and p.kind == "action" else None for p in parsed]
    wait = SeedPlan(n if full else seeds[0], frozenset(), {})
    first = next((i for i in range(seeds[-1] + 1, n) if (f := acts[i]) is not None and f["round"] >= 1), None)
    if first is None:
        ended = any(isinstance(p, Parsed) and p.kind == "simulation_end" for p in parsed[seeds[-1]:])
        return SeedPlan(n, frozenset(), {}) if ended else wait
    pending = {i: _seed_key(acts[i]) for i in seeds}
    skip, ids, j = set(), {}, first
    while pending and j < n and (f := acts[j]) is not None and f["action_type"] == "CREATE_POST" \
            and f["round"] == parsed[first].fields["round"]:  # type: ignore[union-attr]
        match = next((i for i, k in pending.items() if k == _seed_key(f)), None)
        if match is None:
            break
        del pending[match]
        skip.add(j)
        post_id = f["action_args"].get("post_id")
        ids[match] = {"post_id": post_id} if isinstance(post_id, int) else {}
        j += 1
    return wait if j >= n else SeedPlan(n, frozenset(skip), ids)


def _seed_key(fields: dict[str, Any] | None) -> tuple[Any, Any]:
    return (fields["agent_id"], fields["action_args"].get("content")) if fields else (None, None)


def events_for_interviews(state: IngestState, key: str, platform: Platform, identity: FileIdentity,
                          interviews: list[Interview], names: dict[int, str]) -> list[DomainEvent]:
    """`AgentInterviewed` for interview rows of a database (the rowid is the offset), folded into `state`."""
    out: list[DomainEvent] = []
    for row in interviews:
        source = Source(**_source(key, identity, row.rowid - 1, row.rowid, None))
        agent = row.agent_id if isinstance(row.agent_id, int) and fits(row.agent_id) else -1
        event = AgentInterviewed(simulation_id=state.simulation_id, generation=state.generation, platform=platform,
                                 agent_id=agent, agent_name=names.get(agent, ""), prompt=clean_text(row.prompt),
                                 response=clean_text(row.response), interview_id=clean_text(row.interview_id),
                                 timestamp=clean_text(row.timestamp), source=source)
        state.apply(event)
        out.append(event)
    return out


def _join_run(state: IngestState, key: str, identity: FileIdentity, out: list[DomainEvent | Encoded | str],
              run: list[Line]) -> None:
    """Join the `run` of bad lines into the rejection before it (`out[-1]`), once, and empty it: however many
    lines a run has, one event of bounded size; `state` reads on after its last line."""
    first, last = out[-1], run[-1]
    assert isinstance(first, IngestRejected)
    state.files[key] = FileMark(identity.ino, identity.head, last.end, last.tail)
    excerpts = [*first.excerpts, *map(_excerpt, run[:max(0, RUN_EXCERPTS - len(first.excerpts))])]
    source = Source(**_source(key, identity, last.offset, last.end, last.tail))
    out[-1] = first.model_copy(update={"lines": first.lines + len(run), "end": last.end, "source": source,
                                       "excerpts": excerpts})
    run.clear()


def _excerpt(line: Line) -> str:
    return line.raw[:200].decode("utf-8", errors="replace")


def events_for_rows(state: IngestState, key: str, platform: Platform, identity: FileIdentity,
                    rows: list[tuple[int, dict[str, Any]]]) -> list[DomainEvent | Encoded]:
    """Events for OASIS trace rows (rowid, action line): the rowid is the offset."""
    out: list[DomainEvent | Encoded] = []
    if platform not in state.started and rows:
        started = PlatformStarted(simulation_id=state.simulation_id, generation=state.generation, platform=platform)
        state.apply(started)
        out.append(started)
    acted = Acted(state, key, identity)
    for n, (rowid, action) in enumerate(rows, start=1):
        parsed = parse_row(action, platform)
        if isinstance(parsed, Parsed):
            out.append(acted.line(parsed, rowid - 1, rowid, None if n == len(rows) else False))
            continue
        event = IngestRejected(simulation_id=state.simulation_id, generation=state.generation,
                               source=Source(**_source(key, identity, rowid - 1, rowid, None)),
                               file=key, offset=rowid, reason=parsed.reason[:300],
                               excerpt=clean_text(json.dumps(action, ensure_ascii=False)[:200]))
        state.apply(event)
        out.append(event)
    return out


def _source(key: str, identity: FileIdentity, offset: int, end: int, tail: str | None) -> dict[str, Any]:
    """A `Source`'s fields, in its order."""
    return {"file": key, "ino": identity.ino, "head": identity.head, "offset": offset, "end": end, "tail": tail}




class Acted:
    """Makes the `AgentActed` events of one batch of one file (docs/events.md#agent-actions): each line as it
    came, with only `generation` and `platform` put in front of its keys by joining text (its stream names the
    simulation, its position orders it in the file), so nothing is parsed or serialised again. The batch's last
    action (and a line that names our keys itself) is stored as before: `simulation_id`, `generation`,
    `platform` and `source` (the line's `offset` and `end`, the file's identity: `file`, `ino`, `head`,
    `tail`), what ingest's own fold reads back to know how far the file was read."""

    def __init__(self, state: IngestState, key: str, identity: FileIdentity) -> None:
        self.state, self.key, self.identity = state, key, identity
        self._leads: dict[str, str] = {}

    def line(self, parsed: Parsed, offset: int, end: int, tail: str | None | Literal[False], raw: bytes | None = None,
             added: dict[str, Any] | None = None) -> Encoded:
        """The event of an action line read from `offset` to `end`, folded into the state; `tail` is False for
        all but the batch's last action. `raw` is the line's text (None: a line rebuilt from a database),
        `added` the arguments the line dropped and the database or the seed's copy gave."""
        f, state, p = parsed.fields, self.state, parsed.platform
        mark = None if tail is False else (self.key, FileMark(self.identity.ino, self.identity.head, end, tail))
        state.acted(p, f["round"], f["action_type"], f["agent_id"], mark)
        if mark is None and raw is not None and not added and "platform" not in f and "source" not in f \
                and "generation" not in f and "simulation_id" not in f:  # the common case: joined as text
            text = raw.decode()
            return Encoded("AgentActed", f'{self.lead(p)}{text[text.index("{") + 1:]}', AgentActed.ACTION_VERSION)
        source = {"offset": offset, "end": end} if mark is None else \
            _source(self.key, self.identity, offset, end, tail or None)
        if raw is None or added or not OURS.isdisjoint(f):  # rebuilt, completed, or naming our keys itself
            line = f if raw is None or added else line_value(raw)  # the line as written, not the parser's copy
            data = {"simulation_id": state.simulation_id, "generation": state.generation, "platform": p,
                    "source": source, **{k: v for k, v in line.items() if k not in OURS}}
            if added:
                data["action_args"] = {**data["action_args"], **added}
            return Encoded("AgentActed", orjson.dumps(data).decode(), AgentActed.LINE_VERSION)
        text = raw.decode()
        return Encoded("AgentActed", f'{{"simulation_id":{orjson.dumps(state.simulation_id).decode()},'
                       f'{self.lead(p)[1:]}"source":{orjson.dumps(source).decode()},{text[text.index("{") + 1:]}',
                       AgentActed.LINE_VERSION)

    def lead(self, platform: str) -> str:
        """The text every action of `platform` starts with, up to the line's own keys."""
        lead = self._leads.get(platform)
        if lead is None:
            lead = self._leads[platform] = lead_of(self.state.generation, platform)
        return lead


def finished_from_hint(state: IngestState, hint: dict[Platform, int],
                       ran: dict[Platform, bool] | None = None) -> list[DomainEvent]:
    """PlatformFinished for database sources whose run_state says they ended (not folded yet); `ran`: whether
    it says each ran every round (the rows cannot: the last rounds may have drawn no agent)."""
    out: list[DomainEvent] = []
    for platform in sorted(set(hint) & state.started - set(state.finished)):
        last = state.last_round.get(platform, 0)
        total = hint[platform] or last
        all_ran = (ran or {}).get(platform, last >= total)
        out.append(PlatformFinished(simulation_id=state.simulation_id, generation=state.generation,
                                    platform=platform, total_rounds=total, all_rounds_ran=all_ran))
    return out


ROUND_EVENTS = frozenset({"round_start", "round_end"})


def _round_event(state: IngestState, key: str, identity: FileIdentity, line: Line, parsed: Parsed) -> Encoded:
    """The `RoundStarted` or `RoundEnded` of a line, as `_event_for_line` makes it and `model_dump_json` writes it
    (fields in the model's order), its text made directly, and folded into `state` as `apply` folds it: two a
    round, so no model or serialiser for each."""
    f, platform = parsed.fields, parsed.platform
    state.version += 1
    state.files[key] = FileMark(identity.ino, identity.head, line.end, line.tail)
    data: dict[str, Any] = {"simulation_id": state.simulation_id, "generation": state.generation,
                            "platform": platform, "round": f["round"]}
    if parsed.kind == "round_start":
        data["simulated_hour"] = f["simulated_hour"]
        model: type[RoundStarted | RoundEnded] = RoundStarted
    else:
        data["actions_count"] = f["actions_count"]
        state.last_round_end[platform] = f["round"]
        model = RoundEnded
    data["source"] = _source(key, identity, line.offset, line.end, line.tail)
    return Encoded(model.__name__, orjson.dumps(data).decode(), model.SCHEMA_VERSION)


def _event_for_line(state: IngestState, key: str, line: Line, parsed: Parsed | Bad, source: Source) -> DomainEvent:
    """The event of a line that is not an action: a rejection, or a platform's or round's milestone."""
    ids: dict[str, Any] = {"simulation_id": state.simulation_id, "generation": state.generation, "source": source}
    if isinstance(parsed, Bad):
        return IngestRejected(**ids, file=key, offset=line.offset, reason=parsed.reason[:300], excerpt=_excerpt(line),
                              end=line.end)
    f, p = parsed.fields, parsed.platform
    if parsed.kind == "simulation_start":
        return PlatformStarted(**ids, platform=p, agents_count=f["agents_count"])
    if parsed.kind == "round_start":
        return RoundStarted(**ids, platform=p, round=f["round"], simulated_hour=f["simulated_hour"])
    if parsed.kind == "round_end":
        return RoundEnded(**ids, platform=p, round=f["round"], actions_count=f["actions_count"])
    total = f["total_rounds"]
    return PlatformFinished(**ids, platform=p, total_rounds=total, total_actions=f["total_actions"],
                            all_rounds_ran=state.last_round_end.get(p) == total)
