"""Every bench script runs on a tiny input, exits 0 and prints its figures: none can rot unseen again.

The scripts are run by hand at full size (bench/*.py say how); here each gets the smallest input it takes
(`--tiny`, or small arguments), all started at once (most of their time is waiting: a daemon starting,
a model's latency, a cluster's initdb), so the whole module takes well under a minute on a quiet machine.
A script needing what this machine lacks (PostgreSQL and its drivers, MiroFish's built frontend with
Chromium and nginx, a real model) is skipped with the reason.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..conftest import PYTHON, TIMEOUT
from ..postgres_server import server_binaries

pytestmark = pytest.mark.slow

BENCH = Path(__file__).resolve().parents[2] / "bench"
# script: (arguments of a tiny run, "{tmp}" for its own folder; what its output must show)
TINY: dict[str, tuple[list[str], list[str]]] = {
    "abuse.py": (["--tiny"], ['"accepted": 20', '"daemon alive": true', '"ingested during the flood": true']),
    "agent.py": (["1"], ["engine overhead", "prompt tokens"]),
    "analysis_quality.py": (["--runs", "1", "--agents", "8", "--rounds", "3", "--keep", "{tmp}/aq"],
                            ["| **all** |", "purity"]),
    "all.py": (["1000", "--tiny"], ["| minimal floor:", "| store floor:", "| `simreportd run`: daemon process + fold child",
                                    "| read floor:", "| rebuild floor:", "| `simreportd rebuild`",
                                    "tool simulation_analytics, first call",
                                    "peak RSS, `simreportd report --wait`: the command |", "its fold child |"]),
    "fold_floor.py": (["500"], ["rows in", "full-text tables:", "CPU to insert", "to read and hash once"]),
    "ingest.py": (["2000"], ["| ingest |", "catch-up of the simulation model"]),
    "ingest_floor.py": (["500"], ['"minimal floor"', '"store floor"']),
    "mirofish_frontend.py": (["{dist}", "{tmp}/shots"], ["report"]),
    "notify.py": (["4", "50", "1", "1"], ["simreportd         200 of     200 (100%)", "bare               200 of"]),
    "parallel.py": (["0.01", "1"], ["| 4 |", "N=4 / N=1"]),
    "peaks.py": (["python3", "-c", "b = bytearray(80_000_000); import time; time.sleep(0.5)"],
                 ["peak RSS, the command: "]),
    "postgres.py": (["--tiny"], ["batched append", "commit to subscriber in another process"]),
    "red_team.py": (["--tiny"], ['"answers on the connection": 1', '"tracebacks in the log": 0', '"daemon alive": true']),
    "real_model.py": (["--gguf", "{gguf}", "--protocols", "auto", "--agents", "4", "--rounds", "2"], ["verdict"]),
    "replay.py": (["500"], ["replay of a", "rebuild of every read model"]),
    "report_quality.py": (["--runs", "1", "--agents", "8", "--rounds", "3"], ["| **all** |", "Goal",
                                                                           "| wrong relations |"]),
    "store.py": (["--tiny"], ["64 concurrent appenders", "read_all + decode into models", "| eventsourcing / floor |"]),
    "stale_environment.py": (["3", "0.2"], ["| stale alive, probe_s 0.2 |", "(the wait before the ping)"]),
    "tools.py": (["--data", "{tmp}/data", "--calls", "1", "tiny"], ["simulation_analytics", "first analytics call"]),
}


def missing(script: str) -> str | None:
    """Why `script` cannot run here, or None."""
    if script == "postgres.py":
        if server_binaries() is None:
            return "PostgreSQL server binaries not found (apt-get install postgresql)"
        if importlib.util.find_spec("psycopg") is None or importlib.util.find_spec("asyncpg") is None:
            return 'needs pip install -e ".[bench,postgresql]" "eventsourcing[postgres]"'
    if script == "mirofish_frontend.py" and not (os.environ.get("MIROFISH_DIST") and shutil.which("chromium")
                                                 and shutil.which("nginx")):
        return "needs MiroFish's built frontend (MIROFISH_DIST, see the script), Chromium and nginx"
    if script == "real_model.py" and not (os.environ.get("SIMREPORTD_GGUF") and importlib.util.find_spec("llama_cpp")):
        return "needs llama-cpp-python's server and a GGUF model (SIMREPORTD_GGUF); minutes a report"
    return None


class Run:
    """One script started in its own folder and process group, its output in a file."""

    def __init__(self, script: str, folder: Path) -> None:
        folder.mkdir()
        args, _ = TINY[script]
        given = {"tmp": str(folder), "dist": os.environ.get("MIROFISH_DIST", ""),
                 "gguf": os.environ.get("SIMREPORTD_GGUF", "")}
        self.output = folder / "output.txt"
        with self.output.open("w") as out:
            self.process = subprocess.Popen([PYTHON, str(BENCH / script), *(a.format(**given) for a in args)],
                                            cwd=folder, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def wait(self, timeout: float) -> tuple[int, str]:
        code = self.process.wait(timeout=timeout)
        return code, self.output.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Run]]:
    root = tmp_path_factory.mktemp("bench")
    started = {script: Run(script, root / script.removesuffix(".py")) for script in TINY if missing(script) is None}
    yield started
    for run in started.values():
        run.stop()


def test_every_bench_script_has_a_tiny_run() -> None:
    assert sorted(p.name for p in BENCH.glob("*.py")) == sorted(TINY)


@pytest.mark.parametrize("script", sorted(TINY))
def test_the_bench_script_runs_on_a_tiny_input_and_prints_its_figures(script: str, runs: dict[str, Run]) -> None:
    if (reason := missing(script)) is not None:
        pytest.skip(reason)
    started = time.monotonic()
    code, output = runs[script].wait(timeout=3 * TIMEOUT)
    assert code == 0, f"{script} exited {code} after {time.monotonic() - started:.0f} s:\n{output[-3000:]}"
    absent = [shown for shown in TINY[script][1] if shown not in output]
    assert not absent, f"{script} did not print {absent}:\n{output[-3000:]}"
