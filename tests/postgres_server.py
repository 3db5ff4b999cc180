"""A throwaway PostgreSQL cluster for the tests: initdb in a temp folder, a Unix socket, no TCP.

Debian's `postgresql` package provides the binaries (`.ci/run` installs it). Locally the
PostgreSQL tests are skipped with a message when no server binary exists; under CI
(`CI=true`) a missing server fails them instead, so CI always runs them.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def server_binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if found:
        return Path(found[-1]).parent
    pg_ctl = shutil.which("pg_ctl")
    return Path(pg_ctl).parent if pg_ctl else None


def _as_postgres_user() -> list[str]:
    """initdb and postgres refuse to run as root: run them as the `postgres` user then."""
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[str]:
    """A running cluster; yields the socket folder (the `host` of a postgresql:// URL)."""
    binaries = server_binaries()
    if binaries is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is not installed; .ci/run installs Debian's postgresql")
        pytest.skip("PostgreSQL server binaries not found (apt-get install postgresql); CI runs these tests")
    with running_cluster(binaries) as sockets:
        yield sockets


@contextmanager
def running_cluster(binaries: Path, fsync: bool = False) -> Iterator[str]:
    """initdb and start a cluster in a temp folder; yield its socket folder; stop and remove it."""
    folder = Path(tempfile.mkdtemp(prefix="simreportd-pg-"))
    os.chmod(folder, 0o777)
    data, sockets = folder / "data", folder / "sockets"
    sockets.mkdir()
    os.chmod(sockets, 0o777)
    run = _as_postgres_user()
    subprocess.run([*run, str(binaries / "initdb"), "-D", str(data), "-A", "trust", "-U", "simreportd",
                    "--no-sync"], check=True, capture_output=True)
    options = f"-k {sockets} -c listen_addresses='' -c fsync={'on' if fsync else 'off'} -c max_connections=200"
    subprocess.run([*run, str(binaries / "pg_ctl"), "-D", str(data), "-o", options, "-w", "-l",
                    str(folder / "server.log"), "start"], check=True, capture_output=True)
    try:
        yield str(sockets)
    finally:
        subprocess.run([*run, str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def database_url(sockets: str, name: str) -> str:
    """A new, empty database in the cluster, as a URL."""
    subprocess.run(["psql", "-h", sockets, "-U", "simreportd", "-d", "postgres", "-q", "-c",
                    f'CREATE DATABASE "{name}"'], check=True, capture_output=True)
    return f"postgresql://simreportd@/{name}?host={sockets}"
