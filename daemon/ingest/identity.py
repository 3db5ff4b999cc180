"""Which id a simulation folder's stream is known by (docs/formats.md#simulation-ids).

MiroFish names a simulation's folder after its id (`backend/app/services/simulation_manager.py:138-140`), and
clients know a run by the `simulation_id` of its simulation_config.json; a copied or renamed folder keeps the
config's id. So the config's id is the simulation's id, and the folder's name an alias. The folder's name
stays the id where the config's cannot be: the store already knew the folder by its name (a store from before),
the config's id is not a plain id, or another folder already goes by it (or is named so, beside it).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from pathlib import Path

import anyio

from simreportd.events import EventStore
from simreportd.events.streams import simulation_stream

from .folder import configured_id
from .inputs import Confinement

PLAIN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")  # what may name a stream, a folder and a URL part

log = logging.getLogger("simreportd.daemon.ingest.identity")


async def simulation_id_for(store: EventStore, folder: Path, confinement: Confinement,
                            claimed: Mapping[str, Path]) -> str:
    """The id `folder`'s events are recorded under: its config's `simulation_id` unless the folder's name must
    stay (logged once, with why). `claimed` holds the ids this process's other folders already go by."""
    given = await anyio.to_thread.run_sync(configured_id, folder, confinement)
    if not given or given == folder.name:
        return folder.name
    why = await _why_not(store, folder, given, claimed)
    if why:
        log.info("simulation folder %s keeps its name as its id, not its config's simulation_id %r: %s",
                 folder, given[:200], why)
        return folder.name
    return given


async def _why_not(store: EventStore, folder: Path, given: str, claimed: Mapping[str, Path]) -> str:
    """Why the config's id cannot be the folder's id, or "" when it can."""
    if not PLAIN_ID.fullmatch(given):
        return "it is not a plain id (letters, digits, '_', '-', '.'; at most 128)"
    if await store.read_stream(simulation_stream(folder.name), limit=1):
        return "this store has recorded the folder under its name"
    if await anyio.to_thread.run_sync((folder.parent / given).exists):
        return f"the folder beside it named {given} goes by it (the run it was copied from)"
    other = claimed.get(given)
    if other is not None and other != folder:
        return f"the folder {other} goes by it"
    first = await store.read_stream(simulation_stream(given), limit=1)
    recorded = getattr(first[0].event, "folder", None) if first else None  # a stream begins with its discovery
    if isinstance(recorded, str) and Path(recorded).name != folder.name:
        return f"the folder {recorded} goes by it"
    return ""
