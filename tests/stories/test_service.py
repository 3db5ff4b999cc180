"""Running as a service: sd_notify readiness, status, watchdog, signals, reload, the unit file."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from simreportd.simulator.simulate import simulate

from ..conftest import TIMEOUT, write_config
from ..processes import NotifySocket, cli, count, serving, wait_until

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "systemd" / "simreportd.service"
SECURITY_THRESHOLD = 2.0  # the README states it too


def test_ready_status_watchdog_and_stopping_reach_systemd_and_sigterm_exits_0(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    os.environ["WATCHDOG_USEC"] = "1000000"
    try:
        with NotifySocket(tmp_path / "notify.sock") as systemd:
            daemon = cli("run", "-c", str(config))
            [ready] = [m for m in systemd.wait_for("READY=1") if "READY=1" in m]
            url = serving(ready)
            with urllib.request.urlopen(url + "healthz", timeout=TIMEOUT) as response:  # listening already
                assert json.load(response)["status"] == "ok"
            stamps = []
            while len(stamps) < 5:
                message = systemd.sock.recv(4096).decode()
                if "WATCHDOG=1" in message.split("\n"):
                    stamps.append(time.monotonic())
                    assert "STATUS=" in message and "reports running" in message
            daemon.send_signal(signal.SIGTERM)
            systemd.wait_for("STOPPING=1")
            assert daemon.wait(timeout=TIMEOUT) == 0
    finally:
        os.environ.pop("WATCHDOG_USEC", None)
    gaps = [b - a for a, b in zip(stamps, stamps[1:])]
    # Pinged at half the watchdog period, as systemd advises: the shortest gap shows the schedule (a daemon
    # pinging once a period or less would have none under 1 s); a loaded machine only stretches the others.
    assert min(gaps) < 1.0, gaps


def test_a_start_that_folds_the_read_models_again_keeps_extending_systemds_start_timeout(tmp_path: Path) -> None:
    config = write_config(tmp_path, auto=False)
    simulate(tmp_path / "sims" / "sim_a", agents=12, rounds=6, seed=3)
    assert cli("report", "-c", str(config), str(tmp_path / "sims" / "sim_a"), "--wait").wait(TIMEOUT) == 0
    (tmp_path / "state" / "events-views.sqlite3").unlink()  # as a new read-model schema would: fold it all again
    with NotifySocket(tmp_path / "notify.sock") as systemd:
        daemon = cli("run", "-c", str(config))
        before_ready = systemd.wait_for("READY=1")[:-1]
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=TIMEOUT) == 0
    extended = [m for m in before_ready if "EXTEND_TIMEOUT_USEC=30000000" in m.split("\n")]
    assert extended and "STATUS=folding the read models: 0 of " in extended[0]


@pytest.mark.anyio
async def test_sigterm_closes_websockets_with_1001(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    with NotifySocket(tmp_path / "notify.sock") as systemd:
        daemon = cli("run", "-c", str(config))
        [ready] = [m for m in await asyncio.to_thread(systemd.wait_for, "READY=1") if "READY=1" in m]
    url = serving(ready).replace("http://", "ws://") + "ws"
    async with connect(url) as ws:
        await ws.send(json.dumps({"op": "subscribe"}))
        assert json.loads(await ws.recv())["type"] == "caught_up"
        daemon.send_signal(signal.SIGTERM)
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), TIMEOUT)
    assert closed.value.rcvd.code == 1001
    assert daemon.wait(timeout=TIMEOUT) == 0


def test_sighup_takes_a_good_config_and_refuses_a_bad_one(tmp_path: Path) -> None:
    config = write_config(tmp_path, auto=False)
    db = tmp_path / "state" / "events.sqlite3"
    simulate(tmp_path / "more" / "sim_later", agents=6, rounds=2, seed=2)
    with NotifySocket(tmp_path / "notify.sock") as systemd:
        daemon = cli("run", "-c", str(config))
        systemd.wait_for("READY=1")
        config.write_text(config.read_text().replace('roots = ["sims"]', 'roots = ["sims", "more"]'))
        daemon.send_signal(signal.SIGHUP)
        systemd.wait_for("READY=1")
        wait_until(lambda: count(db, "SELECT count(*) FROM events WHERE stream = 'simulation-sim_later'") > 0,
                   "the new root to be watched")
        good = config.read_text()
        config.write_text(good + "\n[agent]\nmax_tools = 9\n")
        daemon.send_signal(signal.SIGHUP)
        systemd.wait_for("READY=1")
        config.write_text(good.replace("[server]\n", '[server]\nhost = "0.0.0.0"\n'))  # exposed, no token
        daemon.send_signal(signal.SIGHUP)
        systemd.wait_for("READY=1")
        simulate(tmp_path / "more" / "sim_after", agents=6, rounds=2, seed=3)
        wait_until(lambda: count(db, "SELECT count(*) FROM events WHERE stream = 'simulation-sim_after'") > 0,
                   "the old config to keep working")
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=TIMEOUT) == 0
    stderr = daemon.log_path.read_text()
    assert "configuration reloaded" in stderr
    assert "config reload refused" in stderr and "unknown key [agent] max_tools" in stderr
    assert "host = '0.0.0.0' is not loopback: set [server] token" in stderr


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze (.ci/run installs it)")
def test_the_unit_verifies_cleanly_and_is_hardened() -> None:
    verify = subprocess.run(["systemd-analyze", "verify", str(UNIT)], capture_output=True, text=True, timeout=TIMEOUT)
    assert verify.returncode == 0 and verify.stderr == "" and verify.stdout == ""
    security = subprocess.run(["systemd-analyze", "security", "--offline=true", str(UNIT)],
                              capture_output=True, text=True, timeout=TIMEOUT)
    exposure = float(re.search(r"Overall exposure level for \S+: ([\d.]+)", security.stdout).group(1))
    assert exposure <= SECURITY_THRESHOLD
    text = UNIT.read_text()
    for required in ("Type=notify", "WatchdogSec=", "Restart=on-failure", "StateDirectory=simreportd",
                     "/etc/simreportd/config.toml", "ExecReload=/bin/kill -HUP $MAINPID"):
        assert required in text
