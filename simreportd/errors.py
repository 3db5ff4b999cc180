"""Every error simreportd raises on purpose, in one tree.

Each one has a `code`, the word the websocket `error` frame and the HTTP API carry, and an
`exit_code`, what the CLI exits with (2: the command or its configuration was wrong and running it
again as it is will fail again; 1: it failed now, and may succeed once the cause is gone).

    SimreportdError (code "failed", exit 1)
    ├── ConfigError (config, 2)              the configuration file or an override is invalid
    ├── UsageError (usage, 2)                asked for something that cannot be done as asked
    │   ├── NotFound (not_found, 2)          no such report, simulation or agent
    │   ├── InterviewLocked (locked, 2)      interviews wait for the report to complete
    │   └── ChatLocked (chat_locked, 2)      a chat waits for its report to complete
    ├── StoreError (failed, 1)               the event store's errors
    │   ├── StoreUnusable (store_unusable, 2)    the store file is not a database we can use
    │   │   └── StoreReadOnly (store_read_only, 2)  the store or its folder cannot be written
    │   ├── StoreReplaced (store_replaced, 1)    the store was deleted or replaced while in use
    │   ├── StoreLocked (store_locked, 2)        another daemon holds the store
    │   ├── StoreFull (store_full, 1)            the disk is full; nothing was written
    │   ├── StoreClosed (store_closed, 1)        used after close()
    │   ├── AppendFailed (append_failed, 1)      the database refused a group commit (cause attached)
    │   ├── StoreNotEmpty (store_not_empty, 2)   migrate or import into a store that already holds events
    │   ├── CopyDiffers (copy_differs, 1)        a migrated copy does not hash like its source
    │   ├── ConcurrencyConflict (conflict, 1)    an append expected another stream version
    │   ├── DuplicateEventMismatch (duplicate_events, 1)
    │   └── UnknownEventType (unknown_event_type, 1)  written by a newer simreportd
    ├── WaitTimeout (timeout, 1)             a wait for a position or condition ran out
    ├── AgentError (failed, 1)               the report agent's calls: the model, its tools, a replay
    │   ├── LLMError (llm_failed, 1)             one failed LLM call, with its kind and whether to retry
    │   ├── ToolError (tool_failed, 1)           a tool call that cannot run as asked
    │   ├── UnrecordedCall (unrecorded_call, 1)  a replay asked for an LLM call the original never made
    │   ├── EmbeddingsUnavailable (embeddings_unavailable, 1)  the embedder failed: keyword search goes on
    │   └── ChatFailed (chat_failed, 1)          a chat question could not be answered (the LLM failed)
    ├── ReportError (failed, 1)              a report the daemon cannot write here and now
    │   ├── WriterUnreachable (writer_unreachable, 1)  the report's LLM server cannot be reached now
    │   ├── ReportElsewhere (report_elsewhere, 1)  another daemon on the store writes the report
    │   ├── ReportInterrupted (report_interrupted, 1)  the daemon stopped before the report ended
    │   └── SchedulerStopped (scheduler_stopped, 1)  a report was started outside the scheduler's run()
    └── ServiceError (failed, 1)             the running daemon's dealings with others
        ├── RPCFailed (rpc_failed, 1)            the live simulator did not answer an interview usefully
        ├── LimitReached (limit_reached, 1)      a client asked for more chats or interviews than allowed
        └── HandoverFailed (handover_failed, 1 or 2)  the running daemon refused or could not be reached
"""

from __future__ import annotations


class SimreportdError(Exception):
    """Base class of every error simreportd raises on purpose."""

    code = "failed"
    exit_code = 1


class ConfigError(SimreportdError, ValueError):
    """The configuration file or an override is missing, unknown or invalid."""

    code = "config"
    exit_code = 2


class UsageError(SimreportdError, ValueError):
    """The command was asked for something that cannot be done as asked; exit code 2."""

    code = "usage"
    exit_code = 2


class StoreError(SimreportdError):
    """Base class of the event store's errors: its file or database, appends, reads, locks, copies."""


class StoreUnusable(StoreError):
    """The event store file cannot be opened as a database (corrupt, not SQLite, unreadable)."""

    code = "store_unusable"
    exit_code = 2

    def __init__(self, path: object, reason: str, advice: str = "If the file is damaged, move it away and restore a "
                 "backup (`sqlite3 FILE .recover` may save its events); a new store starts empty") -> None:
        self.path, self.reason = path, reason
        super().__init__(f"cannot use the event store {path}: {reason}. {advice}")


class StoreReadOnly(StoreUnusable):
    """The event store, its folder or its lock cannot be written (a read-only mount, a file mode)."""

    code = "store_read_only"

    def __init__(self, path: object, reason: str) -> None:
        super().__init__(path, f"it is read-only ({reason})", "Make the file and its folder writable by this user, "
                         "or point [store] path at a writable place")


class StoreReplaced(StoreError):
    """The event store was deleted or replaced by another file (or database) while this process used it.

    Appends stop at once: anything written now would go to a file nobody will read again.
    """

    code = "store_replaced"

    def __init__(self, where: str, what: str) -> None:
        self.where, self.what = where, what
        super().__init__(f"the event store {where} {what} while in use; appends stopped so that nothing is written "
                         "where no one will read it. Restore the store, then restart simreportd")


class StoreFull(StoreError, OSError):
    """The disk holding the event store is full; nothing was written, retry once space is freed."""

    code = "store_full"


class StoreLocked(StoreError):
    """Another simreportd process holds the store's lock (one writer daemon per store)."""

    code = "store_locked"
    exit_code = 2


class StoreClosed(StoreError, RuntimeError):
    """The event store was used after it was closed."""

    code = "store_closed"

    def __init__(self) -> None:
        super().__init__("the event store is closed; open it again")


class ConcurrencyConflict(StoreError):
    """An append expected a stream version that is no longer current."""

    code = "conflict"

    def __init__(self, stream: str, expected: int, actual: int) -> None:
        self.stream, self.expected, self.actual = stream, expected, actual
        super().__init__(
            f"stream {stream!r} is at version {actual}, the append expected {expected}; "
            "read the stream again and retry"
        )


class DuplicateEventMismatch(StoreError):
    """An append reused some, but not all, event ids of an earlier append."""

    code = "duplicate_events"

    def __init__(self, stream: str, event_ids: list[str]) -> None:
        self.stream, self.event_ids = stream, event_ids
        super().__init__(
            f"append to {stream!r} repeats event ids {event_ids[:3]} of an earlier append but not all of them"
        )


class UnknownEventType(StoreError, ValueError):
    """A stored event has a type no model in this version knows."""

    code = "unknown_event_type"

    def __init__(self, type_name: str, schema_version: int) -> None:
        self.type_name, self.schema_version = type_name, schema_version
        super().__init__(f"unknown event type {type_name!r} (schema v{schema_version}); upgrade simreportd")


class WaitTimeout(SimreportdError, TimeoutError):
    """A wait for a position or a condition ran out of time."""

    code = "timeout"

    def __init__(self, what: str, seconds: float) -> None:
        self.what, self.seconds = what, seconds
        super().__init__(f"timed out after {seconds:g}s waiting for {what}")


class NotFound(UsageError, LookupError):
    """A report, simulation or agent the caller named does not exist (a usage error: exit code 2)."""

    code = "not_found"


class AppendFailed(StoreError):
    """The database refused a group commit for a reason of its own; the driver's error is the cause."""

    code = "append_failed"


class StoreNotEmpty(StoreError):
    """A migration or import into a store that already holds events (it would mix two histories)."""

    code = "store_not_empty"
    exit_code = 2


class CopyDiffers(StoreError):
    """A migrated copy of the log does not hash like its source."""

    code = "copy_differs"


class InterviewLocked(UsageError):
    """Interviews wait for the report to complete (a usage error: exit code 2, as when handed over)."""

    code = "locked"


class ChatLocked(UsageError):
    """A chat opens on a completed report only (a usage error: exit code 2)."""

    code = "chat_locked"


class AgentError(SimreportdError):
    """Base class of the report agent's errors: a call to the model or a tool failed, or a replay strayed."""


class ReportError(SimreportdError):
    """Base class of the errors that say a report cannot be written here and now (elsewhere, stopped, unreachable)."""


class ServiceError(SimreportdError):
    """Base class of the running daemon's errors with others: the live simulator, its clients, the CLI's handover."""


class AlreadyRunning(ServiceError):
    """`Daemon.run` was called while it already runs in this process (a programming error)."""

    code = "already_running"


class LLMError(AgentError):
    """A failed LLM call, described well enough for the core to decide what to do next."""

    code = "llm_failed"

    def __init__(self, kind: str, message: str, *, status_code: int | None = None,
                 retry_after_s: float | None = None, retryable: bool = True, tools_refused: bool = False) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind, self.message, self.status_code = kind, message, status_code
        self.retry_after_s, self.retryable, self.tools_refused = retry_after_s, retryable, tools_refused


class ToolError(AgentError):
    """A tool call that cannot run as asked (bad arguments); the model is told and goes on."""

    code = "tool_failed"


class EmbeddingsUnavailable(AgentError):
    """The embedder could not embed (server down, slow, wrong dimension, package missing): the analysis goes
    on by keywords and exact wording, and says so; the message names the server and model."""

    code = "embeddings_unavailable"


class UnrecordedCall(AgentError):
    """The replayed agent asked for an LLM call the original run never made."""

    code = "unrecorded_call"


class WriterUnreachable(ReportError):
    """The writer a report needs cannot be reached from here now."""

    code = "writer_unreachable"


class ReportElsewhere(ReportError):
    """Another daemon sharing the store writes this report (it holds the report's lease)."""

    code = "report_elsewhere"


class ReportInterrupted(ReportError):
    """The daemon stopped before the report ended; `simreportd resume` continues it."""

    code = "report_interrupted"


class SchedulerStopped(ReportError):
    """A report was started while the report scheduler was not running (a programming error)."""

    code = "scheduler_stopped"


class RPCFailed(ServiceError):
    """The live environment did not answer usefully (timeout, failed status, unreadable response)."""

    code = "rpc_failed"


class ChatFailed(AgentError):
    """A chat question could not be answered now (the LLM failed after its retries); the chat goes on."""

    code = "chat_failed"


PROTOCOL_USAGE_CODES = frozenset({"bad_request", "bad_after", "unsupported"})  # frames no error class stands for


def exit_code_for(code: str) -> int:
    """The exit code of the error named by `code` (from a daemon's `error` frame): the tree decides."""
    pending: list[type[SimreportdError]] = [SimreportdError]
    while pending:
        cls = pending.pop()
        if cls.__dict__.get("code") == code:
            return cls.exit_code
        pending.extend(cls.__subclasses__())
    return 2 if code in PROTOCOL_USAGE_CODES else 1


class LimitReached(ServiceError):
    """A client asked for more than a limit allows (chats or interviews at once, or a minute); try again later."""

    code = "limit_reached"

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class HandoverFailed(ServiceError):
    """The running daemon refused the command (its `error` frame's code is kept) or could not be reached."""

    def __init__(self, message: str, code: str = "handover_failed") -> None:
        super().__init__(message)
        self.code = code
        self.exit_code = exit_code_for(code)
