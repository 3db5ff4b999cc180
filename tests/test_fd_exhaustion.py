"""Out of file descriptors is not a changed file: ingest retries later instead of starting a new generation."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

from .conftest import PYTHON, TIMEOUT

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
