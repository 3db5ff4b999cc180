"""The rules at the server's edge, as plain functions of a request's headers (docs/protocol.md).

Which Host names this server answers to (DNS rebinding), the token, which Origins may use it
(CORS, websockets, and any request that changes state), which bodies it reads, and how many
connections one client and all clients may hold. `asgi.py` applies them in that order; they
hold no socket, so each is tested on its own.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import resource
import time
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

from simreportd.daemon.config import ServerConfig, is_loopback

log = logging.getLogger("simreportd.daemon.server.edge")

MAX_BODY = 256 * 1024  # bytes of a request body read at most; a longer one is answered 413
REQUEST_TIMEOUT_S = 10.0  # for a client to send its request head, and then its body
WILDCARDS = ("0.0.0.0", "::", "")
SINGLE_HEADERS = ("host", "authorization", "origin")
STATE_CHANGING = frozenset({"POST", "DELETE", "PUT", "PATCH"})
MIROFISH_PREFIX = ("/api/report/", "/api/simulation/", "/api/graph/")  # MiroFish's routes: errors in its shape
REFUSAL_LOG_PERIOD_S = 10.0


@dataclass(frozen=True)
class Refusal:
    """A request the edge does not pass on: its status, our error code and a message that says what to do."""

    status: int
    code: str
    message: str
    allow: str = ""  # the Allow header of a 405
    close: bool = False  # answered with Connection: close (what follows on the connection is not read)


def error_body(path: str, code: str, message: str) -> bytes:
    """An error in the shape its route's clients read: MiroFish's `{success, error}` or our `{error, message}`."""
    shape = {"success": False, "error": message} if path.startswith(MIROFISH_PREFIX) else \
        {"error": code, "message": message}
    return json.dumps(shape, ensure_ascii=False).encode()


def host_name(header: str) -> str:
    """The name part of a Host header: `[::1]:8765` -> `::1`, `Example.org:80` -> `example.org`."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def host_allowed(header: str, config: ServerConfig) -> bool:
    """Whether a Host header names this server: loopback, the configured host, or [server] allowed_hosts.

    This is what stops DNS rebinding: a page on evil.com that resolves to 127.0.0.1 still sends
    `Host: evil.com`. A wildcard listen address with no allowed_hosts accepts any name (the
    token, required there, is the guard).
    """
    name, allowed = host_name(header), [h.lower() for h in config.allowed_hosts]
    if header.strip().lower() in allowed or name in allowed or is_loopback(name) or name == config.host.lower():
        return True
    return config.host in WILDCARDS and not allowed


def origin_allowed(origin: str | None, host: str, config: ServerConfig) -> bool:
    """No Origin (not a browser), a listed one, or the page's own (same host and port): a browser on
    another site may neither open a websocket nor change state here."""
    return origin is None or origin in config.allowed_origins or urlsplit(origin).netloc == host


def authorized(authorization: str, query_token: str, config: ServerConfig) -> bool:
    """The configured token, as `Authorization: Bearer <token>` or `?token=`, compared in constant time."""
    if not config.token:
        return True
    given = authorization[7:] if authorization.startswith("Bearer ") else query_token
    return hmac.compare_digest(given.encode(), config.token.encode())


def first_refusal(headers: list[tuple[bytes, bytes]], config: ServerConfig) -> Refusal | None:
    """What every request must pass before anything else (CORS preflights included): one of each
    header that names who is asking, one way to frame its body (a request framed both ways may smuggle
    another behind it: it is refused and its connection closed), and a Host this server answers to."""
    names = [name.lower() for name, _ in headers]
    for name in SINGLE_HEADERS:
        if names.count(name.encode()) > 1:
            return Refusal(400, "bad_request", f"more than one {name.title()} header")
    if header(headers, b"content-length") is not None and header(headers, b"transfer-encoding") is not None:
        return Refusal(400, "bad_request", "send Content-Length or Transfer-Encoding, not both: the body's end "
                                           "would be ambiguous (RFC 9112 section 6.1)", close=True)
    host = header(headers, b"host") or ""
    if not host_allowed(host, config):
        return Refusal(403, "forbidden_host", f"host {host!r} is not allowed; add it to [server] allowed_hosts if "
                                               "this server is meant to answer to it")
    return None


def guard_refusal(method: str, headers: list[tuple[bytes, bytes]], query_token: str, websocket: bool,
                  config: ServerConfig) -> Refusal | None:
    """The token, then the Origin of a websocket or a state-changing request: a page on another site may
    not use this server unless listed."""
    if not authorized(header(headers, b"authorization") or "", query_token, config):
        return Refusal(401, "unauthorized", "a token is required: Authorization: Bearer <token> or ?token=")
    if not websocket and method not in STATE_CHANGING:
        return None
    origin = header(headers, b"origin")
    if not origin_allowed(origin, header(headers, b"host") or "", config):
        return Refusal(403, "forbidden_origin", f"origin {origin} is not allowed; add it to [server] allowed_origins "
                                                 "if pages there may use this server")
    return None


def body_refusal(method: str, headers: list[tuple[bytes, bytes]]) -> Refusal | None:
    """A POST, or a DELETE with a body, must send JSON: a form or text/plain (which a page on any site can
    send without a preflight) must not make the daemon spend LLM tokens."""
    kind = (header(headers, b"content-type") or "").split(";", 1)[0].strip().lower()
    if method in STATE_CHANGING and kind != "application/json" and (method == "POST" or has_body(headers)):
        return Refusal(415, "unsupported_media_type", f"send the body as application/json (got {kind or 'none'})")
    return None


@lru_cache(maxsize=64)
def _networks(proxies: tuple[str, ...]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(p, strict=False) for p in proxies)


def trusted(address: str, proxies: Iterable[str]) -> bool:
    """Whether `address` is one of `[server] trusted_proxies` (addresses or networks)."""
    listed = tuple(proxies)
    if not listed:
        return False
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in _networks(listed))


def forwarded_client(headers: list[tuple[bytes, bytes]], proxies: Iterable[str]) -> str | None:
    """The client a trusted proxy says it forwards, from X-Forwarded-For or else Forwarded (RFC 7239): the
    right-most address that is not itself a trusted proxy (the left of it is what the client claimed); None
    when neither header names a valid address."""
    proxies = tuple(proxies)
    addresses = [a for a in map(_address, _forwarded_chain(headers)) if a is not None]
    for address in reversed(addresses):
        if not trusted(address, proxies):
            return address
    return addresses[0] if addresses else None


def _forwarded_chain(headers: list[tuple[bytes, bytes]]) -> list[str]:
    """The hops the proxies recorded, oldest first: X-Forwarded-For's, or else the `for=` of Forwarded's."""
    xff = [v.decode("latin-1") for k, v in headers if k == b"x-forwarded-for"]
    if xff:
        return [item for value in xff for item in value.split(",")]
    hops = [v.decode("latin-1") for k, v in headers if k == b"forwarded"]
    return [pair.split("=", 1)[1] for value in hops for element in value.split(",")
            for pair in element.split(";") if pair.strip().lower().startswith("for=")]


def _address(item: str) -> str | None:
    """An IP address from one hop (`192.0.2.1`, `"[2001:db8::1]:443"`, `192.0.2.1:80`), or None."""
    item = item.strip().strip('"')
    if item.startswith("["):
        item = item[1:].split("]", 1)[0]
    elif item.count(":") == 1:
        item = item.split(":", 1)[0]
    try:
        return str(ipaddress.ip_address(item))
    except ValueError:
        return None


def has_body(headers: list[tuple[bytes, bytes]]) -> bool:
    length = header(headers, b"content-length")
    return header(headers, b"transfer-encoding") is not None or (length is not None and length.strip() != "0")


def header(headers: list[tuple[bytes, bytes]], name: bytes) -> str | None:
    """The value of a header (names lower-case, as ASGI gives them), decoded as HTTP does (Latin-1)."""
    return next((value.decode("latin-1") for key, value in headers if key == name), None)


FILES_KEPT = 128  # descriptors kept below the file limit: the store, WALs, the fold child, an accept burst (app.py)


def within_file_limit(total: int) -> int:
    """`total` connections, or fewer if the process's file limit (RLIMIT_NOFILE) would not leave FILES_KEPT
    descriptors beside them: past the limit, accept() fails and nothing, not even ingest, can open a file."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY or total <= soft - FILES_KEPT:
        return total
    allowed = max(1, soft - FILES_KEPT)
    log.warning("[server] max_connections = %d lowered to %d: the file limit is %d (raise it with LimitNOFILE= "
                "in the unit, or ulimit -n)", total, allowed, soft)
    return allowed


class AcceptErrorsOnce(logging.Filter):
    """asyncio logs every accept() that fails for want of descriptors (thousands a minute under a flood):
    one line per period, with the count, instead."""

    def __init__(self, period_s: float = REFUSAL_LOG_PERIOD_S) -> None:
        super().__init__()
        self.period_s, self.dropped, self.logged_at = period_s, 0, -period_s

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("socket.accept() out of system resource"):
            return True
        now = time.monotonic()
        if now - self.logged_at < self.period_s:
            self.dropped += 1
            return False
        record.msg, record.args = ("accept() failed: out of file descriptors (%d more such since the last line); "
                                   "lower [server] max_connections or raise the file limit"), (self.dropped,)
        record.exc_info, self.dropped, self.logged_at = None, 0, now
        return True


class OncePerPeriod:
    """A warning that may happen thousands of times a minute under a flood (a refusal, a disconnection):
    logged at most once per period, with how many times it happened since the last line and the latest why."""

    def __init__(self, logger: logging.Logger, what: str, period_s: float = REFUSAL_LOG_PERIOD_S) -> None:
        self.logger, self.what, self.period_s = logger, what, period_s  # `what` has one %d: the count
        self.times, self.logged_at = 0, -period_s

    def count(self, latest: str) -> None:
        self.times += 1
        now = time.monotonic()
        if now - self.logged_at >= self.period_s:
            self.logger.warning("%s since the last such line (one every %g s at most); the latest: %s",
                                self.what % self.times, self.period_s, latest)
            self.times, self.logged_at = 0, now


class ConnectionLimits:
    """`[server] max_connections`, `max_connections_per_client` and `http_reserve`, checked as each connection
    opens and as one asks to become a websocket.

    A connection beyond them is answered (HTTP 503, websocket close 1013) rather than left to
    exhaust the process's file limit. Websockets may hold at most `websockets` of the places: the
    others are kept for plain HTTP requests, which are short, so that a crowd of subscribers cannot
    keep an authorised request from being answered. Refusals are logged one line per period, with
    their count, never a line per connection.
    """

    def __init__(self, total: int, per_client: int, http_reserve: int = 0,
                 period_s: float = REFUSAL_LOG_PERIOD_S, trusted_proxies: Iterable[str] = ()) -> None:
        self.total, self.per_client, self.trusted_proxies = total, per_client, tuple(trusted_proxies)
        self.websockets = total - min(http_reserve, total // 2)
        self.refusals = OncePerPeriod(log, "refused %d connection(s)", period_s)
        self.opened = 0  # connections admitted or refused since the start

    def admit(self, client: str | None, open_clients: Iterable[str | None]) -> Refusal | None:
        """None, or the refusal of a connection from `client` while `open_clients` (itself included) are open.
        A trusted proxy's connection counts against the client it forwards, once its request names it
        (`admit_forwarded`)."""
        self.opened += 1
        others = list(open_clients)
        if len(others) > self.total:
            refusal = Refusal(503, "server_full", f"the server holds its limit of {self.total} connections "
                                                  "([server] max_connections); try again later")
        elif client is not None and not trusted(client, self.trusted_proxies):
            return self.admit_forwarded(client, others)
        else:
            return None
        self.refusals.count(refusal.message)
        return refusal

    def admit_forwarded(self, client: str, open_clients: Iterable[str | None]) -> Refusal | None:
        """None, or the refusal of one more connection of `client` (the peer, or whom a trusted proxy forwards)."""
        if list(open_clients).count(client) <= self.per_client:
            return None
        refusal = Refusal(503, "too_many_connections", f"{client} holds its limit of {self.per_client} connections "
                                                       "([server] max_connections_per_client); try again later")
        self.refusals.count(refusal.message)
        return refusal

    def admit_websocket(self, open_websockets: int) -> Refusal | None:
        """None, or the refusal of one more websocket while `open_websockets` (not itself) are open."""
        if open_websockets < self.websockets:
            return None
        refusal = Refusal(503, "websockets_full", f"the server holds its limit of {self.websockets} websockets "
                                                  "([server] max_connections minus http_reserve); try again later")
        self.refusals.count(refusal.message)
        return refusal
