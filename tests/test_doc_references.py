"""Every reference to a section of the docs, `docs/PAGE.md "Section"` (in README.md, the docs,
the sources' docstrings, comments, errors and help texts, the benchmarks and the tests), names a
page that exists and a section that page has: a heading, or a paragraph's bold lead
(`**Pipelined starts (spares).**`), starting with the quoted words. Pages move (docs/live.md
became the entry page of docs/live/); a message sending a reader to a section that is elsewhere
now is a wrong message."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# a page, then one quoted section or several ("Tools", "MCP"), a line break and comment marks
# allowed between the words
_REF = re.compile(r"""(docs/[\w./-]+\.md)`?(?:'s)?\s+\(?((?:"[^"]+"(?:,\s*)?)+)""")
_QUOTED = re.compile(r'"([^"]+)"')
# pages of other projects' documentation, named by their own path
OTHERS = {"docs/hub/eval-results.md": "the Hugging Face Hub's documentation"}


def _sources() -> list[Path]:
    files = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    files += [REPO / "benchmarks" / "README.md", *sorted((REPO / "benchmarks").glob("*.py"))]
    files += sorted((REPO / "src").rglob("*.py")) + sorted((REPO / "tests").rglob("*.py"))
    return [f for f in files if f.is_file()]


def _flat(text: str) -> str:
    """The text with its line breaks, comment marks and indentation as single spaces."""
    return re.sub(r"\s*\n\s*(?:#\s*)?", " ", text)


def _sections(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    heads = re.findall(r"^#{1,6}\s+(.*?)\s*$", text, re.M)
    leads = re.findall(r"\*\*([^*]+?)\*\*", _flat(text))
    return [*heads, *leads]


def references(text: str) -> list[tuple[str, str]]:
    """(page, section) for every `docs/PAGE.md "Section"` of a text."""
    out: list[tuple[str, str]] = []
    for m in _REF.finditer(_flat(text)):
        out += [(m.group(1), name) for name in _QUOTED.findall(m.group(2))]
    return out


def test_references_are_read() -> None:
    text = 'see docs/live/running.md "Pipelined\n# starts", docs/live/agents.md "Tools", "MCP"'
    assert references(text) == [
        ("docs/live/running.md", "Pipelined starts"),
        ("docs/live/agents.md", "Tools"),
        ("docs/live/agents.md", "MCP"),
    ]
    assert references('docs/live/tasks.md\'s "Check kinds" table') == [
        ("docs/live/tasks.md", "Check kinds")
    ]


def test_every_section_named_is_on_the_page_named() -> None:
    this = Path(__file__).resolve()
    wrong = []
    for f in _sources():
        if f == this:
            continue
        for page, name in references(f.read_text(encoding="utf-8")):
            if page in OTHERS:
                continue
            target = REPO / page
            where = f"{f.relative_to(REPO)}: {page} {name!r}"
            if not target.is_file():
                wrong.append(f"{where}: no such page")
            elif not any(s.startswith(name) for s in _sections(target)):
                wrong.append(f"{where}: no such section there")
    assert wrong == []
