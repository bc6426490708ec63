"""The elements a locator can name in InVesalius: the AT-SPI tree (GTK's widgets, menus,
GTK's own dialogs) with the elements wx draws itself, which AT-SPI cannot see, added from the
probe: toolbar tools (`role: tool`, their tooltip as `description`), fold-panel captions
(`caption`, with `collapsed` / `expanded`), hyperlinks (`link`), list rows (`list item`, the
row's cells joined in `description`), the image views (`view`: axial, coronal, sagittal,
volume) and the panes' maximize / restore buttons (`push button`, description "Maximize
Axial slice"). Each is attached under the deepest AT-SPI node under its centre, so hit tests and
`hittable_box` treat it as that node's child; one whose centre another window covers (a menu,
a dialog: the node there belongs to a window of another title) is left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from medspot.live.drivers.atspi import AtspiNode, AtspiTree

__all__ = ["merge_widgets"]

_SHOWN = frozenset({"showing", "visible", "enabled", "sensitive"})
_MENUS = frozenset({"menu", "menu item", "popup menu", "check menu item", "radio menu item",
                    "menu bar"})  # fmt: skip
_CLIPPING = frozenset({"panel", "filler", "scroll pane", "viewport", "page tab list"})


def clip_tree(tree: AtspiTree) -> AtspiTree:
    """GTK reports the widgets of a collapsed wx panel as showing, with boxes outside their
    panel's: every box is clipped to its ancestors' (within a window), and a node left with
    nothing on screen is not showing."""
    boxes: dict[int, tuple[int, int, int, int]] = {}
    out: list[AtspiNode] = []
    for n in tree.nodes:
        box = n.box
        parent = boxes.get(n.parent) if n.parent >= 0 else None
        if n.parent >= 0 and tree.nodes[n.parent].role not in _CLIPPING:
            parent = None  # menus and combo boxes hold their popups' items: never clip by them
        if parent is not None and box[2] > 0 and box[3] > 0 and box[0] > -(2**30):
            x1, y1 = max(box[0], parent[0]), max(box[1], parent[1])
            x2 = min(box[0] + box[2], parent[0] + parent[2])
            y2 = min(box[1] + box[3], parent[1] + parent[3])
            box = (x1, y1, max(0, x2 - x1), max(0, y2 - y1))
        states = n.states
        if n.parent >= 0 and (box[2] <= 0 or box[3] <= 0) and n.box[2] > 0 and n.box[3] > 0:
            states = states - {"showing"}
        if box[2] > 0 and box[3] > 0 and box[0] > -(2**30):
            boxes[n.index] = box
        out.append(replace(n, box=box, states=states))
    return AtspiTree(tuple(out))


def merge_widgets(tree: AtspiTree, widgets: Sequence[dict[str, Any]], app: str) -> AtspiTree:
    tree = clip_tree(tree)
    nodes = list(tree.nodes)
    children: dict[int, int] = {}
    for w in widgets:
        x, y, bw, bh = (int(v) for v in w["box"])
        if bw <= 0 or bh <= 0:
            continue
        parent = tree.hit(x + bw / 2, y + bh / 2)
        if (
            parent is None
            or _top(tree, parent).name != str(w.get("top", ""))
            or _in_menu(tree, parent)
        ):
            continue  # another window (a dialog) or an open menu covers it
        k = children.get(parent.index, 0)
        children[parent.index] = k + 1
        nodes.append(
            AtspiNode(
                index=len(nodes),
                path=(*parent.path, 1000 + k),
                parent=parent.index,
                role=str(w["role"]),
                name=str(w.get("text") or ""),
                description=str(w.get("description") or ""),
                states=_SHOWN | frozenset(str(s) for s in w.get("states") or ()),
                box=(x, y, bw, bh),
                text=None,
                value=None,
                app=app,
            )
        )
    return AtspiTree(tuple(nodes))


def _in_menu(tree: AtspiTree, n: AtspiNode) -> bool:
    while True:
        if n.role in _MENUS:
            return True
        if n.parent < 0:
            return False
        n = tree.nodes[n.parent]


def _top(tree: AtspiTree, n: AtspiNode) -> AtspiNode:
    while n.parent >= 0:
        n = tree.nodes[n.parent]
    return n
