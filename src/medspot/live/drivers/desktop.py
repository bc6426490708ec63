"""A desktop application under the harness's X server, read through AT-SPI: the Environment
contract's `observe`, `act`, `locate` and `element_at` for any X11 + AT-SPI viewer, so that an
environment keeps only what is its application's own (processes, database, reset, checks).

The accessible tree is read by the long-lived system-python helper (`drivers.atspi`) and cached
until the next action (every action waits until the screen settled, and the state only changes
through actions): `locate`, `element_at` and the checks of one screen share one read. Without
`full`, only what is showing is read (about 5x faster).
"""

from __future__ import annotations

import logging
import subprocess
import time
from collections.abc import Callable

from medspot.live.core import actions
from medspot.live.core.contract import (
    ActResult,
    ElementInfo,
    EnvironmentFault,
    Observation,
    PixelBox,
)
from medspot.live.core.tasks import Locator
from medspot.live.drivers.atspi import AtspiClient, AtspiTree, NodeQuery
from medspot.live.drivers.x11 import KEY_TABLE, X11Session

__all__ = ["DesktopDriver"]

log = logging.getLogger(__name__)


class DesktopDriver:
    """One application window on an `X11Session`, its widgets through AT-SPI."""

    key_table = KEY_TABLE  # the keys `act` presses (X keysyms, through xdotool)

    def __init__(
        self,
        x11: X11Session,
        app_name: str,
        *,
        viewport: tuple[int, int],
        alive: Callable[[], subprocess.Popen[bytes]],
        settle_quiet_s: float = 0.5,
        settle_timeout_s: float = 15.0,
        skip_tabs: tuple[str, ...] = (),
    ) -> None:
        self.x11 = x11
        self.app_name = app_name
        self.viewport = viewport
        self.alive = alive  # the application's process, or EnvironmentFault when it is gone
        self.settle_quiet_s = settle_quiet_s
        self.settle_timeout_s = settle_timeout_s
        self.skip_tabs = skip_tabs
        self.window: str | None = None  # the main X window id, once known
        self._atspi: AtspiClient | None = None
        self._cache: dict[bool, AtspiTree] = {}  # full? -> tree, until the next action
        self.last_shown: tuple[str, Observation] | None = None  # screen digest, observation

    # -- AT-SPI ------------------------------------------------------------------------------
    def tree(self, full: bool = False) -> AtspiTree:
        """The accessible tree read now; without `full`, only what is showing."""
        t0 = time.monotonic()
        if self._atspi is None:
            self._atspi = AtspiClient(self.x11.env, self.x11.workdir)
        tree = self._atspi.dump(self.app_name, showing_only=not full, skip_tabs=self.skip_tabs)
        log.debug("AT-SPI dump (%d nodes) %.3f s", len(tree.nodes), time.monotonic() - t0)
        return tree

    def cached_tree(self, full: bool) -> AtspiTree:
        """The tree of the current screen (read once per screen)."""
        tree = self._cache.get(full) or self._cache.get(True)
        if tree is None:
            tree = self._cache[full] = self.tree(full)
        return tree

    def forget(self) -> None:
        """The screen changed outside `act` (a reset): read the tree again."""
        self._cache.clear()

    def box(self, tree: AtspiTree, q: NodeQuery) -> PixelBox | None:
        """The `q.nth` box among the matches that are showing and hit at their centre."""
        hits = [b for n in tree.find(q) if (b := tree.hittable_box(n, self.viewport))]
        return hits[q.nth] if q.nth < len(hits) else None

    def click_node(self, tree: AtspiTree, q: NodeQuery, double: bool = False) -> None:
        box = self.box(tree, q)
        if box is None:
            raise EnvironmentFault(f"{self.app_name}: {q} not on screen")
        x, y = box.center
        self.x11.click(int(x), int(y), repeat=2 if double else 1)

    def settle(self, before: str | None = None) -> tuple[float, bool]:
        return self.x11.settle(
            self.viewport,
            quiet_s=self.settle_quiet_s,
            timeout_s=self.settle_timeout_s,
            before=before,
            alive=self.alive(),
        )

    def close(self) -> None:
        if self._atspi is not None:
            self._atspi.close()
            self._atspi = None
        self._cache.clear()

    # -- the Environment contract ------------------------------------------------------------
    def observe(self) -> Observation:
        self.alive()
        shot = self.x11.screenshot(self.viewport)
        title = self.x11.window_title(self.window) if self.window else None
        obs = Observation(shot.png, shot.width, shot.height, title=title)
        self.last_shown = (shot.digest, obs)
        return obs

    def still_shown(self) -> Observation | None:
        """The last observation when the screen still shows exactly it (a digest of the
        screen, no PNG encoding), else None."""
        if self.last_shown is None:
            return None
        digest, obs = self.last_shown
        return obs if self.x11.digest(self.viewport) == digest else None

    def act(self, action: actions.LiveAction) -> ActResult:
        self.alive()
        self._cache.clear()
        before = self.x11.digest(self.viewport)
        match action:
            case actions.Click(x, y, button, double):
                self.x11.click(
                    round(x), round(y), 3 if button == "right" else 1, 2 if double else 1
                )
            case actions.Drag(x1, y1, x2, y2):
                self.x11.drag(round(x1), round(y1), round(x2), round(y2))
            case actions.Scroll(x, y, dy):
                self.x11.scroll(round(x), round(y), dy)
            case actions.TypeText(text):
                self.x11.type_text(text)
            case actions.Key(key):
                self.x11.key(key)
            case actions.Done() | actions.Infeasible():
                return ActResult(0.0, False)
        settle_s, changed = self.settle(before)
        return ActResult(settle_s, changed)

    def locate(self, locator: Locator) -> PixelBox | None:
        self.alive()
        keys = locator.keys() - {"at"}
        if not keys and locator.at is not None:
            return PixelBox(0, 0, *self.viewport).at(*locator.at)
        q = NodeQuery(
            locator.role, locator.text, locator.contains, locator.description, locator.nth
        )
        box = self.box(self.cached_tree(False), q)
        if box is None or locator.at is None:
            return box
        return box.at(*locator.at)

    def element_at(self, x: float, y: float) -> ElementInfo | None:
        self.alive()
        tree = self.cached_tree(False)
        n = tree.hit(x, y, self.viewport)
        return None if n is None else tree.element(n)
