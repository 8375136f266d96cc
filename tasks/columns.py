"""Column names as other people write them: one matching rule for every importer.

A file's column is matched to a canonical name when, trimmed of spaces (a CSV header written
``prompt, target``) and a byte-order mark, and compared case-insensitively (``Prompt``,
``TARGET``), it equals one of the names the importer accepts for it. The importers give their
accepted names (aliases) and which canonical names are required; a missing required column is
reported in one line with the columns the file has.
"""

from __future__ import annotations

from typing import Collection, Mapping, Sequence


class ColumnError(ValueError):
    """The columns of a file do not give what an importer needs; the message is one line."""


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
