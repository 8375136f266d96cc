"""Inspect AI, both ways: items exported as an Inspect dataset and task, Inspect logs read back.

Export (``invarbench export --format inspect``) writes ``dataset.jsonl`` (one sample a line:
``id`` = item id, ``input`` = the prompt, or the message list when there is more than one user
message, ``target`` = the gold, ``metadata`` = suite, task, family_id, variant, prompt_style,
bin, key_entities, steps, answer_type, item_id) and ``task.py`` (one ``generate()`` call per
sample), so ``inspect eval DIR/task.py`` runs them. Multi-call (chain) items need invarbench's own
solver and are left out, and counted.

Import reads the logs as Inspect writes them, without inspect_ai: ``.json`` (one object with
``eval``, ``samples``, ...) and ``.eval`` (a zip whose members are Zstandard-compressed: read with
the ``zstandard`` package, since Python < 3.14's zipfile cannot). Per sample and epoch: model =
the log header's ``eval.model`` (``openai/gpt-4o``), sample_idx = epoch - 1, text =
``output.completion``, finish reason = ``output.choices[0].stop_reason``, tokens =
``output.usage.input_tokens`` / ``output_tokens``, latency = ``output.time``; a sample with an
``error`` is an ``error`` response.
"""

from __future__ import annotations

import io
import json
import struct
import zipfile
from pathlib import Path
from typing import Any, Iterator

from tasks.imports import ImportRejected
from tasks.interop.mapping import Sample

PROVIDER = "inspect"
ZIP_ZSTANDARD = 93  # the zip method number Inspect's .eval members use
# JSON files Inspect keeps beside its logs: the log folder's index and an eval set's description
BOOKKEEPING = {"logs.json", "eval-set.json"}

TASK_FILE = '''"""Inspect AI task over items exported by `invarbench export --format inspect`.

Run: inspect eval task.py --model PROVIDER/MODEL [--epochs N]; then bring the log back with
invarbench import-responses LOG_DIR --format inspect (invarbench parses and scores the answers
itself: the scorer here is only Inspect's own first look).
"""

from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import json_dataset
from inspect_ai.scorer import match
from inspect_ai.solver import generate


@task
def invarbench():
    return Task(dataset=json_dataset(str(Path(__file__).parent / "dataset.jsonl")),
                solver=[generate()], scorer=match())
'''


# --- export -------------------------------------------------------------------------------------

def dataset_line(row: dict[str, Any]) -> dict[str, Any]:
    """The Inspect sample of one item row (see the module docstring)."""
    messages = json.loads(row["messages"])
    single = len(messages) == 1 and messages[0]["role"] == "user"
    metadata = {k: row[k] for k in ("suite", "task", "family_id", "variant", "prompt_style", "bin",
                                    "key_entities", "answer_type", "item_id")}
    metadata["steps"] = [s["name"] for s in json.loads(row["steps"])]
    return {"id": row["item_id"], "input": messages[0]["content"] if single else messages,
            "target": row["gold"], "metadata": metadata}


def export_inspect(rows: list[dict[str, Any]], out: Path) -> dict[str, int]:
    """Write ``out/dataset.jsonl`` and ``out/task.py`` for the single-call items of ``rows``;
    returns how many items were written and how many chain items were left out."""
    single = [r for r in rows if r["solver"] == "generate"]
    out.mkdir(parents=True, exist_ok=True)
    for name, text in (("dataset.jsonl", "".join(json.dumps(dataset_line(r), ensure_ascii=False) + "\n"
                                                  for r in single)), ("task.py", TASK_FILE)):
        tmp = out / f".{name}.tmp"
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(out / name)
    return {"written": len(single), "left_out": len(rows) - len(single)}


# --- reading logs -------------------------------------------------------------------------------

def _member(zf: zipfile.ZipFile, name: str) -> bytes:
    info = zf.getinfo(name)
    if info.compress_type != ZIP_ZSTANDARD or hasattr(zipfile, "ZIP_ZSTANDARD"):
        return zf.read(name)  # stored/deflate (older Inspect), or Python >= 3.14 reads zstd itself
    import zstandard

    fp = zf.fp
    fp.seek(info.header_offset)
    name_len, extra_len = struct.unpack("<HH", fp.read(30)[26:30])
    fp.seek(info.header_offset + 30 + name_len + extra_len)
    raw = fp.read(info.compress_size)
    # Inspect writes large members as several frames
    return zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw), read_across_frames=True).read()


def load_log(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, samples) of one log; raises ImportRejected when it is not an Inspect log."""
    try:
        if path.suffix == ".json":
            log = json.loads(path.read_text(encoding="utf-8"))
            samples = log.get("samples") or [] if isinstance(log, dict) else None
        else:
            with zipfile.ZipFile(path) as zf:
                names = zf.namelist()
                # header.json is written when the eval ends; a killed eval has only the journal's start
                log = json.loads(_member(zf, "header.json" if "header.json" in names else "_journal/start.json"))
                samples = [json.loads(_member(zf, n)) for n in names
                           if n.startswith("samples/") and n.endswith(".json")]
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        raise ImportRejected(f"{path}: not a readable Inspect log ({exc})") from None
    if samples is None or not isinstance(log.get("eval"), dict) or not log["eval"].get("model"):
        raise ImportRejected(f"{path}: not an Inspect log (no eval.model in its header)")
    return log, samples


def _text(content: Any) -> str:
    """ChatMessage content: a str, or a list of parts of which the text ones count."""
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if p.get("type") == "text")


def _input(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    said = [_text(m.get("content")) for m in value if m.get("role") in ("system", "user")]
    return ("\n\n".join(said), *said)


def _sample(path: Path, header: dict[str, Any], s: dict[str, Any]) -> Sample:
    ev = header["eval"]
    out = s.get("output") or {}
    choice = (out.get("choices") or [{}])[0]
    usage = out.get("usage") or {}
    target = s.get("target")
    error = s.get("error")
    config = {k: v for k, v in (ev.get("model_generate_config") or {}).items() if v is not None}
    return Sample(
        where=f"{path.name}: sample {s['id']} epoch {s['epoch']}", provider=PROVIDER, model=ev["model"],
        sample_idx=int(s["epoch"]) - 1,
        text=None if error else out.get("completion") or _text((choice.get("message") or {}).get("content")),
        contents=_input(s.get("input", "")), target=target if isinstance(target, str) else None,
        item_hint=(s.get("metadata") or {}).get("item_id"), api_base=ev.get("model_base_url") or "",
        sampling={"generate_config": config} if config else {},
        error=(error.get("message") or "error") if error else None, latency_s=out.get("time"),
        prompt_tokens=usage.get("input_tokens"), completion_tokens=usage.get("output_tokens"),
        finish_reason=choice.get("stop_reason"))


def log_files(source: Path) -> list[Path]:
    """The logs a file or folder names: ``.eval`` and ``.json`` files, recursively, in name order."""
    if source.is_file():
        return [source]
    if not source.is_dir():
        raise ImportRejected(f"{source}: no such file or folder")
    found = sorted(p for p in source.rglob("*") if p.suffix in (".eval", ".json") and p.is_file()
                   and p.name not in BOOKKEEPING)
    if not found:
        raise ImportRejected(f"{source}: no Inspect logs (.eval or .json) in this folder")
    return found


def read_samples(source: Path) -> Iterator[Sample]:
    """Every sample and epoch of every log under ``source``."""
    for path in log_files(source):
        if path.suffix not in (".eval", ".json"):
            raise ImportRejected(f"{path}: an Inspect log ends in .eval or .json")
        header, samples = load_log(path)
        for s in samples:
            yield _sample(path, header, s)
