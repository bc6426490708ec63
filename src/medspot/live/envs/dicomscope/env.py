"""The `dicomscope` live environment: OFFIS DICOMscope 3.6 (one of MedSPOT's ten applications)
under a private Xvfb, its widgets read through AT-SPI (the Java ATK wrapper).

Start: the seeded studies (`medspot.live.services.seed`) are copied into a private dcmtk database
in the workdir and registered with `dcmqridx`; a private `DICOMscope.cfg` (read from the working
directory) points DICOMscope at it; DICOMscope runs as `java ... dicomscope.DICOMscope` with the
ATK wrapper on its class path.

Reset. DICOMscope's viewer keeps its modes (Invert, Flip, Magnify, Filled, ...) across image
loads and tabs, and cannot close an image; a fresh image gets a fresh presentation state (zoom,
window, LUT, shutters). So: dismiss menus and dialogs, restore the database (its index, and
every seeded image file the last task deleted or wrote over: the Browser's Delete removes the
files), select the Browser tab, Refresh (the study tree collapses), then
- a task that starts on an image opens it from the tree and brings every mode widget of the
  viewer to its start value (`START_MODES`, what a fresh DICOMscope shows on an image);
- a task that starts in the Browser must find the state of a fresh DICOMscope: its accessible
  tree (every widget of every tab, `AtspiTree.state`) and its screen are compared with the ones
  recorded when DICOMscope was (re)started; when the viewer holds an image or anything else
  differs, DICOMscope is restarted (about 3 s instead of about 1 s). In a run, resets happen
  on the slot's spare instance while the task before runs (`SPARE`), so this restart is off
  the wait between tasks.
If a reset by the UI fails or its result is not the start state, DICOMscope is restarted. Every
reset ends with the pointer on a neutral spot (`NEUTRAL_POINT`), as after a start.

Task start: `{"file": "CT-DOE-JOHN/AXIAL/3"}` (study/series/slice, 1-based) opens that image
in the Viewer tab; without `file` the task starts on the Browser tab with the tree collapsed.
"""

from __future__ import annotations

import filecmp
import logging
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medspot.errors import DataError, Location
from medspot.live.core import processes
from medspot.live.core.actions import LiveAction
from medspot.live.core.contract import (
    ActResult,
    ElementInfo,
    EnvironmentFault,
    Observation,
    PixelBox,
    SparePlan,
)
from medspot.live.core.optionpaths import CachePath, ProgramPath
from medspot.live.drivers.atspi import AtspiNode, AtspiTree, NodeQuery, NodeState, state_diff
from medspot.live.drivers.atspi_checks import DESKTOP_KINDS
from medspot.live.drivers.desktop import DesktopDriver
from medspot.live.drivers.file_reads import FileReads
from medspot.live.drivers.x11 import CARET_PIXELS, KEY_TABLE, X11Session
from medspot.live.envs.dicomscope.checks import (
    VIEWER_KINDS,
    DatabaseState,
    FileSignature,
    ImageRef,
    ViewerState,
    file_signature,
    image_file_name,
    image_files,
    parse_file_ref,
    read_database_state,
    read_viewer_state,
    row_labels,
)
from medspot.live.envs.reset_clock import ResetClock

if TYPE_CHECKING:
    from medspot.live.core.tasks import CheckSpec, LiveTask, Locator

__all__ = ["CHECK_KINDS", "JARS", "LOCATOR_KEYS", "NAME", "PACKAGES", "DicomscopeEnv", "create"]

log = logging.getLogger(__name__)

NAME = "dicomscope"
JNI_DIR = "/usr/lib/x86_64-linux-gnu/jni"
JARS = ("/usr/share/java/DICOMscope.jar", "/usr/share/java/java-atk-wrapper.jar")
SYSTEM_CFG = Path("/etc/dcmtk/DICOMscope.cfg")
UNUSED_TABS = ("Print", "Process log", "About")  # no check reads inside them: not dumped
# The viewer's mode widgets (toggle buttons, radio buttons, check boxes of the Viewer tab, by
# label) as a fresh DICOMscope shows them on an image; a viewer start brings them back.
START_MODES: dict[str, bool] = {
    "Rectangular Shutter": False, "Circular Shutter": False, "Polygonal Shutter": False,
    "Bitmapped Shutter": False, "Flip": False, "Invert": False, "Presentation LUT": False,
    "Presentation State": True, "GSDF/CIE-lab": False, "Scale": True, "Magnify": False,
    "True Size": False, "Filled": False, "Image Relative": True,
}  # fmt: skip
MODE_ROLES = ("toggle button", "radio button", "check box")
STATUS_PANEL = "Info"  # its label logs the last event ("Ready.", "Loading 100%"): not state
NEUTRAL_POINT = (1270, 12)  # the empty end of the toolbar: no widget reacts to the pointer
LOCATOR_KEYS = ("role", "text", "contains", "description", "nth", "at")
CHECK_KINDS = DESKTOP_KINDS + VIEWER_KINDS
IMAGE_FILES = image_files()  # database file name -> STUDY/SERIES/SLICE
PACKAGES = (
    "xvfb", "xdotool", "x11-apps", "dbus", "dbus-x11", "at-spi2-core", "libatk-adaptor",
    "python3-pyatspi", "dicomscope", "dcmtk", "libatk-wrapper-java", "libatk-wrapper-java-jni",
    "default-jre-headless",
)  # fmt: skip


# A runner slot's spares (`SpareCapable`): two more DICOMscopes (each its Xvfb, bus, JVM, AT-SPI
# reader, database copy), each reset for one of the next two tasks while the current one runs
# (at two slots one spare's reset, ~3 s under load, outlasted most of the oracle's tasks);
# measured to pay on two cores (benchmarks/README.md section 9); memory: what one more
# instance adds to the run's processes (docs/live.md)
SPARE = SparePlan(default=True, memory_mb=170, count=2)


class DicomscopeEnv:
    name = "dicomscope"
    spare = SPARE
    key_table = KEY_TABLE  # the keys xdotool presses (X keysyms)

    def __init__(
        self,
        workdir: Path,
        *,
        viewport: tuple[int, int] = (1280, 800),
        java: ProgramPath = "java",
        seed_cache: CachePath | None = None,
        settle_quiet_s: float = 0.5,
        settle_timeout_s: float = 15.0,
        start_timeout_s: float = 90.0,
        reset_quiet_s: float = 0.25,
    ) -> None:
        self.workdir = Path(workdir)
        self.viewport = (int(viewport[0]), int(viewport[1]))
        self.java = java
        self.seed_cache = seed_cache
        self.settle_quiet_s = settle_quiet_s
        self.settle_timeout_s = settle_timeout_s
        self.start_timeout_s = start_timeout_s
        self.reset_quiet_s = reset_quiet_s
        self.x11 = X11Session(self.workdir / "x11", screen=self.viewport)
        self._app: subprocess.Popen[bytes] | None = None
        self._seed: Any = None
        self.desktop = DesktopDriver(
            self.x11, "DICOMscope", viewport=self.viewport, alive=self._alive,
            settle_quiet_s=settle_quiet_s, settle_timeout_s=settle_timeout_s,
            skip_tabs=UNUSED_TABS,
        )  # fmt: skip
        self.restarts = 0
        self.last_reset: dict[str, float] = {}
        self.reset_phases: dict[str, float] = {}  # the last reset's phases (`ResetClock`)
        self._clock = ResetClock()
        # the fresh Browser state, recorded at each (re)start: accessible tree and screen
        self._fresh: tuple[dict[str, NodeState], Any] | None = None
        # the seeded image files the running DICOMscope reads (watched from before its start),
        # the last one read (the image its viewer shows: `dicomscope.image`), and the image
        # canvas's size as last seen showing (the layout is fixed for a viewport)
        self._reads: FileReads | None = None
        self._image: str | None = None
        # the viewer's state as it last showed (`dicomscope.*` checks; kept while the Browser
        # tab hides the status line), read after every action and reset
        self._viewer_seen: ViewerState | None = None
        # the database's seeded image files: where each comes from (the seed), and its
        # signature at the task's start (`dicomscope.collateral_loss`; a reset restores them)
        self._db_sources: dict[str, Path] = {}
        self._db_start: dict[str, FileSignature] = {}

    # -- processes ---------------------------------------------------------------------------
    def start(self) -> None:
        for jar in JARS:
            if not os.path.exists(jar):
                raise EnvironmentFault(
                    f"{jar} missing (apt-get install dicomscope "
                    "libatk-wrapper-java libatk-wrapper-java-jni)"
                )
        self.workdir.mkdir(parents=True, exist_ok=True)
        processes.claim(self.workdir)
        processes.sweep(self.workdir.parent, keep=self.workdir)
        self._prepare_db()
        self.x11.start()
        self._launch()

    def _prepare_db(self) -> None:
        from medspot.live.services.seed import seed_files

        self._seed = seed_files(self.seed_cache)
        db = self.workdir / "db"
        db.mkdir(exist_ok=True)
        names: list[str] = []
        for p in self._seed.catalogue.patients:
            for s in p.studies:
                for se in s.series:
                    for k, uid in enumerate(se.instance_uids):
                        name = image_file_name(s.name, se.short, k + 1)
                        shutil.copyfile(self._seed.files[uid], db / name)
                        names.append(str(db / name))  # absolute: DICOMscope's cwd differs
                        self._db_sources[name] = Path(self._seed.files[uid])
        try:
            # registered as reviewed ("not new"): opening an image then leaves the index alone
            out = processes.run(
                ["dcmqridx", "--not-new", str(db), *names],
                capture_output=True, text=True, check=False, timeout=60,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise EnvironmentFault(f"dcmqridx failed: {exc}") from None
        if out.returncode != 0:
            raise EnvironmentFault(f"dcmqridx failed: {out.stderr.strip()[:300]}")
        shutil.copyfile(db / "index.dat", self.workdir / "index.dat.orig")
        self._db_start = {n: self._signature(db / n) for n in self._db_sources}
        cfg = SYSTEM_CFG.read_text(encoding="latin-1") if SYSTEM_CFG.exists() else ""
        if "[DATABASE]" not in cfg:
            raise EnvironmentFault(f"{SYSTEM_CFG} missing or unreadable (package dicomscope)")
        cfg = re.sub(r"(?m)^(\[DATABASE\][^\[]*?^Directory\s*=).*$", rf"\1 {db}", cfg)
        cfg = re.sub(r"(?m)^MessagePort\s*=.*$", "MessagePort = 0", cfg)
        (self.workdir / "DICOMscope.cfg").write_text(cfg, encoding="latin-1")

    def _launch(self) -> None:
        t0 = time.monotonic()
        argv = [
            self.java,
            "-Djavax.accessibility.assistive_technologies=org.GNOME.Accessibility.AtkWrapper",
            f"-Djava.library.path={JNI_DIR}",
            "-Xmx512m",
            "-cp",
            ":".join(JARS),
            "dicomscope.DICOMscope",
        ]
        self._watch_reads()  # before the start: every file it reads is seen
        self._app = self.x11.spawn(argv, log_name="dicomscope", cwd=self.workdir)
        self.desktop.window = self.x11.find_window("^DICOMscope", self.start_timeout_s, self._app)
        self.x11.place_window(self.desktop.window, self.viewport)
        deadline = time.monotonic() + self.start_timeout_s
        while True:
            tree = self.desktop.tree()
            if tree.find(NodeQuery(role="page tab", text="Browser")):
                break
            if time.monotonic() > deadline:
                raise EnvironmentFault("DICOMscope's widgets never appeared on AT-SPI")
            time.sleep(0.2)
        self.desktop.settle()
        # the Browser start as every reset leaves it (Refresh has the focus), then recorded
        self._to_browser(self.desktop.tree())
        self._neutral_pointer()
        self._fresh = self.observable_state()
        self.last_reset["launch_s"] = time.monotonic() - t0

    def _restart(self) -> None:
        self.restarts += 1
        with self._clock.phase("restart"):
            if self._app is not None:
                self.x11.stop(self._app)
            self._restore_db()
            self._launch()

    def _restore_db(self) -> None:
        """The seeded database back: each image file deleted or written since the task's start
        copied from the seed again (a stat per file: the files are not read, the image watch
        stays DICOMscope's), and the index, only when it changed: DICOMscope polls the file and
        announces a rewrite on its status line ("New Instances Arrived!")."""
        db = self.workdir / "db"
        for name, source in self._db_sources.items():
            if file_signature(db / name) != self._db_start.get(name):
                shutil.copyfile(source, db / name)
                self._db_start[name] = self._signature(db / name)
        orig, live = self.workdir / "index.dat.orig", db / "index.dat"
        if not live.exists() or not filecmp.cmp(orig, live, shallow=False):
            shutil.copyfile(orig, live)

    @staticmethod
    def _signature(path: Path) -> FileSignature:
        sig = file_signature(path)
        if sig is None:
            raise EnvironmentFault(f"{path} vanished as it was written")
        return sig

    def database_state(self) -> DatabaseState:
        """The seeded images deleted or written since the task's start
        (`dicomscope.collateral_loss`)."""
        return read_database_state(self.workdir / "db", self._db_start)

    def observable_state(self) -> tuple[dict[str, NodeState], Any]:
        """What a reset must restore: the state of every widget of every tab (`AtspiTree.state`)
        and the screen (an RGB array), both without the status line (`STATUS_PANEL`)."""
        import numpy as np

        tree = self.desktop.tree(full=True)
        raw, w, h, _ = self.x11.frame(self.viewport)
        frame = np.frombuffer(raw, np.uint8).reshape(h, w, 3).copy()
        state = tree.state()
        for panel in tree.find(NodeQuery(role="panel", text=STATUS_PANEL), visible_only=False):
            for n in tree.nodes:
                if n.parent == panel.index:
                    state.pop(n.key, None)
            x, y, bw, bh = panel.box  # the label's box follows its text: the whole panel
            frame[max(y, 0) : max(y + bh, 0), max(x, 0) : max(x + bw, 0)] = 0
        return state, frame

    def _watch_reads(self) -> None:
        """A new watch of the database folder (a new DICOMscope has shown no image yet)."""
        if self._reads is not None:
            self._reads.close()
        self._reads = FileReads(self.workdir / "db")
        self._image = None
        self._viewer_seen = None

    def _drain_reads(self) -> None:
        """The image shown: the last seeded image file read (`dicomscope.image`)."""
        if self._reads is None:
            raise EnvironmentFault("dicomscope environment not started")
        for name in self._reads.drain():
            self._image = IMAGE_FILES.get(name, self._image)
        if self._reads.overflowed:
            raise EnvironmentFault("lost track of the files DICOMscope read (inotify overflow)")

    def _alive(self) -> subprocess.Popen[bytes]:
        if self._app is None:
            raise EnvironmentFault("dicomscope environment not started")
        if self._app.poll() is not None:
            raise EnvironmentFault(f"DICOMscope exited (status {self._app.returncode})")
        if not self.x11.alive():
            raise EnvironmentFault("the X server died")
        return self._app

    def close(self) -> None:
        self.desktop.close()
        if self._app is not None:
            self.x11.stop(self._app)
            self._app = None
        self.x11.close()
        if self._reads is not None:
            self._reads.close()
            self._reads = None
        processes.stop_folder(self.workdir)

    # -- reset -------------------------------------------------------------------------------
    def reset(self, task: LiveTask) -> Observation:
        ref = (
            parse_file_ref(task.start.file, Location(task.id, field="start.file"))
            if task.start.file
            else None
        )
        vp = (int(task.start.viewport[0]), int(task.start.viewport[1]))
        if vp != self.viewport:
            raise DataError(
                f"viewport {vp} differs from the environment's {self.viewport}",
                Location(task.id, field="start.viewport"),
            )
        t0 = time.monotonic()
        self._clock = clock = ResetClock()
        self._alive()
        self.desktop.forget()
        try:
            self._reset_ui(ref)
        except EnvironmentFault as exc:
            log.info("dicomscope reset by UI failed (%s): restarting", exc)
            self._restart()
            self._reset_ui(ref)
        self.desktop.forget()
        self._viewer_seen = None  # a reset's start: what shows now
        self._note_viewer()
        self.last_reset["reset_s"] = time.monotonic() - t0
        with clock.phase("observe"):
            obs = self.observe()
        self.reset_phases = clock.done()
        return obs

    def swap_in(self, task: LiveTask) -> Observation:
        """Reset for `task` as a spare (`SPARE`): still alive, the start screen now (the
        reset's own observation while the screen still shows exactly it: a digest, no PNG)."""
        self._alive()
        return self.desktop.still_shown() or self.observe()

    def _wait(self, pred: Callable[[AtspiTree], bool], what: str) -> AtspiTree:
        """Poll the (showing) tree until `pred` holds; EnvironmentFault after the timeout."""
        deadline = time.monotonic() + self.settle_timeout_s
        while True:
            tree = self.desktop.tree()
            if pred(tree):
                return tree
            if time.monotonic() > deadline:
                raise EnvironmentFault(f"reset: {what} (after {self.settle_timeout_s:.0f} s)")
            time.sleep(0.03)  # a read of the showing tree itself takes ~0.1 s

    @staticmethod
    def _has(q: NodeQuery, state: str) -> Callable[[AtspiTree], bool]:
        return lambda t: any(state in n.states for n in t.find(q))

    def _reset_ui(self, ref: ImageRef | None) -> None:
        clock = self._clock
        with clock.phase("read_tree"):
            # the whole tree (hidden tabs too, ~5x slower) only to judge a Browser start
            tree = self.desktop.tree(full=ref is None)
        if ref is None and self._viewer_used(tree):
            log.debug("dicomscope: the viewer holds an image; a fresh one for a browser start")
            self._restart()
            return
        with clock.phase("dismiss"):
            if self._extra_windows(tree) or tree.find(NodeQuery(role="popup menu")):
                tree = self._dismiss(tree)
            self._restore_db()
        with clock.phase("browser"):
            tree = self._to_browser(tree)
        if ref is None:
            with clock.phase("pointer"):
                self._neutral_pointer()
            with clock.phase("fresh_check"):
                self._expect_fresh()
            return
        with clock.phase("open"):
            self._open(tree, ref)
        with clock.phase("modes"):
            tree = self._restore_modes()
        with clock.phase("focus"):
            # the keyboard focus (a visible ring) on the Viewer tab, wherever the last click was
            self.desktop.click_node(tree, NodeQuery(role="page tab", text="Viewer"))
        with clock.phase("pointer"):
            self._neutral_pointer()

    def _to_browser(self, tree: AtspiTree) -> AtspiTree:
        """The Browser tab, refreshed: the study tree collapsed."""
        browser = NodeQuery(role="page tab", text="Browser")
        if not self._has(browser, "selected")(tree):
            self.desktop.click_node(tree, browser)
            tree = self._wait(self._has(browser, "selected"), "the Browser tab did not open")
        self.desktop.click_node(tree, NodeQuery(role="push button", description="Refresh"))
        studies = NodeQuery(role="label", contains="Study ")
        return self._wait(
            lambda t: bool(t.find(studies)) and not self._has(studies, "expanded")(t),
            "the study tree did not collapse",
        )

    def _dismiss(self, tree: AtspiTree) -> AtspiTree:
        """Close popup menus and dialogs (Cancel where there is one, then Escape)."""
        cancel = NodeQuery(role="push button", text="Cancel")
        if self.desktop.box(tree, cancel) is not None:
            self.desktop.click_node(tree, cancel)
            self.desktop.settle()
        self.x11.key("Escape")
        self.desktop.settle()
        tree = self.desktop.tree()
        if self._extra_windows(tree):
            raise EnvironmentFault("a dialog is still open")
        return tree

    def _open(self, tree: AtspiTree, ref: ImageRef) -> None:
        """Open image `ref` from the (collapsed) study tree into the Viewer."""
        study, series = self._labels(ref)
        self.desktop.click_node(tree, NodeQuery(text=study), double=True)
        tree = self._wait(self._has(NodeQuery(text=study), "expanded"), f"{study} did not open")
        self.desktop.click_node(tree, NodeQuery(text=series), double=True)
        tree = self._wait(
            lambda t: len(self._images(t, series)) >= ref.slice, f"{series} shows too few images"
        )
        box = tree.hittable_box(self._images(tree, series)[ref.slice - 1], self.viewport)
        if box is None:
            raise EnvironmentFault("reset: image row not clickable")
        self.x11.click(int(box.center[0]), int(box.center[1]), repeat=2)
        viewer = NodeQuery(role="page tab", text="Viewer")
        self._wait(
            lambda t: (
                self._has(viewer, "selected")(t) and bool(t.find(NodeQuery(description="Invert")))
            ),
            "the image did not open in the Viewer",
        )  # no settle here: the modes are waited for as states, the reset's end settles

    def _modes(self, tree: AtspiTree) -> dict[str, AtspiNode]:
        """The viewer's mode widgets on screen, by label."""
        return {
            n.label: n
            for n in tree.nodes
            if n.role in MODE_ROLES and n.label in START_MODES and tree.visible_box(n)
        }

    def _restore_modes(self) -> AtspiTree:
        """Every mode widget of the viewer to its `START_MODES` value (they outlive images);
        returns the tree read after."""
        tree = self.desktop.tree()
        clicks = [
            n
            for label, n in self._modes(tree).items()
            if ("checked" in n.states) != START_MODES[label]
            and not (n.role == "radio button" and not START_MODES[label])  # set by its peer
        ]
        for n in clicks:
            box = tree.hittable_box(n, self.viewport)
            if box is None:
                raise EnvironmentFault(f"reset: the mode {n.label!r} is not clickable")
            self.x11.click(int(box.center[0]), int(box.center[1]))
        if clicks:
            try:
                tree = self._wait(lambda t: not self._wrong_modes(t), "the modes did not change")
            except EnvironmentFault:
                tree = self.desktop.tree()
        wrong = self._wrong_modes(tree)
        if wrong or self._extra_windows(tree) or tree.find(NodeQuery(role="popup menu")):
            raise EnvironmentFault(f"reset: the viewer's modes stay changed: {wrong}")
        return tree

    def _wrong_modes(self, tree: AtspiTree) -> list[str]:
        """The mode widgets not at their `START_MODES` value (or not on screen)."""
        modes = self._modes(tree)
        return sorted(
            label for label, want in START_MODES.items()
            if label not in modes or ("checked" in modes[label].states) != want
        )  # fmt: skip

    def _viewer_used(self, tree: AtspiTree) -> bool:
        """Whether anything in the Viewer tab differs from the fresh state (an image is open)."""
        assert self._fresh is not None
        viewer = tree.find(NodeQuery(role="page tab", text="Viewer"), visible_only=False)
        if not viewer:
            return True
        root = viewer[0].key + "/"
        return any(k.startswith(root) for k in state_diff(self._fresh[0], tree.state()))

    @staticmethod
    def screen_diff(a: Any, b: Any) -> int:
        """How many pixels differ between two frames of `observable_state`."""
        import numpy as np

        if a.shape != b.shape:
            return int(a.size)
        return int(np.count_nonzero((a != b).any(axis=2)))

    def _expect_fresh(self) -> None:
        """The Browser start must look like a fresh DICOMscope: else restart."""
        assert self._fresh is not None
        fresh_state, fresh_frame = self._fresh
        state, frame = self.observable_state()
        differ = state_diff(fresh_state, state)
        pixels = self.screen_diff(fresh_frame, frame)
        if differ or pixels > CARET_PIXELS:
            log.info(
                "dicomscope: not the fresh browser state (%d widgets, %d pixels differ: %s); "
                "restarting", len(differ), pixels, differ[:5],
            )  # fmt: skip
            self._restart()

    def _neutral_pointer(self) -> None:
        """The pointer on `NEUTRAL_POINT`, then the screen settled (the reset's one settle: its
        quiet time is `reset_quiet_s`, with DICOMscope's CPU idle meanwhile)."""
        self.x11.move_pointer(*NEUTRAL_POINT)
        self.x11.settle(
            self.viewport, quiet_s=min(self.reset_quiet_s, self.settle_quiet_s),
            timeout_s=self.settle_timeout_s, alive=self._alive(),
        )  # fmt: skip

    def _images(self, tree: AtspiTree, series: str) -> list[AtspiNode]:
        return [n for n in tree.find(NodeQuery(role="label")) if self._in_series(tree, n, series)]

    def _labels(self, ref: ImageRef) -> tuple[str, str]:
        try:
            study, series = row_labels(self._seed.catalogue, ref.study, ref.series)
        except KeyError as exc:
            raise DataError(str(exc), Location("start.file")) from None
        assert series is not None
        return study, series

    @staticmethod
    def _in_series(tree: AtspiTree, n: AtspiNode, series_label: str) -> bool:
        return n.parent >= 0 and tree.nodes[n.parent].name.strip() == series_label

    @staticmethod
    def _extra_windows(tree: AtspiTree) -> list[AtspiNode]:
        return [
            n for n in tree.nodes if n.parent == -1 and n.path[1:] != (0,) and "showing" in n.states
        ]

    # -- the Environment protocol (the desktop driver's, but for the checks) -----------------
    def observe(self) -> Observation:
        return self.desktop.observe()

    def act(self, action: LiveAction) -> ActResult:
        result = self.desktop.act(action)
        self._note_viewer()  # the showing tree, read here, serves the next locate too
        return result

    def locate(self, locator: Locator) -> PixelBox | None:
        return self.desktop.locate(locator)

    def element_at(self, x: float, y: float) -> ElementInfo | None:
        return self.desktop.element_at(x, y)

    def check(self, spec: CheckSpec) -> bool:
        """Read the state the kind judges (the whole AT-SPI tree; the window titles; the
        viewer's state), then judge it (`drivers.atspi_checks`, `envs.dicomscope.checks`)."""
        self._alive()
        readers = {"atspi": self._tree_state, "window": self._titles, "dicomscope": self._viewer,
                   "dicomscope_db": lambda _p: self.database_state()}  # fmt: skip
        return CHECK_KINDS.evaluate(spec, readers)

    def _tree_state(self, _params: object) -> AtspiTree:
        return self.desktop.cached_tree(True)

    def _viewer(self, _params: object) -> ViewerState:
        return self._note_viewer()

    def _note_viewer(self) -> ViewerState:
        """The viewer's state now (what the status line does not show, as it last showed)."""
        self._drain_reads()
        state = read_viewer_state(self.desktop.cached_tree(False), self._image, self._viewer_seen)
        self._viewer_seen = state
        return state

    def _titles(self, _params: object) -> tuple[str, ...]:
        tree = self.desktop.cached_tree(True)
        titles = [n.name for n in tree.nodes if n.parent == -1 and "showing" in n.states]
        if self.desktop.window is not None:
            titles.append(self.x11.window_title(self.desktop.window))
        return tuple(titles)


def create(workdir: Path, **options: Any) -> DicomscopeEnv:
    return DicomscopeEnv(workdir, **options)
