"""The AT-SPI accessible tree of an X11 session's applications, read through Debian's system
Python (which has `pyatspi`; the project's interpreter usually has not): `atspi_dump.py` runs
as a subprocess of `/usr/bin/python3` with the session's DISPLAY and D-Bus address, prints
JSON, and this module parses it into frozen dataclasses and answers locators and hit tests.

Boxes are screen pixels; with the application's window at (0, 0) they are screenshot pixels.
Hit testing follows Swing's z-order: a later top-level window (a dialog) is above an earlier
one, and among overlapping siblings the FIRST is on top (JLayeredPane puts popups first).
Widgets inside a scrolled parent still report "showing": their boxes are clipped to every
enclosing viewport / scroll pane.
"""

from __future__ import annotations

import json
import logging
import os
import select
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from medspot.live.core import processes
from medspot.live.core.contract import ElementInfo, EnvironmentFault, PixelBox

__all__ = [
    "DUMP_SCRIPT",
    "SYSTEM_PYTHON",
    "AtspiClient",
    "AtspiNode",
    "AtspiTree",
    "NodeQuery",
    "NodeState",
    "atspi_available",
    "state_diff",
]

SYSTEM_PYTHON = "/usr/bin/python3"
DUMP_SCRIPT = Path(__file__).with_name("atspi_dump.py")
_CLIPPERS = frozenset({"viewport", "scroll pane"})
log = logging.getLogger(__name__)


def atspi_available(python: str = SYSTEM_PYTHON) -> bool:
    """Whether `python` can import pyatspi (the Debian package python3-pyatspi)."""
    if not os.path.exists(python):
        return False
    try:
        out = processes.run(
            [python, "-c", "import pyatspi"], capture_output=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0


@dataclass(frozen=True, slots=True)
class AtspiNode:
    index: int
    path: tuple[int, ...]  # child indices from the desktop: (app, window, ...)
    parent: int  # index of the parent node, -1 for a top-level window
    role: str  # AT-SPI role name, e.g. "push button", "page tab", "text"
    name: str
    description: str  # Java: the tooltip of an icon button
    states: frozenset[str]  # "showing", "checked", "selected", "focused", "editable", ...
    box: tuple[int, int, int, int]  # x, y, width, height (screen)
    text: str | None  # the Text interface's content, where readable
    value: float | None
    app: str

    @property
    def key(self) -> str:
        return "/".join(str(i) for i in self.path)

    @property
    def label(self) -> str:
        """What a person would call it: name, else description, else its text."""
        return (self.name or self.description or (self.text or "")).strip()


@dataclass(frozen=True, slots=True)
class NodeQuery:
    """Which node(s): the desktop meaning of a task `Locator` (and of a check's parameters)."""

    role: str | None = None
    text: str | None = None  # exact name after trimming (or description when name is empty)
    contains: str | None = None  # substring of name / description / text content
    description: str | None = None  # exact description (Java tooltip)
    nth: int = 0

    def matches(self, n: AtspiNode) -> bool:
        if self.role is not None and n.role != self.role:
            return False
        name = n.name.strip()
        if self.text is not None and self.text.strip() not in (name, n.description.strip()):
            return False
        if self.description is not None and n.description.strip() != self.description.strip():
            return False
        if self.contains is not None:
            hay = " ".join((n.name, n.description, n.text or ""))
            if self.contains not in hay:
                return False
        return True


def _parse(doc: Any) -> tuple[AtspiNode, ...]:
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), list):
        raise EnvironmentFault("atspi_dump: unexpected output")
    out: list[AtspiNode] = []
    for i, d in enumerate(doc["nodes"]):
        box = d.get("box") or [0, 0, 0, 0]
        text, value = d.get("text"), d.get("value")
        out.append(
            AtspiNode(
                index=i,
                path=tuple(int(p) for p in str(d.get("path", "")).split("/") if p),
                parent=int(d.get("parent", -1)),
                role=str(d.get("role", "")),
                name=str(d.get("name") or ""),
                description=str(d.get("description") or ""),
                states=frozenset(str(s) for s in d.get("states") or ()),
                box=(int(box[0]), int(box[1]), int(box[2]), int(box[3])),
                text=None if text is None else str(text),
                value=None if value is None else float(value),
                app=str(d.get("app") or ""),
            )
        )
    return tuple(out)


# What `AtspiTree.state()` leaves out: where the keyboard focus is (it follows the last click)
VOLATILE_STATES = frozenset({"focused"})


@dataclass(frozen=True, slots=True)
class NodeState:
    """What can be observed of one node: everything but its focus (and boxes of hidden nodes,
    which are stale)."""

    role: str
    name: str
    description: str
    states: tuple[str, ...]
    text: str | None
    value: float | None
    box: tuple[int, int, int, int] | None


def state_diff(a: Mapping[str, NodeState], b: Mapping[str, NodeState]) -> list[str]:
    """The node keys (paths) whose observable state differs between two trees' states."""
    return [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


class AtspiClient:
    """A long-lived `atspi_dump.py --serve` (one per X11 session): a dump costs only the
    D-Bus round trips, not the interpreter and pyatspi start-up (~0.3-1 s on a busy machine).
    It is marked and recorded in `folder` (`medspot.live.core.processes`)."""

    def __init__(self, env: Mapping[str, str], folder: Path, python: str = SYSTEM_PYTHON) -> None:
        self._env = dict(env)
        self._folder = Path(folder)
        self._python = python
        self._proc: subprocess.Popen[bytes] | None = None
        self._buf = b""

    def _ensure(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            try:
                self._proc = processes.popen(
                    [self._python, str(DUMP_SCRIPT), "--serve"],
                    self._folder,
                    env=self._env,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                )
            except OSError as exc:
                raise EnvironmentFault(f"cannot run {self._python}: {exc.strerror}") from None
            self._buf = b""
        return self._proc

    def dump(
        self,
        app: str = "",
        *,
        showing_only: bool = False,
        skip_tabs: tuple[str, ...] = (),
        timeout: float = 20.0,
    ) -> AtspiTree:
        """The tree of the apps named like `app`; `showing_only`: without hidden insides;
        `skip_tabs`: without the insides of those page tabs while they are hidden."""
        proc = self._ensure()
        assert proc.stdin is not None and proc.stdout is not None
        req = json.dumps({"app": app, "showing": showing_only, "skip_tabs": list(skip_tabs)})
        req += "\n"
        try:
            proc.stdin.write(req.encode())
            proc.stdin.flush()
        except OSError:
            self.close()
            raise EnvironmentFault("the AT-SPI reader died") from None
        deadline = time.monotonic() + timeout
        fd = proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(0.0, left))
            if not ready:
                self.close()
                raise EnvironmentFault(f"AT-SPI tree dump did not answer within {timeout:.0f} s")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                self.close()
                raise EnvironmentFault("the AT-SPI reader exited")
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            raise EnvironmentFault("AT-SPI tree dump printed no JSON") from None
        if isinstance(doc, dict) and "error" in doc:
            raise EnvironmentFault(f"AT-SPI tree dump failed: {doc['error']}")
        return AtspiTree(_parse(doc))

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                log.warning("the AT-SPI reader (pid %d) did not exit after SIGKILL", proc.pid)


def _intersect(
    a: tuple[int, int, int, int], b: tuple[int, int, int, int]
) -> tuple[int, int, int, int]:
    x1, y1 = max(a[0], b[0]), max(a[1], b[1])
    x2, y2 = min(a[0] + a[2], b[0] + b[2]), min(a[1] + a[3], b[1] + b[3])
    return (x1, y1, max(0, x2 - x1), max(0, y2 - y1))


def _on_top(a: AtspiNode, b: AtspiNode) -> bool:
    """Whether `a` is drawn above `b` (both contain the point)."""
    pa, pb = a.path, b.path
    for i, (x, y) in enumerate(zip(pa, pb, strict=False)):
        if x != y:
            # top-level windows of an app: later above; inside a window: first sibling above
            return x > y if i <= 1 else x < y
    return len(pa) > len(pb)  # the deeper node (a descendant) is the one hit


@dataclass(frozen=True)
class AtspiTree:
    nodes: tuple[AtspiNode, ...]

    @cached_property
    def _visible(self) -> dict[int, tuple[int, int, int, int]]:
        """Clipped boxes of the nodes that are showing (and all their ancestors too)."""
        out: dict[int, tuple[int, int, int, int]] = {}
        shown: set[int] = set()
        for n in self.nodes:  # pre-order: a parent comes before its children
            if "showing" not in n.states or (n.parent >= 0 and n.parent not in shown):
                continue  # hidden, or an ancestor is (a frame may have no box: not hidden)
            shown.add(n.index)
            if n.box[2] <= 0 or n.box[3] <= 0:
                continue
            box = n.box
            p = n.parent
            while p >= 0:
                if self.nodes[p].role in _CLIPPERS:
                    box = _intersect(box, self.nodes[p].box)
                p = self.nodes[p].parent
            out[n.index] = box
        return out

    def visible_box(self, n: AtspiNode) -> tuple[int, int, int, int] | None:
        box = self._visible.get(n.index)
        return box if box is not None and box[2] > 0 and box[3] > 0 else None

    def find(self, q: NodeQuery, *, visible_only: bool = True) -> list[AtspiNode]:
        pool: Iterable[AtspiNode] = self.nodes
        if visible_only:
            pool = (n for n in self.nodes if self.visible_box(n) is not None)
        return [n for n in pool if q.matches(n)]

    def is_ancestor(self, a: AtspiNode, b: AtspiNode) -> bool:
        """Whether `a` is `b` or one of its ancestors."""
        return b.path[: len(a.path)] == a.path

    def hit(self, x: float, y: float, viewport: tuple[int, int] | None = None) -> AtspiNode | None:
        """The node a click at (x, y) lands on."""
        if viewport is not None and not (0 <= x < viewport[0] and 0 <= y < viewport[1]):
            return None
        best: AtspiNode | None = None
        for idx, (bx, by, bw, bh) in self._visible.items():
            if bw <= 0 or bh <= 0 or not (bx <= x < bx + bw and by <= y < by + bh):
                continue
            n = self.nodes[idx]
            if n.role == "filler":
                continue
            if best is None or _on_top(n, best):
                best = n
        return best

    def hittable_box(self, n: AtspiNode, viewport: tuple[int, int]) -> PixelBox | None:
        """The node's visible box, if a click at its centre lands on it (or inside it)."""
        box = self.visible_box(n)
        if box is None:
            return None
        x, y, w, h = box
        x2, y2 = min(x + w, viewport[0]), min(y + h, viewport[1])
        x, y = max(x, 0), max(y, 0)
        if x2 <= x or y2 <= y:
            return None
        pb = PixelBox(float(x), float(y), float(x2), float(y2))
        top = self.hit(*pb.center, viewport)
        if top is None or not self.is_ancestor(n, top):
            return None
        return pb

    def state(self) -> dict[str, NodeState]:
        """The observable state of every node, by key (what a reset must restore)."""
        return {
            n.key: NodeState(
                n.role,
                n.name,
                n.description,
                tuple(sorted(n.states - VOLATILE_STATES)),
                n.text,
                n.value,
                n.box if self.visible_box(n) is not None else None,
            )
            for n in self.nodes
        }

    def element(self, n: AtspiNode) -> ElementInfo:
        x, y, w, h = self.visible_box(n) or n.box
        return ElementInfo(n.key, n.role, n.label[:200], PixelBox(x, y, x + w, y + h))
