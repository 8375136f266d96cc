"""A full object store, for the tests: an HTTP proxy on 127.0.0.1 in front of the moto S3 server
(tests/s3_server.py) that forwards every request unchanged, until the bodies of the uploads it
let through (PUT: an object or a part of a multipart upload) reach ``room`` bytes; from then on
it answers each upload as an S3-compatible store answers when its storage is refused: HTTP 507
with MinIO's ``XMinioStorageFull`` (AWS's own S3 never runs out of space; MinIO, the common
self-hosted store, answers this when its drives pass their free-space threshold). Every other
request (reads, listings, deletes, starting and completing a multipart upload) goes through.
Instead of a number of bytes, ``full_from`` fills the store at the first upload whose path holds
that text: the room is then exactly what was stored before it, whatever the sizes of the files.

Requests are forwarded with their ``Host`` header as signed, so moto checks the signatures the
client made for the proxy's address.
"""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler
from urllib.parse import urlsplit

from fakes import LoopbackServer

REFUSED = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>XMinioStorageFull</Code><Message>Storage backend '
           b"has reached its minimum free drive threshold. Please delete a few objects to proceed.</Message></Error>")


class FullStore(LoopbackServer):
    """The running proxy: ``url`` to give the client as the endpoint, ``room`` (bytes of uploads
    still accepted; None: unlimited) or ``full_from`` (a text of a path: full from the first
    upload to such a path on), what it let through and refused, and every request it received
    (``requests``: method and path, in order)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = urlsplit(upstream).netloc
        self.room: int | None = None
        self.full_from: str | None = None
        self.stored_bytes = 0
        self.refused = 0
        self.requests: list[str] = []
        self.lock = threading.Lock()
        super().__init__(_handler(self))

    def admits(self, size: int, path: str = "") -> bool:
        """Whether an upload of ``size`` bytes to ``path`` is let through (then counted), or refused."""
        with self.lock:
            if self.full_from is not None and self.full_from in path:
                self.room, self.full_from = self.stored_bytes, None
            if self.room is not None and self.stored_bytes + size > self.room:
                self.room = self.stored_bytes  # full: nothing more fits, not even a smaller upload
                self.refused += 1
                return False
            self.stored_bytes += size
            return True


def _handler(store: FullStore) -> type[BaseHTTPRequestHandler]:
    class Forward(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # quiet: the test reads the counts
            pass

        def forward(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            store.requests.append(f"{self.command} {self.path}")
            if self.command == "PUT" and not store.admits(len(body), self.path):
                self.answer(507, {"Content-Type": "application/xml"}, REFUSED)
                return
            upstream = http.client.HTTPConnection(store.upstream, timeout=60)
            try:
                upstream.request(self.command, self.path, body=body, headers=dict(self.headers.items()))
                reply = upstream.getresponse()
                data = reply.read()
                headers = {k: v for k, v in reply.getheaders() if k.lower() not in ("transfer-encoding", "connection")}
                self.answer(reply.status, headers, data)
            finally:
                upstream.close()

        def answer(self, status: int, headers: dict[str, str], data: bytes) -> None:
            self.send_response(status)
            for key, value in headers.items():
                if key.lower() != "content-length" or self.command == "HEAD":  # HEAD: the object's length
                    self.send_header(key, value)
            if self.command != "HEAD":
                self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = forward

    return Forward
