"""The `orthanc-explorer` environment: Orthanc Explorer and the Orthanc Web Viewer in chromium.

Each instance owns one Orthanc (`OrthancServer`, seeded with `medspot.live.services.seed`) and one
chromium (`WebSession`). `reset(task)` brings the database back to the seeded studies through
REST (no restart), opens a fresh browser context at the task's start route and returns the
first screen. Routes and check parameters name seeded things by catalogue names; a route may
embed Orthanc IDs as `{patient:DOE^JOHN}`, `{study:CT-DOE-JOHN}`, `{series:CT-DOE-JOHN/AXIAL}`
or `{instance:CT-DOE-JOHN/AXIAL:3}` (1-based slice). A route starting with `#` is an Explorer
hash route (`/app/explorer.html#...`), one starting with `/` a path on the server.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from medspot.errors import DataError
from medspot.live.core.contract import Observation, SparePlan
from medspot.live.core.optionpaths import CachePath, ProgramPath
from medspot.live.core.tasks import LiveTask
from medspot.live.drivers.web import WebSession
from medspot.live.envs.orthanc.checks import orthanc_names
from medspot.live.envs.orthanc.web import OrthancWebEnv
from medspot.live.envs.orthanc_explorer.checks import CHECK_KINDS, read_viewer
from medspot.live.envs.reset_clock import ResetClock
from medspot.live.services.names import TEMPLATE, NameTable

__all__ = ["LOCATOR_KEYS", "NAME", "OrthancExplorerEnv"]

log = logging.getLogger(__name__)
NAME = "orthanc-explorer"
LOCATOR_KEYS = ("css", "text", "contains", "role", "nth", "at")
# jQuery Mobile is idle: no ajax running, no page transition, the hash route's page shown, and
# no clicked link (jQM marks it `ui-btn-active` until its page is shown) still on its way; that
# last sign is trusted for 2 s at most (a stale mark must not hang the settle)
_READY_JS = """() => {
  const $ = window.jQuery;
  if (!$ || !$.mobile || !$.mobile.activePage) return document.readyState === 'complete';
  if ($.active > 0 || $('.ui-mobile-viewport-transitioning, .ui-page.in, .ui-page.out').length) {
    return false;  // ajax running, or jQM's page fade (CSS animation: no DOM mutation) going on
  }
  const want = (location.hash.split('?')[0] || '').slice(1);
  if (want && document.getElementById(want) && $.mobile.activePage.attr('id') !== want) {
    return false;
  }
  const pending = $.mobile.activePage.find('.ui-btn-active').toArray().some((el) => {
    const a = el.matches('a[href]') ? el : el.querySelector('a[href]');
    const href = a && a.getAttribute('href');
    return !!href && href.length > 1 && href[0] === '#' && href !== location.hash;
  });
  if (!pending) { window.__medspotPending = 0; return true; }
  window.__medspotPending = window.__medspotPending || performance.now();
  return performance.now() - window.__medspotPending > 2000;
}"""

# jQuery Mobile's page and dialog transitions off (jQM reads both defaults at each page change;
# jQuery calls an `on<event>` property of the document for `mobileinit`, fired before the first
# page is shown): every page is the same when shown, without 350 ms of CSS fade before it
_NO_TRANSITIONS_JS = """document.onmobileinit = () => {
  window.jQuery.mobile.defaultPageTransition = 'none';
  window.jQuery.mobile.defaultDialogTransition = 'none';
};"""


# A runner slot's spare (`SpareCapable`): a second Orthanc and chromium, reset for the next task
# while the current one runs; measured to pay on two cores (benchmarks/README.md section 9);
# memory: what one more instance adds to the run's processes (docs/live/running.md "Pipelined
# starts")
SPARE = SparePlan(default=True, memory_mb=270)


class OrthancExplorerEnv(OrthancWebEnv):
    """One Orthanc + one chromium, driven through Orthanc Explorer's pages."""

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
        extra_args: tuple[str, ...] = (),
        quiet_s: float = 0.25,
        settle_timeout_s: float = 15.0,
        orthanc_binary: ProgramPath | None = None,
        fresh_context: bool = False,
        reset_quiet_s: float = 0.1,
    ) -> None:
        web = WebSession(
            Path(workdir) / "browser",
            chromium=chromium,
            headless=headless,
            extra_args=tuple(extra_args),
            quiet_s=quiet_s,
            settle_timeout_s=settle_timeout_s,
            ready_js=_READY_JS,
            init_js=(_NO_TRANSITIONS_JS,),
        )
        super().__init__(
            workdir, web, seed=seed, seed_cache=seed_cache, orthanc_binary=orthanc_binary
        )
        self.fresh_context = fresh_context  # a new browser context per task (slower)
        self.reset_quiet_s = reset_quiet_s  # the DOM's quiet time after the start route loaded
        self._names: NameTable | None = None

    def reset(self, task: LiveTask) -> Observation:
        clock = ResetClock()
        database = self._reset_database_meanwhile()  # the page is replaced meanwhile
        self.viewport = (int(task.start.viewport[0]), int(task.start.viewport[1]))
        self.web.viewport = self.viewport
        with clock.phase("page"):
            if self.fresh_context:
                self.web.new_context()
            else:
                self.web.new_page()
        with clock.phase("database"):
            self.last_reset_s = database.result()
        url = self.url_for(task.start.route or "#find-patients", task.id)
        with clock.phase("load"):
            self.web.load(url)
        with clock.phase("settle"):
            # jQuery Mobile's own idleness (`_READY_JS`: no ajax, no transition, the route's
            # page shown) is the state waited for; the DOM's quiet time is only a margin
            self.web.settle(quiet_s=min(self.reset_quiet_s, self.web.quiet_s))
        with clock.phase("observe"):
            obs = self.observe_start()
        self.reset_phases = clock.done()
        return obs

    # -- names -> Orthanc IDs -----------------------------------------------------------------

    def resolve(self, text: str, where: str = "route") -> str:
        """Replace `{level:name}` templates by Orthanc IDs."""

        def one(m: re.Match[str]) -> str:
            return self.orthanc_id(m.group(1), m.group(2), where)

        return TEMPLATE.sub(one, text)

    def orthanc_id(self, level: str, name: str, where: str = "check") -> str:
        ids = self.ids
        table: dict[str, str]
        if level == "instance":
            series, _, k = name.rpartition(":")
            assert self.seed is not None
            try:
                uid = self.seed.catalogue.series(series).instance_uids[int(k) - 1]
            except (KeyError, ValueError, IndexError):
                raise DataError(f"{where}: no seeded instance {name!r}") from None
            return ids.instances[uid]
        table = {"patient": ids.patients, "study": ids.studies, "series": ids.series}[level]
        if name not in table:
            known = ", ".join(sorted(table))
            raise DataError(f"{where}: no seeded {level} {name!r} (known: {known})")
        return table[name]

    def url_for(self, route: str, task_id: str = "") -> str:
        route = self.resolve(route, f"task {task_id}: start.route")
        if route.startswith("#"):
            return f"{self.orthanc.url}/app/explorer.html{route}"
        if route.startswith("/"):
            return self.orthanc.url + route
        raise DataError(f"task {task_id}: start.route must start with '#' or '/': {route!r}")

    # -- checks -------------------------------------------------------------------------------

    def names(self) -> NameTable:
        assert self.seed is not None
        if self._names is None:
            self._names = orthanc_names(self.ids, self.seed.catalogue)
        return self._names

    def readers(self) -> dict[str, Any]:
        return {**super().readers(), "webviewer": lambda p: read_viewer(self.web)}
