"""sd_notify(3) over $NOTIFY_SOCKET, with no dependency: READY, STATUS, WATCHDOG, STOPPING.

Abstract-namespace sockets (a leading "@") are supported. Without $NOTIFY_SOCKET every
call is a no-op, so the daemon runs the same under systemd, in a terminal or in tests.
"""

from __future__ import annotations

import os
import socket


def notify(*fields: str) -> bool:
    """Send `fields` (e.g. "READY=1", "STATUS=...") to systemd; return whether anything was sent."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
        try:
            sock.sendto("\n".join(fields).encode(), address)
        except OSError:
            return False
    return True


def watchdog_interval() -> float | None:
    """Half of $WATCHDOG_USEC in seconds (when it is meant for this process), else None."""
    usec, pid = os.environ.get("WATCHDOG_USEC"), os.environ.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    return int(usec) / 2_000_000
