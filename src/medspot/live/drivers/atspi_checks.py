"""Success checks of the X11 desktop environments, on application state read through AT-SPI
(never on a box). A check names its widget with the locator fields (`role`, `text`/`name`,
`contains`, `description`, `nth`) or `after_label` (the first text widget after the label
with that name, e.g. "c:"), matched over the WHOLE tree (hidden tabs included) unless
`showing: true` is given.

    {"kind": "atspi.text", "after_label": "Factor:", "number": 1.5, "tol": 0.01}
    {"kind": "atspi.text", "role": "text", "nth": 3, "includes": "rows = 256"}
    {"kind": "atspi.text", "contains": "c/w:", "equals": "c/w: 40.0/400.0"}
    {"kind": "atspi.state", "description": "Invert", "state": "checked"}      (value: true)
    {"kind": "atspi.exists", "role": "label", "contains": "T2 Axial", "showing": true}
    {"kind": "atspi.value", "role": "scroll bar", "nth": 1, "showing": true, "min": 1100}
    {"kind": "window.title_matches", "pattern": "^DICOMscope"}

`atspi.text` compares the widget's text content (its name where it has no text: labels) by
`equals` (after trimming), `includes` (substring), `matches` (regex search) or `number` (the
first number in it, within `tol`, default 1e-6). `atspi.value` reads the Value interface
(scroll bars, sliders, spin buttons): `min` / `max` (inclusive), `equals` within `tol`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from medspot.errors import DataError
from medspot.live.drivers.atspi import AtspiNode, AtspiTree, NodeQuery

if TYPE_CHECKING:
    from medspot.live.core.tasks import CheckSpec
    from medspot.live.drivers.x11 import X11Session

__all__ = ["X11_CHECK_KINDS", "check_x11", "find_target", "widget_content"]

X11_CHECK_KINDS = (
    "atspi.text",
    "atspi.state",
    "atspi.value",
    "atspi.exists",
    "window.title_matches",
)
_NUM = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def widget_content(n: AtspiNode) -> str:
    return (n.text if n.text else n.name).strip()


def find_target(tree: AtspiTree, p: dict[str, Any]) -> AtspiNode | None:
    showing = bool(p.get("showing", False))
    label = p.get("after_label")
    if label is not None:
        want = str(label).strip().rstrip(":").strip()
        nodes = tree.nodes
        for n in nodes:
            if n.role == "label" and n.name.strip().rstrip(":").strip() == want:
                for m in nodes[n.index + 1 :]:
                    if m.parent != n.parent:
                        continue
                    if m.role in ("text", "password text", "spin button", "combo box"):
                        if not showing or tree.visible_box(m) is not None:
                            return m
                        break
        return None
    q = NodeQuery.from_params(p)
    hits = tree.find(q, visible_only=showing)
    return hits[q.nth] if q.nth < len(hits) else None


def _text_ok(content: str, p: dict[str, Any], spec: CheckSpec) -> bool:
    if "equals" in p:
        return content == str(p["equals"]).strip()
    if "includes" in p:
        return str(p["includes"]) in content
    if "matches" in p:
        return re.search(str(p["matches"]), content) is not None
    if "number" in p:
        m = _NUM.search(content)
        if m is None:
            return False
        return abs(float(m.group()) - float(p["number"])) <= float(p.get("tol", 1e-6))
    raise DataError(f"check {spec.kind}: needs equals, includes, matches or number")


def check_x11(spec: CheckSpec, tree: AtspiTree, x11: X11Session, wid: str | None) -> bool:
    p = spec.params
    if spec.kind == "window.title_matches":
        pattern = re.compile(str(p.get("pattern", "")))
        titles = [n.name for n in tree.nodes if n.parent == -1 and "showing" in n.states]
        if wid is not None:
            titles.append(x11.window_title(wid))
        return any(pattern.search(t) for t in titles)
    node = find_target(tree, p)
    if spec.kind == "atspi.exists":
        return (node is not None) == bool(p.get("value", True))
    if node is None:
        return False
    if spec.kind == "atspi.text":
        return _text_ok(widget_content(node), p, spec)
    if spec.kind == "atspi.value":
        if node.value is None:
            return False
        v = node.value
        if "equals" in p and abs(v - float(p["equals"])) > float(p.get("tol", 1e-6)):
            return False
        if "min" in p and v < float(p["min"]):
            return False
        return not ("max" in p and v > float(p["max"]))
    if spec.kind == "atspi.state":
        state = str(p.get("state", "checked"))
        return (state in node.states) == bool(p.get("value", True))
    raise DataError(f"unknown check kind {spec.kind!r} for a desktop environment")
