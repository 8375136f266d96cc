"""The reference in docs/ and the README names what the code has: links lead to headings, the
catalog table of docs/data-model.md says which sql/ file defines which view, the views the docs
list exist, and every lake table's columns are documented."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO
from tasks.lake.schemas import SCHEMAS
from tasks.lake.sql import SQL_LAYERS, _DEFINED, sql_code

PAGES = sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md"]
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
NAME = re.compile(r"`([a-z_][a-z0-9_]*)(?:\([^`]*\))?`")


def prose(page: Path) -> str:
    """A markdown page without its fenced code blocks."""
    return FENCE.sub("", page.read_text(encoding="utf-8"))


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as -."""
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-")
            for h in re.findall(r"^#+\s+(.+?)\s*$", prose(page), re.M)}


def sql_definitions() -> dict[str, Path]:
    """Every view and macro of sql/ and the file that defines it."""
    return {name: path for layer in SQL_LAYERS for path in sorted((REPO / "sql" / layer).glob("*.sql"))
            for name in _DEFINED.findall(sql_code(path))}


def table_rows(text: str, header: str) -> list[list[str]]:
    """The rows (cells) of the markdown tables whose header row starts with ``| header |``."""
    rows, inside = [], False
    for line in text.splitlines():
        if line.startswith(f"| {header} |"):
            inside = True
        elif inside and line.startswith("|"):
            if not line.startswith("| ---"):
                rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
        else:
            inside = False
    return rows


def section(text: str, heading: str) -> str:
    """The text under ``heading`` (a whole heading line) up to the next heading of its level or higher."""
    level = len(heading) - len(heading.lstrip("#"))
    start = text.index(heading + "\n") + len(heading)
    following = re.compile(rf"^#{{1,{level}}}\s", re.M).search(text, start)
    return text[start:following.start() if following else len(text)]


def test_every_relative_link_leads_to_a_file_and_heading():
    broken = []
    for page in PAGES:
        for target in LINK.findall(prose(page)):
            if re.match(r"[a-z]+:", target):
                continue  # a web address
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.relative_to(REPO)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert broken == [], "\n".join(broken)


def test_catalog_table_says_which_file_defines_which_view():
    defined = sql_definitions()
    rows = table_rows(prose(REPO / "docs" / "data-model.md"), "file")
    listed = {row[0].strip("`"): row[1] for row in rows}
    files = {str(path.relative_to(REPO)) for path in defined.values()}
    assert set(listed) == files, "every sql/ file has one row in docs/data-model.md#files, and only those"
    wrong = []
    for name, path in defined.items():
        cell = listed[str(path.relative_to(REPO))]
        if name not in NAME.findall(cell):
            wrong.append(f"{name} (defined in {path.relative_to(REPO)}) missing from its row")
    for file, cell in listed.items():
        wrong += [f"{name} listed under {file}, defined in {defined[name].relative_to(REPO)}"
                  for name in NAME.findall(cell) if name in defined and str(defined[name].relative_to(REPO)) != file]
    assert wrong == [], "\n".join(wrong)


def test_views_the_docs_list_exist():
    """The first column of the README's view tables and the views metrics.md presents by name."""
    defined = sql_definitions()
    readme = prose(REPO / "README.md")
    named = [name for header in ("view", "table / view")
             for row in table_rows(readme, header) for name in NAME.findall(row[0])]
    metrics = prose(REPO / "docs" / "metrics.md")
    named += re.findall(r"^#+ ([a-z_]+)$", metrics, re.M)  # headings that are a view's name
    named += re.findall(r"\*\*`([a-z_]+)`\*\*", metrics)  # a view introduced in bold
    assert len(named) > 30, "the walk must see the listed views"
    missing = sorted({n for n in named if n not in defined})
    assert missing == [], f"named in the docs as views, defined nowhere in sql/: {missing}"


def test_every_lake_column_is_documented():
    text = prose(REPO / "docs" / "data-model.md")
    tables = section(text, "## Tables")
    undocumented = []
    for table, schema in SCHEMAS.items():
        heading = f"### {table}"
        where = section(tables, heading) if heading + "\n" in tables else section(tables, "### Computed tables")
        columns = set(re.findall(r"`([a-z_][a-z0-9_]*)`", where))
        if table == "items":
            columns |= {n for n in schema.names if n.startswith("n_") or n == "symbol_density"}  # "n_chars ... n_points"
        undocumented += [f"{table}.{c}" for c in schema.names if c not in columns]
    assert undocumented == [], f"lake columns missing from docs/data-model.md#tables: {undocumented}"
