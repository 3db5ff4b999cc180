"""Hostile input cannot amplify: a run of bad lines is one event, and memory stays flat however long it is."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from simreportd.daemon.ingest.ingest_state import IngestState, events_for_lines
from simreportd.daemon.ingest.tail import FileIdentity, Line
from simreportd.events.codec import decode
from simreportd.events.models import IngestRejected
from simreportd.simulator.simulate import simulate

from ..conftest import PYTHON, TIMEOUT, write_config

GARBAGE_LINES = 1_000_000
INGEST = """
import sys, anyio
from pathlib import Path
from simreportd.daemon.ingest.ingestor import SimulationIngestor
from simreportd.events import SQLiteEventStore

async def main():
    async with SQLiteEventStore(sys.argv[1]) as store:
        await SimulationIngestor(store, Path(sys.argv[2])).check()

anyio.run(main)
hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(int(hwm.split()[1]) // 1024)  # this program's peak: ru_maxrss would count the forked test process's
"""


def test_a_million_garbage_lines_are_a_few_events_a_small_store_flat_memory_and_all_counted(tmp_path: Path) -> None:
    folder = tmp_path / "sims" / "sim_g"
    simulate(folder, agents=6, rounds=3, seed=1)
    with (folder / "twitter" / "actions.jsonl").open("ab") as actions:
        actions.write(b"x\n" * GARBAGE_LINES)  # 2 MB
    store = tmp_path / "state" / "events.sqlite3"
    store.parent.mkdir()
    ingest = subprocess.run([PYTHON, "-c", INGEST, str(store), str(folder)], capture_output=True, text=True,
                            timeout=TIMEOUT * 5)
    assert ingest.returncode == 0, ingest.stderr
    peak_mb = int(ingest.stdout.split()[-1])
    size_mb = sum(p.stat().st_size for p in store.parent.glob("events.sqlite3*")) / 2**20
    print(f"1,000,000 garbage lines: peak RSS {peak_mb} MB, store {size_mb:.1f} MB")
    assert peak_mb < 200 and size_mb < 5, (peak_mb, size_mb)
    config = write_config(tmp_path)
    assert subprocess.run([PYTHON, "-m", "simreportd", "-c", str(config), "rebuild"], capture_output=True,
                          timeout=TIMEOUT * 5).returncode == 0
    status = subprocess.run([PYTHON, "-m", "simreportd", "-c", str(config), "status", "--json"], capture_output=True,
                            text=True, timeout=TIMEOUT)
    [simulation] = json.loads(status.stdout)["simulations"]
    assert simulation["rejections"] == GARBAGE_LINES


def test_consecutive_bad_lines_become_one_rejection_with_their_count_range_and_first_excerpts() -> None:
    state = IngestState("s")
    raw = [b'{"round": 1, "agent_id": 1, "action_type": "CREATE_POST", "action_args": {}}', b"bad 1", b"bad 2",
           b"bad 3", b"bad 4", b"bad 5", b"bad 6"]
    lines, offset = [], 0
    for text in raw:
        lines.append(Line(offset, offset + len(text) + 1, text))
        offset += len(text) + 1
    events = events_for_lines(state, "twitter/actions.jsonl", "twitter", FileIdentity(7, offset, "h"), lines)
    [rejected] = [e for e in events if isinstance(e, IngestRejected)]
    assert (rejected.lines, rejected.offset, rejected.end) == (6, lines[1].offset, offset)
    assert rejected.excerpt == "bad 1" and rejected.excerpts == ["bad 2", "bad 3", "bad 4", "bad 5"]
    assert state.offset_of("twitter/actions.jsonl") == offset  # ingest goes on after the run


def test_a_rejection_recorded_before_runs_were_still_reads_as_one_line() -> None:
    old = {"simulation_id": "s", "generation": 1, "file": "twitter/actions.jsonl", "offset": 10, "reason": "not JSON",
           "excerpt": "garbage", "source": None}
    event = decode("IngestRejected", 1, old)
    assert isinstance(event, IngestRejected) and event.lines == 1 and event.end is None and event.excerpts == []
