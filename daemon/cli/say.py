"""`say`: the commands' human-facing progress, on stderr so that stdout stays machine-readable."""

from __future__ import annotations

import sys


def say(text: str) -> None:
    """Print one line (or a few) of progress for the person at the terminal."""
    print(text, file=sys.stderr, flush=True)
