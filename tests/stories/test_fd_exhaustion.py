"""Out of file descriptors: not a changed file for ingest (it retries later instead of starting a new generation),
and never reached by the server, which keeps its connections and the connections it accepts at once below it."""

from __future__ import annotations

import socket
import subprocess
import textwrap
import urllib.request
from pathlib import Path

from ..conftest import PYTHON, TIMEOUT, write_config
from ..processes import STARTED, wait_until

CHECK = textwrap.dedent("""
    import errno, os, resource, sys
    from pathlib import Path
    from simreportd.daemon.ingest.tail import read_lines, tail_matches
    path = Path(sys.argv[1])
    last = read_lines(path, 0, 1 << 20, 1 << 20)[-1]
    end, expected = last.end, last.tail
    assert tail_matches(path, end, expected)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))
    held = []
    try:
        while True:
            held.append(os.open(os.devnull, os.O_RDONLY))
    except OSError as exc:
        assert exc.errno == errno.EMFILE
    try:
        tail_matches(path, end, expected)
    except OSError as exc:
        print("raised", errno.errorcode[exc.errno])
    else:
        print("answered")
""")


def test_a_tail_check_without_a_free_descriptor_raises_instead_of_saying_the_file_changed(tmp_path: Path) -> None:
    actions = tmp_path / "actions.jsonl"
    actions.write_bytes(b'{"round": 1}\n' * 100)
    done = subprocess.run([PYTHON, "-c", CHECK, str(actions)], capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "raised EMFILE"


def test_the_connection_limit_stays_below_the_file_limit() -> None:
    """Under `LimitNOFILE=1024` (prlimit here), 900 connections would leave the daemon 124 descriptors."""
    code = "from simreportd.daemon.server.edge import within_file_limit; print(within_file_limit(900), within_file_limit(10))"
    done = subprocess.run(["prlimit", "--nofile=1024", PYTHON, "-c", code], capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert done.stdout.split() == ["896", "10"], done.stderr
    assert "lowered to 896" in done.stderr and "LimitNOFILE" in done.stderr


def test_accept_errors_for_want_of_descriptors_are_one_line_a_period() -> None:
    import logging

    from simreportd.daemon.server.edge import AcceptErrorsOnce

    accept_errors = AcceptErrorsOnce(period_s=3600)
    records = [logging.LogRecord("asyncio", logging.ERROR, __file__, 1, "socket.accept() out of system resource\n"
                                 "socket: %s", ("<socket>",), None) for _ in range(1000)]
    kept = [r for r in records if accept_errors.filter(r)]
    other = logging.LogRecord("asyncio", logging.ERROR, __file__, 1, "Task exception was never retrieved", (), None)
    assert len(kept) == 1 and "out of file descriptors" in kept[0].getMessage() and accept_errors.filter(other)


def test_a_burst_of_connections_at_the_file_limit_leaves_the_daemon_its_descriptors(tmp_path: Path) -> None:
    """400 sockets opened at once against a daemon held to 256 files (128 connections): it accepts a few at a
    time and refuses or evicts each before the next, so accept() never runs out of descriptors."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = write_config(tmp_path).read_text().replace("port = 0", f"port = {port}")
    (tmp_path / "config.toml").write_text(config)
    log = (tmp_path / "daemon.log").open("w")
    daemon = subprocess.Popen(["prlimit", "--nofile=256", PYTHON, "-m", "simreportd", "-c",
                               str(tmp_path / "config.toml"), "run"], stderr=log, stdout=subprocess.DEVNULL)
    STARTED.append(daemon)
    daemon.log_path = tmp_path / "daemon.log"  # type: ignore[attr-defined]
    wait_until(lambda: healthz(port) == 200, "the daemon to answer")
    crowd = [socket.create_connection(("127.0.0.1", port)) for _ in range(400)]
    status = healthz(port)  # the oldest idle socket makes room for it
    for sock in crowd:
        sock.close()
    text = (tmp_path / "daemon.log").read_text()
    assert status == 200 and "lowered to 128" in text, text
    assert "accept() failed" not in text and "Too many open files" not in text, text


def healthz(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=TIMEOUT) as answer:
            return int(answer.status)
    except OSError:
        return 0
