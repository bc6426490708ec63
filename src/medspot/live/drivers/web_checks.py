"""The `web.*` check kinds: what a web page shows (any web environment's `WebSession`).

Each kind reads a small state from the page (`read_*`, through the `WebSession`) and judges it
with a pure function. Patterns may embed catalogue names as templates (`{study:CT-DOE-JOHN}`),
replaced by the environment's own IDs (`PageState.names`: Orthanc IDs in orthanc-explorer,
DICOM UIDs in ohif) before the search.

    {"kind": "web.url_matches", "pattern": "#study\\?uuid={study:CT-DOE-JOHN}$"}
    {"kind": "web.element_visible", "target": {"text": "Cancel"}, "value": false}
    {"kind": "web.rows", "rows": {"css": "#all-patients li"}, "exactly": ["DOE^JOHN", "DOE^JOAN"]}
    {"kind": "web.download", "file": "zip", "study": "CT-DOE-JOHN"}
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from medspot.live.core import checks
from medspot.live.core.tasks import Locator, StartSpec
from medspot.live.drivers.web import WebSession
from medspot.live.services.names import (
    NameTable,
    SeededInstance,
    SeededPatient,
    SeededPattern,
    SeededSeries,
    SeededStudy,
    pattern_is_vacuous,
    resolve_templates,
)

__all__ = [
    "PAGE_KINDS",
    "DownloadState",
    "PageState",
    "read_downloads",
    "read_page",
    "read_rows",
    "web_readers",
]

# the displayed (not necessarily in-viewport) elements a rows locator names, their texts
ROWS_JS = """(loc) => {
  const norm = (s) => (s || '').replace(/\\s+/g, ' ').trim();
  let els;
  if (loc.css) els = Array.from(document.querySelectorAll(loc.css));
  else if (loc.data_cy) els = Array.from(document.querySelectorAll('[data-cy]'))
    .filter((e) => e.getAttribute('data-cy') === loc.data_cy);
  else els = Array.from(document.getElementsByTagName(loc.role));
  if (loc.role) els = els.filter((e) => e.tagName.toLowerCase() === loc.role.toLowerCase());
  const shown = (el) => {
    if (!el.getClientRects().length) return false;
    const st = getComputedStyle(el);
    return st.visibility !== 'hidden' && Number(st.opacity) !== 0;
  };
  return els.filter(shown).map((el) => norm(el.innerText))
    .filter((t) => loc.contains === undefined || t.includes(norm(loc.contains)));
}"""


@dataclass(frozen=True)
class PageState:
    url: str
    title: str
    names: NameTable  # level -> catalogue name -> the ID the page's URLs use


@dataclass(frozen=True)
class DownloadState:
    downloads: tuple[tuple[str, str, bool], ...]  # (url, kind, complete: saved and readable)
    names: NameTable


# -- readers (the page) -------------------------------------------------------------------------


def read_page(web: WebSession, names: NameTable) -> PageState:
    url = web.page.url if web.page is not None else ""
    return PageState(url=url, title=str(web.eval("document.title") or ""), names=names)


def read_rows(web: WebSession, rows: Locator) -> tuple[str, ...]:
    got = web.eval(ROWS_JS, rows.model_dump(exclude_defaults=True, exclude_none=True))
    return tuple(str(t) for t in got or ())


def _zip_ok(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as z:
            return bool(z.namelist()) and z.testzip() is None
    except (zipfile.BadZipFile, OSError):
        return False


def read_downloads(web: WebSession, names: NameTable) -> DownloadState:
    out = []
    for d in web.downloads:
        ok = d.path is not None and (d.kind != "zip" or _zip_ok(d.path))
        out.append((d.url, d.kind, ok))
    return DownloadState(tuple(out), names)


def web_readers(web: WebSession, names: NameTable) -> dict[str, Any]:
    """The readers of the page kinds (`PAGE_KINDS`) over one session."""
    return {
        "page": lambda p: read_page(web, names),
        "element": lambda p: web.locate(p.target) is not None,
        "rows": lambda p: read_rows(web, p.rows),
        "downloads": lambda p: read_downloads(web, names),
    }


# -- parameters and judges ----------------------------------------------------------------------


class PatternParams(checks.CheckParams):
    pattern: SeededPattern

    def vacuous(self) -> str | None:
        return "the pattern matches any text" if pattern_is_vacuous(self.pattern) else None


def _url(p: PatternParams, s: PageState) -> bool:
    return re.search(resolve_templates(p.pattern, s.names, regex=True), s.url) is not None


def _title(p: checks.RegexParams, s: PageState) -> bool:
    return re.search(p.pattern, s.title) is not None


class ElementParams(checks.CheckParams):
    """`target` (a locator) is visible and hit-testable; `value: false`: it is not."""

    target: Locator
    value: bool = True


def _element(p: ElementParams, found: bool) -> bool:
    return found == p.value


class RowsParams(checks.CheckParams):
    """The displayed elements `rows` names (`css`, `data_cy` or `role`, optionally
    `contains`) are exactly `exactly`: one row per entry, nothing else; `[]` is "no row"."""

    rows: Locator
    exactly: list[str] = Field(max_length=200)
    match: checks.RowMatch = "contains"
    ordered: bool = False

    @model_validator(mode="after")
    def _rows_locator(self) -> RowsParams:
        keys = self.rows.keys()
        if not keys & {"css", "data_cy", "role"}:
            raise ValueError("rows: needs 'css', 'data_cy' or 'role'")
        extra = keys - {"css", "data_cy", "role", "contains"}
        if extra:
            raise ValueError(f"rows: {', '.join(sorted(extra))} not allowed (every row counts)")
        return self


def _rows(p: RowsParams, texts: tuple[str, ...]) -> bool:
    return checks.rows_match(texts, p.exactly, p.match, p.ordered)


class DownloadParams(checks.CheckParams):
    """A finished download of type `file` (a ZIP must open) whose URL is the named
    resource's."""

    file: Literal["zip", "dicom", "json", "any"] = "any"
    patient: SeededPatient | None = None
    study: SeededStudy | None = None
    series: SeededSeries | None = None
    instance: SeededInstance | None = None

    def needs_change(self, start: StartSpec) -> str | None:
        return None if start.prepare else "a reset forgets every download: one is made first"


_LEVEL_PATHS = (("patient", "patients"), ("study", "studies"), ("series", "series"),
                ("instance", "instances"))  # fmt: skip


def _download(p: DownloadParams, s: DownloadState) -> bool:
    parts = [
        f"/{path}/{s.names[level][name]}/"
        for level, path in _LEVEL_PATHS
        if (name := getattr(p, level)) is not None
    ]
    for url, kind, ok in s.downloads:
        if ok and (p.file == "any" or kind == p.file) and all(part in url for part in parts):
            return True
    return False


PAGE_KINDS = checks.CheckKinds(
    checks.CheckKind("web.url_matches", PatternParams, "page", _url,
                     "a regex (templates allowed) searched in the page URL"),
    checks.CheckKind("web.title_matches", checks.RegexParams, "page", _title,
                     "a regex searched in the page title"),
    checks.CheckKind("web.element_visible", ElementParams, "element", _element,
                     "a located element is visible (value false: it is not)"),
    checks.CheckKind("web.rows", RowsParams, "rows", _rows,
                     "the displayed rows of a list are exactly these"),
    checks.CheckKind("web.download", DownloadParams, "downloads", _download,
                     "a finished download of the named resource"),
)  # fmt: skip
