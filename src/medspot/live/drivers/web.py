"""A Playwright browser session on Debian's chromium, shared by the web environments.

One `WebSession` is one chromium (never a downloaded browser: `executable_path`) with one
context and its active page, used from ONE thread (Playwright's sync API; the driver is shared
per thread). It executes `LiveAction`s in screenshot pixels and waits until *settled*: no
request in flight and no DOM mutation for `quiet_s` (a MutationObserver plus request counting;
hash navigation has no idle event). It finds elements for locators (visible, in the viewport,
and really hit by `document.elementFromPoint` at their centre: jQuery Mobile keeps old pages
hidden in the DOM and nests clickable elements with duplicate boxes), records downloads, and
follows pages the application opens (`window.open`). A crashed page or browser, or an action
that never settles, raises `EnvironmentFault`.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medspot.live.core.actions import (
    WHEEL_NOTCH_PX,
    Click,
    Done,
    Drag,
    Key,
    LiveAction,
    Scroll,
    TypeText,
)
from medspot.live.core.contract import (
    ActResult,
    ElementInfo,
    EnvironmentFault,
    Observation,
    PixelBox,
)
from medspot.live.core.tasks import Locator

__all__ = ["DEFAULT_ARGS", "DownloadRecord", "WebSession", "playwright_key"]

log = logging.getLogger(__name__)
DEFAULT_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-features=Translate,MediaRouter",
    "--hide-scrollbars",
)
_JS_DIR = Path(__file__).with_name("web_js")
_INIT_JS = (_JS_DIR / "init.js").read_text(encoding="utf-8")
_LOCATE_JS = (_JS_DIR / "locate.js").read_text(encoding="utf-8")
_ELEMENT_AT_JS = (_JS_DIR / "element_at.js").read_text(encoding="utf-8")
_KEYS = {
    "ctrl": "Control", "control": "Control", "alt": "Alt", "shift": "Shift", "meta": "Meta",
    "cmd": "Meta", "super": "Meta", "enter": "Enter", "return": "Enter", "esc": "Escape",
    "escape": "Escape", "tab": "Tab", "backspace": "Backspace", "delete": "Delete",
    "del": "Delete", "space": "Space", "up": "ArrowUp", "down": "ArrowDown",
    "left": "ArrowLeft", "right": "ArrowRight", "pageup": "PageUp", "pagedown": "PageDown",
    "home": "Home", "end": "End", "insert": "Insert",
}  # fmt: skip


def playwright_key(key: str) -> str:
    """Key names as Playwright wants them: ctrl+a -> Control+a, enter -> Enter, f5 -> F5."""
    parts = []
    for part in key.split("+") if key != "+" else ["+"]:
        low = part.strip().lower()
        if low in _KEYS:
            parts.append(_KEYS[low])
        elif re.fullmatch(r"f\d{1,2}", low):
            parts.append(low.upper())
        elif re.fullmatch(r"arrow(up|down|left|right)", low):
            parts.append("Arrow" + low[5:].capitalize())
        else:
            parts.append(part.strip() or part)
    return "+".join(parts)


@dataclass(frozen=True, slots=True)
class DownloadRecord:
    """A download the page triggered: where from, the file name offered, the saved copy."""

    url: str
    filename: str
    path: Path | None  # None when the download failed
    size: int
    kind: str  # "zip" | "dicom" | "json" | "other" (from the bytes)


def _sniff(path: Path) -> str:
    with path.open("rb") as f:
        head = f.read(132)
    if head.startswith(b"PK"):
        return "zip"
    if head[128:132] == b"DICM":
        return "dicom"
    if head.lstrip()[:1] in (b"{", b"["):
        return "json"
    return "other"


class _Driver:
    """One Playwright driver per thread (the sync API allows only one per thread)."""

    local = threading.local()

    @classmethod
    def acquire(cls) -> Any:
        if getattr(cls.local, "count", 0) == 0:
            try:
                from playwright.sync_api import sync_playwright
            except ImportError:
                raise EnvironmentFault(
                    "the playwright client is missing: pip install 'medspot[live]'"
                ) from None
            cls.local.pw = sync_playwright().start()
            cls.local.count = 0
        cls.local.count += 1
        return cls.local.pw

    @classmethod
    def release(cls) -> None:
        cls.local.count -= 1
        if cls.local.count == 0:
            pw, cls.local.pw = cls.local.pw, None
            try:
                pw.stop()
            except Exception as exc:  # the driver already went away
                log.debug("playwright stop: %s", exc)


class WebSession:
    """Chromium + one context; `page` is the active page (the newest one the app opened)."""

    def __init__(
        self,
        workdir: Path,
        chromium: str = "/usr/bin/chromium",
        headless: bool = True,
        extra_args: tuple[str, ...] = (),
        viewport: tuple[int, int] = (1280, 800),
        quiet_s: float = 0.25,
        settle_timeout_s: float = 15.0,
        ignore_requests: str | None = None,
        ready_js: str | None = None,
        change_grace_s: float = 0.6,
    ) -> None:
        self.workdir = Path(workdir)
        self.chromium, self.headless = chromium, headless
        self.args = (*DEFAULT_ARGS, *extra_args)
        self.viewport = viewport
        self.quiet_s, self.settle_timeout_s = quiet_s, settle_timeout_s
        self.ignore = re.compile(ignore_requests) if ignore_requests else None
        # `ready_js`: a JS function source, true when the app itself is idle (e.g. no page
        # transition running); `change_grace_s`: how long an action that changed nothing yet
        # is given to start changing something (a starved CPU delays the page's handlers).
        ready = f"(({ready_js})())" if ready_js else "true"
        self._probe_js = (
            "() => window.__medspot ? [__medspot.idleMs(), "
            f"!!{ready}, __medspot.mutations, location.href] : [0, false, 0, '']"
        )
        self.change_grace_s = change_grace_s
        self.downloads: list[DownloadRecord] = []
        self._pending: list[Any] = []
        self._known: list[Any] = []  # pages whose events are wired
        self._inflight: set[Any] = set()
        self._last_net = 0.0
        self._fault: str | None = None
        self._pw: Any = None
        self.browser: Any = None
        self.context: Any = None
        self.page: Any = None

    # -- life cycle -----------------------------------------------------------------------------

    def start(self) -> None:
        self._pw = _Driver.acquire()
        try:
            self.browser = self._pw.chromium.launch(
                executable_path=self.chromium, headless=self.headless, args=list(self.args)
            )
        except Exception as exc:
            self.close()
            raise EnvironmentFault(f"chromium did not start ({self.chromium}): {exc}") from None
        self.browser.on("disconnected", lambda _b: self._set_fault("the browser went away"))
        self.new_context()

    def new_context(self) -> None:
        """A fresh context (no history, storage or downloads) with one blank page."""
        if self.context is not None:
            self.guard(self.context.close)
        self._inflight.clear()
        self._known.clear()
        self.downloads.clear()
        self._pending.clear()
        w, h = self.viewport
        self.context = self.guard(
            self.browser.new_context,
            viewport={"width": w, "height": h},
            accept_downloads=True,
            device_scale_factor=1,
        )
        self.context.add_init_script(_INIT_JS)
        self.context.on("page", self._on_page)
        self._on_page(self.guard(self.context.new_page))

    def fresh_page(self, url: str) -> float:
        """Start over at `url` cheaply: the context is kept (a new one costs ~0.1-0.7 s), every
        page but one is closed, cookies, storage, downloads and history are dropped, and the page
        is loaded from scratch (through about:blank, so a hash-only change is a real load)."""
        if self.context is None or self.page is None or self._fault:
            self.new_context()
        pages = [p for p in self.context.pages if not p.is_closed()]
        keep = pages[0] if pages else self.guard(self.context.new_page)
        for p in pages[1:]:
            self.guard(p.close)
        self.page = keep
        self.guard(self.context.clear_cookies)
        if keep.url.startswith("http"):
            self.guard(keep.evaluate, "() => { try { localStorage.clear(); "
                        "sessionStorage.clear(); } catch (e) {} }")  # fmt: skip
        self.guard(keep.goto, "about:blank")
        self._inflight.clear()
        self.downloads.clear()
        self._pending.clear()
        self.set_viewport(self.viewport)
        return self.goto(url)

    def _on_page(self, page: Any) -> None:
        self.page = page
        if page in self._known:
            return
        self._known.append(page)
        page.on("crash", lambda _p: self._set_fault("the page crashed"))
        page.on("request", self._on_request)
        page.on("requestfinished", self._on_request_done)
        page.on("requestfailed", self._on_request_done)
        page.on("download", lambda d: self._pending.append(d))
        page.on("close", self._on_close)
        page.on("dialog", lambda d: d.accept())  # native alert/confirm: not part of any task

    def _on_close(self, page: Any) -> None:
        if page is self.page:
            alive = [p for p in self.context.pages if not p.is_closed()] if self.context else []
            self.page = alive[-1] if alive else None

    def _on_request(self, req: Any) -> None:
        if self.ignore is None or not self.ignore.search(req.url):
            self._inflight.add(req)
            self._last_net = time.monotonic()

    def _on_request_done(self, req: Any) -> None:
        self._inflight.discard(req)
        self._last_net = time.monotonic()

    def _set_fault(self, why: str) -> None:
        self._fault = self._fault or why

    def guard(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Call Playwright; its errors (closed page, crashed browser) become faults."""
        if self._fault:
            raise EnvironmentFault(f"web session: {self._fault}")
        try:
            return fn(*args, **kwargs)
        except EnvironmentFault:
            raise
        except Exception as exc:
            raise EnvironmentFault(f"web session: {type(exc).__name__}: {exc}") from None

    def close(self) -> None:
        for obj in (self.context, self.browser):
            if obj is not None:
                try:
                    obj.close()
                except Exception as exc:
                    log.debug("close: %s", exc)
        self.context = self.browser = self.page = None
        if self._pw is not None:
            self._pw = None
            _Driver.release()

    # -- navigation and settling --------------------------------------------------------------

    def set_viewport(self, size: tuple[int, int]) -> None:
        self.viewport = size
        self.guard(self.page.set_viewport_size, {"width": size[0], "height": size[1]})

    def goto(self, url: str) -> float:
        if self.page is None:
            raise EnvironmentFault("web session: no page is open")
        self.guard(self.page.goto, url, wait_until="load", timeout=self.settle_timeout_s * 1000)
        return self.settle()

    def settle(
        self, timeout_s: float | None = None, baseline: tuple[int, str] | None = None
    ) -> float:
        """Wait until no request is in flight, the DOM is quiet for `quiet_s` and the app says
        it is ready. `baseline` (mutation count, URL before an action): while nothing has
        changed since, wait at least `change_grace_s`."""
        t0 = time.monotonic()
        limit = t0 + (timeout_s or self.settle_timeout_s)
        quiet_ms = self.quiet_s * 1000
        net_at_start = self._last_net
        while True:
            if self.page is None:
                raise EnvironmentFault("web session: every page was closed")
            self.guard(self.page.wait_for_timeout, 40)  # lets Playwright deliver events
            idle, ready, mutations, url = self._probe()
            now = time.monotonic()
            net_quiet = not self._inflight and (now - self._last_net) * 1000 >= quiet_ms
            # quiet for `quiet_s` counted from the action too: effects may start late (timers)
            quiet = net_quiet and idle >= quiet_ms and (now - t0) * 1000 >= quiet_ms
            unchanged = baseline is not None and (mutations, url) == baseline
            if unchanged and self._last_net == net_at_start and now - t0 < self.change_grace_s:
                quiet = False
            if quiet and ready:
                break
            if now > limit:
                raise EnvironmentFault(
                    f"web page did not settle within {timeout_s or self.settle_timeout_s:.0f} s "
                    f"(app ready: {ready}; {len(self._inflight)} request(s) in flight: "
                    f"{[r.url for r in list(self._inflight)[:3]]})"
                )
        self._collect_downloads()
        return time.monotonic() - t0

    def _probe(self) -> tuple[float, bool, int, str]:
        """(ms since the last DOM mutation, app ready, mutation count, URL); while the page
        is navigating (its context destroyed) it counts as busy."""
        try:
            idle, ready, mutations, url = self.page.evaluate(self._probe_js)
            return float(idle), bool(ready), int(mutations), str(url)
        except Exception as exc:  # navigation destroyed the context, or the page closed
            if self._fault or self.page is None:
                raise EnvironmentFault(f"web session: {self._fault or exc}") from None
            return 0.0, False, -1, ""

    def _collect_downloads(self) -> None:
        while self._pending:
            d = self._pending.pop(0)
            target = (
                self.workdir / "downloads" / f"{len(self.downloads):03d}-{d.suggested_filename}"
            )
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                d.save_as(target)
                rec = DownloadRecord(
                    d.url, d.suggested_filename, target, target.stat().st_size, _sniff(target)
                )
            except Exception as exc:
                log.info("download %s failed: %s", d.url, exc)
                rec = DownloadRecord(d.url, d.suggested_filename, None, 0, "other")
            self.downloads.append(rec)

    # -- observation ----------------------------------------------------------------------------

    def observe(self) -> Observation:
        if self.page is None or self._fault:
            raise EnvironmentFault(f"web session: {self._fault or 'every page was closed'}")
        png = self.guard(self.page.screenshot, type="png", timeout=15000)
        title = self.guard(self.page.title)
        w, h = self.viewport
        return Observation(png=png, width=w, height=h, url=self.page.url, title=title)

    def locate(self, locator: Locator) -> PixelBox | None:
        spec = locator.model_dump(exclude_defaults=True)
        spec.setdefault("nth", 0)
        box = self.guard(self.page.evaluate, _LOCATE_JS, spec)
        if box is None:
            return None
        b = PixelBox(box[0], box[1], box[2], box[3])
        if locator.at is not None:
            fx, fy = locator.at
            x, y = b.x1 + fx * (b.x2 - b.x1), b.y1 + fy * (b.y2 - b.y1)
            return PixelBox(x, y, x + 1, y + 1)
        return b

    def element_at(self, x: float, y: float) -> ElementInfo | None:
        got = self.guard(self.page.evaluate, _ELEMENT_AT_JS, [x, y])
        if got is None:
            return None
        return ElementInfo(got["key"], got["role"], got["name"], PixelBox(*got["box"]))

    def eval(self, script: str, arg: Any = None) -> Any:
        return self.guard(self.page.evaluate, script, arg)

    # -- actions ------------------------------------------------------------------------------

    def act(self, action: LiveAction) -> ActResult:
        if isinstance(action, Done):
            return ActResult(settle_s=0.0, changed=False)
        if self.page is None or self._fault:
            raise EnvironmentFault(f"web session: {self._fault or 'every page was closed'}")
        m, kb = self.page.mouse, self.page.keyboard
        if isinstance(action, Click | Scroll):  # hover effects are not the action's effects
            self.guard(m.move, action.x, action.y)
        before = self._signature()
        match action:
            case Click(x, y, button, double):
                if double:
                    self.guard(m.dblclick, x, y, button=button)
                else:
                    self.guard(m.click, x, y, button=button)
            case Drag(x1, y1, x2, y2):
                self.guard(m.move, x1, y1)
                self.guard(m.down)
                for k in range(1, 9):
                    f = k / 8
                    self.guard(m.move, x1 + f * (x2 - x1), y1 + f * (y2 - y1))
                    self.guard(self.page.wait_for_timeout, 15)
                self.guard(m.up)
            case Scroll(x, y, dy):
                self.guard(m.move, x, y)
                for _ in range(abs(dy)):
                    self.guard(m.wheel, 0, WHEEL_NOTCH_PX if dy > 0 else -WHEEL_NOTCH_PX)
                    self.guard(self.page.wait_for_timeout, 30)
            case TypeText(text):
                self.guard(kb.type, text, delay=10)
            case Key(key):
                self.guard(kb.press, playwright_key(key))
        settle = self.settle(baseline=(before[0], before[1]))
        return ActResult(settle_s=settle, changed=self._signature() != before)

    def _signature(self) -> tuple[Any, ...]:
        """DOM mutation count, URL, page count, downloads: what `changed` compares."""
        if self.page is None or self._fault:
            raise EnvironmentFault(f"web session: {self._fault or 'every page was closed'}")
        n, url = self.guard(
            self.page.evaluate, "() => [window.__medspot ? __medspot.mutations : 0, location.href]"
        )
        return (n, url, len(self.context.pages), len(self.downloads))
