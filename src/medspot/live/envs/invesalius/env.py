"""The `invesalius` live environment: InVesalius 3.1 (Debian's `invesalius`), a clinical 3D
segmentation workstation (wxPython + VTK), under a private Xvfb, driven by pixels; its state
read from inside the application by the probe (`probe.py`), the segmentations judged against
the phantoms' true masks (`phantoms.py`, `checks.py`).

Start: the phantoms are written once into the cache as DICOM series; one InVesalius is started
(`instance.py`: its own X server, session bus, HOME with the interface language written) and
imports the default study once, closes it, and records that fresh state.

Reset, in the running application through the probe: GTK's own dialogs and menus closed
(Escape), the application's own dialogs closed, the project closed without saving, the
application's settings (fold panels, tabs, the editing tools' settings, menus, toolbars, the
session) brought back to the fresh state; when anything still differs (`ui_diff`) InVesalius
is replaced (a spare one once a restart has been needed, else a new one). Then the export folder
is emptied (and the start's files put there), the task's study imported and the start's masks,
surfaces, slices, window and layout made; the pointer rests on `NEUTRAL_POINT`.

Locators: the desktop ones (`role`, `text`, `contains`, `description`, `nth`, `at`) over the
AT-SPI tree with wx's own elements added (`widgets.py`), and `landmark` (`VIEW:STRUCTURE[.PART]`,
`geometry.py`): a point of a structure on the slice a view shows.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import shutil
import subprocess
import time
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np

from medspot.errors import DataError, Location
from medspot.live.core import processes
from medspot.live.core.actions import Click, Key, LiveAction, TypeText
from medspot.live.core.contract import (
    ActResult,
    ElementInfo,
    EnvironmentFault,
    Observation,
    PixelBox,
    SparePlan,
)
from medspot.live.core.optionpaths import CachePath, Folder, Program
from medspot.live.drivers.atspi import AtspiTree, NodeQuery
from medspot.live.drivers.atspi_checks import DESKTOP_KINDS
from medspot.live.drivers.x11 import KEY_TABLE
from medspot.live.envs.invesalius.checks import (
    INV_KINDS,
    DiceParams,
    ExportSnapshot,
    MaskReading,
    mask_dice,
)
from medspot.live.envs.invesalius.collateral import (
    COLLATERAL_KINDS,
    StartObjects,
    read_collateral_state,
)
from medspot.live.envs.invesalius.files import read_export
from medspot.live.envs.invesalius.geometry import (
    landmark_plane_point,
    parse_landmark,
    to_phantom,
)
from medspot.live.envs.invesalius.instance import (
    APP_NAME,
    INVESALIUS_DIR,
    InvInstance,
    SpareSeat,
    retire,
)
from medspot.live.envs.invesalius.phantoms import phantom_files
from medspot.live.envs.invesalius.probe_client import ProbeBusy
from medspot.live.envs.invesalius.regions import PhantomGeometry
from medspot.live.envs.invesalius.start import DEFAULT_VOLUME, InvStart, parse_start
from medspot.live.envs.invesalius.state import InvState, MaskVoxels
from medspot.live.envs.invesalius.widgets import merge_widgets
from medspot.live.envs.reset_clock import ResetClock

if TYPE_CHECKING:
    from medspot.live.core.tasks import CheckSpec, LiveTask, Locator

__all__ = ["CHECK_KINDS", "InvesaliusEnv", "create", "doctor", "task_check", "task_geometry"]

log = logging.getLogger(__name__)

NAME = "invesalius"
CHECK_KINDS = INV_KINDS + COLLATERAL_KINDS + DESKTOP_KINDS
LOCATOR_KEYS = ("role", "text", "contains", "description", "nth", "at", "landmark")
PACKAGES = (
    "xvfb", "xdotool", "x11-apps", "dbus", "dbus-x11", "at-spi2-core", "libatk-adaptor",
    "python3-pyatspi", "imagemagick", "invesalius",
)  # fmt: skip
# what InVesalius imports from the Python it runs on (`python`, checked before a run starts)
APP_MODULES = ("wx", "vtkmodules", "numpy", "gdcm")
InvPython = Annotated[str, Program(imports=APP_MODULES)]
InvDir = Annotated[Path, Folder(holds=("app.py",))]
NEUTRAL_POINT = (1270, 12)  # the empty end of the menu bar: nothing reacts to the pointer
ESCAPES = 5  # Escape presses at most, to close GTK's dialogs and menus before a reset


# A runner slot's spare (`SpareCapable`): a second InVesalius (its Xvfb, bus, AT-SPI reader and
# probe), reset for the next task while the current one runs; memory: what one more instance
# adds to the run's processes (docs/live.md)
SPARE = SparePlan(default=True, memory_mb=340)


class _NeedsRestart(Exception):
    """The reset in the running InVesalius left something different from the fresh state."""


class InvesaliusEnv:
    name = NAME
    key_table = KEY_TABLE  # the keys xdotool presses (X keysyms), as DesktopDriver's
    spare = SPARE

    def __init__(
        self,
        workdir: Path,
        *,
        viewport: tuple[int, int] = (1280, 800),
        python: InvPython = "/usr/bin/python3",
        invesalius_dir: InvDir = INVESALIUS_DIR,
        phantom_cache: CachePath | None = None,
        settle_quiet_s: float = 0.4,
        settle_timeout_s: float = 60.0,
        start_timeout_s: float = 300.0,
        reset_quiet_s: float = 0.25,
        restart_spare: bool = True,
    ) -> None:
        self.workdir = Path(workdir)
        self.viewport = (int(viewport[0]), int(viewport[1]))
        self.python = python
        self.invesalius_dir = Path(invesalius_dir)
        self.phantom_cache = phantom_cache
        self.settle_quiet_s = settle_quiet_s
        self.settle_timeout_s = settle_timeout_s
        self.start_timeout_s = start_timeout_s
        self.reset_quiet_s = reset_quiet_s
        self.restart_spare = restart_spare  # after a first restart, one more kept started
        self.inst: InvInstance | None = None
        self._instances = 0
        self._seat: SpareSeat | None = None  # a spare InVesalius (after a first restart)
        self._active: SpareSeat | None = None  # the seat of the running one, if swapped in
        self.restarts = 0
        self.swaps = 0
        self.last_reset: dict[str, float] = {}
        self.reset_phases: dict[str, float] = {}
        self._clock = ResetClock()
        self._phantoms: Any = None
        self._start: InvStart | None = None
        self._loaded: tuple[str, int] | None = None  # (volume, image checksum) as imported
        self._cache: dict[str, Any] = {}
        self._acted_on: str | None = None  # the screen's digest when the last action ended
        self._seeded: dict[str, str] = {}  # export file -> sha256 the start put there
        self._start_objects = StartObjects()  # the start's masks and surfaces (names)
        self._focused: str | None = None  # the X window given the keyboard focus last

    # -- processes ---------------------------------------------------------------------------
    def _new_instance(self) -> InvInstance:
        self._instances += 1
        return InvInstance(
            self.workdir / f"inv-{self._instances}", viewport=self.viewport, python=self.python,
            invesalius_dir=self.invesalius_dir, start_timeout_s=self.start_timeout_s,
            settle_quiet_s=self.settle_quiet_s, settle_timeout_s=self.settle_timeout_s,
        )  # fmt: skip

    def _dicom(self, vol: str) -> Path:
        if self._phantoms is None:
            self._phantoms = phantom_files(self.phantom_cache)
        path: Path = self._phantoms.series_dir(vol)
        return path

    def start(self) -> None:
        if not (self.invesalius_dir / "app.py").exists():
            raise EnvironmentFault(f"{self.invesalius_dir}/app.py missing "
                                   "(apt-get install invesalius)")  # fmt: skip
        self.workdir.mkdir(parents=True, exist_ok=True)
        processes.claim(self.workdir)
        processes.sweep(self.workdir.parent, keep=self.workdir)
        self.inst = self._new_instance()
        self.inst.start(self._dicom(DEFAULT_VOLUME), DEFAULT_VOLUME)
        self.last_reset["launch_s"] = self.inst.launch_s

    def _alive(self) -> InvInstance:
        if self.inst is None:
            raise EnvironmentFault("invesalius environment not started")
        self.inst.alive()
        return self.inst

    def close(self) -> None:
        if self._seat is not None:
            self._seat.close()
            self._seat = None
        if self.inst is not None:
            self.inst.close()
            self.inst = None
        if self._active is not None:
            self._active.release()
            self._active = None
        processes.stop_folder(self.workdir)

    def _restart(self) -> None:
        """A new InVesalius instead of the running one: the spare when there is one (then a
        new spare), else one started now (and, with `restart_spare`, a spare for next time)."""
        with self._clock.phase("restart"):
            old, old_seat = self.inst, self._active
            self.inst, self._active = None, None
            seat, self._seat = self._seat, None
            twin = seat.ready(self.start_timeout_s) if seat is not None else None
            if twin is not None:
                self.inst, self._active = twin, seat
                self.swaps += 1
            else:
                if seat is not None:
                    seat.close()
                self.restarts += 1
                if old is not None:
                    old.close()
                    old = None
                inst = self._new_instance()
                inst.start(self._dicom(DEFAULT_VOLUME), DEFAULT_VOLUME)
                self.inst = inst
            if old is not None:
                retire(old, old_seat)
            if self.restart_spare:
                self._seat = SpareSeat(self._new_instance(), self._dicom(DEFAULT_VOLUME),
                                       DEFAULT_VOLUME)  # fmt: skip

    # -- reset -------------------------------------------------------------------------------
    def reset(self, task: LiveTask) -> Observation:
        vp = (int(task.start.viewport[0]), int(task.start.viewport[1]))
        if vp != self.viewport:
            raise DataError(f"viewport {vp} differs from the environment's {self.viewport}",
                            Location(task.id, field="start.viewport"))  # fmt: skip
        try:
            start = parse_start(task)
        except ValueError as exc:
            raise DataError(str(exc), Location(task.id, field="start")) from None
        t0 = time.monotonic()
        self._clock = clock = ResetClock()
        self._alive()
        try:
            self._reset_in(start)
        except _NeedsRestart as exc:
            log.info("invesalius: the reset left differences (%s); a fresh InVesalius", exc)
            self._restart()
            self._reset_in(start)
        except EnvironmentFault as exc:
            log.info("invesalius: reset failed (%s); a fresh InVesalius", exc)
            self._restart()
            self._reset_in(start)
        self.last_reset["reset_s"] = time.monotonic() - t0
        with clock.phase("observe"):
            obs = self.observe()
        self.reset_phases = clock.done()
        return obs

    def swap_in(self, task: LiveTask) -> Observation:
        """Reset for `task` as the slot's spare (`SPARE`): still alive, the start screen now
        (the reset's own observation while the screen still shows exactly it: a digest, no
        PNG)."""
        inst = self._alive()
        return inst.desktop.still_shown() or self.observe()

    def _reset_in(self, start: InvStart) -> None:
        inst = self._alive()
        clock = self._clock
        self._forget()
        deadline = time.monotonic() + self.settle_timeout_s
        with clock.phase("dismiss"):
            self._dismiss_native(inst)
            # the pointer off the views first: a view shown again under it when the study
            # loads would take the focus (the view the Go-to-slice dialog opens on)
            inst.x11.move_pointer(*NEUTRAL_POINT)
        with clock.phase("reset_ui"):
            inst.probe.wait("reset_ui", {"cwd": str(inst.exports)}, deadline, "reset")
            left = inst.probe.wait("ui_diff", {}, deadline, "reset")
        if left:
            raise _NeedsRestart(", ".join(left[:5]))
        with clock.phase("files"):
            self._seed_exports(inst, start)
        with clock.phase("load"):
            dicom = self._dicom(start.volume)
            inst.probe.wait("load_start", start.probe_args(str(dicom)), deadline, "loading")
        with clock.phase("idle"):
            state = self._wait_idle(inst, surfaces=len(start.surfaces))
            self._start_objects = StartObjects.from_probe(state)
            image = state.get("image") or {}
            self._loaded = (start.volume, int(image.get("checksum", -1)))
            self._start = start
        with clock.phase("pointer"):
            if inst.desktop.window:
                inst.x11.xdotool("windowfocus", "--sync", inst.desktop.window, timeout=5.0)
                self._focused = inst.desktop.window
            inst.x11.move_pointer(*NEUTRAL_POINT)
            inst.x11.settle(self.viewport, quiet_s=min(self.reset_quiet_s, self.settle_quiet_s),
                            timeout_s=self.settle_timeout_s, alive=inst.alive())  # fmt: skip
        self._forget()

    def _dismiss_native(self, inst: InvInstance) -> None:
        """Escape while a window other than the main one shows (GTK's message and file
        dialogs, menus, InVesalius's own dialogs)."""
        for _ in range(ESCAPES):
            tree = inst.desktop.tree()
            if not _extra_windows(tree) and not _menu_open(tree):
                return
            inst.x11.key("Escape")
            time.sleep(0.15)

    def _seed_exports(self, inst: InvInstance, start: InvStart) -> None:
        """The export folder emptied, the start's files put there; GTK's recent files
        forgotten."""
        import hashlib

        folder = inst.exports
        folder.mkdir(parents=True, exist_ok=True)
        for p in folder.iterdir():
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
        self._seeded = {}
        for name, text in start.files.items():
            data = text.encode()
            (folder / name).write_bytes(data)
            self._seeded[name] = hashlib.sha256(data).hexdigest()
        (inst.home / ".local" / "share" / "recently-used.xbel").unlink(missing_ok=True)

    def _wait_idle(self, inst: InvInstance, surfaces: int | None = None) -> dict[str, Any]:
        """The probe's state once InVesalius answers and is not busy (and holds `surfaces`
        surfaces when given: they are built in the background)."""
        deadline = time.monotonic() + self.settle_timeout_s
        while True:
            try:
                st: dict[str, Any] = inst.probe.call("state", {"voxels": False}, timeout=2.0)
            except ProbeBusy:
                st = {"busy": True}
            if not st.get("busy") and (surfaces is None or len(st.get("surfaces", [])) >= surfaces):
                return st
            if time.monotonic() > deadline:
                raise EnvironmentFault("InVesalius stayed busy")
            inst.alive()
            time.sleep(0.1)

    # -- the Environment protocol --------------------------------------------------------------
    def _forget(self) -> None:
        self._cache.clear()
        self._acted_on = None
        if self.inst is not None:
            self.inst.desktop.forget()

    def observe(self) -> Observation:
        inst = self._alive()
        acted_on, self._acted_on = self._acted_on, None
        if acted_on is not None and inst.x11.digest(self.viewport) != acted_on:
            # the screen changed after the action had settled (InVesalius finishes work such
            # as a surface in the background, then relays out its panels): what was read at
            # the action's end (the widgets' places, the state) is of an older screen
            inst.desktop.settle()
            self._forget()
        return inst.desktop.observe()

    def act(self, action: LiveAction) -> ActResult:
        inst = self._alive()
        submenu = None
        if isinstance(action, Click):
            before = self._tree(False)
            hit = before.hit(action.x, action.y, self.viewport)
            if (
                hit is not None
                and hit.role == "menu"
                and hit.parent >= 0
                and (before.nodes[hit.parent].role in ("menu", "popup menu", "window"))
            ):
                submenu = hit.path  # an item that opens a submenu (not a menu bar title)
            # the pointer arrives from beside the target, as a hand moves it: GTK opens a
            # submenu only for a pointer that moved inside the item
            x, y = round(action.x), round(action.y)
            if inst.x11.pointer() != (x, y):
                inst.x11.move_pointer(max(0, x - 2), max(0, y - 1))
                time.sleep(0.12)
        if isinstance(action, (TypeText, Key)):
            self._focus_top(inst)  # a dialog that came up after the last action's settle
        self._forget()
        result = inst.desktop.act(action)
        if submenu is not None and isinstance(action, Click):
            self._open_submenu(inst, submenu, round(action.x), round(action.y))
        t0 = time.monotonic()
        self._wait_idle(inst)
        if time.monotonic() - t0 > 0.5:  # it was busy: the screen changes again after
            inst.desktop.settle()
        self._forget()
        settled = inst.x11.digest(self.viewport)  # the screen the reads from here on are of
        self._focus_top(inst)
        self._acted_on = settled
        return result

    def _open_submenu(self, inst: InvInstance, path: tuple[int, ...], x: int, y: int) -> None:
        """A click on an item that opens a submenu leaves it open, as it does under a window
        manager: GTK here sometimes opens it only for a pointer resting on the item, and
        does not open it again for a pointer moving inside an item it closed it for: then
        the Right key (which opens the selected item's submenu) does."""
        for k in range(12):  # up to about 4 s on a loaded machine
            self._forget()
            tree = self._tree(False)
            node = next((n for n in tree.nodes if n.path == path), None)
            if node is None or any(
                c.parent == node.index and tree.visible_box(c) is not None for c in tree.nodes
            ):
                return
            if k in (3, 7) and tree.visible_box(node) is not None:
                inst.x11.key("Right")
            else:
                inst.x11.move_pointer(x + (1 if k % 2 == 0 else 0), y)
            time.sleep(0.3)

    def _focus_top(self, inst: InvInstance) -> None:
        """The keyboard focus on the newest window, as a window manager gives it (there is
        none): the last dialog that shows, else the main window; left alone while a menu is
        open (it holds the keyboard)."""
        tree = self._tree(False)
        extra = _extra_windows(tree)
        if any(not n.name for n in extra):
            return
        wid = inst.desktop.window
        if extra:
            found = inst.x11.xdotool("search", "--onlyvisible", "--name",
                                     "^" + re.escape(extra[-1].name) + "$").split()  # fmt: skip
            wid = found[-1] if found else wid
        if wid and wid != self._focused:  # only when the newest window changed: focusing
            # the focused window again would reach GTK as focus events and close its menus
            inst.x11.xdotool("windowfocus", "--sync", wid, timeout=5.0)
            self._focused = wid

    def locate(self, locator: Locator) -> PixelBox | None:
        inst = self._alive()
        if locator.landmark is not None:
            return self._landmark(inst, locator.landmark)
        keys = locator.keys() - {"at"}
        if not keys and locator.at is not None:
            x, y = locator.at[0] * self.viewport[0], locator.at[1] * self.viewport[1]
            return PixelBox(x, y, x + 1, y + 1)
        tree = self._tree(False)
        q = NodeQuery(locator.role, locator.text, locator.contains, locator.description,
                      locator.nth)  # fmt: skip
        hits = [b for n in tree.find(q) if (b := tree.hittable_box(n, self.viewport))]
        box = hits[q.nth] if q.nth < len(hits) else None
        if box is None or locator.at is None:
            return box
        x = box.x1 + locator.at[0] * (box.x2 - box.x1)
        y = box.y1 + locator.at[1] * (box.y2 - box.y1)
        return PixelBox(x, y, x + 1, y + 1)

    def _landmark(self, inst: InvInstance, text: str) -> PixelBox | None:
        lm = parse_landmark(text)
        st = self._state()
        view = st.view(lm.view)
        if st.volume is None or view is None or not view.shown or view.slice is None:
            return None
        p = landmark_plane_point(st.volume, lm, view.slice)
        if p is None:
            return None
        (pt,) = inst.probe.call("view_points", {"view": lm.view, "points": [list(p)]})
        if pt is None:
            return None
        x, y = float(pt[0]), float(pt[1])
        bx, by, bw, bh = view.box
        if not (bx <= x < bx + bw and by <= y < by + bh):
            return None
        return PixelBox(x, y, x + 1, y + 1)

    def element_at(self, x: float, y: float) -> ElementInfo | None:
        tree = self._tree(False)
        n = tree.hit(x, y, self.viewport)
        return None if n is None else tree.element(n)

    def check(self, spec: CheckSpec) -> bool:
        self._alive()
        readers = {
            "inv": lambda _p: self._state(),
            "inv_voxels": self._voxels,
            "inv_files": self._files,
            "inv_collateral": lambda _p: read_collateral_state(
                self._alive().exports, self._seeded, self._start_objects, self._state()
            ),
            "inv_titles": lambda _p: self._titles(),
            "atspi": lambda _p: self._tree(True),
            "window": lambda _p: self._titles(include_main=True),
        }
        return CHECK_KINDS.evaluate(spec, readers, NAME)

    def task_quality(self, task: LiveTask) -> dict[str, float]:
        """The Dice with the truth of the mask the task is judged on (its first success check
        `inv.mask_dice` with a `min` and without `keep`), over the check's region; 0 when that
        mask is gone. Nothing for a task judged on no mask, or only on a mask it must leave as
        it was (`keep`: an infeasible task's, a cancelled dialog's)."""
        for spec in task.success:
            if spec.kind != "inv.mask_dice" or spec.keep:
                continue
            p = CHECK_KINDS.parse(spec, NAME)
            if not isinstance(p, DiceParams) or p.min is None:
                continue
            reading = self._voxels(p)
            vol = reading.voxels.volume
            masks = reading.voxels.masks
            if vol is None or not masks:
                return {"dice": 0.0}
            mask_arr = next(iter(masks.values()))
            slices = (p.slices[0], p.slices[1]) if p.slices is not None else None
            return {"dice": round(mask_dice(mask_arr, vol, p.structures, p.view, slices), 4)}
        return {}

    # -- readers (cached until the next action) ------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The probe's state now (masks with their voxel counts)."""
        raw = self._cache.get("state_dict")
        if raw is None:
            raw = self._cache["state_dict"] = self._alive().probe.call("state", {"voxels": True})
        out: dict[str, Any] = raw
        return out

    def _volume(self, raw: dict[str, Any]) -> str | None:
        image = raw.get("image") or {}
        if self._loaded is None or not (raw.get("project") or {}).get("open"):
            return None
        vol, checksum = self._loaded
        return vol if int(image.get("checksum", -2)) == checksum else None

    def _state(self) -> InvState:
        st = self._cache.get("state")
        if st is None:
            raw = self.state_dict()
            st = self._cache["state"] = InvState.from_probe(raw, self._volume(raw))
        assert isinstance(st, InvState)
        return st

    def mask_voxels(self, name: str) -> np.ndarray | None:
        """A mask's voxels (phantom order), None when there is no such mask."""
        key = "mask:" + name
        if key not in self._cache:
            st = self._state()
            if st.mask(name) is None:
                self._cache[key] = None
            else:
                got = self._alive().probe.call("mask", {"name": name})
                shape = tuple(got["shape"])
                raw = np.frombuffer(zlib.decompress(base64.b64decode(got["bits"])), np.uint8)
                vox = np.unpackbits(raw)[: int(np.prod(shape))].reshape(shape).astype(bool)
                self._cache[key] = np.ascontiguousarray(to_phantom(vox))
        out: np.ndarray | None = self._cache[key]
        return out

    def _voxels(self, p: Any) -> MaskReading:
        st = self._state()
        name = p.mask
        if getattr(p, "current", None):
            cur = st.current_mask()
            name = cur.name if cur is not None else None
        masks: dict[str, np.ndarray] = {}
        if name is not None:
            arr = self.mask_voxels(name)
            if arr is not None:
                masks[name] = arr
        return MaskReading(st, MaskVoxels(st.volume, masks))

    def _files(self, p: Any) -> ExportSnapshot:
        inst = self._alive()
        folder = inst.exports
        names = (
            tuple(sorted(x.name for x in folder.iterdir() if x.is_file()))
            if folder.is_dir()
            else ()
        )
        wanted = p.wanted(names)
        return ExportSnapshot(
            files={n: read_export(folder, n) for n in wanted},
            names=names, seeded=dict(self._seeded), volume=self._state().volume,
        )  # fmt: skip

    def _tree(self, full: bool) -> AtspiTree:
        key = f"tree:{full}"
        tree = self._cache.get(key)
        if tree is None:
            inst = self._alive()
            widgets = self._cache.get("widgets")
            if widgets is None:
                widgets = self._cache["widgets"] = inst.probe.call("widgets")
            tree = self._cache[key] = merge_widgets(inst.desktop.cached_tree(full), widgets,
                                                    APP_NAME)  # fmt: skip
        assert isinstance(tree, AtspiTree)
        return tree

    def _titles(self, include_main: bool = False) -> tuple[str, ...]:
        """The titles of the windows open besides the main one (InVesalius's dialogs, GTK's
        message boxes and file choosers); with `include_main`, the main window's too."""
        tree = self._tree(False)
        titles = [n.name for n in _extra_windows(tree)]
        titles += list(self._state().dialogs)
        if include_main:
            titles.append(self._state().title)
        return tuple(dict.fromkeys(t for t in titles if t))

    # -- for tests and benchmarks ----------------------------------------------------------------
    def observable_state(self) -> tuple[dict[str, Any], Any]:
        """What a reset must restore: the probe's state (without its clock) and the screen."""
        inst = self._alive()
        self._forget()
        st = dict(self.state_dict())
        st.pop("time", None)
        pixels, w, h, _ = inst.x11.frame(self.viewport)
        frame = np.frombuffer(pixels, np.uint8).reshape(h, w, 3).copy()
        return st, frame

    @property
    def exports(self) -> Path:
        return self._alive().exports


def _extra_windows(tree: AtspiTree) -> list[Any]:
    """Top-level windows of the application other than its main window (the first), that
    show."""
    return [n for n in tree.nodes if n.parent == -1 and n.path[1:] != (0,)
            and "showing" in n.states]  # fmt: skip


def _menu_open(tree: AtspiTree) -> bool:
    """A menu's or a combo box's popup shows (its items do: an item, or an item opening a
    submenu, whose parent is no menu bar)."""
    return any(
        "showing" in n.states
        and (n.role in _MENU_ITEMS or (n.role == "menu" and n.parent >= 0
                                       and tree.nodes[n.parent].role != "menu bar"))
        for n in tree.nodes
    )  # fmt: skip


_MENU_ITEMS = frozenset({"menu item", "check menu item", "radio menu item"})


def task_geometry(task: LiveTask) -> PhantomGeometry | None:
    """The phantom the task's start loads, the geometry its checks' regions are validated
    against (the registry's `geometry` hook: `CheckParams.geometry_problem`); None for a start
    that is not valid (`task_check` says why)."""
    try:
        return PhantomGeometry(parse_start(task).volume)
    except ValueError:
        return None


def task_check(task: LiveTask) -> list[tuple[str, str]]:
    """What `medspot live tasks --validate` finds wrong for this environment beyond its
    checks (whose structures, slices and landmarks `task_geometry` validates): the start keys,
    the structures of the steps' landmarks in the task's volume."""
    out: list[tuple[str, str]] = []
    if task.start.route is not None:
        out.append(("start.route", "invesalius has no routes"))
    if task.start.file is not None:
        out.append(("start.file", "invesalius starts from start.volume, not a file"))
    try:
        start = parse_start(task)
    except ValueError as exc:
        return [*out, ("start", str(exc))]
    vol = start.volume
    from medspot.live.envs.invesalius.names import unknown_structure

    steps = [(f"steps.{k}", s) for k, s in enumerate(task.steps)]
    steps += [(f"start.prepare.{k}", s) for k, s in enumerate(task.start.prepare)]
    for place, step in steps:
        for name, loc in (("target", step.target), ("to", step.to)):
            if loc is None or loc.landmark is None:
                continue
            try:
                lm = parse_landmark(loc.landmark)
            except ValueError as exc:
                out.append((f"{place}.{name}.landmark", str(exc)))
                continue
            why = unknown_structure(lm.structure, vol)
            if why:
                out.append((f"{place}.{name}.landmark", why))
    return out


def doctor() -> list[str]:
    """What `medspot live doctor --env invesalius` reports beyond the Debian packages."""
    from medspot.live.drivers.atspi import SYSTEM_PYTHON, atspi_available
    from medspot.live.drivers.x11 import missing_x11_tools

    problems = [f"{t} is not on PATH (apt-get install xvfb xdotool x11-apps dbus-x11)"
                for t in missing_x11_tools()]  # fmt: skip
    if shutil.which("import") is None:
        problems.append("import is not on PATH (apt-get install imagemagick)")
    if not (INVESALIUS_DIR / "app.py").exists():
        problems.append(f"{INVESALIUS_DIR}/app.py is missing (apt-get install invesalius)")
    elif not os.path.exists(SYSTEM_PYTHON):
        problems.append(f"{SYSTEM_PYTHON} is missing (InVesalius runs on Debian's Python)")
    else:
        try:
            out = processes.run(
                [SYSTEM_PYTHON, "-c", "import " + ", ".join(APP_MODULES)],
                capture_output=True, text=True, timeout=60, check=False,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as exc:
            problems.append(f"{SYSTEM_PYTHON} could not import InVesalius's modules ({exc})")
        else:
            if out.returncode != 0:
                why = out.stderr.strip()[-200:]
                problems.append(f"{SYSTEM_PYTHON} cannot import InVesalius's modules "
                                f"(apt-get install invesalius): {why}")  # fmt: skip
    if not atspi_available():
        problems.append(f"{SYSTEM_PYTHON} cannot import pyatspi (apt-get install python3-pyatspi)")
    return problems


def create(workdir: Path, **options: Any) -> InvesaliusEnv:
    return InvesaliusEnv(workdir, **options)
