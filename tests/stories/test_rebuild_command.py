"""`simreportd rebuild` with no daemon around loads neither the agent nor the server: at 100k actions their import
cost as much CPU as the fold's tenth."""

from __future__ import annotations

import subprocess
import sys


def test_the_rebuild_command_loads_neither_the_agent_nor_the_server() -> None:
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys; from simreportd.daemon.cli.main import handler_for; handler_for('rebuild');"
         " print(' '.join(sorted(m for m in sys.modules if m.startswith(('simreportd.agent', 'simreportd.daemon.server',"
         " 'numpy', 'websockets')))))"], capture_output=True, text=True, check=True)
    assert loaded.stdout.split() == [], loaded.stdout
