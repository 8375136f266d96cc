r"""``invarbench import-responses``: responses produced elsewhere, stored and scored like any run.

The file is CSV (UTF-8, a header row), JSONL (one JSON object per line) or Parquet, one row per
response. Column names match whatever their case and surrounding spaces (``Prompt``, ``prompt,
target`` with a space after the comma: :func:`tasks.columns.match_columns`); other columns are
ignored and reported:

=================================  ===============================================================
``prompt`` / ``input`` /           the prompt (required; sent as one user message)
``question``
``target`` / ``gold`` /            the gold answer (required, never empty: see below)
``answer`` / ``out``
``prediction`` / ``response`` /    the model's raw reply (required; may be empty, which scores as
``output`` / ``pred``              unparsable)
``task``                           task name (default ``imported``); it decides the parser
``family_id``                      family of the item (default: one family per task and prompt)
``variant``                        variant within the family (default ``original``)
``key_entities``                   integer (default: the bin's lower edge, else 0)
``bin`` / ``bins``                 the bin, in any common spelling (default: ``key_entities``
                                   alone; ``all`` when neither is given), see below
``finish_reason``                  why generation stopped (``stop``, ``length``, ...), stored as
                                   given; a ``length`` reply without a stated answer scores as truncated
=================================  ===============================================================

A missing required column is reported with the columns the file has.
The aliases ``out``, ``pred`` and ``bins`` are the MLissard result files' names, so those files
import as published. Two columns giving the same thing (``target`` and ``out``) are an error.

Bins: ``lo-hi`` (also with an en or em dash, a minus sign or ``to``: ``1–5``, ``1 to 5``), ``lo~hi`` (MLissard's ``13~18``), ``[lo, hi)``, ``[lo, hi]`` and a single ``n``
are accepted and stored as the project's label ``lo-hi`` (``n`` alone for a one-value bin), with
``bin_lo`` and ``bin_hi``; the import summary lists each spelling with its normalised label.
``key_entities`` must lie in its bin: ``lo <= n < hi`` for ``[lo, hi)``, ``lo <= n <= hi``
otherwise (the spelling does not say whether the upper edge is open, and a series' last bin is
closed).

An empty gold is an error naming the row: it cannot be told from a gold lost on the way (MLissard's
list-intersection files lost their ``None`` golds to empty cells). Write the answer the task
expects instead; for list_intersection with no common item, that is ``None``.

Numbers are accepted where text is expected (a float with no fraction reads as an integer:
``6.0`` → ``6``); a missing value (empty cell in a short CSV line, JSON ``null``, Parquet null or
NaN) in a required column is an error.

Parser (answer type) per task: a task name of the lissard suite uses the lissard ``Output:``-line
parser and exact match (``text``), one of the symmetry suite the integer parser (``integer``), a
geometry category the symbolic-equivalence parser (``math``). Any other task gets the integer
parser when every gold of that task is an integer; the symbolic-equivalence parser when every gold
is a number or an arithmetic expression written as people write them (``1.5``, ``8/3``,
``3\sqrt{2}``, ``2\frac{2}{3}``, ``1,250``): a grader compares those as values, so ``1.50`` or
``2 2/3`` is right; else ``text``: exact match (whitespace normalised) of the reply's ``Output:``
line, or of the whole reply when it is a single line.

Items are built with :class:`tasks.records.Item` (suite ``imported``) and pass the same Great
Expectations validation as generated ones. An item's identity is (task, family_id, variant,
prompt), never the prompt alone: GeoRepEval states some families' Euclidean and vector variants in
the same words, and they stay two variants of one family. Rows of one identity are samples 0, 1,
... of that item in file order; rows of one identity that disagree on the gold, bin or
key_entities are an error. Every row is its own request: requests carry the route
``imported / <model> / ''`` and, in their sampling, the item id (``{"item": ...}``), so two items
with one prompt never share a request or its reply. A request already answered in the ledger
keeps its stored response (the import then counts it as cached, as a sweep would).

Nothing is written until every row is decoded and the items are valid: a missing column, an empty
file, an undecodable row or an empty gold raises :class:`ImportRejected` naming the row and column.
:func:`plan_import` returns the plan; :func:`tasks.import_plan.store_import` writes it.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tasks.columns import ColumnError, csv_lines, match_columns
from tasks.import_plan import ImportPlan
from tasks.items.generate import dataset_id, item_row
from tasks.items.validate import ValidationFailed, validate_items
from tasks.models.call import trial_id
from tasks.records import Item, Request, Route
from tasks.suites import ANSWER_TYPES, SUITES, suite_tasks
from tasks.suites.base import family_id

SUITE = "imported"
VERSION = "2"  # 2: item identity (task, family_id, variant, prompt); bin spellings; item id in requests
PROVIDER = "imported"
DEFAULT_TASK = "imported"
DEFAULT_VARIANT = "original"

# canonical name → accepted column names, in the order the module docstring gives them
REQUIRED = {"prompt": ("prompt", "input", "question"), "gold": ("target", "gold", "answer", "out"),
            "response": ("prediction", "response", "output", "pred")}
OPTIONAL = {"task": ("task",), "family_id": ("family_id",), "variant": ("variant",), "bin": ("bin", "bins"),
            "key_entities": ("key_entities",), "finish_reason": ("finish_reason",)}

_INTEGER = re.compile(r"-?\d+")
# A gold that is a number or an arithmetic expression: digits with operators, brackets, roots and
# pi, LaTeX fractions and roots, commas only between groups of three digits (thousands).
_NUMERIC = re.compile(r"(?:[\d\s.+\-*/^()\u221a\u03c0{}]|,(?=\d{3}(?!\d))|\\[dt]?frac|\\sqrt|\\pi|sqrt|pi)+")
# lo-hi with a hyphen, MLissard's tilde, the typographic dashes and minus sign a word processor or a
# paper puts there (1–5), or "to"
_BIN_RANGE = re.compile(r"(\d+)\s*(?:[-~\u2012\u2013\u2014\u2212]|to)\s*(\d+)")
_BIN_INTERVAL = re.compile(r"\[\s*(\d+)\s*,\s*(\d+)\s*([\])])")
_BIN_SINGLE = re.compile(r"\d+")


class ImportRejected(ValueError):
    """The file cannot be imported; the message names the file, and the row and column when one is at fault."""


@dataclass
class Record:
    """One decoded row: its canonical values and where it came from (for messages)."""

    where: str
    values: dict[str, Any]

    @property
    def task(self) -> str:
        return self.values.get("task") or DEFAULT_TASK


# --- reading ------------------------------------------------------------------------------------

def _csv_rows(path: Path) -> tuple[list[str], list[tuple[str, dict[str, Any]]]]:
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise ImportRejected(f"{path}: line {line}: not valid UTF-8") from None
    try:
        header, lines = csv_lines(text)
    except ColumnError as exc:
        raise ImportRejected(f"{path}: {exc}") from None
    # a short line leaves its last columns missing
    rows = [(f"line {n}", values) for n, values in lines]
    return header, rows


def _jsonl_rows(path: Path) -> tuple[list[str], list[tuple[str, dict[str, Any]]]]:
    data = path.read_bytes()
    rows, header = [], {}
    for number, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        where = f"line {number}"
        try:
            obj = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise ImportRejected(f"{path}: {where}: not valid UTF-8") from None
        except json.JSONDecodeError as exc:
            raise ImportRejected(f"{path}: {where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(obj, dict):
            raise ImportRejected(f"{path}: {where}: expected a JSON object, got {type(obj).__name__}")
        header.update(dict.fromkeys(obj))
        rows.append((where, obj))
    return list(header), rows


def _parquet_rows(path: Path) -> tuple[list[str], list[tuple[str, dict[str, Any]]]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise ImportRejected(f"{path}: not a readable Parquet file ({exc})") from None
    return table.column_names, [(f"row {i}", row) for i, row in enumerate(table.to_pylist(), 1)]


READERS = {".csv": _csv_rows, ".jsonl": _jsonl_rows, ".parquet": _parquet_rows}


def resolve_columns(path: Path, header: list[str]) -> tuple[dict[str, str], list[str]]:
    """Map canonical names to the file's columns (:func:`tasks.columns.match_columns`); returns
    (mapping, ignored columns)."""
    try:
        return match_columns(header, {**REQUIRED, **OPTIONAL}, REQUIRED)
    except ColumnError as exc:
        raise ImportRejected(f"{path}: {exc}") from None


def _text(value: Any) -> str | None:
    """A cell as text: strings as they are, numbers printed (integral floats as integers), None when missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        raise TypeError("a boolean")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    raise TypeError(type(value).__name__)


def decode(path: Path, header_rows: tuple[list[str], list[tuple[str, dict[str, Any]]]]) -> tuple[list[Record], list[str]]:
    """Rows as records of canonical text values; raises ImportRejected naming row and column."""
    header, rows = header_rows
    if not rows:
        raise ImportRejected(f"{path}: no rows to import (the file is empty)")
    mapping, ignored = resolve_columns(path, header)
    records = []
    for where, row in rows:
        values: dict[str, Any] = {}
        for name, column in mapping.items():
            try:
                value = _text(row.get(column))
            except TypeError as exc:
                raise ImportRejected(f"{path}: {where}, column {column!r}: expected text or a number, got {exc}") from None
            if name in REQUIRED:
                if value is None:
                    raise ImportRejected(f"{path}: {where}, column {column!r}: missing value")
                if name != "response" and not value.strip():
                    hint = (" (write the answer the task expects; for list_intersection with no common item, "
                            "that is None)" if name == "gold" else "")
                    raise ImportRejected(f"{path}: {where}, column {column!r}: empty{hint}")
            elif value is not None and not value.strip():
                value = None  # an empty optional cell means "not given"
            values[name] = value
        records.append(Record(where, values))
    return records, ignored


# --- building -----------------------------------------------------------------------------------

def known_task_answer_types() -> dict[str, str]:
    """Answer type of every task name of the built-in suites."""
    return {task: ANSWER_TYPES[suite] for suite in SUITES for task in suite_tasks(suite)}


def answer_types(records: list[Record]) -> dict[str, str]:
    """The answer type of each task in the file (see the module docstring)."""
    known = known_task_answer_types()
    golds: dict[str, list[str]] = {}
    for r in records:
        golds.setdefault(r.task, []).append(r.values["gold"].strip())
    return {task: known.get(task) or _answer_type(gs) for task, gs in golds.items()}


def _answer_type(golds: list[str]) -> str:
    if all(_INTEGER.fullmatch(g) for g in golds):
        return "integer"
    if all(_NUMERIC.fullmatch(g) and any(c.isdigit() for c in g) for g in golds):
        return "math"
    return "text"


def parse_bin(label: str) -> tuple[int, int, bool] | None:
    """(lo, hi, half_open) of a bin in a common spelling (see the module docstring), else None."""
    text = label.strip()
    if m := _BIN_RANGE.fullmatch(text):
        return int(m.group(1)), int(m.group(2)), False
    if m := _BIN_INTERVAL.fullmatch(text):
        return int(m.group(1)), int(m.group(2)), m.group(3) == ")"
    if _BIN_SINGLE.fullmatch(text):
        return int(text), int(text), False
    return None


def _bin(path: Path, r: Record) -> tuple[int, str, int, int]:
    """(key_entities, normalised bin label, bin_lo, bin_hi) of a record, defaults filled in."""
    ke_text, label = r.values.get("key_entities"), r.values.get("bin")
    key_entities = None
    if ke_text is not None:
        if not _INTEGER.fullmatch(ke_text.strip()):
            raise ImportRejected(f"{path}: {r.where}, column 'key_entities': {ke_text!r} is not an integer")
        key_entities = int(ke_text)
    if label is None:
        if key_entities is None:
            return 0, "all", 0, 0
        return key_entities, str(key_entities), key_entities, key_entities
    parsed = parse_bin(label)
    if parsed is None:
        raise ImportRejected(f"{path}: {r.where}, column 'bin': {label!r} is not a bin label "
                             "('lo-hi', 'lo–hi', 'lo to hi', 'lo~hi', '[lo, hi)', '[lo, hi]' or 'n')")
    lo, hi, half_open = parsed
    if hi < lo or (half_open and hi == lo):
        raise ImportRejected(f"{path}: {r.where}, column 'bin': {label!r} is an empty range")
    if key_entities is None:
        key_entities = lo
    if not lo <= key_entities <= hi or (half_open and key_entities == hi):
        raise ImportRejected(f"{path}: {r.where}: key_entities {key_entities} is outside its bin {label!r}")
    return key_entities, str(lo) if lo == hi else f"{lo}-{hi}", lo, hi


def build_item(path: Path, r: Record, answer_type: str) -> Item:
    """The item a record answers."""
    prompt = r.values["prompt"]
    key_entities, label, lo, hi = _bin(path, r)
    return Item(
        suite=SUITE, task=r.task,
        family_id=r.values.get("family_id") or family_id(SUITE, r.task, prompt=prompt),
        variant=r.values.get("variant") or DEFAULT_VARIANT, prompt_style="",
        key_entities=key_entities, bin=label, bin_lo=lo, bin_hi=hi,
        messages=(("user", prompt),), gold=r.values["gold"].strip(), answer_type=answer_type,
        generator=f"{SUITE}.{r.task}", generator_version=VERSION, seed=0,
    )


def plan_import(path: Path, model: str) -> ImportPlan:
    """Read, decode, build and validate an import; raises ImportRejected, writes nothing."""
    if path.suffix.lower() not in READERS:
        raise ImportRejected(f"{path}: unsupported file type {path.suffix or '(none)'!r}; expected .csv, .jsonl or .parquet")
    if not path.is_file():
        raise ImportRejected(f"{path}: no such file")
    if not model.strip():
        raise ImportRejected("--model: a model name is needed")
    records, ignored = decode(path, READERS[path.suffix.lower()](path))
    types = answer_types(records)
    route = Route(provider=PROVIDER, model=model, api_base="")
    items: dict[tuple[str, str, str, str], tuple[Item, Record]] = {}
    # Samples count per item identity (task, family_id, variant, prompt), never per prompt alone.
    samples: Counter[tuple[str, str, str, str]] = Counter()
    requests, texts, bins, recorded = [], {}, {}, {}
    for r in records:
        item = build_item(path, r, types[r.task])
        identity = (item.task, item.family_id, item.variant, item.prompt)
        first, first_record = items.setdefault(identity, (item, r))
        if first.item_id != item.item_id:
            raise ImportRejected(f"{path}: {r.where}: same task, family_id, variant and prompt as {first_record.where} "
                                 "but a different gold, bin or key_entities")
        if r.values.get("bin") is not None:
            bins[r.values["bin"].strip()] = item.bin
        sample_idx = samples[identity]
        samples[identity] += 1
        # The item id in the sampling keeps two items with one prompt two requests, each with its reply.
        sampling = {"item": item.item_id}
        req = Request(trial_id=trial_id(item.item_id, asdict(route), sampling, sample_idx), item_id=item.item_id,
                      model=model, step="main", route=route, messages=item.messages, sampling=sampling,
                      sample_idx=sample_idx)
        requests.append(req)
        texts[req.request_id] = r.values["response"]
        if r.values.get("finish_reason"):
            recorded[req.request_id] = {"finish_reason": r.values["finish_reason"].strip()}
    by_task: dict[str, list[Item]] = {}
    for item, _ in items.values():
        by_task.setdefault(item.task, []).append(item)
    rows = [item_row(item, dataset_id(SUITE, task, VERSION, {"items": sorted(i.item_id for i in task_items)}, 0))
            for task, task_items in by_task.items() for item in task_items]
    try:
        validate_items(rows, batch_name="import")
    except ValidationFailed as exc:
        raise ImportRejected(f"{path}: the items fail validation:\n{exc}") from None
    return ImportPlan(source=str(path), model=model, items=rows, requests=requests, texts=texts,
                      answer_types=types, ignored_columns=ignored, bins=dict(sorted(bins.items())),
                      recorded=recorded)
