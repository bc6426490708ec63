"""The `ohif` environment: the OHIF Viewer 3 (prebuilt, pinned) over a private Orthanc's DICOMweb.

Each instance owns one Orthanc (`OrthancServer`, seeded with `medspot.live.services.seed`: the
phantoms carry bright marker landmarks A, B, C at known pixels), one `OhifServer` (the viewer's
static files plus DICOMweb forwarded to that Orthanc, same origin) and one chromium (`WebSession`)
with software WebGL (SwiftShader). The onboarding tour is disabled before any page script
runs (the viewer's own `shownTours` localStorage key); if it shows anyway, "Skip all" is
clicked during reset.

`reset(task)` brings the database back to the seed through REST and the viewer to the start
route: in the open document where it can (`reuse_document`: the router leaves the viewer, so
its mode exits and cleans up, and enters the start route again), else with the page's storage
cleared and the page replaced by a new one (no history, the pointer at (0, 0)) loading the
start route; either way VOI, zoom, layout, measurements, the active tool and the panels are the
viewer's defaults (the browser context, and so its HTTP cache, is kept: the viewer's 20 MB of
scripts load once). Routes name seeded things by catalogue names:
`/viewer?StudyInstanceUIDs={study:CT-DOE-JOHN}` or `{series:CT-DOE-JOHN/SCOUT}` become DICOM
UIDs; the default route is the study list `/`.

Locators: `data_cy`, `css`, `text`, `contains`, `role`, `nth`, `at` (with no element key: a
point of the active viewport, as fractions of its box: a 1x1 box) and `landmark` (a phantom
landmark on the active viewport's current image, through cornerstone's own projection: a box
around its marker, centred on the landmark's point, so a drag that starts on the marker hits).
"""

from __future__ import annotations

import json
import logging
import re
import time
from pathlib import Path
from typing import Any

from medspot.errors import DataError
from medspot.live.core.actions import Click, Drag
from medspot.live.core.contract import EnvironmentFault, Observation, PixelBox, SparePlan
from medspot.live.core.optionpaths import CachePath, FolderPath, ProgramPath
from medspot.live.core.tasks import LiveTask, Locator
from medspot.live.drivers.web import WebSession
from medspot.live.envs.ohif.checks import CHECK_KINDS, LANDMARK_JS, READY_JS, STATE_JS, OhifState
from medspot.live.envs.ohif.package import installed_dist
from medspot.live.envs.ohif.server import OhifServer
from medspot.live.envs.orthanc.web import OrthancWebEnv
from medspot.live.envs.reset_clock import ResetClock
from medspot.live.services.names import NameTable, instance_names
from medspot.live.services.seed import LANDMARKS, MARKER_RADIUS

__all__ = ["LOCATOR_KEYS", "NAME", "SOFTWARE_GL_ARGS", "OhifEnv"]

log = logging.getLogger(__name__)
NAME = "ohif"
LOCATOR_KEYS = ("data_cy", "css", "text", "contains", "role", "nth", "at", "landmark")
SOFTWARE_GL_ARGS = (
    "--use-gl=angle",
    "--use-angle=swiftshader",
    "--enable-unsafe-swiftshader",
    "--ignore-gpu-blocklist",
)
TOUR_IDS = ("basicViewerTour",)
_NO_TOUR_JS = (
    "try { localStorage.setItem('shownTours', " + json.dumps(json.dumps(list(TOUR_IDS))) + "); }"
    " catch (e) {}"
)
_TOUR_VISIBLE_JS = "() => !!document.querySelector('.shepherd-element')"
_LIST_READY_JS = "() => document.querySelectorAll('tbody tr td').length > 0"
_VIEWPORT_CSS = ".cornerstone-viewport-element"
_ACTIVE_VIEWPORT_JS = """() => {
  const s = window.services; if (!s || !s.viewportGridService) return null;
  const vp = s.cornerstoneViewportService.getCornerstoneViewport(
    s.viewportGridService.getState().activeViewportId);
  if (!vp || !vp.element) return null;
  const r = vp.element.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom];
}"""
# A landmark's box: the marker (radius MARKER_RADIUS image pixels) plus one pixel, on screen;
# its centre is the landmark's point. About the default 4 mm tolerance of `ohif.measurement`.
LANDMARK_BOX_RADIUS = MARKER_RADIUS + 1
_TEMPLATE = re.compile(r"\{(study|series):([^{}]+)\}")
# The in-document reset: a route the viewer has no page for (leaving the viewer there exits its
# mode, as going back to the study list does), and the page's history still at its first entry
LEAVE_ROUTE = "/medspot-reset"
_HISTORY_JS = "() => window.services ? history.length : -1"
# The active viewport's stack fully loaded: every image in cornerstone's cache, and the
# slice-loading overlay OHIF draws over the viewport's scrollbar while slices load (a tall
# gradient-filled rect) gone; until then the start screen depends on how far preloading got
_STACK_LOADED_JS = """() => { try {
  const s = window.services; const vp = s.cornerstoneViewportService.getCornerstoneViewport(
    s.viewportGridService.getState().activeViewportId);
  const cache = window.cornerstone && window.cornerstone.cache;
  const ids = vp && vp.getImageIds ? vp.getImageIds() : [];
  if (cache && cache.isLoaded && !ids.every(id => cache.isLoaded(id))) return false;
  return ![...document.querySelectorAll('rect[fill^="url("]')].some(
    r => r.getBoundingClientRect().height > 200);
} catch (e) { return false; } }"""
STACK_LOADED_TIMEOUT_S = 10.0
# When the slices loaded OHIF removes that overlay and narrows the scrollbar with a 300 ms CSS
# transition (an inline `transition`, no DOM mutation): a start observed while it ran showed a
# scrollbar half narrowed, depending on the load. An init script of the environment makes
# inline transitions instant, so the screen at rest is reached when the overlay goes.
_NO_INLINE_TRANSITIONS_JS = """(() => {
  const add = () => { const style = document.createElement('style');
    style.textContent = '[style*="transition"] { transition: none !important; }';
    (document.head || document.documentElement).appendChild(style); };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', add);
  else add();
})();"""
# The viewer is settled only when every stack viewport shows the image it was scrolled to
# (cornerstone's `StackViewport.scroll` moves its target index at once but shows an image that
# is not cached only once it loaded). Also what the web session waits for between two wheel
# notches (`WebSession._until_ready`): a notch sent while the viewport still moves to the
# previous one can be lost. cornerstone debounces the move to an image not yet cached and does
# not cancel that pending move when the next notch finds its image cached and moves at once, so
# the late move takes the viewport back (3 notches from image 1 ended on image 3, 1 time in 5
# while the stack was still loading). The oracle then scrolled again, past its target: the
# overshoot once seen after an in-document reset (docs/live/environments/ohif.md, its Reset).
SETTLED_JS = """() => { try {
  const cs = window.cornerstone; if (!cs || !cs.getRenderingEngines) return true;
  for (const re of cs.getRenderingEngines() || []) {
    for (const vp of re.getViewports()) {
      if (typeof vp.targetImageIdIndex === 'number' && vp.getCurrentImageIdIndex
          && vp.targetImageIdIndex !== vp.getCurrentImageIdIndex()) return false;
    }
  }
  return true;
} catch (e) { return true; } }"""
_LEAVE_JS = """([route, tours]) => {
  const s = window.services || {};
  const call = (svc, ...names) => { for (const n of names) {
    try { if (svc && typeof svc[n] === 'function') { svc[n](); return; } } catch (e) {} } };
  call(s.uiModalService, 'hide');
  call(s.uiDialogService, 'hideAll', 'dismissAll');
  call(s.uiViewportDialogService, 'hide');
  call(s.uiNotificationService, 'hideAll');
  call(s.uiContextMenuService, 'closeContextMenu', 'hide');
  try { localStorage.clear(); sessionStorage.clear();
        localStorage.setItem('shownTours', JSON.stringify(tours)); } catch (e) {}
  if (document.activeElement && document.activeElement.blur) document.activeElement.blur();
  try { window.getSelection().removeAllRanges(); } catch (e) {}
  history.replaceState(history.state, '', route);
  window.dispatchEvent(new PopStateEvent('popstate', {state: history.state}));
}"""
_LEFT_JS = (
    "() => !document.querySelector('.cornerstone-viewport-element, tbody tr td')"
    " && !document.querySelector('.shepherd-element')"
)
_ENTER_JS = """(path) => {
  history.replaceState(history.state, '', path);
  window.dispatchEvent(new PopStateEvent('popstate', {state: history.state}));
  window.scrollTo(0, 0);
}"""


# A runner slot's spares (`SpareCapable`): two more Orthancs, viewer servers and chromiums, each
# reset for one of the next two tasks while the current one runs (the viewer's reset, ~2 s under
# load, outlasts most of the oracle's tasks: with one spare the next task still waited for the
# rest of it); measured to pay on two cores (benchmarks/README.md section 9); memory: what one
# more instance adds to the run's processes (docs/live/running.md "Pipelined starts")
SPARE = SparePlan(default=True, memory_mb=370, count=2)


class OhifEnv(OrthancWebEnv):
    """One Orthanc + one same-origin viewer server + one chromium."""

    name = NAME
    check_kinds = CHECK_KINDS
    spare = SPARE

    def __init__(
        self,
        workdir: Path,
        headless: bool = True,
        chromium: ProgramPath = "/usr/bin/chromium",
        seed: int = 0,
        seed_cache: CachePath | None = None,
        ohif_dist: FolderPath | None = None,
        extra_args: tuple[str, ...] = (),
        quiet_s: float = 0.3,
        settle_timeout_s: float = 30.0,
        load_timeout_s: float = 90.0,
        orthanc_binary: ProgramPath | None = None,
        reuse_document: bool = True,
        reset_quiet_s: float = 0.15,
    ) -> None:
        web = WebSession(
            Path(workdir) / "browser",
            chromium=chromium,
            headless=headless,
            extra_args=(*SOFTWARE_GL_ARGS, *extra_args),
            quiet_s=quiet_s,
            settle_timeout_s=settle_timeout_s,
            ready_js=SETTLED_JS,
            init_js=(_NO_TOUR_JS, _NO_INLINE_TRANSITIONS_JS),
        )
        super().__init__(
            workdir, web, seed=seed, seed_cache=seed_cache, orthanc_binary=orthanc_binary
        )
        self.dist = ohif_dist
        self.load_timeout_s = load_timeout_s
        # True: reset in the open document where it allows it (else a new page); the overshoot
        # one audit saw after it was a lost wheel notch (`SETTLED_JS`), not the reset's
        self.reuse_document = reuse_document
        self.reset_quiet_s = reset_quiet_s  # the DOM's quiet time after a reset's image showed
        self.server: OhifServer | None = None
        self._history: int | None = None  # history.length after the last new page's load

    # -- life cycle -----------------------------------------------------------------------------

    def _start_services(self) -> None:
        if (self.dist or installed_dist()) is None:
            raise EnvironmentFault(
                "the OHIF viewer is not installed: run `medspot live setup --env ohif`"
            )
        super()._start_services()

    def _start_more(self) -> None:
        dist = self.dist or installed_dist()
        assert dist is not None
        self.server = OhifServer(dist, self.orthanc.url).start()

    def _close_more(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None

    @property
    def url(self) -> str:
        if self.server is None:
            raise EnvironmentFault("ohif: not started")
        return self.server.url

    def url_for(self, route: str, task_id: str = "") -> str:
        """`route` with `{study:NAME}` / `{series:NAME}` replaced by DICOM UIDs, on the server."""
        assert self.seed is not None
        cat = self.seed.catalogue

        def one(m: re.Match[str]) -> str:
            level, name = m.group(1), m.group(2)
            try:
                return cat.study(name).uid if level == "study" else cat.series(name).uid
            except KeyError:
                raise DataError(
                    f"task {task_id}: start.route: no seeded {level} {name!r}"
                ) from None

        if not route.startswith("/"):
            raise DataError(f"task {task_id}: start.route must start with '/': {route!r}")
        return self.url + _TEMPLATE.sub(one, route)

    def reset(self, task: LiveTask) -> Observation:
        t0 = time.perf_counter()
        clock = ResetClock()
        database = self._reset_database_meanwhile()  # the page is reset meanwhile
        size = (int(task.start.viewport[0]), int(task.start.viewport[1]))
        url = self.url_for(task.start.route or "/", task.id)
        reused = False
        try:
            if self.reuse_document and self._reusable(size):
                try:
                    with clock.phase("leave"):
                        self._leave_route()
                    reused = True
                except EnvironmentFault as exc:  # the viewer did not leave: a new page
                    log.info("ohif: the in-document reset failed (%s); loading a new page", exc)
            if not reused:
                self.web.viewport = size
                with clock.phase("page"):
                    self.web.new_page()
        finally:
            with clock.phase("database"):
                database.result()
        self.viewport = size
        if reused:
            self._enter_route(url, clock)
        else:
            self._history = None
            self.load(url, clock)
            self._history = self.web.eval(_HISTORY_JS)
        clock.phases["reused" if reused else "reloaded"] = 0.0
        with clock.phase("predraw"):
            self._predraw(task)
        self.last_reset_s = time.perf_counter() - t0
        with clock.phase("observe"):
            obs = self.observe_start()
        self.reset_phases = clock.done()
        return obs

    def load(self, url: str, clock: ResetClock | None = None) -> None:
        """Open `url` and wait until the viewer shows an image (or the list shows rows)."""
        clock = clock or ResetClock()
        page = self.web.page
        if page is None:
            raise EnvironmentFault("ohif: no page is open")
        with clock.phase("load"):
            self.web.load(url, self.load_timeout_s)
        ready = READY_JS if "/viewer" in url else _LIST_READY_JS
        with clock.phase("ready"):
            self.web.guard(page.wait_for_function, ready, timeout=self.load_timeout_s * 1000)
            if "/viewer" in url:
                self._wait_stack_loaded()
        with clock.phase("settle"):
            self.web.settle(self.load_timeout_s, quiet_s=min(self.reset_quiet_s, self.web.quiet_s))
        if self.web.eval(_TOUR_VISIBLE_JS):
            log.info("ohif: the onboarding tour showed; skipping it")
            box = self.web.locate(Locator(text="Skip all"))
            if box is not None:
                self.web.guard(page.mouse.click, *box.center)
                self.web.settle()

    def _wait_stack_loaded(self) -> None:
        """Until the start image's stack is loaded and its loading overlay gone, so that the
        start screen does not depend on timing (bounded: past STACK_LOADED_TIMEOUT_S the start
        is observed as it is)."""
        try:
            self.web.wait_for(_STACK_LOADED_JS, STACK_LOADED_TIMEOUT_S)
        except EnvironmentFault as exc:
            if self.web.faulted:
                raise
            log.info("ohif: the stack did not finish loading in %.0f s (%s)",
                     STACK_LOADED_TIMEOUT_S, exc)  # fmt: skip

    # -- the in-document reset ---------------------------------------------------------------

    def _reusable(self, size: tuple[int, int]) -> bool:
        """Whether the open document can be brought back to a fresh start without a reload:
        the viewer's own page, alone in the context, at the start viewport, with no history
        beyond what the last new page had when its start route was loaded (no navigation
        since: `Back` cannot reach an earlier task's page) and no fault."""
        web = self.web
        page = web.page
        if page is None or web.context is None or web.faulted:
            return False
        if size != web.viewport or not page.url.startswith(self.url + "/"):
            return False
        if len([p for p in web.context.pages if not p.is_closed()]) != 1:
            return False
        return self._history is not None and web.eval(_HISTORY_JS) == self._history

    def _leave_route(self) -> None:
        """Close what lives above the routes (modals, dialogs, notifications), clear the
        page's storage, and leave the viewer for a route the viewer does not have: its mode
        exits (the application's own clean-up of every viewer service) and its components
        unmount. Then the pointer is parked at (0, 0) and the page's downloads forgotten."""
        self.web.eval(_LEAVE_JS, [LEAVE_ROUTE, list(TOUR_IDS)])
        self.web.wait_for(_LEFT_JS, self.load_timeout_s)
        self.web.park_pointer()

    def _enter_route(self, url: str, clock: ResetClock) -> None:
        """Enter the start route in the open document (the router's own navigation: the mode
        starts as on a fresh load), wait for its image or list, settle."""
        path = url[len(self.url) :]
        with clock.phase("load"):
            self.web.eval(_ENTER_JS, path)
        ready = READY_JS if "/viewer" in url else _LIST_READY_JS
        with clock.phase("ready"):
            self.web.wait_for(ready, self.load_timeout_s)
            if "/viewer" in url:
                self._wait_stack_loaded()
        with clock.phase("settle"):
            self.web.settle(self.load_timeout_s, quiet_s=min(self.reset_quiet_s, self.web.quiet_s))
        if self.web.eval(_TOUR_VISIBLE_JS):
            raise EnvironmentFault("ohif: the onboarding tour showed after an in-document reset")

    def _predraw(self, task: LiveTask) -> None:
        """`start.measure: [["A", "C"], ...]`: Length measurements drawn through the UI (tool
        button, drags between landmarks) before the task starts; the default tool is then
        selected again. A pair must not start on an earlier pair's end point (the drag would
        move that handle instead of drawing)."""
        pairs = task.start.params.get("measure") or []
        if not pairs:
            return
        where = f"task {task.id}: start.measure"
        if not isinstance(pairs, list) or not all(
            isinstance(pq, list) and len(pq) == 2 and all(x in LANDMARKS for x in pq)
            for pq in pairs
        ):
            raise DataError(f"{where}: a list of [landmark, landmark] pairs of {sorted(LANDMARKS)}")
        self._click(Locator(data_cy="Length-btn"), where)
        for a, b in pairs:
            pa, pb = self.locate(Locator(landmark=a)), self.locate(Locator(landmark=b))
            if pa is None or pb is None:
                raise EnvironmentFault(f"{where}: landmarks not on screen")
            self.web.act(Drag(*pa.center, *pb.center))
        self._click(Locator(data_cy="WindowLevel-btn"), where)

    def _click(self, loc: Locator, where: str) -> None:
        box = self.web.locate(loc)
        if box is None:
            raise EnvironmentFault(f"{where}: {loc.keys()} not on screen")
        self.web.act(Click(*box.center))

    # -- the contract -------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """The viewer's state as the checks read it (see `medspot.live.envs.ohif.checks`)."""
        got = self.web.eval(STATE_JS)
        return got if isinstance(got, dict) else {}

    def names(self) -> NameTable:
        """Catalogue names -> the DICOM UIDs the viewer's routes use."""
        assert self.seed is not None
        cat = self.seed.catalogue
        return {
            "patient": {p.name: p.patient_id for p in cat.patients},
            "study": {st.name: st.uid for st in cat.studies()},
            "series": {se.name: se.uid for se in cat.all_series()},
            "instance": instance_names(cat),
        }

    def readers(self) -> dict[str, Any]:
        out = super().readers()
        assert self.seed is not None
        cat = self.seed.catalogue
        out["ohif"] = lambda p: OhifState(self.state(), cat)
        return out

    def locate(self, locator: Locator) -> PixelBox | None:
        if locator.landmark is not None:
            if locator.landmark not in LANDMARKS:
                raise DataError(
                    f"unknown landmark {locator.landmark!r} (known: {sorted(LANDMARKS)})"
                )
            col, row = LANDMARKS[locator.landmark]
            got = self.web.eval(LANDMARK_JS, [col + 0.5, row + 0.5, LANDMARK_BOX_RADIUS])
            if got is None:
                return None
            x, y, half = got[0], got[1], max(float(got[2]), 0.5)
            return PixelBox(x - half, y - half, x + half, y + half)
        if locator.keys() <= {"at", "nth"} and locator.at is not None:
            box = self.web.eval(_ACTIVE_VIEWPORT_JS)
            return None if box is None else PixelBox(*box).at(*locator.at)
        return self.web.locate(locator)
