"""What the two Orthanc web environments share (`orthanc-explorer`, `ohif`): one private Orthanc
seeded with `medspot.live.services.seed`, one chromium (`WebSession`), and the contract's
`observe`, `act` (with Orthanc's liveness checked before and after), `locate`, `element_at`
on the page, and `check`: a dispatcher over the subclass's `check_kinds` and the readers of
their states (the Orthanc database and the page here; a subclass adds its own). A subclass adds
its own server or page logic, `reset`, `names` (the IDs its URLs use) and its `spare` (the
`SparePlan` of a runner slot's spare: `swap_in` is here).

The workdir is claimed for this process and the stale folders beside it are swept at start
(`medspot.live.core.processes`); `close` stops whatever of its processes is left.

Driven on a page someone else opened (`attach_page` before `start`: BrowserGym's environment
launches its own chromium and runs its own actions on the page): the environment starts its
services and no browser, resets, observes, locates, acts and checks on that page, and
`settle_page` waits after actions its owner executed, as `act` waits after its own."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar

from medspot.live.core import processes
from medspot.live.core.actions import LiveAction
from medspot.live.core.checks import CheckKinds
from medspot.live.core.contract import (
    ActResult,
    ElementInfo,
    EnvironmentFault,
    Observation,
    PixelBox,
)
from medspot.live.core.tasks import CheckSpec, LiveTask, Locator
from medspot.live.core.tools import Toolset
from medspot.live.drivers.web import KEY_TABLE, WebSession
from medspot.live.drivers.web_checks import web_readers
from medspot.live.envs.orthanc.checks import read_orthanc_state
from medspot.live.envs.orthanc.tools import TOOLSET, OrthancTools
from medspot.live.services.names import NameTable
from medspot.live.services.orthanc import OrthancIds, OrthancServer
from medspot.live.services.seed import SeedSet, seed_files

__all__ = ["OrthancWebEnv"]


class OrthancWebEnv:
    """One Orthanc + one chromium. Subclasses call `super().__init__` with the WebSession's
    settings, and implement `reset(task)` and `names()`."""

    name = "orthanc-web"
    check_kinds: ClassVar[CheckKinds] = CheckKinds()
    key_table = KEY_TABLE  # the keys the browser presses (Playwright's table)

    def __init__(
        self,
        workdir: Path,
        web: WebSession,
        *,
        seed: int = 0,
        seed_cache: Path | None = None,
        orthanc_binary: str | None = None,
    ) -> None:
        self.workdir = Path(workdir)
        self.viewport: tuple[int, int] = (1280, 800)
        self.seed_n, self.seed_cache = seed, seed_cache
        self.seed: SeedSet | None = None
        self.orthanc = OrthancServer(self.workdir / "orthanc", binary=orthanc_binary)
        self.web = web
        self.last_reset_s = 0.0
        self.reset_phases: dict[str, float] = {}  # the last reset's phases (`ResetClock`)
        self._start_shown: tuple[Any, Observation] | None = None  # (`observe_start`)
        self._rest_thread: ThreadPoolExecutor | None = None
        self._started = False

    # -- life cycle -----------------------------------------------------------------------------

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        try:
            processes.claim(self.workdir)
            processes.sweep(self.workdir.parent, keep=self.workdir)
            self._start_services()
        except BaseException:
            self.close()
            raise

    def attach_page(self, page: Any) -> None:
        """Drive `page` (a Playwright page someone else opened, with its context and browser)
        instead of launching chromium: before `start()`; `close()` leaves it to its owner."""
        if self._started:
            raise EnvironmentFault(f"{self.name}: attach_page() before start()")
        self.web.attach(page)

    def settle_page(self, page: Any) -> ActResult:
        """After actions the page's owner executed: `page` (the owner's active page) becomes
        the one observed, checked and acted on, and the application is waited for as after an
        action of `act` (Orthanc's liveness checked)."""
        if not self.orthanc.alive():
            raise EnvironmentFault("Orthanc is not running (the process died)")
        self.web.follow(page)
        self.web.hold_viewport()
        return ActResult(settle_s=self.web.settle())

    def _start_services(self) -> None:
        """Seed and start Orthanc, then the browser; a subclass may start more in between."""
        self.seed = seed_files(self.seed_cache, self.seed_n)
        self.orthanc.start()
        self.orthanc.seed(self.seed)
        self._start_more()
        self.web.start()

    def _start_more(self) -> None:
        """Hook: what a subclass starts after Orthanc and before the browser."""

    def close(self) -> None:
        if self._rest_thread is not None:
            self._rest_thread.shutdown(wait=True, cancel_futures=True)
            self._rest_thread = None
        try:
            self.web.close()
        finally:
            try:
                self._close_more()
            finally:
                self.orthanc.stop()
                processes.stop_folder(self.workdir)

    def _close_more(self) -> None:
        """Hook: what a subclass stops before Orthanc."""

    def _reset_database(self) -> float:
        """Orthanc back to the seeded studies (through REST; no restart)."""
        self.start()
        assert self.seed is not None
        self.orthanc.health()
        return self.orthanc.reset_to(self.seed)

    def _reset_database_meanwhile(self) -> Future[float]:
        """`_reset_database` on a helper thread (REST only: the browser stays on this thread),
        so that the page is reset at the same time; `.result()` before the page reads data."""
        self.start()
        if self._rest_thread is None:
            self._rest_thread = ThreadPoolExecutor(1, thread_name_prefix="medspot-orthanc-reset")
        return self._rest_thread.submit(self._reset_database)

    @property
    def ids(self) -> OrthancIds:
        if self.orthanc.ids is None:
            raise EnvironmentFault(f"{self.name}: not started")
        return self.orthanc.ids

    # -- the contract -------------------------------------------------------------------------

    def observe(self) -> Observation:
        return self.web.observe()

    def observe_start(self) -> Observation:
        """The start screen, at the end of a subclass's reset: observed, and remembered with
        the page's signature (`swap_in` gives it again while the page still shows it)."""
        signature = self.web.signature()
        obs = self.observe()
        self._start_shown = (signature, obs)
        return obs

    def swap_in(self, task: LiveTask) -> Observation:
        """Reset for `task` as a runner slot's spare (the subclass's `spare`): Orthanc still
        running, the start screen now: the reset's own observation while the page's signature
        (DOM mutations, URL, pages, downloads; the viewers' canvases change with their overlay
        text) is the same, else a new one."""
        if not self.orthanc.alive():
            raise EnvironmentFault("Orthanc is not running (the process died)")
        shown, self._start_shown = self._start_shown, None
        if shown is not None and self.web.signature() == shown[0]:
            return shown[1]
        return self.observe()

    def act(self, action: LiveAction) -> ActResult:
        if not self.orthanc.alive():
            raise EnvironmentFault("Orthanc is not running (the process died)")
        result = self.web.act(action)
        if not self.orthanc.alive():
            raise EnvironmentFault("Orthanc died during the action")
        return result

    def locate(self, locator: Locator) -> PixelBox | None:
        return self.web.locate(locator)

    def element_at(self, x: float, y: float) -> ElementInfo | None:
        return self.web.element_at(x, y)

    # -- checks: read the state a kind judges, then judge it ------------------------------------

    def names(self) -> NameTable:
        """Catalogue names -> the IDs this application's URLs use (for `{level:NAME}`)."""
        raise NotImplementedError

    def readers(self) -> dict[str, Any]:
        """The state readers of the check kinds (name -> read(params))."""
        if self.seed is None:
            raise EnvironmentFault(f"{self.name}: not started")
        cat = self.seed.catalogue
        out = web_readers(self.web, self.names())
        out["orthanc"] = lambda p: read_orthanc_state(self.orthanc, self.ids, cat)
        return out

    def check(self, spec: CheckSpec) -> bool:
        return self.check_kinds.evaluate(spec, self.readers(), self.name)

    # -- the tools track: Orthanc's REST API beside the GUI -------------------------------------

    def toolset(self, name: str) -> Toolset | None:
        """The toolset `name` over this environment (`orthanc`), or None."""
        if name != TOOLSET:
            return None
        return OrthancTools(self.orthanc, lambda: self.workdir / "tool-archives")
