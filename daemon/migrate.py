"""`simreportd migrate --to postgresql://...`: copy the SQLite event log into PostgreSQL, intact.

Positions, event ids, stream versions and recording times are copied as they are, so every
read model, report and notification position stays valid; both logs are then read back and
compared by digest before the command says it is done.
"""

from __future__ import annotations

import hashlib
import os

from simreportd.errors import CopyDiffers, StoreNotEmpty
from simreportd.events import EventStore, PostgresEventStore, SQLiteEventStore

from .config import Config

PAGE = 5000


async def migrate(config: Config, url: str) -> tuple[int, str]:
    """Copy the store of `config` into the PostgreSQL database at `url`; return (events, digest)."""
    async with SQLiteEventStore(config.store.path, config.store.synchronous) as source, \
            PostgresEventStore(url, os.environ.get(config.store.password_env) or None) as target:
        position = await target.last_position()
        if position:
            raise StoreNotEmpty(f"{target.where} already holds {position} events; migrate into an empty database")
        while batch := await source.read_all(position, PAGE):
            await target.import_recorded(batch)
            position = batch[-1].position
        ours, theirs = await digest(source), await digest(target)
    if ours != theirs:
        raise CopyDiffers(f"the copy in {_where(url)} differs from {config.store.path} (digest {theirs[:16]} vs "
                              f"{ours[:16]}); do not switch to it")
    return position, ours


async def digest(store: EventStore) -> str:
    """A SHA-256 of every event as stored, in position order."""
    h, position = hashlib.sha256(), 0
    while batch := await store.read_all(position, PAGE):
        for r in batch:
            h.update(repr((r.position, r.event_id, r.stream, r.version, r.type, r.schema_version, r.recorded_at,
                           r.raw_data, r.raw_meta)).encode())
        position = batch[-1].position
    return h.hexdigest()


def _where(url: str) -> str:
    return url.split("@")[-1]
