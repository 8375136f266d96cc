"""Embedded models behind the litellm route ``local/<name>``, each in a worker process of its own.

llama.cpp is native code: a fault inside it (a segmentation fault, an illegal instruction, the
kernel's out-of-memory killer) ends the process it runs in. So the pipeline never loads a model
itself: each embedded model runs in a worker process (``python -m tasks.models.embedded_worker``, see there)
that this process starts on the model's first request and stops when the sweep ends
(:func:`stop_all`). Requests and replies cross a pipe as one JSON line each; the worker exits on
its own when this process dies, even by SIGKILL.

When a worker dies, the request in flight fails with :class:`EmbeddedModelCrashed`, whose message
names the model and the signal ("embedded model local/smollm2: worker process died with
SIGSEGV"), and so do the model's remaining requests of that chunk, without being sent: a request
that crashed the model would crash it again, and each death is a reason to stop, not to retry.
All of them become ``error`` responses, which the next sweep sends again. The worker is started
anew for the model's next chunk (:func:`begin_chunk`), at most :data:`MAX_RESTARTS` times; every
death is listed by :func:`crashes`, from which the sweep ends ``failed``.

The route and the request hash do not depend on where the model runs (:func:`tasks.models.routes.route_for`),
so the ledgers of in-process runs stay valid.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import subprocess
import threading
import time
from typing import Any

from tasks import worker_process
from tasks.models.config import threads
from tasks.models.embedded_worker import EMBEDDED

# Restarts of one model's worker per process (a sweep, or a unit flow run): after that, the
# model's remaining chunks fail without being sent.
MAX_RESTARTS = 3


@functools.cache
def _crash_type() -> type[Exception]:
    from tasks.models.llm import litellm

    class EmbeddedModelCrashed(litellm.ServiceUnavailableError):
        """An embedded model's worker process died (signal or exit code in the message).

        A litellm exception type, so that litellm passes it on unchanged to the caller, which records
        it as the request's ``error`` response without retrying (:func:`tasks.models.routes.fatal_errors`).
        """

        def __init__(self, message: str, model: str = ""):
            super().__init__(message=message, llm_provider="local", model=model)
            self.message = message

        def __str__(self) -> str:
            return self.message

    # Named as if defined at module level, so pickling and error messages find it by its name.
    EmbeddedModelCrashed.__module__, EmbeddedModelCrashed.__qualname__ = __name__, "EmbeddedModelCrashed"
    return EmbeddedModelCrashed


def __getattr__(name: str) -> Any:
    # EmbeddedModelCrashed derives from a litellm exception, and importing litellm takes seconds:
    # the class is made on first use, so a sweep that sends nothing never imports litellm.
    # ``except embedded.EmbeddedModelCrashed`` evaluates the name only when an exception arrives.
    if name == "EmbeddedModelCrashed":
        return _crash_type()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _crashed(message: str, model: str = "") -> Exception:
    """An EmbeddedModelCrashed with ``message`` (the name is not a global of this module)."""
    return _crash_type()(message, model)


class Worker:
    """The worker process of one embedded model: started on demand, one request at a time."""

    def __init__(self, name: str):
        if name not in EMBEDDED:
            raise ValueError(f"unknown embedded model {name!r}; known: {', '.join(EMBEDDED)}")
        self.name = name
        self.route = f"local/{name}"
        self.restarts = 0
        self.served = 0  # replies received from all of this model's worker processes
        self.died: str | None = None  # why the current worker is gone, until the next chunk
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        """The worker process's id, while one runs."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def _start(self) -> subprocess.Popen[bytes]:
        threads()  # a bad INVARBENCH_EMBEDDED_THREADS is named here, not by a worker that died of it
        return worker_process.spawn("tasks.models.embedded_worker", "--parent", str(os.getpid()))

    def begin_chunk(self) -> None:
        """A new chunk: a worker that died is started again on the next request, if restarts remain."""
        with self._lock:
            if self.died is not None and self.restarts < MAX_RESTARTS:
                self.died = None
                self.restarts += 1

    def generate(self, messages: list[dict[str, str]], params: dict[str, Any]) -> tuple[str, int, int, str | None]:
        """One generation in the worker: (text, prompt tokens, completion tokens, finish reason).

        Raises EmbeddedModelCrashed when the worker dies during the call or died earlier in this
        chunk, RuntimeError when the model raised an error for this request.
        """
        with self._lock:
            if self.died is not None:
                later = ("it is started again for the next chunk" if self.restarts < MAX_RESTARTS
                         else f"not restarted after {MAX_RESTARTS} restarts")
                raise _crashed(f"{self.died} earlier in this chunk; not sent ({later})", self.route)
            if self._proc is None:
                self._proc = self._start()
            proc = self._proc
            assert proc.stdin is not None and proc.stdout is not None
            line = json.dumps({"model": self.name, "messages": messages, "params": params}, ensure_ascii=False)
            try:
                proc.stdin.write(line.encode("utf-8") + b"\n")
                proc.stdin.flush()
                reply = proc.stdout.readline()
            except OSError:  # BrokenPipeError: the worker was already gone
                reply = b""
            if not reply.endswith(b"\n"):
                raise self._died(proc)
            self.served += 1
        answer = json.loads(reply)
        if "error" in answer:
            raise RuntimeError(f"embedded model {self.route}: {answer['error']}")
        return answer["text"], int(answer["prompt_tokens"]), int(answer["completion_tokens"]), answer.get("finish_reason")

    def _died(self, proc: subprocess.Popen[bytes]) -> Exception:
        # Its stdout is closed, so it is exiting: wait for the status that names the cause.
        cause = worker_process.exit_cause(worker_process.stop(proc))
        self._proc = None
        self.died = f"embedded model {self.route}: worker process died with {cause}"
        with _registry_lock:
            _crashes.append(self.died)
        return _crashed(self.died, self.route)

    def stop(self) -> None:
        """Stop the worker process (closing its stdin ends it; killed if it does not end in time)."""
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is not None:
            worker_process.stop(proc)


_workers: dict[str, Worker] = {}
_crashes: list[str] = []
_registry_lock = threading.Lock()


def worker(name: str) -> Worker:
    """The worker of embedded model ``name`` in this process (created on first use, not yet started)."""
    with _registry_lock:
        if name not in _workers:
            _workers[name] = Worker(name)
        return _workers[name]


def begin_chunk(name: str) -> None:
    """Prepare ``local/<name>`` for a chunk: a dead worker may restart (the litellm route is
    registered by the first request sent, :func:`register`)."""
    worker(name).begin_chunk()


def crashes() -> list[str]:
    """Every worker death in this process so far, oldest first (compare lengths to see new ones)."""
    with _registry_lock:
        return list(_crashes)


def check_crashes(since: int) -> None:
    """Raise EmbeddedModelCrashed naming each worker death after the first ``since`` of :func:`crashes`."""
    new = crashes()[since:]
    if new:
        raise _crashed("; ".join(dict.fromkeys(new)))


@atexit.register
def stop_all() -> None:
    """Stop every worker process and forget them: the next sweep starts with fresh workers."""
    with _registry_lock:
        workers = list(_workers.values())
        _workers.clear()
    for w in workers:
        w.stop()


@functools.cache
def _provider() -> Any:
    from tasks.models.llm import CustomLLM, ModelResponse

    class LocalProvider(CustomLLM):
        """litellm's view of the embedded models: ``local/<name>``, answered by the model's worker."""

        def completion(self, *args: Any, **kwargs: Any) -> ModelResponse:
            model = kwargs["model"].split("/", 1)[-1]
            params = dict(kwargs.get("optional_params") or {})
            started = time.monotonic()
            text, p_tok, c_tok, finish = worker(model).generate(kwargs["messages"], params)
            return ModelResponse(
                model=f"local/{model}",
                choices=[{"index": 0, "finish_reason": finish or "stop",
                          "message": {"role": "assistant", "content": text}}],
                usage={"prompt_tokens": p_tok, "completion_tokens": c_tok, "total_tokens": p_tok + c_tok},
                response_ms=(time.monotonic() - started) * 1000,
            )

        async def acompletion(self, *args: Any, **kwargs: Any) -> ModelResponse:
            import asyncio

            return await asyncio.to_thread(self.completion, *args, **kwargs)

    return LocalProvider()


_registered = False


def register() -> None:
    """Make ``local/<name>`` routable through litellm (idempotent; imports litellm)."""
    global _registered
    if _registered:
        return
    from tasks.models.llm import custom_llm_setup, litellm

    existing = [p for p in (litellm.custom_provider_map or []) if p.get("provider") != "local"]
    litellm.custom_provider_map = existing + [{"provider": "local", "custom_handler": _provider()}]
    custom_llm_setup()
    _registered = True
