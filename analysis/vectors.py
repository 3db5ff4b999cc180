"""The vector cache: a read model of embeddings keyed by embedder and text (docs/architecture.md#meaning).

Derived and disposable like every read model: deleting the file costs only the time to embed again.
Texts are embedded in batches, only those not cached, so a growing run pays for its new statements only.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np

from simreportd.errors import EmbeddingsUnavailable

from .embedders import BundledE5, Embedder, Vectors

SCHEMA = "CREATE TABLE IF NOT EXISTS vectors (embedder TEXT, digest TEXT, vector BLOB, PRIMARY KEY (embedder, digest))"
BATCH = 32  # texts a call to the embedder takes
MAX_VECTORS = 200_000  # vectors the cache keeps at most (`[embeddings] cache_max_vectors`): 1.5 KB each at 384
KEPT_AFTER_PRUNING = 0.9  # of the limit, what a pruning leaves: room for a while, so it is one line now and then

log = logging.getLogger("simreportd.analysis.vectors")


def vectors_path_for(store_path: Path) -> Path:
    """Where the vectors of a store's runs are cached: `<store>-vectors.sqlite3` beside it."""
    return store_path.with_name(store_path.stem + "-vectors.sqlite3")


def digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class VectorCache:
    """Vectors of texts by one embedder, from the cache file, embedding (and keeping) the missing ones."""

    def __init__(self, path: Path | None, embedder: Embedder, max_vectors: int = MAX_VECTORS) -> None:
        self.path, self.embedder, self.max_vectors = path, embedder, max_vectors

    def vectors(self, texts: list[str], query: bool = False,
                progress: Callable[[int], None] = lambda _: None) -> Vectors:
        """One unit vector per text, in order (`query`: embedded as questions); `progress` is told how many
        were embedded in each batch."""
        keys = [digest(("query: " if query else "") + t) for t in texts]
        found = self._cached(keys)
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        text_of = dict(zip(keys, texts))
        for start in range(0, len(missing), BATCH):
            batch = missing[start:start + BATCH]
            made = self.embedder.embed([text_of[k] for k in batch], query=query)
            found.update(zip(batch, made))
            self._keep(batch, made)
            progress(len(batch))
        dim = next((len(v) for v in found.values()), 0)
        return np.stack([found[k] for k in keys]) if keys else np.zeros((0, dim), dtype=np.float32)

    def _connect(self) -> sqlite3.Connection:
        assert self.path is not None
        conn = sqlite3.connect(self.path, timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(SCHEMA)
        return conn

    def _cached(self, keys: list[str]) -> dict[str, Vectors]:
        if self.path is None or not keys:
            return {}
        found: dict[str, Vectors] = {}
        with self._connect() as conn:
            unique = list(dict.fromkeys(keys))
            for start in range(0, len(unique), 500):
                part = unique[start:start + 500]
                rows = conn.execute("SELECT digest, vector FROM vectors WHERE embedder = ? AND digest IN"
                                    " (SELECT value FROM json_each(?))", (self.embedder.name, json.dumps(part)))
                found.update((str(d), np.frombuffer(v, dtype=np.float32)) for d, v in rows)
        return found

    def _keep(self, keys: list[str], made: Vectors) -> None:
        if self.path is None:
            return
        try:
            with self._connect() as conn:
                conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                                 [(self.embedder.name, k, v.astype(np.float32).tobytes()) for k, v in zip(keys, made)])
                self._prune(conn)
        except sqlite3.Error:  # a cache that cannot be written (disk full, read-only) only costs time later
            pass

    def _prune(self, conn: sqlite3.Connection) -> None:
        """Past `max_vectors`, drop the vectors cached first (the lowest row ids: a replaced row gets a new
        one) down to 90% of the limit. What is dropped is embedded again when asked for; a replay that reads
        only cached vectors then goes by keywords for those texts."""
        held = int(conn.execute("SELECT count(*) FROM vectors").fetchone()[0])
        if held <= self.max_vectors:
            return
        drop = held - int(self.max_vectors * KEPT_AFTER_PRUNING)
        conn.execute("DELETE FROM vectors WHERE rowid IN (SELECT rowid FROM vectors ORDER BY rowid LIMIT ?)", (drop,))
        log.warning("vector cache %s held %d vectors, more than [embeddings] cache_max_vectors = %d: the %d "
                    "oldest were dropped", self.path, held, self.max_vectors, drop)


class CachedOnly:
    """An embedder that answers only from the cache: a replay reads the vectors its original computed and
    never calls a server (a text the original never embedded is an `EmbeddingsUnavailable`)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def embed(self, texts: list[str], query: bool = False) -> Vectors:
        raise EmbeddingsUnavailable(f"{len(texts)} texts were never embedded by {self.name} in this store; a "
                                    "replay reads only the vectors its original computed")


def embedder_named(name: str) -> Embedder:
    """The embedder a recorded analysis names: the bundled one again (it is deterministic), anything else only
    from the cache."""
    return BundledE5() if name == BundledE5.name else CachedOnly(name)
