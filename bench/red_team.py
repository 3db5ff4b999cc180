"""The hostile-load red team's cases against a running daemon: do its limits hold, and does memory come back?

Run by hand: `python bench/red_team.py [READERS]` (default 30), or `python bench/abuse.py --red-team [READERS]`,
or `--tiny` (3 readers, short floods: to check the script runs, not to measure). It writes a small finished
simulation, has a scripted model over HTTP (tests/fake_llm.py) write its report with every reply padded to
PAD bytes (the agent log grows to tens of megabytes, as with a real model's long replies), starts
`simreportd run` with the defaults of config.toml, and then, each from its own loopback addresses:

- slow readers: READERS clients ask `/api/report/<id>/agent-log/stream` and never read; they leave after
  HOLD_S, then as many again stay until the daemon drops them (its write timeout). Printed: the daemon's RSS
  before, its peak (VmHWM) while they hold, after the first leave and after the second are dropped, and
  how long the second waited;
- bad strings: POSTs whose JSON holds a lone surrogate (their statuses, the log's growth, tracebacks);
- spend: 40 addresses chatting back to back (chats answered, refusals, the model calls made, against
  `[limits] model_calls_per_minute`);
- forced regeneration: MiroFish's `force_regenerate` every 0.3 s from one address (the reports it made);
- smuggling: a request framed both ways, with a second request behind it (the answers on that connection);
- read models deleted while running: `/healthz` and `/api/reports` asked at once after (their statuses).

RED_TEAM_CASES="slow readers,spend" runs only those (their names as printed), in that order.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' scripted server
from tests.fake_llm import FakeLLM  # noqa: E402

PORT = 0
PAD = 700_000  # bytes added to each model reply (below [llm] max_reply_bytes)
HOLD_S, SETTLE_S, FLOOD_S = 10.0, 12.0, 30.0
DROP_WAIT_S = 60.0  # the most the script waits for the daemon to drop readers that never read
TCP_ESTABLISHED = "01"  # a connection's state in /proc/net/tcp


def padded(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any] | None:
    """The offline writer's reply with PAD bytes of thought before it (a reply with tool calls keeps them)."""
    if "Plan the report" in body["messages"][0]["content"]:
        return None  # the outline stays JSON
    return {**message, "content": "Thinking it over. " + "x" * PAD + "\n" + (message.get("content") or "")}


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def request(method: str, path: str, body: str = "", source: str = "127.0.0.1", extra: str = "") -> bytes:
    """One request on its own connection from `source`; everything the daemon sent before closing it (a chat
    may wait minutes for its model calls while the budget is spent)."""
    with socket.create_connection(("127.0.0.1", PORT), timeout=600, source_address=(source, 0)) as sock:
        sock.sendall(f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(body.encode())}\r\n{extra}Connection: close\r\n\r\n{body}".encode())
        return b"".join(iter(lambda: sock.recv(65536), b""))


def status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0


def source(n: int) -> str:
    return f"127.0.{10 + n // 250}.{1 + n % 250}"


def stalled_reader(n: int, report_id: str) -> socket.socket:
    """A client that asks for the whole agent log and reads nothing (a small receive buffer)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.bind((source(n), 0))
    sock.connect(("127.0.0.1", PORT))
    sock.sendall(f"GET /api/report/{report_id}/agent-log/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    return sock


def held_by_daemon(sources: set[str]) -> int:
    """Connections from `sources` the daemon still holds open (its side, in /proc/net/tcp): a reader that
    reads nothing cannot see its connection dropped (the daemon's reset falls outside its closed window)."""
    held = 0
    for row in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, remote, state = row.split()[1:4]
        address = socket.inet_ntoa(bytes.fromhex(remote.split(":")[0])[::-1])
        held += int(local.split(":")[1], 16) == PORT and state == TCP_ESTABLISHED and address in sources
    return held


def slow_readers(pid: int, report_id: str, count: int) -> dict[str, object]:
    before = rss_mb(pid)
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    leaving = [stalled_reader(n, report_id) for n in range(count)]
    time.sleep(HOLD_S)
    held_mb = rss_mb(pid)
    for sock in leaving:
        sock.close()
    time.sleep(SETTLE_S)
    after_leaving = rss_mb(pid)
    staying = [stalled_reader(count + n, report_id) for n in range(count)]
    started, gone, sources = time.monotonic(), 0, {source(count + n) for n in range(count)}
    while time.monotonic() - started < DROP_WAIT_S and gone < count:
        time.sleep(1)
        gone = count - held_by_daemon(sources)
    waited = time.monotonic() - started
    for sock in staying:
        sock.close()
    time.sleep(SETTLE_S)
    return {"readers": count, "RSS before MB": before, "RSS while held MB": held_mb,
            "peak RSS MB": rss_mb(pid, "VmHWM"), "RSS after they left MB": after_leaving,
            "dropped by the daemon": gone, "dropped after s": round(waited, 1),
            "RSS after the dropped MB": rss_mb(pid),
            "RSS after / before": round(rss_mb(pid) / before, 2)}


def forced_regeneration(simulation: str, seconds: float) -> dict[str, object]:
    body = json.dumps({"simulation_id": simulation, "force_regenerate": True})
    answers, ids, until = Counter(), set(), time.monotonic() + seconds
    while time.monotonic() < until:
        answer = request("POST", "/api/report/generate", body)
        answers[status(answer)] += 1
        if status(answer) == 200:
            ids.add(json.loads(answer.split(b"\r\n\r\n", 1)[1])["data"]["report_id"])
        time.sleep(0.3)
    return {"asked": sum(answers.values()), "statuses": dict(answers), "reports named": len(ids)}


def spend(simulation: str, clients: int, seconds: float, llm: FakeLLM) -> dict[str, object]:
    calls_before, answers, until = len(llm.requests), Counter(), time.monotonic() + seconds

    def chat(n: int) -> None:
        body = json.dumps({"simulation_id": simulation, "message": f"Question {n}: who led the debate?"})
        while time.monotonic() < until:
            answers[status(request("POST", "/api/report/chat", body, source=source(500 + n)))] += 1

    threads = [threading.Thread(target=chat, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"clients": clients, "seconds": seconds, "statuses": dict(answers),
            "model calls made": len(llm.requests) - calls_before}


def bad_strings(log: Path, count: int) -> dict[str, object]:
    bodies = [("/api/report/generate", '{"simulation_id": "\\ud800", "force_regenerate": true}'),
              ("/api/report/chat", '{"simulation_id": "x", "message": "\\udfff"}'),
              ("/api/report/tools/search", '{"simulation_id": "x", "query": "\\ud800"}'),
              ("/api/report/generate/status", '{"task_id": "\\ud800"}')]
    size, answers = log.stat().st_size, Counter()
    for n in range(count):  # each from its own address: no per-client limit (chats a minute) is met
        path, body = bodies[n % len(bodies)]
        answers[status(request("POST", path, body, source=source(1000 + n)))] += 1
    text = log.read_text(errors="replace")
    return {"requests": count, "statuses": dict(answers), "log bytes added": log.stat().st_size - size,
            "tracebacks in the log": text.count("Traceback")}


def smuggling() -> dict[str, object]:
    behind = "GET /api/reports HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with socket.create_connection(("127.0.0.1", PORT), timeout=30) as sock:
        sock.sendall(("POST /api/report/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      f"Content-Length: {5 + len(behind)}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n{behind}")
                     .encode())
        answer = b"".join(iter(lambda: sock.recv(65536), b""))
    return {"answers on the connection": answer.count(b"HTTP/1.1 "), "first": answer.split(b"\r\n", 1)[0].decode()}


def views_deleted(work: Path) -> dict[str, object]:
    views = next((work / "state").glob("*views*.sqlite3"))
    for suffix in ("", "-wal", "-shm"):
        Path(f"{views}{suffix}").unlink(missing_ok=True)
    answers = Counter(status(request("GET", path)) for path in ("/healthz", "/api/reports") * 5)
    return {"statuses right after": dict(answers)}


def main(args: list[str]) -> None:
    readers = int(args[0]) if args else 30
    with tempfile.TemporaryDirectory() as tmp, FakeLLM(script=padded) as llm:
        work = Path(tmp)
        run = [sys.executable, "-m", "simreportd", "-c", "config.toml"]
        subprocess.run([*run[:3], "simulate", "sims/sim_red", "--agents", "12", "--rounds", "4"], cwd=work, check=True,
                       capture_output=True)
        (work / "config.toml").write_text(
            f'[store]\npath = "state/events.sqlite3"\n[watch]\nroots = ["sims"]\n[reports]\noutput_dir = "reports"\n'
            f'auto = false\n[llm]\nprovider = "openai"\nbase_url = "{llm.base_url}"\nmodel = "padded"\n'
            f'[server]\nport = {PORT}\n')
        written = subprocess.run([*run, "report", "sims/sim_red", "--wait"], cwd=work, capture_output=True, text=True)
        report_id = written.stdout.strip().splitlines()[-1]
        log = work / "daemon.log"
        daemon = subprocess.Popen([*run, "run"], cwd=work, stderr=log.open("w"))
        try:
            while status(request("GET", "/healthz") if _listening() else b"") != 200:
                time.sleep(0.2)
            cases = {"slow readers": lambda: slow_readers(daemon.pid, report_id, readers),
                     "bad strings": lambda: bad_strings(log, 500 if readers >= 30 else 20),
                     "spend": lambda: spend("sim_red", 40 if readers >= 30 else 4, FLOOD_S, llm),
                     "forced regeneration": lambda: forced_regeneration("sim_red", FLOOD_S),
                     "smuggling": smuggling, "read models deleted": lambda: views_deleted(work)}
            chosen = [c.strip() for c in os.environ.get("RED_TEAM_CASES", "").split(",") if c.strip()] or list(cases)
            results = {"agent log MB": round(len(request("GET", f"/api/report/{report_id}/agent-log/stream")) / 1e6, 1),
                       **{name: cases[name]() for name in chosen}, "daemon alive": daemon.poll() is None}
            print(json.dumps(results, indent=2))
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)


def _listening() -> bool:
    try:
        socket.create_connection(("127.0.0.1", PORT), timeout=1).close()
        return True
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


if __name__ == "__main__":
    PORT = free_port()
    if sys.argv[1:] == ["--tiny"]:
        PAD, HOLD_S, SETTLE_S, FLOOD_S = 20_000, 1.0, 0.5, 2.0
        main(["3"])
    else:
        main(sys.argv[1:])
