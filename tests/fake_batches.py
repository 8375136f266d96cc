"""A real HTTP server on 127.0.0.1 implementing the OpenAI files and batches endpoints.

``POST /v1/files`` (multipart upload), ``GET /v1/files/{id}`` and ``GET /v1/files/{id}/content``,
``POST /v1/batches`` and ``GET /v1/batches/{id}``. Each created job follows a plan chosen by
``plan(job_number)``: how many retrieves it stays ``in_progress`` (``None``: until released),
and how it ends: ``ok``, ``fail`` (status ``failed``, no output), ``missing`` (the output lacks
its first two lines) or ``error_line`` (its first line is an HTTP 500 in the error file).
Answers come from the same responder as the chat fake; every line answered 200 is counted in
``paid``, so tests can check that no request is paid twice. Chat completions are counted too,
to show a batch model never calls them.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Callable

from fakes import ProviderServer, count_ones_responder


@dataclass
class Job:
    """One batch job as the server holds it."""

    id: str
    input_file_id: str
    lines: list[dict]
    polls_left: int | None
    mode: str
    created_at: int
    status: str = "validating"
    polls: int = 0
    output_file_id: str | None = None
    error_file_id: str | None = None


@dataclass
class FakeBatches:
    """The server's state; ``plan(n)`` gives job n's (polls in progress or None, end mode)."""

    plan: Callable[[int], tuple[int | None, str]] = lambda n: (2, "ok")
    files: dict[str, bytes] = field(default_factory=dict)
    jobs: dict[str, Job] = field(default_factory=dict)
    paid: list[str] = field(default_factory=list)  # custom_id of every line answered 200
    chat_calls: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def release(self, job_id: str, mode: str | None = None) -> None:
        """Let a held job finish at its next retrieve (optionally with another end mode)."""
        with self.lock:
            job = self.jobs[job_id]
            job.polls_left = 0
            job.mode = mode or job.mode

    def _finish(self, job: Job) -> None:
        if job.mode == "fail":
            job.status = "failed"
            return
        out, errors = [], []
        for i, line in enumerate(job.lines):
            if job.mode == "missing" and i < 2:
                continue
            if job.mode == "error_line" and i == 0:
                errors.append({"id": f"line-{i}", "custom_id": line["custom_id"], "error": None,
                               "response": {"status_code": 500, "body": {"error": {"message": "overloaded"}}}})
                continue
            body = {"id": f"chatcmpl-{i}", "object": "chat.completion", "model": line["body"]["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": count_ones_responder(line["body"])}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
            out.append({"id": f"line-{i}", "custom_id": line["custom_id"], "error": None,
                        "response": {"status_code": 200, "request_id": f"req-{i}", "body": body}})
            self.paid.append(line["custom_id"])
        job.output_file_id = self._store("".join(json.dumps(o) + "\n" for o in out).encode())
        if errors:
            job.error_file_id = self._store("".join(json.dumps(e) + "\n" for e in errors).encode())
        job.status = "completed"

    def _store(self, data: bytes) -> str:
        file_id = f"file-{len(self.files)}"
        self.files[file_id] = data
        return file_id

    def job_json(self, job: Job) -> dict:
        """The OpenAI batch object of ``job``."""
        return {
            "id": job.id, "object": "batch", "endpoint": "/v1/chat/completions", "errors":
                {"object": "list", "data": [{"code": "invalid", "message": "the fake failed this job"}]}
                if job.status == "failed" else None,
            "input_file_id": job.input_file_id, "completion_window": "24h", "status": job.status,
            "output_file_id": job.output_file_id, "error_file_id": job.error_file_id,
            "created_at": job.created_at, "request_counts": {"total": len(job.lines), "completed": 0, "failed": 0},
        }

    def create(self, body: dict) -> Job:
        """A new job over an uploaded file, following the plan."""
        with self.lock:
            n = len(self.jobs)
            polls, mode = self.plan(n)
            lines = [json.loads(line) for line in self.files[body["input_file_id"]].decode().splitlines() if line]
            job = Job(f"batch_{n}", body["input_file_id"], lines, polls, mode, int(time.time()))
            self.jobs[job.id] = job
            return job

    def retrieve(self, job_id: str) -> Job:
        """Advance the job by one poll and return it."""
        with self.lock:
            job = self.jobs[job_id]
            job.polls += 1
            if job.status in ("validating", "in_progress"):
                if job.polls_left is not None and job.polls_left <= 0:
                    self._finish(job)
                else:
                    job.status = "in_progress"
                    if job.polls_left is not None:
                        job.polls_left -= 1
            return job


def _handler(state: FakeBatches):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _send(self, code: int, payload: bytes, ctype: str = "application/json") -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _json(self, obj: dict, code: int = 200) -> None:
            self._send(code, json.dumps(obj).encode())

        def do_POST(self):  # noqa: N802
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.path.endswith("/files"):
                message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                    f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode() + raw)
                data = next(p.get_payload(decode=True) for p in message.iter_parts() if p.get_filename())
                with state.lock:
                    file_id = state._store(data)
                self._json({"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                            "filename": "input.jsonl", "purpose": "batch", "status": "processed"})
            elif self.path.endswith("/batches"):
                self._json(state.job_json(state.create(json.loads(raw))))
            elif self.path.endswith("/chat/completions"):
                with state.lock:
                    state.chat_calls += 1
                self._json({"error": {"message": "this fake only takes batches"}}, 400)
            else:
                self._json({"error": {"message": f"no route {self.path}"}}, 404)

        def do_GET(self):  # noqa: N802
            parts = self.path.rstrip("/").split("/")
            if "batches" in parts:
                job_id = parts[parts.index("batches") + 1]
                if job_id not in state.jobs:
                    return self._json({"error": {"message": "no such batch"}}, 404)
                return self._json(state.job_json(state.retrieve(job_id)))
            if "files" in parts:
                file_id = parts[parts.index("files") + 1]
                if file_id not in state.files:
                    return self._json({"error": {"message": "no such file"}}, 404)
                if parts[-1] == "content":
                    return self._send(200, state.files[file_id], "application/octet-stream")
                return self._json({"id": file_id, "object": "file", "bytes": len(state.files[file_id]),
                                   "created_at": 0, "filename": "f.jsonl", "purpose": "batch"})
            self._json({"error": {"message": f"no route {self.path}"}}, 404)

    return Handler


class FakeBatchServer(ProviderServer):
    """Context manager: a FakeBatches served on a free loopback port."""

    def __init__(self, state: FakeBatches | None = None):
        super().__init__(state or FakeBatches(), _handler)
