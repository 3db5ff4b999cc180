"""The process entry point: take SIGTERM and SIGINT before anything slow is imported.

Importing the CLI (pydantic, openai, ...) takes a noticeable fraction of a second; a stop
asked for in that window would otherwise kill the process with the signal (exit 143). Here
it is only remembered, and the CLI exits 0 without starting its work.
"""

from __future__ import annotations

import sys

from simreportd.stop_request import remember_stops


def main() -> int:
    remember_stops()
    from simreportd.daemon.cli.main import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
