"""The report in headless Chromium (Debian's `chromium`, driven by Playwright without its
downloaded browsers): it renders from disk, the filters change what is shown, no console
error, no request outside the report folder, and data text stays text."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _report_runs import PLAN_A, PLAN_B, make_run, write_dataset
from medspot.report.build import build_report

pytestmark = pytest.mark.browser

CHROMIUM = (
    os.environ.get("MEDSPOT_CHROMIUM")
    or shutil.which("chromium")
    or shutil.which("chromium-browser")
)
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if CHROMIUM is None:
        if os.environ.get("MEDSPOT_REQUIRE_BROWSER"):
            pytest.fail("MEDSPOT_REQUIRE_BROWSER is set but chromium is not installed")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


class Page:
    """A page with every console message, page error and request recorded."""

    def __init__(self, browser: Any, folder: Path) -> None:
        self.folder = folder
        self.page = browser.new_page()
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("dialog", self._dismiss)

    def _dismiss(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def open(self, name: str) -> Any:
        self.page.goto((self.folder / name).as_uri())
        self.page.wait_for_load_state("load")
        return self.page

    def visible_tasks(self) -> list[str]:
        ids: list[str] = self.page.eval_on_selector_all(
            ".task", "els => els.filter(e => e.offsetParent !== null).map(e => e.id)"
        )
        return ids

    def check_clean(self) -> None:
        assert self.errors == []
        prefix = self.folder.resolve().as_uri() + "/"
        outside = [u for u in self.requests if not u.startswith(prefix)]
        assert outside == []
        assert self.dialogs == []


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("site")
    root = write_dataset(
        d / "data",
        instruction_override="<script>window.__pwned = 1; alert(1)</script>Open it",
        overview_override='<img src="http://example.invalid/x.png" onerror="alert(2)">',
    )
    a = make_run(
        d / "a", root, PLAN_A, model="model-a", raw={"Alpha/0/1": "</pre><script>alert(3)</script>"}
    )
    b = make_run(d / "b", root, PLAN_B, model="model-b")
    out = d / "report"
    build_report([a, b], out, n_boot=100)
    return out


def test_summary_renders(browser: Any, site: Path) -> None:
    p = Page(browser, site)
    page = p.open("index.html")
    assert page.title() == "MedSPOT report"
    assert page.locator("#metrics tbody tr").count() >= 7
    assert "60.0" in page.inner_text("#metrics")
    # every plot image decoded
    widths = page.eval_on_selector_all(".plots img", "els => els.map(e => e.naturalWidth)")
    assert len(widths) == 4 and all(w > 0 for w in widths)
    # the stylesheet applied (not blocked by the page's Content-Security-Policy)
    bg = page.eval_on_selector("header.top", "e => getComputedStyle(e).backgroundColor")
    assert bg == "rgb(36, 41, 47)"
    p.check_clean()


def test_filters_change_what_is_shown(browser: Any, site: Path) -> None:
    p = Page(browser, site)
    page = p.open("tasks-1.html")
    every = ["Alpha/0", "Alpha/1", "Alpha/2", "Beta/0", "Beta/1"]
    assert p.visible_tasks() == every
    assert page.inner_text("#shown-count") == "5 of 5 tasks shown"
    page.select_option("#f-app", "Beta")
    assert p.visible_tasks() == ["Beta/0", "Beta/1"]
    page.select_option("#f-outcome", "failed")
    assert p.visible_tasks() == ["Beta/1"]
    assert page.inner_text("#shown-count") == "1 of 5 tasks shown"
    page.select_option("#f-app", "")
    page.select_option("#f-outcome", "")
    page.select_option("#f-failure", "far_miss")
    assert p.visible_tasks() == ["Alpha/2", "Beta/1"]
    # thumbnails decoded, and the raw answer opens on demand
    loaded = page.eval_on_selector_all(
        "#Alpha\\/0 img", "els => els.map(e => e.complete && e.naturalWidth)"
    )
    assert loaded == [480, 480]
    p.check_clean()


def test_escaped_text_stays_text(browser: Any, site: Path) -> None:
    p = Page(browser, site)
    page = p.open("tasks-1.html")
    sec = page.locator("#Alpha\\/0")
    assert "<script>window.__pwned = 1; alert(1)</script>Open it" in sec.inner_text()
    assert '<img src="http://example.invalid/x.png"' in sec.inner_text()
    page.locator("#Alpha\\/0 details summary").first.click()
    assert page.locator("#Alpha\\/0 pre.raw").first.inner_text() == (
        "</pre><script>alert(3)</script>"
    )
    assert page.evaluate("window.__pwned === undefined")
    p.check_clean()


def test_comparison_view(browser: Any, site: Path) -> None:
    p = Page(browser, site)
    page = p.open("compare-1-2.html")
    assert p.visible_tasks() == ["Alpha/0", "Beta/0", "Alpha/2"]
    page.select_option("#f-flip", "B_only")
    assert p.visible_tasks() == ["Alpha/2"]
    assert "McNemar" in page.inner_text("main")
    p.check_clean()


def test_report_without_screenshots(browser: Any, tmp_path: Path) -> None:
    root = write_dataset(tmp_path / "data", images=False)
    run = make_run(tmp_path / "run", root, PLAN_A)
    build_report([run], tmp_path / "r", plots=False)
    p = Page(browser, tmp_path / "r")
    page = p.open("tasks-1.html")
    assert page.locator("figure.step").count() == 9
    assert page.locator("img").count() == 0
    p.open("index.html")
    p.check_clean()
