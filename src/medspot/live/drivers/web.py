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

No Playwright call waits unboundedly: a page whose script never yields blocks `evaluate` for
good, so every call runs under a watchdog (`call_limit_s`, or the call's own `timeout` plus a
margin); when it expires the browser is SIGKILLed, the call fails, and the fault names the call.
Chromium is started with the marker of `medspot.live.core.processes` and its main process
recorded in the workdir. Playwright's node driver is shared by the sessions of a thread: a
session records it in a record of its own (`DRIVER_RECORD_DIR`) that its `close()` removes, so
a folder's cleanup after a normal close never ends another session's driver, while one that
finds the session still open (a run stopped while the session's thread is blocked in a call)
kills the driver too, and the blocked call fails at once. A driver can hang with a call in
flight (seen: `new_page` under load, never answered even after chromium died), so when the
watchdog's SIGKILL of the browser has not ended the call within `DRIVER_GRACE_S`, the driver is
killed as well. After a SIGKILL of the run the driver ends when its pipe closes, and takes
chromium with it (measured: within a second).

A session may instead drive a page someone else opened (`attach(page)` before `start()`:
BrowserGym's environment launches chromium, its context and page with its own Playwright): it
starts no browser and no driver, adds its init scripts to that page's context and wires the
page's events as for its own, replaces no page or context (`new_page`/`new_context` only clear
the page's storage, cookies and downloads), and leaves the page, context and browser to their
owner at `close()`. Its watchdog still fails a call that does not return, but kills nothing (the
browser is not the session's). Such an owner may emulate the viewport from a CDP session of its
own that it then detaches (BrowserGym's screenshots do, at every observation): chromium 156 then
drops every device-metrics override, Playwright's too, and the page lays out at its window's
own size (780x493 in headless chromium by default). So an attached session also sizes the window
(`Browser.setWindowBounds`) until the page's own size is the viewport (`fit_window`), and its
owner's observations change nothing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medspot.live.core import actions, processes
from medspot.live.core.contract import (
    ActResult,
    ElementInfo,
    EnvironmentFault,
    Observation,
    PixelBox,
)
from medspot.live.core.keys import PLAYWRIGHT_KEYS, KeyTable, PlaywrightKeys, playwright_key
from medspot.live.core.tasks import Locator

__all__ = [
    "DEFAULT_ARGS",
    "KEY_TABLE",
    "PLAYWRIGHT_KEYS",
    "DownloadRecord",
    "WebSession",
    "playwright_key",
]

log = logging.getLogger(__name__)
# the longest wait between two wheel notches for the app to be ready (`WebSession._until_ready`);
# past it the next notch is sent anyway (the settle after the action has the last word)
NOTCH_READY_S = 5.0
# a call still blocked this long after the watchdog killed the browser: the driver is killed too
DRIVER_GRACE_S = 5.0
# below a session's folder: the record of its thread's Playwright driver, while it is open
DRIVER_RECORD_DIR = "playwright-driver"
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
# an attached session's window resizes (`WebSession.fit_window`) before it gives up
FIT_WINDOW_TRIES = 3
_INNER_SIZE_JS = "() => [window.innerWidth, window.innerHeight]"
# the keys `act` can press: Playwright's table, for the action's key names (`core.keys`)
KEY_TABLE: KeyTable = PlaywrightKeys()


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


def _leads_group(pid: int) -> bool:
    try:
        return os.getpgid(pid) == pid
    except OSError:
        return False


class Watchdog:
    """Runs `expire(what)` once when an armed call has not been disarmed within its limit (one
    daemon thread per watchdog)."""

    def __init__(self, expire: Callable[[str], None]) -> None:
        self._expire = expire
        self._cond = threading.Condition()
        self._deadline: float | None = None
        self._what = ""
        self._closed = False
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, what: str) -> None:
        with self._cond:
            if self._thread is None:
                self._closed = False
                self._thread = threading.Thread(
                    target=self._loop, name="medspot-web-watchdog", daemon=True
                )
                self._thread.start()
            self._deadline, self._what = time.monotonic() + seconds, what
            self._cond.notify()

    def disarm(self) -> None:
        with self._cond:
            self._deadline = None

    def close(self) -> None:
        with self._cond:
            self._closed, self._deadline, self._thread = True, None, None
            self._cond.notify()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed and (
                    self._deadline is None or time.monotonic() < self._deadline
                ):
                    left = None if self._deadline is None else self._deadline - time.monotonic()
                    self._cond.wait(left)
                if self._closed:
                    return
                what, self._deadline = self._what, None
            self._expire(what)


class _DriverGoneFilter(logging.Filter):
    """asyncio's "Future exception was never retrieved" for a driver whose pipe closed (it was
    killed: by a folder's cleanup, the watchdog or a Ctrl-C to the process group) is a DEBUG
    record, kept only where DEBUG is logged: the call it ended already failed as an
    environment fault that says why."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR and _DRIVER_GONE in str(record.msg):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        return True


_DRIVER_GONE = "Connection closed while reading from the driver"
_DRIVER_GONE_FILTER = _DriverGoneFilter()


def _driver_process(manager: Any) -> processes.ProcStamp | None:
    """The node process behind a started `sync_playwright()` (None where this Playwright keeps
    it elsewhere: the driver then is not recorded, and only the browser is killed)."""
    try:
        pid = int(manager._client._transport._proc.pid)
    except (AttributeError, TypeError, ValueError):
        return None
    return processes.stamp(pid)


class _Driver:
    """One Playwright driver per thread (the sync API allows only one per thread)."""

    local = threading.local()

    @classmethod
    def acquire(cls) -> tuple[Any, processes.ProcStamp | None]:
        """This thread's driver (started on first use) and its node process."""
        if getattr(cls.local, "count", 0) == 0:
            try:
                from playwright.sync_api import sync_playwright
            except ImportError:
                raise EnvironmentFault(
                    "the playwright client is missing: pip install 'medspot[live]'"
                ) from None
            logging.getLogger("asyncio").addFilter(_DRIVER_GONE_FILTER)  # once: a set
            manager = sync_playwright()
            cls.local.pw = manager.start()
            cls.local.process = _driver_process(manager)
            cls.local.count = 0
        cls.local.count += 1
        return cls.local.pw, cls.local.process

    @classmethod
    def release(cls) -> None:
        cls.local.count -= 1
        if cls.local.count == 0:
            pw, cls.local.pw, cls.local.process = cls.local.pw, None, None
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
        call_limit_s: float = 60.0,
        init_js: tuple[str, ...] = (),
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
        # the application's own init scripts, run in every frame before the page's scripts
        self.init_js = init_js
        self.call_limit_s = call_limit_s  # a Playwright call without its own timeout
        self._watchdog = Watchdog(self._expired)
        self._driver: processes.ProcStamp | None = None  # this thread's Playwright driver
        self._call_seq = 0  # Playwright calls begun (odd while one is in flight)
        self._browser_pids: list[processes.ProcStamp] = []
        self.downloads: list[DownloadRecord] = []
        self._pending: list[Any] = []
        self._known: list[Any] = []  # pages whose events are wired
        self._inflight: set[Any] = set()
        self._last_net = 0.0
        self._fault: str | None = None
        self._pw: Any = None
        self._attached: Any = None  # a page someone else opened (`attach`), or None
        self.browser: Any = None
        self.context: Any = None
        self.page: Any = None

    # -- life cycle -----------------------------------------------------------------------------

    def attach(self, page: Any) -> None:
        """Drive `page`, opened by someone else, instead of launching chromium at `start()`
        (see the module docstring); before `start()`."""
        if self.page is not None:
            raise EnvironmentFault("web session: attach() before start()")
        self._attached = page

    @property
    def attached(self) -> bool:
        """Whether the session drives a page someone else opened (`attach`)."""
        return self._attached is not None

    def follow(self, page: Any) -> None:
        """`page` (of the session's context) becomes the active page, its events wired when it is
        new: the page an attached session's owner holds as active (it may have switched tabs)."""
        if page is not None and page is not self.page:
            self._on_page(page)

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self._attached is not None:
            self.context = self._attached.context
            self.browser = self.context.browser
            self._add_init_scripts()
            self.context.on("page", self._on_page)
            self._on_page(self._attached)
            return
        self._pw, self._driver = _Driver.acquire()
        if self._driver is not None:
            processes.record(self.workdir / DRIVER_RECORD_DIR, self._driver.pid)
        try:
            self.browser = self._bounded(
                self._pw.chromium.launch,
                executable_path=self.chromium,
                headless=self.headless,
                args=list(self.args),
                env=processes.child_env(None, self.workdir),
                timeout=30000,
            )
        except Exception as exc:
            self.close()
            raise EnvironmentFault(f"chromium did not start ({self.chromium}): {exc}") from None
        self.browser.on("disconnected", lambda _b: self._set_fault("the browser went away"))
        # chromium's main process leads its process group (Playwright starts it detached)
        self._browser_pids = [s for s in processes.marked(self.workdir) if _leads_group(s.pid)]
        for s in self._browser_pids:
            processes.record(self.workdir, s.pid)
        self.new_context()

    @property
    def driver_process(self) -> processes.ProcStamp | None:
        """The node process of this session's Playwright driver (shared by its thread)."""
        return self._driver

    def _expired(self, what: str) -> None:
        """The watchdog's action: the browser is killed, so that the hung call fails."""
        self._set_fault(f"{what} did not return in time; the browser was killed")
        log.warning("web session: %s did not return in time; killing the browser", what)
        self._kill_browser()
        seq = self._call_seq
        timer = threading.Timer(DRIVER_GRACE_S, self._kill_driver_if_blocked, (seq, what))
        timer.daemon = True
        timer.start()

    def _kill_browser(self) -> None:
        for s in self._browser_pids:
            if processes.running(s):
                try:
                    os.killpg(s.pid, signal.SIGKILL)
                except OSError as exc:
                    log.debug("killpg %d: %s", s.pid, exc)

    def _kill_driver_if_blocked(self, seq: int, what: str) -> None:
        """The browser's SIGKILL did not end call `seq`: the driver itself is stuck; killing
        it fails every call in flight on this session's thread."""
        driver = self._driver
        if self._call_seq != seq or driver is None or not processes.running(driver):
            return
        log.warning("web session: %s still blocked %.0f s after the browser was killed; "
                    "killing its Playwright driver", what, DRIVER_GRACE_S)  # fmt: skip
        try:
            os.kill(driver.pid, signal.SIGKILL)
        except OSError as exc:
            log.debug("kill %d: %s", driver.pid, exc)

    def _bounded(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Call `fn` under the watchdog: its own `timeout` (ms) plus a margin, else
        `call_limit_s`."""
        own = kwargs.get("timeout")
        limit = float(own) / 1000 + 10.0 if isinstance(own, int | float) else self.call_limit_s
        self._watchdog.arm(limit, getattr(fn, "__name__", "a browser call"))
        self._call_seq += 1
        try:
            return fn(*args, **kwargs)
        finally:
            self._call_seq += 1
            self._watchdog.disarm()

    def new_context(self) -> None:
        """A fresh context (no history, storage or downloads) with one blank page (attached:
        the page's storage, cookies and downloads cleared)."""
        if self._attached is not None:
            self._clear_attached()
            return
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
        self._add_init_scripts()
        self.context.on("page", self._on_page)
        self._on_page(self.guard(self.context.new_page))

    def _add_init_scripts(self) -> None:
        self.context.add_init_script(_INIT_JS)
        for script in self.init_js:
            self.context.add_init_script(script)

    def new_page(self) -> None:
        """Start over cheaply: the context is kept (a new one costs ~0.1-0.7 s; its HTTP cache
        stays), the storage of the pages' origins and the cookies are cleared, every page is
        closed and a blank one opened (so history and pointer position are those of a fresh
        browser), downloads are forgotten. Attached: the page is kept (its owner holds it; it
        is new at each of its owner's resets), its storage, cookies and downloads cleared."""
        if self._attached is not None:
            self._clear_attached()
            return
        if self.context is None or self.page is None or self._fault:
            self.new_context()
        old = [p for p in self.context.pages if not p.is_closed()]
        for p in old:
            if p.url.startswith("http"):
                self.guard(p.evaluate, "() => { try { localStorage.clear(); "
                           "sessionStorage.clear(); } catch (e) {} }")  # fmt: skip
        self.guard(self.context.clear_cookies)
        self._on_page(self.guard(self.context.new_page))
        for p in old:
            self.guard(p.close)
        self._inflight.clear()
        self.downloads.clear()
        self._pending.clear()
        self.set_viewport(self.viewport)

    def _clear_attached(self) -> None:
        """`new_page` of an attached session: nothing replaced, the state a task must not
        inherit cleared."""
        if self.page is None or self._fault:
            raise EnvironmentFault(f"web session: {self._fault or 'every page was closed'}")
        if self.page.url.startswith("http"):
            self.guard(self.page.evaluate, "() => { try { localStorage.clear(); "
                       "sessionStorage.clear(); } catch (e) {} }")  # fmt: skip
        self.guard(self.context.clear_cookies)
        self._inflight.clear()
        self.downloads.clear()
        self._pending.clear()
        self.fit_window()

    def fit_window(self) -> None:
        """The page at the session's viewport with and without emulation (an attached session;
        see the module docstring): the window resized until the page's own inner size is the
        viewport, then the viewport emulated as `set_viewport` does. A window that does not
        reach it is logged (the emulation holds until the owner's next observation)."""
        w, h = self.viewport
        page, context = self.page, self.context
        metrics = {"width": w, "height": h, "deviceScaleFactor": 1, "mobile": False}
        cdp = self.guard(context.new_cdp_session, page)
        try:  # an override set by a session that detaches: every override dropped at once
            self.guard(cdp.send, "Emulation.setDeviceMetricsOverride", metrics)
        finally:
            self.guard(cdp.detach)
        cdp = self.guard(context.new_cdp_session, page)
        try:
            window = self.guard(cdp.send, "Browser.getWindowForTarget")
            for _ in range(FIT_WINDOW_TRIES):
                iw, ih = self.guard(page.evaluate, _INNER_SIZE_JS)
                if (iw, ih) == (w, h):
                    break
                bounds = self.guard(cdp.send, "Browser.getWindowForTarget")["bounds"]
                size = {"width": bounds["width"] + w - iw, "height": bounds["height"] + h - ih}
                self.guard(cdp.send, "Browser.setWindowBounds",
                           {"windowId": window["windowId"], "bounds": size})  # fmt: skip
                with contextlib.suppress(EnvironmentFault):  # asynchronous: until it changed
                    self.guard(page.wait_for_function,
                               f"() => innerWidth !== {iw} || innerHeight !== {ih}",
                               timeout=2000)  # fmt: skip
            else:
                iw, ih = self.guard(page.evaluate, _INNER_SIZE_JS)
                if (iw, ih) != (w, h):
                    log.warning("web session: the window shows %dx%d, not %dx%d", iw, ih, w, h)
        finally:
            self.guard(cdp.detach)
        self.set_viewport(self.viewport)

    def hold_viewport(self) -> None:
        """An attached session's page back at the viewport where its owner's last observation
        left it at another size (a page the application opened has a window of its own)."""
        if self._attached is None or self.page is None:
            return
        if tuple(self.guard(self.page.evaluate, _INNER_SIZE_JS)) != tuple(self.viewport):
            self.fit_window()

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
        if page in self._known:
            self._known.remove(page)
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
            return self._bounded(fn, *args, **kwargs)
        except EnvironmentFault:
            raise
        except Exception as exc:
            why = f"{type(exc).__name__}: {exc}"  # Playwright's text (a browser's log)
            if self._fault:  # the cause first, Playwright's details after it
                why = f"{self._fault}\n{why}"
            raise EnvironmentFault(f"web session: {why}") from None

    def close(self) -> None:
        owned = () if self._attached is not None else (self.context, self.browser)
        self._attached = None
        for obj in owned:
            if obj is not None:
                try:
                    self._bounded(obj.close)
                except Exception as exc:
                    log.debug("close: %s", exc)
        self.context = self.browser = self.page = None
        self._watchdog.close()
        self._kill_browser()  # a browser that did not go on close()
        self._browser_pids = []
        if self._pw is not None:
            self._pw, self._driver = None, None
            try:
                _Driver.release()
            finally:
                shutil.rmtree(self.workdir / DRIVER_RECORD_DIR, ignore_errors=True)

    # -- navigation and settling --------------------------------------------------------------

    def set_viewport(self, size: tuple[int, int]) -> None:
        self.viewport = size
        self.guard(self.page.set_viewport_size, {"width": size[0], "height": size[1]})

    def goto(self, url: str) -> float:
        self.load(url)
        return self.settle()

    def load(self, url: str, timeout_s: float | None = None) -> None:
        """Navigate the page to `url` until its `load` event (not settled)."""
        if self.page is None:
            raise EnvironmentFault("web session: no page is open")
        ms = (timeout_s or self.settle_timeout_s) * 1000
        self.guard(self.page.goto, url, wait_until="load", timeout=ms)

    def settle(
        self,
        timeout_s: float | None = None,
        baseline: tuple[int, str] | None = None,
        quiet_s: float | None = None,
    ) -> float:
        """Wait until no request is in flight, the DOM is quiet for `quiet_s` (the session's
        unless given) and the app says it is ready. `baseline` (mutation count, URL before an
        action): while nothing has changed since, wait at least `change_grace_s`."""
        t0 = time.monotonic()
        limit = t0 + (timeout_s or self.settle_timeout_s)
        quiet_ms = (self.quiet_s if quiet_s is None else quiet_s) * 1000
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
            idle, ready, mutations, url = self._bounded(self.page.evaluate, self._probe_js)
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
                self._bounded(d.save_as, target)
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
        return b if locator.at is None else b.at(*locator.at)

    def element_at(self, x: float, y: float) -> ElementInfo | None:
        got = self.guard(self.page.evaluate, _ELEMENT_AT_JS, [x, y])
        if got is None:
            return None
        return ElementInfo(got["key"], got["role"], got["name"], PixelBox(*got["box"]))

    def eval(self, script: str, arg: Any = None) -> Any:
        return self.guard(self.page.evaluate, script, arg)

    def wait_for(self, script: str, timeout_s: float) -> None:
        """Until the JS function `script` returns a true value on the page (polled each frame)."""
        self.guard(self.page.wait_for_function, script, timeout=timeout_s * 1000)

    @property
    def faulted(self) -> bool:
        """Whether the session met a fault (a crash, a killed browser): only a new context
        or browser helps."""
        return self._fault is not None

    def park_pointer(self) -> None:
        """The pointer back at (0, 0), as on a new page, and the page's downloads forgotten
        (a reset in the open document)."""
        self.guard(self.page.mouse.move, 0, 0)
        self._collect_downloads()
        self.downloads.clear()

    # -- actions ------------------------------------------------------------------------------

    def act(self, action: actions.LiveAction) -> ActResult:
        if isinstance(action, actions.Done):
            return ActResult(settle_s=0.0, changed=False)
        if self.page is None or self._fault:
            raise EnvironmentFault(f"web session: {self._fault or 'every page was closed'}")
        m, kb = self.page.mouse, self.page.keyboard
        # hover effects are not the action's effects
        if isinstance(action, actions.Click | actions.Scroll):
            self.guard(m.move, action.x, action.y)
        before = self.signature()
        match action:
            case actions.Click(x, y, button, double):
                if double:
                    self.guard(m.dblclick, x, y, button=button)
                else:
                    self.guard(m.click, x, y, button=button)
            case actions.Drag(x1, y1, x2, y2):
                self.guard(m.move, x1, y1)
                self.guard(m.down)
                for k in range(1, 9):
                    f = k / 8
                    self.guard(m.move, x1 + f * (x2 - x1), y1 + f * (y2 - y1))
                    self.guard(self.page.wait_for_timeout, 15)
                self.guard(m.up)
            case actions.Scroll(x, y, dy):
                self.guard(m.move, x, y)
                for k in range(abs(dy)):
                    if k:
                        self._until_ready(NOTCH_READY_S)
                    self.guard(
                        m.wheel, 0, actions.WHEEL_NOTCH_PX if dy > 0 else -actions.WHEEL_NOTCH_PX
                    )
                    self.guard(self.page.wait_for_timeout, 30)
            case actions.TypeText(text):
                self.guard(kb.type, text, delay=10)
            case actions.Key(key):
                self.guard(kb.press, playwright_key(key))
        settle = self.settle(baseline=(before[0], before[1]))
        return ActResult(settle_s=settle, changed=self.signature() != before)

    def _until_ready(self, timeout_s: float) -> None:
        """Until the app says it is ready (`ready_js`), at most `timeout_s`: between two wheel
        notches, so that each lands on the state the one before left (a viewer still moving to
        the previous notch's image can lose the next one: OHIF's stack viewport did)."""
        deadline = time.monotonic() + timeout_s
        while not self._probe()[1] and time.monotonic() < deadline:
            self.guard(self.page.wait_for_timeout, 15)

    def signature(self) -> tuple[Any, ...]:
        """DOM mutation count, URL, page count, downloads: what `changed` compares (equal
        signatures: the page shows what it showed)."""
        if self.page is None or self._fault:
            raise EnvironmentFault(f"web session: {self._fault or 'every page was closed'}")
        n, url = self.guard(
            self.page.evaluate, "() => [window.__medspot ? __medspot.mutations : 0, location.href]"
        )
        return (n, url, len(self.context.pages), len(self.downloads))
