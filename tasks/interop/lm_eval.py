"""lm-evaluation-harness samples: the per-sample JSONL of ``lm_eval --log_samples``, read as written.

``lm_eval --output_path OUT --log_samples`` writes ``OUT/<model>/results_<date>.json`` and one
``samples_<task>_<date>.jsonl`` per task. Each line is one (filter, document): a task with two
filters (gsm8k's ``strict-match`` and ``flexible-extract``) repeats every document, with the same
raw reply, so the lines are read as one answer per document (``doc_id``) and repeat (``resps``
holds one string per repeat: sample_idx 0, 1, ...). The raw reply is imported, never the
filtered one: invarbench parses and scores it itself.

The model is the results file's ``model_name`` (else ``pretrained``/``model`` of its
``config.model_args``, else the folder's name). Only ``generate_until`` tasks carry answers;
loglikelihood (multiple-choice) tasks are reported and left out. lm-eval records no finish
reason, tokens or timing per sample.

Each document is mapped to an item by a mapping file (CSV or JSON: ``task``, ``doc_id`` or
``doc_hash``, ``item_id``) when one is given, else by content: the prompt lm-eval sent and every
text field of the document are matched against the stored items' prompts
(:mod:`tasks.interop.mapping`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

from tasks.columns import csv_lines
from tasks.imports import ImportRejected
from tasks.interop.mapping import Sample

PROVIDER = "lm-eval"
_SAMPLES = re.compile(r"samples_(?P<task>.+)_(?P<date>\d{4}-\d\d-\d\dT[\d.-]+)\.jsonl")
_MODEL_ARGS = ("peft", "delta", "pretrained", "model", "path", "engine")  # lm-eval's own order


def sample_files(source: Path) -> list[Path]:
    """The samples files a file or folder names (recursively), in name order."""
    if source.is_file():
        if not _SAMPLES.fullmatch(source.name):
            raise ImportRejected(f"{source}: not an lm-eval samples file (samples_<task>_<date>.jsonl)")
        return [source]
    if not source.is_dir():
        raise ImportRejected(f"{source}: no such file or folder")
    found = sorted(p for p in source.rglob("samples_*.jsonl") if _SAMPLES.fullmatch(p.name))
    if not found:
        raise ImportRejected(f"{source}: no lm-eval samples files (samples_<task>_<date>.jsonl) in this folder")
    return found


def _results(path: Path, date: str) -> dict[str, Any]:
    results = path.parent / f"results_{date}.json"
    if not results.is_file():
        return {}
    try:
        return json.loads(results.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ImportRejected(f"{results}: not valid JSON ({exc})") from None


def model_name(results: dict[str, Any], folder: str) -> str:
    """The model of a run: ``model_name``, else the first of lm-eval's model_args keys, else the folder."""
    if results.get("model_name"):
        return str(results["model_name"])
    args = (results.get("config") or {}).get("model_args") or {}
    if isinstance(args, str):  # "pretrained=x,dtype=y" before lm-eval 0.4.5
        args = dict(a.split("=", 1) for a in args.split(",") if "=" in a)
    return next((str(args[k]) for k in _MODEL_ARGS if args.get(k)), folder)


def _prompt(arguments: Any) -> tuple[str | None, dict[str, Any]]:
    """(prompt text, generation kwargs) of a line's ``arguments``: a dict ``gen_args_0`` (lm-eval
    >= 0.4.3) or a list of argument lists (earlier); the prompt is a str, or with a chat
    template a one-element list holding the JSON messages."""
    if isinstance(arguments, dict):
        first = arguments.get("gen_args_0") or {}
        arg0, arg1 = first.get("arg_0"), first.get("arg_1")
    elif isinstance(arguments, list) and arguments and isinstance(arguments[0], list):
        arg0, arg1 = (arguments[0] + [None, None])[:2]
    else:
        return None, {}
    if isinstance(arg0, list) and arg0 and isinstance(arg0[0], str):
        try:
            said = [m["content"] for m in json.loads(arg0[0]) if m.get("role") in ("system", "user")]
            arg0 = "\n\n".join(said)
        except (ValueError, TypeError, KeyError):
            arg0 = arg0[0]
    return (arg0 if isinstance(arg0, str) else None), (arg1 if isinstance(arg1, dict) else {})


def _doc_texts(doc: Any) -> list[str]:
    if isinstance(doc, str):
        return [doc]
    return [v for v in (doc.values() if isinstance(doc, dict) else []) if isinstance(v, str)]


def _lines(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for number, raw in enumerate(path.read_bytes().split(b"\n"), 1):
        if not raw.strip():
            continue
        where = f"{path.name}: line {number}"
        try:
            line = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise ImportRejected(f"{path}: line {number}: not valid JSON ({exc})") from None
        if not isinstance(line, dict):
            raise ImportRejected(f"{path}: line {number}: expected a JSON object")
        for key in ("doc_id", "resps"):
            if key not in line:
                raise ImportRejected(f"{path}: line {number}: no {key!r} (is this an lm-eval samples file?)")
        yield where, line


def _replies(path: Path, where: str, resps: Any) -> list[str] | None:
    """The raw replies of a generate_until line; None for a loglikelihood line."""
    first = resps[0] if isinstance(resps, list) and resps else None
    if isinstance(first, list) and all(isinstance(r, str) for r in first):
        return first
    if isinstance(first, list) and first and isinstance(first[0], list):
        return None  # [[logprob, is_greedy]] per choice
    raise ImportRejected(f"{path}: {where.split(': ', 1)[1]}: 'resps' is not lm-eval's [[reply, ...]]")


def read_file(path: Path, mapping: dict[tuple[str, str], str] | None,
              skipped: list[dict[str, str]]) -> Iterator[Sample]:
    """The samples of one samples file: one per document and repeat (filters collapsed)."""
    m = _SAMPLES.fullmatch(path.name)
    task, date = m.group("task"), m.group("date")
    results = _results(path, date)
    model = model_name(results, path.parent.name)
    output_type = ((results.get("configs") or {}).get(task) or {}).get("output_type")
    seen: set[Any] = set()
    for where, line in _lines(path):
        if line["doc_id"] in seen:
            continue  # the same document under another filter: the same raw reply
        seen.add(line["doc_id"])
        replies = _replies(path, where, line["resps"])
        if replies is None or output_type not in (None, "generate_until"):
            skipped.append({"sample": where, "model": model,
                            "reason": f"task {task} is {output_type or 'loglikelihood'}: no generated answer"})
            continue
        prompt, gen_kwargs = _prompt(line.get("arguments"))
        hint = None
        if mapping is not None:
            hint = mapping.get((task, f"id:{line['doc_id']}")) or mapping.get((task, f"hash:{line.get('doc_hash')}"))
            if hint is None:
                skipped.append({"sample": where, "model": model,
                                "reason": f"doc {line['doc_id']} of task {task} is not in the mapping file"})
                continue
        target = line.get("target")
        for k, text in enumerate(replies):
            yield Sample(where=f"{where} (doc {line['doc_id']}, task {task})", provider=PROVIDER, model=model,
                         sample_idx=k, text=text,
                         contents=() if mapping is not None else tuple(
                             t for t in [prompt, *_doc_texts(line.get("doc"))] if t),
                         target=str(target) if target is not None else None, item_hint=hint,
                         sampling={"lm_eval_task": task, "gen_kwargs": gen_kwargs})


def read_mapping(path: Path) -> dict[tuple[str, str], str]:
    """(task, "id:<doc_id>" or "hash:<doc_hash>") → item id from a CSV (header row) or JSON (a
    list of objects) with ``task``, ``doc_id`` or ``doc_hash``, and ``item_id``."""
    try:
        text = path.read_text(encoding="utf-8-sig")
        rows = [values for _, values in csv_lines(text)[1]] if path.suffix.lower() == ".csv" else json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # ColumnError is a ValueError
        raise ImportRejected(f"--mapping {path}: not readable ({exc})") from None
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise ImportRejected(f"--mapping {path}: expected rows of task, doc_id or doc_hash, item_id")
    out: dict[tuple[str, str], str] = {}
    for n, r in enumerate(rows, 1):
        keys = [f"id:{r['doc_id']}"] if r.get("doc_id") not in (None, "") else []
        keys += [f"hash:{r['doc_hash']}"] if r.get("doc_hash") else []
        if not r.get("task") or not r.get("item_id") or not keys:
            raise ImportRejected(f"--mapping {path}: row {n}: needs task, item_id and doc_id or doc_hash")
        out.update({(str(r["task"]), k): str(r["item_id"]) for k in keys})
    return out


def read_samples(source: Path, mapping: dict[tuple[str, str], str] | None,
                 skipped: list[dict[str, str]]) -> list[Sample]:
    """Every answer under ``source``; lines that carry none are appended to ``skipped``."""
    return [s for path in sample_files(source) for s in read_file(path, mapping, skipped)]
