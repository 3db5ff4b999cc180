"""A connection flood against a daemon held to 1,024 open files: does it stay up, answer and stay small?

Run by hand: `python bench/abuse.py [WEBSOCKETS] [IDLE] [LOG_COPY]` (defaults 2000 and 1000), or
`python bench/abuse.py --tiny` (20 and 10, a short flood: to check the script runs, not to measure).
`python bench/abuse.py --red-team [READERS | --tiny]` runs the red team's other cases instead (slow readers
of a long answer, forced regeneration, spend from many addresses, bad strings, smuggling, read models
deleted): bench/red_team.py. The flood writes a small
finished simulation, starts `simreportd run` under `prlimit --nofile=1024` with its report written,
then, from many loopback addresses (127.0.1.x and 127.0.2.x, as many clients would come from many
hosts), opens WEBSOCKETS websocket connections that subscribe from position 0, and IDLE TCP sockets
that never send a byte (slowloris). Meanwhile it asks `/api/reports` from 127.0.0.1 once a second.

The daemon's RSS "at the start" is read after start-up and a little ordinary use: one subscriber that
reads the whole log and one request of the kind asked during the flood (what a flood's own ingest and
report first import and fill counts in "after"). The flood is run ABUSE_ROUNDS times (default 2): memory a
flood keeps per connection would raise the figure after each round. The daemon runs with the allocator
settings of systemd/simreportd.service; ABUSE_PYTHONMALLOC=malloc (or pymalloc) in place of its PYTHONMALLOC:
malloc takes Python's small objects from the C allocator, whose free pages the daemon's trim returns
(pymalloc keeps a 1 MiB arena while one object in it lives).

Printed per round: how many websockets were accepted, closed with 1013 (beyond the websocket
limit) or refused, the median and slowest answer to the authorised request during the flood, the daemon's
log lines during it, its CPU time over the round (its fold child's not included), its peak RSS (VmHWM,
reset as each round starts: the most it held at any moment of the round, its clients leaving included,
not a sample) and its RSS after the clients left (from /proc), and whether ingest still worked (a
simulation written during the flood is ingested).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException

PORT = 0  # a free one, found at start (`free_port`)
FLOOD_S, SETTLE_S = 15.0, 12.0  # the flood's length; the wait for the daemon to give memory back (checks every 5 s)
TOKEN = os.environ.get("ABUSE_TOKEN", "")  # set: the daemon requires it; only the measured request has it
AFTER = os.environ.get("ABUSE_AFTER", "0")  # the position subscribers start after (0: the whole log; or "head")
ROUNDS = int(os.environ.get("ABUSE_ROUNDS", "2"))
ALLOCATOR = os.environ.get("ABUSE_PYTHONMALLOC", "")  # e.g. "malloc": the daemon's small objects from the C allocator
UNIT = Path(__file__).resolve().parent.parent / "systemd" / "simreportd.service"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def allocator_settings() -> dict[str, str]:
    """The allocator settings the systemd unit gives the daemon (PYTHONMALLOC, MALLOC_*), so that the flood meets
    the daemon as it is deployed; ABUSE_PYTHONMALLOC in place of the unit's PYTHONMALLOC."""
    settings = {}
    for line in UNIT.read_text().splitlines():
        key, _, value = line.removeprefix("Environment=").partition("=")
        if line.startswith("Environment=") and (key == "PYTHONMALLOC" or key.startswith("MALLOC_")):
            settings[key] = value
    return {**settings, "PYTHONMALLOC": ALLOCATOR} if ALLOCATOR else settings


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """The process's resident memory now (VmRSS) or at its peak since `reset_peak` (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return 0.0


def reset_peak(pid: int) -> None:
    """Start VmHWM again from the RSS now (Linux: 5 to clear_refs), so each round's peak is its own."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def simreportd(*args: str, cwd: Path) -> None:
    subprocess.run([sys.executable, "-m", "simreportd", *args], cwd=cwd, check=True, capture_output=True)


def _after() -> int:
    if AFTER != "head":
        return int(AFTER)
    with urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{PORT}/healthz",
                                headers={"Authorization": f"Bearer {TOKEN}"}), timeout=10) as answer:
        return int(json.loads(answer.read())["position"])


async def websocket(n: int, held: list, outcome: dict[str, int]) -> None:
    """One client from its own loopback address, subscribed from the start of the log, never reading fast."""
    source = (f"127.0.{1 + n // 250}.{1 + n % 250}", 0)
    try:
        ws = await connect(f"ws://127.0.0.1:{PORT}/ws", open_timeout=30, close_timeout=2, sock=await _bound(source))
        if not os.environ.get("ABUSE_QUIET"):
            await ws.send(json.dumps({"op": "subscribe", "topics": ["events"], "after": _after()}))
        held.append(ws)
        outcome["accepted"] += 1
    except ConnectionClosed as exc:  # accepted, then closed (1013: beyond the websocket limit)
        _count(outcome, f"closed {exc.rcvd.code if exc.rcvd else 'without a code'}")
    except InvalidStatus as exc:
        _count(outcome, f"refused {exc.response.status_code}")
    except (WebSocketException, OSError, TimeoutError) as exc:
        _count(outcome, type(exc).__name__)


def _count(outcome: dict[str, int], what: str) -> None:
    outcome[what] = outcome.get(what, 0) + 1


async def _bound(source: tuple[str, int]) -> socket.socket:
    """A socket connected to the daemon from `source`: the daemon sees each client at its own address."""
    sock = socket.socket()
    sock.bind(source)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", PORT))
    return sock


def idle(n: int) -> socket.socket | None:
    try:
        sock = socket.socket()
        sock.bind((f"127.0.{3 + n // 250}.{1 + n % 250}", 0))
        sock.connect(("127.0.0.1", PORT))
        return sock
    except OSError:
        return None


def answers(seconds: float, connected: list[float] | None = None) -> list[float]:
    """Ask /api/reports once a second for `seconds`: how long each answer took (s; inf for one that failed),
    and in `connected` how long each connection took to be made (the kernel's queue, before the daemon)."""
    times, until = [], time.monotonic() + seconds
    while time.monotonic() < until:
        started = time.monotonic()
        try:
            with socket.create_connection(("127.0.0.1", PORT), timeout=10) as sock:
                if connected is not None:
                    connected.append(time.monotonic() - started)
                auth = f"Authorization: Bearer {TOKEN}\r\n" if TOKEN else ""
                sock.sendall(f"GET /api/reports HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Connection: close\r\n\r\n".encode())
                answer = b"".join(iter(lambda: sock.recv(65536), b""))
            if not answer.startswith(b"HTTP/1.1 200"):
                raise OSError(answer[:40])
            times.append(time.monotonic() - started)
        except OSError:
            return [*times, float("inf")]
        time.sleep(1)
    return times


def slowest_answer(seconds: float) -> float:
    return max(answers(seconds), default=0.0)


async def flood(count: int, idle_count: int, work: Path, simulation: str) -> dict[str, object]:
    """One flood: the sockets, the websockets, a simulation written meanwhile; then every client leaves."""
    held: list = []
    outcome = {"accepted": 0}
    sockets = [s for s in (idle(n) for n in range(idle_count)) if s is not None]
    for start in range(0, count, 200):
        await asyncio.gather(*(websocket(n, held, outcome) for n in range(start, min(count, start + 200))))
    simreportd("simulate", str(work / "sims" / simulation), "--agents", "8", "--rounds", "3", cwd=work)
    connected: list[float] = []
    times = sorted(await asyncio.to_thread(answers, FLOOD_S, connected))
    for ws in held:
        if ws.close_code is not None:  # closed by the daemon after the subscribe was sent
            outcome["accepted"] -= 1
            _count(outcome, f"closed {ws.close_code}")
    await asyncio.gather(*(ws.close() for ws in held))  # at once: each may wait out its close timeout
    for sock in sockets:
        sock.close()
    return {"outcome": outcome, "idle sockets held": len(sockets),
            "answers s (median, slowest)": [round(times[len(times) // 2], 3), round(times[-1], 3)],
            "of which connecting s (slowest)": round(max(connected, default=0.0), 3)}


def get(path: str) -> dict:
    request = urllib.request.Request(f"http://127.0.0.1:{PORT}{path}", headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def ingested(simulation: str) -> bool:
    return any(s["simulation_id"] == simulation for s in get("/api/simulations")["simulations"])


async def read_whole_log() -> None:
    """One subscriber from position 0 until `caught_up`, as every flood websocket would be if it read."""
    headers = {"Authorization": f"Bearer {TOKEN}"} if TOKEN else {}
    async with connect(f"ws://127.0.0.1:{PORT}/ws", additional_headers=headers) as ws:
        await ws.send(json.dumps({"op": "subscribe", "topics": ["events"], "after": 0}))
        while json.loads(await ws.recv())["type"] != "caught_up":
            pass


def warm_up() -> None:
    """A little ordinary use before "the start" is read: a subscriber reads the whole log, one request."""
    asyncio.run(read_whole_log())
    slowest_answer(0.1)
    time.sleep(SETTLE_S)


def cpu_s(pid: int) -> float:
    """The process's CPU time so far (user and system, its threads included), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rounds(count: int, idle_count: int, daemon: subprocess.Popen, work: Path) -> list[dict[str, object]]:
    """ROUNDS floods, each followed by the clients leaving: their figures and the memory after each."""
    log = work / "daemon.log"
    results = []
    for n in range(1, ROUNDS + 1):
        lines_before, started, cpu = len(log.read_text().splitlines()), time.monotonic(), cpu_s(daemon.pid)
        reset_peak(daemon.pid)
        figures = asyncio.run(flood(count, idle_count, work, f"sim_during_{n}"))
        figures["log lines during the flood"] = len(log.read_text().splitlines()) - lines_before
        figures["flood minutes"] = round((time.monotonic() - started) / 60, 2)
        time.sleep(SETTLE_S)
        figures["daemon CPU s"] = round(cpu_s(daemon.pid) - cpu, 1)
        results.append({"round": n, **figures, "peak RSS MB": round(rss_mb(daemon.pid, "VmHWM"), 1),
                        "RSS after MB": round(rss_mb(daemon.pid), 1),
                        "ingested during the flood": ingested(f"sim_during_{n}")})
    return results


def main(args: list[str]) -> None:
    count = int(args[0]) if args else 2000
    idle_count = int(args[1]) if len(args) > 1 else 1000
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        simreportd("simulate", str(work / "sims" / "sim_flood"), "--agents", "16", "--rounds", "6", cwd=work)
        (work / "config.toml").write_text(f'[store]\npath = "state/events.sqlite3"\n[watch]\nroots = ["sims"]\n'
                                          f'rescan_seconds = 1\n[reports]\noutput_dir = "reports"\n'
                                          f'[server]\nport = {PORT}\ntoken = "{TOKEN}"\n')
        simreportd("-c", "config.toml", "report", "sims/sim_flood", "--wait", cwd=work)
        log = (work / "daemon.log").open("w")
        allocator = allocator_settings()
        env = {**os.environ, **allocator}
        daemon = subprocess.Popen(["prlimit", "--nofile=1024", sys.executable, "-m", "simreportd", "-c", "config.toml",
                                   "run"], cwd=work, stderr=log, env=env)
        try:
            print("daemon log:", work / "daemon.log", file=sys.stderr)
            while slowest_answer(0.1) == float("inf"):
                time.sleep(0.2)
            cold = rss_mb(daemon.pid)
            warm_up()
            start = rss_mb(daemon.pid)
            results = rounds(count, idle_count, daemon, work)
            print(json.dumps({"allocator (systemd/simreportd.service, ABUSE_PYTHONMALLOC)": allocator or "pymalloc",
                              "RSS at start MB (one subscriber read the whole log, one request)": round(start, 1),
                              "RSS before them MB": round(cold, 1), "rounds": results,
                              "daemon alive": daemon.poll() is None}, indent=2))
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)
            keep = Path(args[2]) if len(args) > 2 else None
            if keep:
                keep.write_bytes((work / "daemon.log").read_bytes())


if __name__ == "__main__":
    PORT = free_port()
    if sys.argv[1:2] == ["--red-team"]:  # the red team's cases (bench/red_team.py)
        subprocess.run([sys.executable, str(Path(__file__).with_name("red_team.py")), *sys.argv[2:]], check=True)
    elif sys.argv[1:] == ["--tiny"]:
        FLOOD_S, SETTLE_S, ROUNDS = 2.0, 0.0, 1
        main(["20", "10"])
    else:
        main(sys.argv[1:])
