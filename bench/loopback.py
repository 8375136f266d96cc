"""A loopback OpenAI-compatible server for the call-throughput figure, run as its own process.

``python bench/loopback.py --latency 0.05`` prints ``{"port": N}`` on its first line and serves
``POST /v1/chat/completions`` on 127.0.0.1:N with HTTP/1.1 keep-alive: every request is answered
after ``latency`` seconds with a fixed Lissard-style answer (``Output: ...``). It runs on asyncio
in one thread (no thread per connection), so that on a small machine the server costs as little
CPU as possible beside the client being measured. ``GET /stats`` returns how many completions were
served and the wall-clock (``time.time()``) arrival of the first and completion of the last one;
``POST /reset`` zeroes them. Unlike tests/fakes.py it records nothing per request and injects no
faults: it is a floor to measure against, not a test double.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

ANSWER = "Let me work through it.\nOutput: a b c"


class Stats:
    """Counts and the served window, in wall-clock seconds so another process can compare."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.served = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.first_arrival: float | None = None
        self.last_done: float | None = None

    def as_dict(self) -> dict:
        return {"served": self.served, "max_in_flight": self.max_in_flight,
                "first_arrival": self.first_arrival, "last_done": self.last_done}


def _response(status: str, body: bytes) -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Connection: keep-alive\r\n\r\n").encode() + body


def completion(model: str) -> bytes:
    """The JSON body of a chat completion answering with ANSWER."""
    return json.dumps({
        "id": "chatcmpl-bench", "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": ANSWER}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 8, "total_tokens": 108},
    }).encode()


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stats: Stats, latency: float) -> None:
    """Serve one keep-alive connection until the client closes it."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            length = 0
            for line in lines[1:]:
                if line.lower().startswith("content-length:"):
                    length = int(line.split(":", 1)[1])
            body = await reader.readexactly(length) if length else b""
            if method == "GET" and path.startswith("/stats"):
                writer.write(_response("200 OK", json.dumps(stats.as_dict()).encode()))
            elif method == "POST" and path.startswith("/reset"):
                stats.reset()
                writer.write(_response("200 OK", b"{}"))
            elif method == "POST" and path.endswith("/chat/completions"):
                now = time.time()
                if stats.first_arrival is None:
                    stats.first_arrival = now
                stats.in_flight += 1
                stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
                try:
                    model = json.loads(body).get("model", "bench")
                    if latency:
                        await asyncio.sleep(latency)
                    writer.write(_response("200 OK", completion(model)))
                finally:
                    stats.in_flight -= 1
                stats.served += 1
                stats.last_done = time.time()
            else:
                writer.write(_response("404 Not Found", b'{"error": {"message": "not found"}}'))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionResetError, BrokenPipeError):
        pass
    finally:
        writer.close()


async def serve(latency: float, port: int) -> None:
    """Serve until killed; print the bound port first."""
    stats = Stats()
    server = await asyncio.start_server(lambda r, w: handle(r, w, stats, latency), "127.0.0.1", port, backlog=1024)
    print(json.dumps({"port": server.sockets[0].getsockname()[1]}), flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    """Command line: ``--latency SECONDS --port N`` (0: any free port)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    try:
        asyncio.run(serve(args.latency, args.port))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
