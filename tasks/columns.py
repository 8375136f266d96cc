"""Column names as other people write them: one matching rule for every importer.

A file's column is matched to a canonical name when, trimmed of spaces (a CSV header written
``prompt, target``) and a byte-order mark, and compared case-insensitively (``Prompt``,
``TARGET``), it equals one of the names the importer accepts for it. The importers give their
accepted names (aliases) and which canonical names are required; a missing required column is
reported in one line with the columns the file has.
"""

from __future__ import annotations

import csv
import io
from typing import Collection, Mapping, Sequence


class ColumnError(ValueError):
    """The columns of a file do not give what an importer needs; the message is one line."""


def csv_lines(text: str) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """The header row of CSV ``text`` and each later line with a value, as (its line number,
    {column: cell}); a short line leaves its last columns out. A line with more fields than the
    header, or text that is not CSV, raises ColumnError naming the line: written by hand, the
    first is most often a cell that holds a comma without double quotes around it."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, [])
        lines = []
        for fields in reader:
            if not any(f.strip() for f in fields):
                continue
            if len(fields) > len(header):
                raise ColumnError(f"line {reader.line_num}: {len(fields)} fields, the header has {len(header)} "
                                  "(a cell that holds a comma must be in double quotes)")
            lines.append((reader.line_num, dict(zip(header, fields))))
    except csv.Error as exc:
        raise ColumnError(f"line {reader.line_num}: not valid CSV ({exc})") from None
    return header, lines


def column_key(name: str) -> str:
    """The form two column names are compared in: trimmed, BOM removed, lower case."""
    return name.replace("\ufeff", "").strip().casefold()


def match_columns(header: Sequence[str], accepted: Mapping[str, Sequence[str]],
                  required: Collection[str]) -> tuple[dict[str, str], list[str]]:
    """Map each canonical name of ``accepted`` (canonical → the column names that give it, the
    first one the preferred spelling) to the file's column that gives it; returns (that mapping,
    the file's other columns, sorted).

    Raises ColumnError when a ``required`` name has no column (the message lists every missing
    name with its accepted spellings, and the columns found) or when two columns give one name.
    """
    mapping: dict[str, str] = {}
    missing = []
    for name, names in accepted.items():
        keys = {column_key(n) for n in names}
        present = [c for c in header if column_key(c) in keys]
        if len(present) > 1:
            raise ColumnError(f"columns {' and '.join(repr(c) for c in present)} both give the {name}; keep one")
        if present:
            mapping[name] = present[0]
        elif name in required:
            missing.append(repr(names[0]) + (f" (or {', '.join(repr(n) for n in names[1:])})" if names[1:] else ""))
    if missing:
        found = ", ".join(repr(c) for c in header) or "none"
        raise ColumnError(f"missing column{'s' if len(missing) > 1 else ''} {'; '.join(missing)}; columns found: {found}")
    return mapping, sorted(set(header) - set(mapping.values()))
