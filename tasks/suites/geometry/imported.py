"""Import an external parallel set (GeoRepEval-style) as geometry families.

One row per problem, with columns ``id``, ``category``, ``euclid``, ``coord``, ``vector`` and
``answer`` (extra columns are ignored; names match whatever their case and surrounding spaces,
and a missing column is reported with the columns the file has). Files: ``.json`` (a list of objects), ``.jsonl`` /
``.ndjson`` (one object per line, blank lines skipped) or ``.csv`` (a header row; UTF-8, BOM
allowed). Each row becomes one family: one :class:`~tasks.records.Item` per representation and
prompt style, built exactly like generated items (same prompts, answer type ``math``), with
suite ``geometry``, task ``imported``, generator ``geometry.imported``.

Choices the paper leaves open:

* ``category`` accepts the four category names and the paper's pairs (``distance``,
  ``length/distance``, ``volume``, ``area/volume``, ``direction``, ``angle/direction``,
  ``proportion``, ``ratio/proportion``), any case, and the same in Chinese, the paper's language
  (``长度/距离``, ``面积/体积``, ``角度/方向``, ``比例``, ``比值``; full-width ``／`` and spaces
  around the slash allowed); it is stored as ``length``, ``area``, ``angle`` or ``ratio``;
* ``answer`` is parsed by :func:`tasks.scoring.parse.math_expression.canonical` (so ``3/2``,
  ``2√5``, ``\\frac{3}{2}``, ``8π``, ``90°`` and decimals such as ``4.47`` all work); the gold is
  its canonical value, and a decimal gold keeps its digits (matching rule 1 treats it like any
  decimal);
* ``family_id`` hashes the whole row (id, category, the three texts, the canonical answer), so
  a corrected row is a new family, and the same row in two files is the same family;
* ``key_entities`` is the number of numeric literals in the ``euclid`` text (the given
  quantities): a hand-written problem has no template whose object count could be read;
* ``seed`` is 0: nothing is random.

Validation covers the whole file before anything is returned: every problem found (a missing
column, an empty id or text, a duplicate id, an unknown category, an unparsable answer) is
reported in one :class:`ImportFamiliesError` whose lines each name the row (1-based among the
records; for CSV, the header is not a record) with its id, and the column.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from tasks.columns import ColumnError, csv_lines, match_columns
from tasks.records import Item
from tasks.scoring.parse.math_expression import canonical, halfwidth
from tasks.suites.base import TaskSpec, bins_from_edges, family_id, find_bin
from tasks.suites.geometry import DEFAULTS, SUITE
from tasks.suites.geometry.prompts import check_styles, style_items
from tasks.suites.geometry.template import REPRESENTATIONS

COLUMNS = ("id", "category", "euclid", "coord", "vector", "answer")
CATEGORY_ALIASES = {
    "length": "length", "distance": "length", "length/distance": "length",
    "area": "area", "volume": "area", "area/volume": "area",
    "angle": "angle", "direction": "angle", "angle/direction": "angle",
    "ratio": "ratio", "proportion": "ratio", "ratio/proportion": "ratio",
    "长度": "length", "距离": "length", "长度/距离": "length",
    "面积": "area", "体积": "area", "面积/体积": "area",
    "角度": "angle", "方向": "angle", "角度/方向": "angle",
    "比例": "ratio", "比值": "ratio", "比例/比值": "ratio", "比例/比例": "ratio",
}
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
MAX_REPORTED = 50  # a file missing a column would otherwise print one line per row


class ImportFamiliesError(ValueError):
    """A parallel-set file that cannot be imported; the message names every bad row and column."""


@dataclass(frozen=True)
class Problem:
    """One validated row."""

    id: str
    category: str
    texts: dict[str, str]
    gold: str


def _generate_from_params(params: dict[str, Any], seed: int) -> list[Item]:
    return load_families(params["path"], params["prompt_styles"])


IMPORT_SPEC = TaskSpec(
    suite=SUITE,
    name="imported",
    version="1",
    defaults={"path": "", "prompt_styles": ["direct"]},
    generate=_generate_from_params,
    description="an imported parallel set: one family per row, one item per representation",
)


def load_families(path: str | Path, prompt_styles: Sequence[str] = ("direct",)) -> list[Item]:
    """Read a JSON, JSONL or CSV parallel set into items (see the module docstring).

    Raises :class:`ImportFamiliesError` when anything in the file is wrong, before any item
    is built; an unknown prompt style raises :class:`~tasks.suites.base.GeneratorError`.
    """
    styles = check_styles(prompt_styles)
    problems = validate_rows(read_rows(path))
    bins = bins_from_edges(DEFAULTS["bins"])
    items: list[Item] = []
    for problem in problems:
        entities = len(_NUMBER.findall(halfwidth(problem.texts["euclid"])))
        family = family_id(SUITE, IMPORT_SPEC.name, id=problem.id, category=problem.category,
                           texts=problem.texts, gold=problem.gold)
        for rep in REPRESENTATIONS:
            items += style_items(
                IMPORT_SPEC, family=family, representation=rep, problem=problem.texts[rep], gold=problem.gold,
                styles=styles, key_entities=entities, bin=find_bin(entities, bins), seed=0,
                category=problem.category, params={"source_id": problem.id},
            )
    return items


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """The records of a ``.json``, ``.jsonl``/``.ndjson`` or ``.csv`` file, as dicts. Its errors
    do not repeat the file's name, which the one command that reads it gives (flows.cli.imports)."""
    path = Path(path)
    suffix = path.suffix.lower()
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportFamiliesError(f"cannot read: {exc}") from exc
    if suffix == ".csv":
        try:
            return [values for _, values in csv_lines(text)[1]]
        except ColumnError as exc:
            raise ImportFamiliesError(str(exc)) from None
    if suffix in (".jsonl", ".ndjson"):
        rows = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                rows.append(_json(line, f"line {n}: "))
        return rows
    if suffix == ".json":
        rows = _json(text, "")
        if not isinstance(rows, list):
            raise ImportFamiliesError(f"expected a JSON list of objects, got {type(rows).__name__}")
        return rows
    raise ImportFamiliesError(f"unknown file type {suffix!r}; expected .json, .jsonl, .ndjson or .csv")


def _json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFamiliesError(f"{where}invalid JSON: {exc}") from exc


def canonical_columns(rows: Sequence[Any]) -> list[Any]:
    """The rows with their columns renamed to :data:`COLUMNS` (matched by
    :func:`tasks.columns.match_columns`: any case, spaces trimmed); a column no row has is an
    :class:`ImportFamiliesError` listing the columns found."""
    header = list(dict.fromkeys(k for row in rows if isinstance(row, dict) for k in row))
    try:
        mapping, _ = match_columns(header, {c: (c,) for c in COLUMNS}, COLUMNS if header else ())
    except ColumnError as exc:
        raise ImportFamiliesError(str(exc)) from None
    rename = {column: name for name, column in mapping.items()}
    return [{rename.get(k, k): v for k, v in row.items()} if isinstance(row, dict) else row for row in rows]


def validate_rows(rows: Sequence[Any]) -> list[Problem]:
    """Every row checked; all problems reported together in one :class:`ImportFamiliesError`
    (one problem: its line alone)."""
    rows = canonical_columns(rows)
    errors: list[str] = []
    problems: list[Problem] = []
    first_row_of: dict[str, int] = {}
    for n, row in enumerate(rows, 1):
        where = f"row {n}"
        if not isinstance(row, dict):
            errors.append(f"{where}: expected an object with columns {', '.join(COLUMNS)}")
            continue
        values = {c: _cell(row.get(c)) for c in COLUMNS}
        if values["id"]:
            where = f"row {n} (id {values['id']!r})"
        row_errors = [f"{where}, column {c!r}: missing" for c in COLUMNS if row.get(c) is None]
        row_errors += [f"{where}, column {c!r}: empty" for c in COLUMNS if row.get(c) is not None and not values[c]]
        if values["id"] in first_row_of:
            row_errors.append(f"{where}, column 'id': duplicate of row {first_row_of[values['id']]}")
        elif values["id"]:
            first_row_of[values["id"]] = n
        category = CATEGORY_ALIASES.get(re.sub(r"\s*/\s*", "/", halfwidth(values["category"]).lower()))
        if values["category"] and category is None:
            row_errors.append(f"{where}, column 'category': unknown category {values['category']!r}; "
                              f"known: {', '.join(sorted(set(CATEGORY_ALIASES.values())))}")
        gold = canonical(values["answer"]) if values["answer"] else None
        if values["answer"] and gold is None:
            row_errors.append(f"{where}, column 'answer': cannot parse {values['answer']!r} as an exact or decimal")
        if row_errors:
            errors += row_errors
            continue
        problems.append(Problem(values["id"], category, {r: values[r] for r in REPRESENTATIONS}, gold))
    if not rows:
        errors.append("the file holds no rows")
    if len(errors) == 1:
        raise ImportFamiliesError(errors[0])
    if errors:
        shown = errors[:MAX_REPORTED]
        if len(errors) > MAX_REPORTED:
            shown.append(f"... and {len(errors) - MAX_REPORTED} more")
        raise ImportFamiliesError(f"{len(errors)} problem(s) in the parallel set:\n" + "\n".join(shown))
    return problems


def _cell(value: Any) -> str:
    """A cell as stripped text (JSON numbers included: an answer may be written as 1.5)."""
    if value is None:
        return ""
    return str(value).strip()
