"""A scripted OpenAI-compatible chat server over real HTTP on 127.0.0.1.

By default it is a faithful model: it answers like simreportd's offline writer (which
only writes what the tools returned), through whichever protocol the request uses.
Faults queued in `faults` are served first, one per request: HTTP errors, Retry-After,
hangs past the client's timeout, invalid JSON, empty choices, a refusal of tools, a context-length
400, a reply cut by the length limit, any raw body. `ignore_tools` plays a server that accepts
`tools` and answers as if there were none (llama.cpp's default chat formats do).
"""

from __future__ import annotations

import asyncio
import json
import re
import select
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from simreportd.agent.offline.offline import OfflineProvider
from simreportd.agent.report import prompts, stance_labels
from simreportd.events.models import LLMRequested

Script = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any] | None]


class FakeLLM:
    def __init__(self, port: int = 0, script: Script | None = None, latency_s: float = 0.0,
                 slots: int = 0, held: bool = False) -> None:
        self.faults: list[tuple[Any, ...]] = []
        self.requests: list[dict[str, Any]] = []
        self.script, self.latency_s = script, latency_s
        self.refuse_tools = False  # a server without function calling: 400 for any request with tools
        self.ignore_tools = False  # a server that takes `tools` and never calls them
        self.unavailable_for: Callable[[dict[str, Any]], bool] | None = None  # requests answered 503
        self.lock = threading.Lock()
        # like llama.cpp: `slots` requests answered at once, the others queue (an abandoned one still runs)
        self.slots = threading.BoundedSemaphore(slots) if slots else None
        self.in_flight = self.peak_in_flight = 0  # requests being answered at once: what concurrency limits bound
        self.cancelled = 0  # streams the client closed before their end (a request given up, cancelled)
        self.cancel_seen = threading.Event()  # set when a client closes a stream before its end
        # `held`: every answer waits until the test sets `released` (a model busy for as long as a test needs)
        self.released = threading.Event()
        if not held:
            self.released.set()
        self.held_for: Callable[[dict[str, Any]], bool] | None = None  # when set, only these requests are held
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, headers, payload = owner.answer(body)
                if status == 0:
                    return
                if body.get("stream") and status == 200:
                    owner.stream(self, json.loads(payload), json.loads(headers.pop("X-Fake-Stream", "null")))
                    return
                try:
                    self.send_response(status)
                    for k, v in {"Content-Type": "application/json", **headers}.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (a timeout under test): nobody to answer

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def stream(self, handler: BaseHTTPRequestHandler, completion: dict[str, Any], fault: list[Any] | None) -> None:
        """Send `completion` as server-sent events. `("drip", gap_s)` waits `gap_s` between chunks (a slow
        server still writing); `("stall", wait_s)` sends one chunk and then nothing, until the client closes
        the stream (counted in `cancelled`) or `wait_s` passes."""
        events = chunks(completion)
        try:
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.end_headers()
            for n, event in enumerate(events):
                if fault and fault[0] == "drip" and n:
                    time.sleep(fault[1])  # the server's own pace, not a test's wait
                handler.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                handler.wfile.flush()
                if fault and fault[0] == "stall":
                    if _closed(handler, fault[1]):
                        with self.lock:
                            self.cancelled += 1
                        self.cancel_seen.set()
                    return
            handler.wfile.write(b"data: [DONE]\n\n")
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        handler.close_connection = True

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeLLM:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        with self.lock:
            self.requests.append(body)
            fault = self.faults.pop(0) if self.faults else None
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        if self.held_for is None or self.held_for(body):
            self.released.wait(60)
        if self.slots is not None:
            with self.slots:
                time.sleep(self.latency_s)
        elif self.latency_s:
            time.sleep(self.latency_s)
        with self.lock:
            self.in_flight -= 1
        if fault is None and self.refuse_tools:
            fault = ("refuse_tools",)
        if fault is None and self.unavailable_for is not None and self.unavailable_for(body):
            fault = ("status", 503)
        if fault is not None and fault[0] in ("stall", "drip"):  # streamed faults: played out by `stream`
            return 200, {"X-Fake-Stream": json.dumps(fault)}, json.dumps(self.completion(body)).encode()
        if fault is not None:
            return serve_fault(fault, body)
        return 200, {}, json.dumps(self.completion(body)).encode()

    def completion(self, body: dict[str, Any]) -> dict[str, Any]:
        if self.ignore_tools:
            body = {k: v for k, v in body.items() if k not in ("tools", "tool_choice")}
        message = faithful(body)
        if self.script is not None and (override := self.script(body, message)) is not None:
            message = override
        return completion_body(body, message)


def _closed(handler: BaseHTTPRequestHandler, wait_s: float) -> bool:
    """Whether the client closed the connection within `wait_s` seconds (woken by the close itself)."""
    ready, _, _ = select.select([handler.connection], [], [], wait_s)
    try:
        return bool(ready) and handler.connection.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def chunks(completion: dict[str, Any]) -> list[dict[str, Any]]:
    """A chat.completion as the chat.completion.chunk objects a streaming server sends: text a few words at
    a time, each tool call as one delta, the finish reason last."""
    choice = completion["choices"][0]
    message, words = choice["message"], re.findall(r"\S+\s*", choice["message"].get("content") or "")
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    deltas += [{"content": "".join(words[i:i + 8])} for i in range(0, len(words), 8)]
    deltas += [{"tool_calls": [{"index": n, **call}]} for n, call in enumerate(message.get("tool_calls") or [])]
    out = [{"id": "cmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": completion["model"],
            "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    out.append({**out[0], "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}],
                "usage": completion["usage"]})  # as vLLM and llama.cpp's server send it, on the last chunk
    return out


def completion_body(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
    """A chat.completion answering `body` with `message` (a `finish_reason` key in it is moved out)."""
    message = dict(message)
    finish = message.pop("finish_reason", "tool_calls" if message.get("tool_calls") else "stop")
    return {"id": "cmpl-fake", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}


def serve_fault(fault: tuple[Any, ...], body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    kind = fault[0]
    if kind == "status":
        headers = {"Retry-After": fault[2]} if len(fault) > 2 else {}
        return fault[1], headers, json.dumps({"error": {"message": f"scripted {fault[1]}"}}).encode()
    if kind == "hang":
        time.sleep(fault[1])
        return 0, {}, b""
    if kind == "invalid_json":
        return 200, {}, b"this is not json {"
    if kind == "empty_choices":
        return 200, {}, json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                                    "choices": []}).encode()
    if kind == "overflow":
        return 400, {}, json.dumps({"error": {"message": f"This model's maximum context length is {fault[1]} tokens. "
                                              "However, you requested more tokens."}}).encode()
    if kind == "length":
        message = faithful(body)
        return 200, {}, json.dumps(completion_body(body, {"content": (message.get("content") or "")[:fault[1]],
                                                          "finish_reason": "length"})).encode()
    if kind == "raw":
        return 200, {}, json.dumps(fault[1]).encode()
    if kind == "refuse_tools" and "tools" in body:
        return 400, {}, json.dumps({"error": {"message": "this model does not support tools"}}).encode()
    return 200, {}, json.dumps(completion_body(body, faithful(body))).encode()


def faithful(body: dict[str, Any]) -> dict[str, Any]:
    """What the offline writer would answer to this request, in the request's protocol."""
    messages = body["messages"]
    system = messages[0]["content"]
    if "You answer as one simulated" in system:  # a persona interview: one of the agent's posts, quoted with its id
        block = re.search(r"Posts:\n<simulation_data[^>]*>\n(.*?)\n</simulation_data>", messages[1]["content"], re.S)
        posts = json.loads(block.group(1)) if block else []
        return {"content": f'I stand by what I wrote: "{posts[0]["content"][:60]}" ({posts[0]["ref"]}).' if posts
                else "I did not post."}
    if system == stance_labels.SYSTEM:  # a model that sees no side in any statement; tests script others
        return {"content": json.dumps({"labels": []})}
    purpose = "outline" if "Plan the report" in system else "chat" if "follow-up questions" in system else "section"
    protocol = "text" if "<tool_call>" in system else "native"
    forced = prompts.FORCED_FINAL in str(messages[-1].get("content"))
    tools = [t["function"]["name"] for t in body.get("tools", [])] or ([] if forced or protocol == "native"
                                                                         else ["quick_search"])
    request = LLMRequested(report_id="fake", call_id=f"call{len(messages)}", purpose=purpose, model=body["model"],
                           protocol=protocol, tools=tools, messages_added=[], fingerprint="")
    completion = asyncio.run(OfflineProvider().complete(request, messages, 1))
    message: dict[str, Any] = {"content": completion.content}
    if completion.tool_calls:
        message["tool_calls"] = [{"id": c.id, "type": "function",
                                  "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                                 for c in completion.tool_calls]
    return message
