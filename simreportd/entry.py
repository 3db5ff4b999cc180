"""The process entry point: take SIGTERM and SIGINT before anything slow is imported.

Importing the CLI (pydantic, openai, ...) takes a noticeable fraction of a second; a stop
asked for in that window would otherwise kill the process with the signal (exit 143). Here
it is only remembered, and the CLI exits 0 without starting its work.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType

_requested: list[int] = []


def _remember(signum: int, frame: FrameType | None) -> None:
    _requested.append(signum)


def stop_requested() -> bool:
    """Whether SIGTERM or SIGINT arrived before the CLI took the signals over."""
    return bool(_requested)


def main() -> int:
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _remember)
    from simreportd.daemon.cli.main import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
