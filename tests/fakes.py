"""A real HTTP server on 127.0.0.1 standing in for an OpenAI-compatible provider.

It speaks ``POST /v1/chat/completions`` over a real socket, answers through a pluggable
``responder`` and can inject faults (429 with Retry-After, 500, stalls past the client timeout,
malformed bodies). It records every request it sees — arrival time, body, headers — and the
largest number of requests in flight, so tests can check caching, retries and limits from the
provider's side. Only a paid API is replaced by this; everything on our side is real.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


def last_user(body: dict) -> str:
    """The content of the last user message of a chat request body."""
    return [m for m in body["messages"] if m["role"] == "user"][-1]["content"]


def count_ones_responder(body: dict) -> str:
    """Answers an addition prompt correctly: evaluates the first ``1+1-1+0…`` expression in it."""
    text = last_user(body)
    m = re.search(r"-?\d+(?:\s*[+-]\s*\d+)+", text)
    value = eval(m.group(0)) if m else 0  # noqa: S307 - digits and +/- only, matched above
    return f"Let me add them.\nAnswer: {value}"


@dataclass
class Seen:
    """One request as the server saw it."""

    at: float
    body: dict
    headers: dict  # names lower-cased
    content: str


@dataclass
class FakeProvider:
    """The server's state and behaviour; ``fault(content, attempt)`` returns None or a fault name."""

    responder: Callable[[dict], str] = count_ones_responder
    fault: Callable[[str, int], str | None] = lambda content, attempt: None
    # the choice's finish_reason for a request body: "length" stands in for a reply cut at max_tokens
    finish_reason: Callable[[dict], str] = lambda body: "stop"
    delay_s: float = 0.0
    stall_s: float = 5.0
    seen: list[Seen] = field(default_factory=list)
    attempts: dict[str, int] = field(default_factory=dict)
    in_flight: int = 0
    max_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def contents(self) -> list[str]:
        """The last user message of every request received, in arrival order."""
        with self.lock:
            return [s.content for s in self.seen]


def _handler(state: FakeProvider):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # keep test output clean
            pass

        def _send(self, code: int, payload: bytes, headers: dict | None = None) -> None:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(payload)

        def do_POST(self):  # noqa: N802 - http.server's naming
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            content = last_user(body)
            with state.lock:
                state.seen.append(Seen(time.monotonic(), body, {k.lower(): v for k, v in self.headers.items()}, content))
                attempt = state.attempts.get(content, 0) + 1
                state.attempts[content] = attempt
                state.in_flight += 1
                state.max_in_flight = max(state.max_in_flight, state.in_flight)
            try:
                if state.delay_s:
                    time.sleep(state.delay_s)
                fault = state.fault(content, attempt)
                if fault == "429":
                    self._send(429, b'{"error": {"message": "rate limited", "type": "rate_limit"}}', {"Retry-After": "1"})
                elif fault == "500":
                    self._send(500, b'{"error": {"message": "boom", "type": "server_error"}}')
                elif fault == "stall":
                    time.sleep(state.stall_s)
                    self._send(500, b'{"error": {"message": "too late"}}')
                elif fault == "malformed":
                    self._send(200, b'{"id": "x", "choices": [ {"message": ')
                else:
                    text = state.responder(body)
                    payload = {
                        "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                        "model": body.get("model", "fake"),
                        "choices": [{"index": 0, "finish_reason": state.finish_reason(body),
                                     "message": {"role": "assistant", "content": text}}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                    }
                    self._send(200, json.dumps(payload).encode())
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout): that is the point of a stall
            finally:
                with state.lock:
                    state.in_flight -= 1

    return Handler


class LoopbackServer:
    """Context manager: a request handler class served on a free loopback port, in a thread
    (one per request), from ``with`` to its end; ``url`` is its address."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class ProviderServer(LoopbackServer):
    """A fake provider's ``state`` served by the handler ``handler(state)`` makes; ``api_base`` is
    the root of its OpenAI-compatible API."""

    def __init__(self, state, handler: Callable[..., type[BaseHTTPRequestHandler]]):
        self.state = state
        super().__init__(handler(state))

    @property
    def api_base(self) -> str:
        return f"{self.url}/v1"


class FakeServer(ProviderServer):
    """Context manager: a FakeProvider served on a free loopback port."""

    def __init__(self, state: FakeProvider | None = None):
        super().__init__(state or FakeProvider(), _handler)
