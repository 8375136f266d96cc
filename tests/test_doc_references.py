"""The repository carries its own reference: no pointer into documents it does not contain, and
every pointer into docs/ names a file and a heading that exist."""

from __future__ import annotations

import re
import subprocess

from conftest import REPO

# Spelled in two parts, so that this file does not match itself.
OUTSIDE = [name + " \N{SECTION SIGN}" for name in ("SPEC", "ARCHITECTURE")]
POINTER = re.compile(r"docs/([\w-]+\.md)#([\w-]+)")


def tracked_files() -> list[str]:
    """The repository's files (tracked or new, not ignored), outside docs/."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    return [f for f in out.splitlines() if not f.startswith("docs/") and (REPO / f).is_file()]


def text_of(name: str) -> str:
    try:
        return (REPO / name).read_text(encoding="utf-8")
    except UnicodeDecodeError:  # a binary file cites nothing
        return ""


def anchors(doc: str) -> set[str]:
    """GitHub's anchors of a markdown file's headings: lower case, punctuation dropped, spaces as -."""
    headings = re.findall(r"^#+\s+(.+?)\s*$", (REPO / "docs" / doc).read_text(encoding="utf-8"), re.M)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def test_no_reference_to_documents_outside_the_repository():
    found = [f"{name}:{n}: {line.strip()}" for name in tracked_files()
             for n, line in enumerate(text_of(name).splitlines(), 1) if any(ref in line for ref in OUTSIDE)]
    assert found == [], "cite docs/ instead:\n" + "\n".join(found)


def test_every_pointer_into_docs_leads_to_a_heading():
    cited = {(doc, anchor, name) for name in tracked_files() for doc, anchor in POINTER.findall(text_of(name))}
    assert len({name for _, _, name in cited}) >= 10, "the walk must see the code's pointers"
    broken = sorted(f"{name}: docs/{doc}#{anchor}" for doc, anchor, name in cited
                    if not (REPO / "docs" / doc).is_file() or anchor not in anchors(doc))
    assert broken == [], broken
