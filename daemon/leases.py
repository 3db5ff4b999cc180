"""Who does which work when several daemons share one PostgreSQL log (docs/architecture.md#scale-out-on-postgresql).

One owner per simulation folder for ingest (`ingest:<simulation_id>`) and one per report for
the agent (`report:<report_id>`). With SQLite there is one daemon per store (its lock file),
so every lease is granted at once.
"""

from __future__ import annotations

import os
import socket
from typing import Protocol

from .config import StoreConfig


class Leases(Protocol):
    held: set[str]

    async def take(self, name: str) -> bool:
        """Hold the lease `name` unless another node does; True when this node holds it."""
        ...

    async def release(self, name: str) -> None: ...

    async def owners(self) -> dict[str, str]:
        """Every lease held now, by any node: name -> node."""
        ...

    async def __aenter__(self) -> Leases: ...

    async def __aexit__(self, *exc: object) -> None: ...


class SoleNode:
    """The leases of the only daemon of a store: always granted."""

    def __init__(self) -> None:
        self.held: set[str] = set()
        self.node = node_name()

    async def __aenter__(self) -> SoleNode:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.held = set()

    async def take(self, name: str) -> bool:
        self.held.add(name)
        return True

    async def release(self, name: str) -> None:
        self.held.discard(name)

    async def owners(self) -> dict[str, str]:
        return dict.fromkeys(sorted(self.held), self.node)


def node_name() -> str:
    """This daemon, as other nodes and `status` see it."""
    return f"simreportd@{socket.gethostname()}:{os.getpid()}"


def leases_for(store: StoreConfig) -> Leases:
    if store.url:
        from simreportd.events.postgres import AdvisoryLeases

        return AdvisoryLeases(store.url, os.environ.get(store.password_env) or None, node_name())
    return SoleNode()
