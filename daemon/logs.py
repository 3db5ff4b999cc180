"""Structured logs on stderr: plain text for people, JSON lines for machines (`[log] format`)."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

# Python level -> journald priority prefix (sd-daemon(3)), so journald keeps the level.
PRIORITY = {logging.DEBUG: 7, logging.INFO: 6, logging.WARNING: 4, logging.ERROR: 3, logging.CRITICAL: 2}


class JSONFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {"time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
                 "level": record.levelname.lower(), "logger": record.name, "message": record.getMessage()}
        for key in ("report_id", "simulation_id"):
            if hasattr(record, key):
                entry[key] = getattr(record, key)
        if record.exc_info:
            entry["traceback"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


class JournalPrefix(logging.Filter):
    """Prefix `<N>` with the journald priority when stderr goes to the journal."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.priority = PRIORITY.get(record.levelno, 6)
        return True


def setup_logging(level: str, fmt: str, journal: bool = False) -> None:
    handler = logging.StreamHandler(sys.stderr)
    prefix = "<%(priority)s>" if journal else ""
    if fmt == "json":
        handler.setFormatter(JSONFormatter())
    else:
        handler.setFormatter(logging.Formatter(prefix + "%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(JournalPrefix())
    root = logging.getLogger("simreportd")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False
