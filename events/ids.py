"""Time-ordered event ids (UUID version 7, RFC 9562 section 5.7).

Ids that grow with time keep inserts into the unique `event_id` index sequential, which
makes batched appends about twice as fast as random UUID4s would.
"""

from __future__ import annotations

import random
import threading
import time

_lock = threading.Lock()
_last_ms, _sequence = 0, 0
_random = random.Random()  # seeded from os.urandom; uniqueness comes from time and sequence
_LOW_48 = (1 << 48) - 1


def new_event_ids(count: int) -> list[str]:
    """`count` UUIDv7 strings, strictly increasing within this process, made under one lock (half the
    time of one `new_event_id` each: an ingest batch needs thousands)."""
    global _last_ms, _sequence
    ids: list[str] = []
    with _lock:
        ms = time.time_ns() // 1_000_000
        ms, sequence = (_last_ms, _sequence + 1) if ms <= _last_ms else (ms, 0)
        while len(ids) < count:
            if sequence >= 1 << 12:  # 4096 ids in one millisecond: borrow the next one
                ms, sequence = ms + 1, 0
            take = min(count - len(ids), (1 << 12) - sequence)
            stamp = f"{ms:012x}"
            head = f"{stamp[:8]}-{stamp[8:]}-7"  # 48 bits of milliseconds, then the version
            ids += [_uuid(head, s, (0b10 << 62) | _random.getrandbits(62)) for s in range(sequence, sequence + take)]
            sequence += take
        _last_ms, _sequence = ms, sequence - 1
    return ids


def _uuid(head: str, sequence: int, low: int) -> str:
    """The id after `head`: 12 bits of sequence, then the variant and 62 random bits."""
    return f"{head}{sequence:03x}-{low >> 48:04x}-{low & _LOW_48:012x}"


def new_event_id() -> str:
    """A UUIDv7 string, strictly increasing within this process."""
    return new_event_ids(1)[0]
