"""What litellm answers about a model (its route, request parameters, price), kept per litellm version.

Importing litellm costs 4-5 s of CPU, on a cold sweep's critical path. The direct call path
(:mod:`tasks.models.direct`) sends its requests itself and asks litellm only questions whose answer
depends on nothing but the question, the installed litellm and litellm's environment variables: how
it routes ``openai/<name>`` at an ``api_base``, which parameters it sends for a sampling, what the
bundled price table says. :func:`known` asks litellm once (importing it), and keeps the answer in a
small JSON file per litellm version, per value of litellm's variables and per :data:`FORMAT` under
the user's cache directory (``INVARBENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/invarbench``, else
``~/.cache/invarbench``), so that later processes get it without importing litellm. The answers are
litellm's own, so nothing sent, stored or priced changes; tests/test_litellm_facts.py checks them
against litellm's for the routes the direct path serves.

Nothing is kept when litellm's price map may be downloaded (``LITELLM_LOCAL_MODEL_COST_MAP`` and
``LITELLM_OFFLINE_MODE`` both turned off): that map can change between two runs of one version.
A file that cannot be read or written is ignored: litellm is then asked in each process, as before.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any, Callable

from tasks.environment import LITELLM_DEFAULTS

# Bump when what an answer holds changes (the questions asked of litellm, or what is kept of the
# reply): the files of the old format are then not read.
FORMAT = 1
CACHE_ENV = "INVARBENCH_CACHE_DIR"
# A route is kept per api_base, and a test server takes a new port each time: past this many
# answers the older half is dropped (rewriting a growing file for every new one would cost more).
MAX_KEPT = 2000

_lock = threading.Lock()
_answers: dict[str, Any] | None = None  # this process's copy of the file, loaded on first use
_file: Path | None = None


def _litellm_env() -> dict[str, str]:
    """litellm's variables as litellm sees them when :mod:`tasks.models.llm` imports it."""
    env = {k: v for k, v in os.environ.items() if "LITELLM" in k.upper()}
    return {**LITELLM_DEFAULTS, **env}


def _store() -> Path | None:
    """The file of this litellm version and environment; None when answers must not be kept."""
    from importlib import metadata

    env = _litellm_env()
    if "true" not in (env["LITELLM_LOCAL_MODEL_COST_MAP"].lower(), env["LITELLM_OFFLINE_MODE"].strip().lower()):
        return None  # an online price map: its prices may change at any time
    try:
        version = metadata.version("litellm")
    except metadata.PackageNotFoundError:
        return None
    digest = hashlib.sha256(json.dumps(env, sort_keys=True).encode()).hexdigest()[:12]
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    root = Path(os.environ.get(CACHE_ENV) or Path(xdg) / "invarbench").expanduser()  # "~/…" from a file, unexpanded
    return root / f"litellm-{version}-{digest}-v{FORMAT}.json"


def _load() -> dict[str, Any]:
    global _answers, _file
    if _answers is None:
        _file = _store()
        _answers = _read(_file) if _file is not None else {}
    return _answers


def _read(path: Path) -> dict[str, Any]:
    """The answers in ``path``; none when it is missing, unreadable, not JSON or not an object of
    answers (a file cut short, or written by hand): litellm is then asked again."""
    try:
        answers = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return answers if isinstance(answers, dict) else {}


def _save(key: str, value: Any) -> None:
    """Add one answer to the file: what other processes added meanwhile is kept (read again first),
    and the file is replaced whole, so a reader never sees half of it."""
    if _file is None:
        return
    try:
        on_disk = _read(_file)
        on_disk[key] = value
        if len(on_disk) > MAX_KEPT:  # insertion order: the oldest first
            on_disk = dict(list(on_disk.items())[-MAX_KEPT // 2:])
        _file.parent.mkdir(parents=True, exist_ok=True)
        tmp = _file.with_name(f"{_file.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(on_disk))  # insertion order kept: a request's parameters keep litellm's order
        os.replace(tmp, _file)
    except OSError:
        pass  # a read-only or full cache: litellm is asked again by the next process


def known(kind: str, question: Any, derive: Callable[[], Any]) -> Any:
    """litellm's answer to ``question`` (JSON: a string, list or dict) of ``kind`` ("route",
    "params", "price"): kept from an earlier process, else ``derive()`` (which asks litellm) and kept.
    The answer must be JSON too; it comes back as JSON gives it (lists for tuples)."""
    key = _key(kind, question)
    with _lock:
        answers = _load()
        if key in answers:
            return answers[key]
    value = json.loads(json.dumps(derive()))  # the same shape whether derived or read
    with _lock:
        answers[key] = value
        _save(key, value)
    return value


def _key(kind: str, question: Any) -> str:
    return f"{kind} {json.dumps(question, sort_keys=True)}"  # a sampling's order does not matter


def litellm_imported() -> bool:
    """Whether litellm is imported in this process: before, no exception is a litellm exception."""
    return "litellm" in sys.modules


def forget() -> None:
    """Drop this process's copy (tests: the next question reads the file again)."""
    global _answers, _file
    with _lock:
        _answers, _file = None, None
