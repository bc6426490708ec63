"""The probe: started by Debian's Python as the main script in InVesalius's own process, it
runs InVesalius (its `app.py`) and answers questions about the application's state on a local
socket. Standard library only (it runs on the system interpreter, beside wx, VTK and numpy that
InVesalius itself imports); nothing here imports medspot.

    /usr/bin/python3 probe.py [app.py arguments]        (cwd: InVesalius's folder)

Environment: MEDSPOT_PROBE_FILE (where the port is written once listening), MEDSPOT_PROBE_TOKEN
(every request must carry it), INVESALIUS_DIR (default /usr/share/invesalius).

Protocol: one JSON object per line each way, on a persistent TCP connection to 127.0.0.1:
`{"token": T, "op": NAME, "args": {...}, "timeout": SECONDS}` -> `{"ok": true, "result": ...}`
or `{"ok": false, "error": TEXT, "busy": BOOL}`. Every read runs on wx's main thread
(`wx.CallAfter`); when the main thread does not run it within the timeout (InVesalius busy:
a surface being built, an import), the answer is `busy`. `ping` is answered at once.

Every process this process starts (InVesalius's multiprocessing workers are spawned
interpreters that import this file as `__mp_main__`) asks the kernel for SIGKILL when its parent
dies: nothing outlives the application.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import json
import os
import queue
import random
import re
import socket
import sys
import threading
import time
import traceback
import zlib
from typing import Any

PR_SET_PDEATHSIG = 1
SIGKILL = 9
MODULES: dict[str, Any] = {}
ORIENTATIONS = ("AXIAL", "CORONAL", "SAGITAL")


def _die_with_parent() -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0)
    if os.getppid() == 1:  # the parent died before the signal was asked for
        os._exit(1)


_die_with_parent()  # also in the spawned workers, which import this file as __mp_main__


def mod(name: str) -> Any:
    m = MODULES.get(name)
    if m is None:
        import importlib

        m = MODULES[name] = importlib.import_module(name)
    return m


# -- reading the application -------------------------------------------------------------------


def _walk(w: Any) -> Any:
    yield w
    for c in w.GetChildren():
        yield from _walk(c)


def _frame() -> Any:
    wx = mod("wx")
    app = wx.GetApp()
    frame = getattr(app, "frame", None) if app is not None else None
    if frame is None:
        for t in wx.GetTopLevelWindows():
            if type(t).__name__ == "Frame" and t.IsShown():
                return t
    return frame


def _rect(w: Any) -> list[int]:
    r = w.GetScreenRect()
    return [int(r.x), int(r.y), int(r.width), int(r.height)]


def _colour(c: Any) -> list[float]:
    try:
        return [round(float(v), 4) for v in list(c)[:3]]
    except (TypeError, ValueError):
        return []


def _viewers(module: str) -> list[Any]:
    """The main window's `Viewer`s of an InVesalius module (`viewer_slice`, `viewer_volume`)."""
    viewer = mod(f"invesalius.data.{module}").Viewer
    frame = _frame()
    return [] if frame is None else [w for w in _walk(frame) if isinstance(w, viewer)]


def _slice_viewers() -> list[Any]:
    return _viewers("viewer_slice")


def _volume_viewers() -> list[Any]:
    return _viewers("viewer_volume")


def _full_mask(mask: Any) -> Any:
    """The mask's voxels (bool, z/y/x) as InVesalius would compute them for a surface: slices
    not yet thresholded are thresholded now, on a copy (edits kept); > 127 is inside."""
    np = mod("numpy")
    sl = mod("invesalius.data.slice_").Slice()
    m = mask.matrix
    out = np.array(m[1:, 1:, 1:])
    lo, hi = mask.threshold_range
    todo = [n for n in range(1, m.shape[0]) if m[n, 0, 0] == 0]
    for n in todo:
        img = sl.matrix[n - 1]
        cur = out[n - 1]
        t = ((img >= lo) & (img <= hi)) * 255
        for keep in (1, 2, 253, 254):
            t[cur == keep] = keep
        out[n - 1] = t
    return out > 127


# projects closed by the user (not by a reset) since the task's start: how many with unsaved
# changes (`count`), and the file the last one closed was saved to with no change left unsaved
# (`saved_path`; None: it had unsaved changes, or none was closed). A closed project's session
# forgets its path (`Session.CloseProject`), so it is taken as the project closes: "Yes, save"
# on closing saves (the session's path is the file's), then closes.
DISCARDS: dict[str, Any] = {"count": 0, "ours": False, "saved_path": None}


def _watch_closing() -> None:
    """Watch the projects the user closes (`DISCARDS`)."""
    ctl = _controller()
    if ctl is None or getattr(ctl, "_medspot_watched", False):
        return
    close = ctl.CloseProject
    const = mod("invesalius.constants")

    def watched(*a: Any, **k: Any) -> Any:
        ses = mod("invesalius.session").Session()
        st = ses.project_status
        if not DISCARDS["ours"] and st != const.PROJ_CLOSE:
            if st in (const.PROJ_NEW, const.PROJ_CHANGE):
                DISCARDS["count"] += 1
            saved = st == const.PROJ_OPEN and not ses.temp_item and ses.project_path
            DISCARDS["saved_path"] = os.path.join(*ses.project_path) if saved else None
        return close(*a, **k)

    ctl.CloseProject = watched
    ctl._medspot_watched = True


def _project_status() -> dict[str, Any]:
    ses = mod("invesalius.session").Session()
    const = mod("invesalius.constants")
    st = ses.project_status
    path = os.path.join(*ses.project_path) if ses.project_path else None
    return {
        "discarded": DISCARDS["count"],
        "closed_saved": _shown_path(DISCARDS["saved_path"]),
        "status": int(st),
        "open": st != const.PROJ_CLOSE,
        "modified": st in (const.PROJ_NEW, const.PROJ_CHANGE),
        "saved": st == const.PROJ_OPEN,
        "path": _shown_path(path),
        "temp": bool(ses.temp_item),
    }


def _shown_path(path: str | None) -> str | None:
    """A path under the instance's own HOME from `~` (the same in every InVesalius)."""
    home = os.path.expanduser("~")
    if path is not None and path.startswith(home + os.sep):
        return "~" + path[len(home) :]
    return path


def read_state(args: dict[str, Any]) -> dict[str, Any]:
    wx = mod("wx")
    const = mod("invesalius.constants")
    prj = mod("invesalius.project").Project()
    out: dict[str, Any] = {"project": _project_status(), "time": time.time()}
    frame = _frame()
    out["ready"] = frame is not None and frame.IsShown()
    out["title"] = frame.GetTitle() if frame is not None else ""
    out["busy"] = bool(wx.IsBusy())
    # the view the Go-to-slice dialog opens on: the slice view the pointer entered last
    focus = str(getattr(frame, "_last_viewer_orientation_focus", ""))
    out["goto_view"] = {"AXIAL": "axial", "CORONAL": "coronal", "SAGITAL": "sagittal"}.get(focus)
    if not out["project"]["open"]:
        out.update(masks=[], surfaces=[], measures=[], views=[], window=None, image=None)
        out["dialogs"] = _dialogs()
        out["layout"] = _layout()
        return out
    sl = mod("invesalius.data.slice_").Slice()
    cur = sl.current_mask
    masks = []
    with_voxels = bool(args.get("voxels", True))
    for index, m in sorted(prj.mask_dict.items()):
        d = {
            "index": int(index),
            "name": str(m.name),
            "threshold": [int(m.threshold_range[0]), int(m.threshold_range[1])],
            "colour": _colour(m.colour),
            "opacity": float(m.opacity),
            "visible": bool(m.is_shown),
            "current": m is cur,
            "edited": bool(m.was_edited),
        }
        if with_voxels:
            d["voxels"] = int(_full_mask(m).sum())
        masks.append(d)
    surfaces = []
    for index, s in sorted(prj.surface_dict.items()):
        surfaces.append(
            {
                "index": int(index),
                "name": str(s.name),
                "volume": float(s.volume),
                "area": float(s.area),
                "colour": _colour(s.colour),
                "transparency": float(s.transparency),
                "visible": bool(s.is_shown),
            }
        )
    kinds = {const.LINEAR: "linear", const.ANGULAR: "angular"}
    places = {
        const.AXIAL: "axial", const.CORONAL: "coronal", const.SAGITAL: "sagittal",
        const.SURFACE: "surface", const.VOLUME: "volume",
    }  # fmt: skip
    measures = []
    for index, ms in sorted(prj.measurement_dict.items()):
        measures.append(
            {
                "index": int(index),
                "name": str(ms.name),
                "kind": kinds.get(ms.type, str(ms.type)),
                "value": float(ms.value),
                "location": places.get(ms.location, str(ms.location)),
                "slice": int(ms.slice_number),
                "points": [[float(c) for c in p] for p in ms.points],
                "visible": bool(ms.visible),
            }
        )
    views = []
    for v in _slice_viewers():
        views.append(
            {
                "view": {"AXIAL": "axial", "CORONAL": "coronal", "SAGITAL": "sagittal"}[
                    v.orientation
                ],
                "slice": int(v.slice_data.number),
                "slices": int(sl.GetMaxSliceNumber(v.orientation)) + 1,
                "shown": bool(v.interactor.IsShownOnScreen()),
                "box": _rect(v.interactor),
            }
        )
    for v in _volume_viewers():
        views.append(
            {"view": "volume", "slice": None, "slices": None,
             "shown": bool(v.interactor.IsShownOnScreen()), "box": _rect(v.interactor)}
        )  # fmt: skip
    image = sl.matrix
    out["image"] = {
        "shape": [int(n) for n in image.shape],
        "spacing": [float(s) for s in sl.spacing],
        "checksum": zlib.crc32(memoryview(image).cast("B")),
        "modality": str(prj.modality),
        "name": str(prj.name),
    }
    out["masks"], out["surfaces"], out["measures"], out["views"] = masks, surfaces, measures, views
    out["window"] = [float(sl.window_width), float(sl.window_level)]
    out["style"] = int(sl.state) if isinstance(sl.state, int) else str(sl.state)
    out["dialogs"] = _dialogs()
    out["layout"] = _layout()
    out["undo"] = _undo_state()
    return out


def _undo_state() -> dict[str, Any]:
    sl = mod("invesalius.data.slice_").Slice()
    m = sl.current_mask
    if m is None:
        return {"index": -1, "length": 0}
    h = m.history
    return {"index": int(h.index), "length": len(h.history)}


def _other_windows() -> list[Any]:
    """The application's top-level windows other than the main frame (and the splash) that
    are shown: wx dialogs and frames (GTK's own message and file dialogs are not wx's)."""
    frame = _frame()
    return [t for t in mod("wx").GetTopLevelWindows()
            if t is not frame and t.IsShown() and not _is_splash(t)]  # fmt: skip


def _dialogs() -> list[dict[str, Any]]:
    """The application's other windows (`_other_windows`; GTK's own message and file dialogs
    are read through AT-SPI)."""
    wx = mod("wx")
    out = []
    for t in _other_windows():
        kind = "dialog" if isinstance(t, wx.Dialog) else type(t).__name__
        modal = bool(t.IsModal()) if isinstance(t, wx.Dialog) else False
        out.append({"title": str(t.GetTitle()), "kind": kind, "modal": modal, "box": _rect(t)})
    return out


def _inner_aui_managers(frame: Any) -> list[Any]:
    """The AUI managers of the windows inside `frame` (the view panes'), not the frame's own."""
    wx = mod("wx")
    aui = getattr(wx, "aui", None) or mod("wx.aui")
    out = []
    for w in _walk(frame):
        mgr = getattr(w, "aui_manager", None)
        if mgr is not None and w is not frame and isinstance(mgr, aui.AuiManager):
            out.append(mgr)
    return out


def _layout() -> dict[str, Any]:
    frame = _frame()
    out: dict[str, Any] = {"task_panel": None, "panes": {}}
    if frame is None:
        return out
    with contextlib.suppress(Exception):
        out["task_panel"] = bool(frame.aui_manager.GetPane("Tasks").IsShown())
    for mgr in _inner_aui_managers(frame):
        for i, p in enumerate(mgr.GetAllPanes()):
            name = str(p.name)
            if re.fullmatch(r"[0-9a-f]{32}", name):  # a name wx made up (an address): unnamed
                name = f"#{i}"
            out["panes"][name] = bool(p.IsShown())
    return out


def read_mask(args: dict[str, Any]) -> dict[str, Any]:
    np = mod("numpy")
    prj = mod("invesalius.project").Project()
    for index, m in prj.mask_dict.items():
        if m.name == args["name"] or index == args.get("index"):
            full = _full_mask(m)
            packed = np.packbits(full.reshape(-1))
            return {
                "name": m.name,
                "shape": [int(n) for n in full.shape],
                "bits": base64.b64encode(zlib.compress(packed.tobytes(), 1)).decode("ascii"),
            }
    raise LookupError(f"no mask named {args['name']!r}")


# -- the widgets AT-SPI cannot name (custom-drawn in wx) --------------------------------------


def read_widgets(args: dict[str, Any]) -> list[dict[str, Any]]:
    """Elements drawn by wx itself (invisible to AT-SPI): toolbar tools, fold-panel captions,
    hyperlinks, list rows, the image views. Screen boxes [x, y, w, h]."""
    wx = mod("wx")
    auibar = mod("invesalius.gui.widgets.auibar")
    fpb = mod("wx.lib.agw.foldpanelbar")
    hl = mod("wx.lib.agw.hyperlink")
    vs = mod("invesalius.data.viewer_slice")
    vv = mod("invesalius.data.viewer_volume")
    spin = mod("invesalius.gui.widgets.inv_spinctrl")
    out: list[dict[str, Any]] = []

    top_title = [""]

    def add(
        role: str, text: str, box: list[int], desc: str = "", states: tuple[str, ...] = ()
    ) -> None:
        if box[2] > 0 and box[3] > 0:
            out.append({"role": role, "text": text, "description": desc, "box": box,
                        "states": list(states), "top": top_title[0]})  # fmt: skip

    def visible(w: Any) -> list[int] | None:
        """The window's screen box clipped by its ancestors', or None when nothing shows."""
        x, y, ww, hh = _rect(w)
        x2, y2 = x + ww, y + hh
        p = w.GetParent()
        while p is not None and not p.IsTopLevel():
            px, py, pw, ph = _rect(p)
            x, y, x2, y2 = max(x, px), max(y, py), min(x2, px + pw), min(y2, py + ph)
            p = p.GetParent()
        return [x, y, x2 - x, y2 - y] if x2 > x and y2 > y else None

    def clip(box: list[int], limit: list[int] | None) -> list[int]:
        if limit is None:
            return [0, 0, 0, 0]
        x, y = max(box[0], limit[0]), max(box[1], limit[1])
        x2 = min(box[0] + box[2], limit[0] + limit[2])
        y2 = min(box[1] + box[3], limit[1] + limit[3])
        return [x, y, max(0, x2 - x), max(0, y2 - y)]

    for top in wx.GetTopLevelWindows():
        if not top.IsShown():
            continue
        top_title[0] = str(top.GetTitle())
        for w in _walk(top):
            if not w.IsShownOnScreen():
                continue
            shown = visible(w)
            if shown is None:
                continue
            if isinstance(w, auibar.AuiToolBar):
                sx, sy = w.GetScreenPosition()
                for i in range(w.GetToolCount()):
                    tool = w.FindToolByIndex(i)
                    if tool is None or tool.GetKind() == wx.ITEM_SEPARATOR:
                        continue
                    r = w.GetToolRect(tool.GetId())
                    st = ["enabled"] if w.GetToolEnabled(tool.GetId()) else []
                    if tool.GetKind() in (wx.ITEM_CHECK, wx.ITEM_RADIO) and w.GetToolToggled(
                        tool.GetId()
                    ):
                        st.append("checked")
                    add("tool", str(tool.GetLabel() or ""),
                        clip([sx + r.x, sy + r.y, r.width, r.height], shown),
                        str(tool.GetShortHelp() or "").split("\t")[0], tuple(st))  # fmt: skip
            elif isinstance(w, fpb.CaptionBar):
                folded = ("collapsed",) if w.IsCollapsed() else ("expanded",)
                add("caption", str(getattr(w, "_caption", "")), shown, states=folded)
            elif isinstance(w, hl.HyperLinkCtrl):
                add("link", str(w.GetLabel()), shown)
            elif isinstance(w, wx.ListCtrl) and w.GetItemCount():
                sx, sy = w.GetScreenPosition()
                cols = w.GetColumnCount()
                for i in range(w.GetItemCount()):
                    r = w.GetItemRect(i)
                    texts = [w.GetItemText(i, c) for c in range(cols)]
                    name = next((t for t in texts if t), "")
                    sel: tuple[str, ...] = ("selected",) if w.IsSelected(i) else ()
                    add("list item", str(name), clip([sx + r.x, sy + r.y, r.width, r.height],
                        shown), " | ".join(t for t in texts if t), sel)  # fmt: skip
            elif isinstance(w, wx.TextCtrl) and not isinstance(w.GetParent(), spin.InvSpinCtrl):
                label = _label_beside(w)
                if label:
                    add("text", str(w.GetValue()), shown, label)
            elif isinstance(w, (wx.ComboBox, wx.Choice)):
                label = _label_beside(w)
                if label:
                    value = w.GetValue() if isinstance(w, wx.ComboBox) else w.GetStringSelection()
                    add("combo box", str(value), shown, label)
            elif isinstance(w, spin.InvSpinCtrl):
                add("spin button", str(w._textctrl.GetValue()), shown, _spin_name(w))
            elif isinstance(w, vs.Viewer):
                add("view", {"AXIAL": "axial", "CORONAL": "coronal", "SAGITAL": "sagittal"}[
                    w.orientation], clip(_rect(w.interactor), shown))  # fmt: skip
            elif isinstance(w, vv.Viewer):
                add("view", "volume", clip(_rect(w.interactor), shown))
            mgr = getattr(w, "aui_manager", None)
            if mgr is not None and w is not top:
                out.extend(dict(b, top=top_title[0]) for b in _pane_buttons(w, mgr))
    return out


def _label_beside(w: Any) -> str:
    """The text of the label on the field's left on the same line (or just above it)."""
    wx = mod("wx")
    x, y, ww, hh = _rect(w)
    best, dist = "", 1e9
    for s in w.GetParent().GetChildren():
        if not isinstance(s, wx.StaticText) or not s.IsShown():
            continue
        sx, sy, sw, sh = _rect(s)
        same_line = sy < y + hh and y < sy + sh and sx + sw <= x + 2
        above = sy + sh <= y + 2 and sx < x + ww and x < sx + sw
        if same_line or above:
            d = (x - (sx + sw)) if same_line else (y - (sy + sh)) + 1000
            if d < dist:
                best, dist = s.GetLabel(), d
    return str(best).strip().rstrip(":").strip()


_SPIN_OWNERS = {"MaskProperties": "Threshold", "EditionTools": "Brush threshold",
                "NewMask": "New mask threshold"}  # fmt: skip


def _spin_name(w: Any) -> str:
    """A number field by what it sets: "Threshold minimum" (the mask's), "Brush threshold
    maximum", "Brush size", ..."""
    parent = w.GetParent()
    if type(parent).__name__ == "GradientCtrl":
        which = "minimum" if w is getattr(parent, "spin_min", None) else "maximum"
        owner = type(parent.GetParent()).__name__
        return f"{_SPIN_OWNERS.get(owner, owner)} {which}"
    owner = type(parent).__name__
    return "Brush size" if owner == "EditionTools" else f"{owner} value"


def _pane_buttons(owner: Any, mgr: Any) -> list[dict[str, Any]]:
    """The maximize / restore button at the right end of each view pane's caption."""
    aui = mod("wx.aui")
    art = mgr.GetArtProvider()
    cap = art.GetMetric(aui.AUI_DOCKART_CAPTION_SIZE)
    btn = art.GetMetric(aui.AUI_DOCKART_PANE_BUTTON_SIZE)
    border = art.GetMetric(aui.AUI_DOCKART_PANE_BORDER_SIZE)
    ox, oy = owner.GetScreenPosition()
    out = []
    panes = [p for p in mgr.GetAllPanes() if p.IsShown() and not p.IsToolbar()]
    alone = len(panes) == 1
    for p in panes:
        if not p.HasMaximizeButton():
            continue
        r = p.rect
        if r.width <= 0 or r.height <= 0:
            continue
        x = ox + r.x + r.width - border - btn - 2
        y = oy + r.y - cap + max(0, (cap - btn) // 2)  # the caption is above the pane's rect
        what = "Restore" if alone else "Maximize"
        out.append({"role": "push button", "text": "", "description": f"{what} {p.caption}",
                    "box": [x, y, btn, btn], "states": []})  # fmt: skip
    return out


def view_points(args: dict[str, Any]) -> list[Any]:
    """Screen points of image points of a view: `view` (axial/coronal/sagittal), `points` as
    [column, row] in the view's image plane (InVesalius's own pixel coordinates, the ones its
    `calculate_matrix_position` gives); None for a point of a view not on screen."""
    vtk = mod("vtkmodules.vtkRenderingCore")
    names = {"axial": "AXIAL", "coronal": "CORONAL", "sagittal": "SAGITAL"}
    want = names[args["view"]]
    sl = mod("invesalius.data.slice_").Slice()
    sx_, sy_, sz_ = sl.spacing
    for v in _slice_viewers():
        if v.orientation != want:
            continue
        if not v.interactor.IsShownOnScreen():
            return [None for _ in args["points"]]
        ren = v.slice_data.renderer
        xi, _xf, yi, _yf, zi, _zf = v.slice_data.actor.GetBounds()
        sx, sy = v.interactor.GetScreenPosition()
        _w, h = v.interactor.GetSize()
        out: list[Any] = []
        for u, w in args["points"]:
            if want == "AXIAL":
                world = (xi + u * sx_, yi + w * sy_, zi)
            elif want == "CORONAL":
                world = (xi + u * sx_, yi, zi + w * sz_)
            else:
                world = (xi, yi + u * sy_, zi + w * sz_)
            c = vtk.vtkCoordinate()
            c.SetCoordinateSystemToWorld()
            c.SetValue(*world)
            dx, dy = c.GetComputedDoubleDisplayValue(ren)
            out.append([sx + dx, sy + (h - dy)])
        return out
    raise LookupError(f"no {args['view']} view")


# -- bringing the application to a start state ------------------------------------------------


def _pub() -> Any:
    return mod("invesalius.pubsub").pub


def _controller() -> Any:
    app = mod("wx").GetApp()
    return getattr(app, "control", None)


FRESH: dict[str, Any] = {}  # what a just-started InVesalius has (recorded before its 1st import)
LOADED: dict[str, Any] = {}  # the study loaded, and its image's checksum
CONFIGS = ("EditorConfig", "WatershedConfig", "FFillConfig", "CropMaskConfig",
           "SelectPartConfig", "FFillSegmentationConfig")  # fmt: skip
_PRIMITIVE = (bool, int, float, str, type(None))
_PROJECT_PANELS = ("MaskProperties", "SurfaceProperties")


def _reset_counters() -> None:
    """The counters that name and colour new objects, as a fresh start has them."""
    import itertools

    const = mod("invesalius.constants")
    mod("invesalius.data.mask").Mask.general_index = -1
    mod("invesalius.data.surface").Surface.general_index = -1
    measures = mod("invesalius.data.measures")
    measures.Measurement.general_index = -1
    measures.DensityMeasurement.general_index = -1
    const.MEASURE_COLOUR = itertools.cycle(FRESH["measure_colours"])
    random.seed(0)


def _configs() -> dict[str, Any]:
    styles = mod("invesalius.data.styles")
    return {name: getattr(styles, name)() for name in CONFIGS}


def _holders() -> dict[str, Any]:
    """Objects whose plain attributes are settings that outlive a project (the view that had
    the focus last, which the Go-to-slice dialog starts on, the task panel's button, ...)."""
    out = {}
    frame = _frame()
    if frame is not None:
        out["Frame"] = frame
    ctl = _controller()
    if ctl is not None:
        out["Controller"] = ctl
    layout = _layout_toolbar()
    if layout is not None:
        out["LayoutToolBar"] = layout
    return out


def _layout_toolbar() -> Any:
    frame = _frame()
    if frame is None:
        return None
    return next((w for w in _walk(frame) if type(w).__name__ == "LayoutToolBar"), None)


def _value_of(w: Any) -> Any:
    """A control's value as the user sees it (None for windows without one)."""
    wx = mod("wx")
    getters: tuple[tuple[Any, Any], ...] = (
        (wx.CheckBox, lambda c: c.GetValue()), (wx.RadioButton, lambda c: c.GetValue()),
        (wx.ToggleButton, lambda c: c.GetValue()), (wx.ComboBox, lambda c: c.GetValue()),
        (wx.Choice, lambda c: c.GetSelection()), (wx.TextCtrl, lambda c: c.GetValue()),
        (wx.SpinCtrl, lambda c: c.GetValue()), (wx.Slider, lambda c: c.GetValue()),
        (wx.Notebook, lambda c: c.GetSelection()),
    )  # fmt: skip
    for cls, get in getters:
        if isinstance(w, cls):
            try:
                return get(w)
            except Exception:
                return None
    fpb = mod("wx.lib.agw.foldpanelbar")
    if isinstance(w, fpb.CaptionBar):
        return "collapsed" if w.IsCollapsed() else "expanded"
    return None


def _windows() -> dict[str, Any]:
    """Every window under the main frame by a path of class names and sibling indices."""
    frame = _frame()
    out: dict[str, Any] = {}
    if frame is None:
        return out

    def walk(w: Any, path: str) -> None:
        out[path] = w
        counts: dict[str, int] = {}
        for c in w.GetChildren():
            if c.IsTopLevel():
                continue
            name = type(c).__name__
            counts[name] = counts.get(name, 0) + 1
            walk(c, f"{path}/{name}[{counts[name] - 1}]")

    walk(frame, "Frame")
    return out


def fingerprint() -> dict[str, Any]:
    """The state a reset must restore, beyond the project (which an import rebuilds): the
    controls' values and visibility, fold panels and notebooks, boxes on screen, the editing
    tools' settings, the session's settings, menu checks, toolbar toggles, the slice views'
    cameras and colour maps, the windows shown."""
    wx = mod("wx")
    fp: dict[str, Any] = {}
    for path, w in _windows().items():
        shown = bool(w.IsShown())
        value = _value_of(w)
        if isinstance(w, wx.ComboBox) and type(w.GetParent()).__name__ in _PROJECT_PANELS:
            value = None  # lists the project's masks or surfaces: an import refills it
        fp["w:" + path] = [shown, value]
        if w.IsShownOnScreen():
            fp["box:" + path] = _rect(w)
    for name, obj in _holders().items():  # the main window's and the controller's settings
        for k, v in sorted(vars(obj).items()):
            if isinstance(v, _PRIMITIVE):
                fp[f"attr:{name}.{k}"] = v
    for name, cfg in _configs().items():
        for k, v in sorted(vars(cfg).items()):
            if isinstance(v, _PRIMITIVE) or (
                isinstance(v, (list, tuple)) and all(isinstance(x, _PRIMITIVE) for x in v)
            ):
                fp[f"cfg:{name}.{k}"] = list(v) if isinstance(v, tuple) else v
    ses = mod("invesalius.session").Session()
    for sec, vals in sorted(ses._values.items()):
        for k, v in sorted(vals.items()):
            fp[f"ses:{sec}.{k}"] = v
    frame = _frame()
    if frame is not None and frame.GetMenuBar() is not None:

        def menus(menu: Any, path: str) -> None:
            for item in menu.GetMenuItems():
                label = f"{path}/{item.GetItemLabelText()}"
                if item.GetSubMenu() is not None:
                    menus(item.GetSubMenu(), label)
                elif item.IsCheckable():
                    fp["menu:" + label] = [bool(item.IsChecked()), bool(item.IsEnabled())]
                else:
                    fp["menu:" + label] = [None, bool(item.IsEnabled())]

        mb = frame.GetMenuBar()
        for i in range(mb.GetMenuCount()):
            menus(mb.GetMenu(i), mb.GetMenuLabelText(i))
    auibar = mod("invesalius.gui.widgets.auibar")
    for path, w in _windows().items():
        if isinstance(w, auibar.AuiToolBar):
            for i in range(w.GetToolCount()):
                t = w.FindToolByIndex(i)
                if t is not None and t.GetKind() != wx.ITEM_SEPARATOR:
                    fp[f"tool:{path}#{i}"] = [
                        str(t.GetShortHelp()),
                        bool(w.GetToolToggled(t.GetId())),
                        bool(w.GetToolEnabled(t.GetId())),
                    ]
    for v in _slice_viewers():
        if getattr(v, "slice_data", None) is None:
            continue
        fp["renderers:" + v.orientation] = len(_renderers(v))
        cam = v.slice_data.renderer.GetActiveCamera()
        fp["cam:" + v.orientation] = [round(x, 3) for x in (*cam.GetPosition(),
                                      *cam.GetFocalPoint(), cam.GetParallelScale())]  # fmt: skip
    sl = mod("invesalius.data.slice_").Slice()
    for k in ("from_", "number_of_colours", "saturation_range", "hue_range", "value_range",
              "interp_method", "_type_projection", "n_border"):  # fmt: skip
        v = getattr(sl, k, None)
        fp["slice:" + k] = list(v) if isinstance(v, tuple) else v
    fp["tops"] = sorted(
        str(t.GetTitle()) for t in wx.GetTopLevelWindows() if t.IsShown() and not _is_splash(t)
    )
    return fp


def _valued() -> tuple[Any, ...]:
    wx = mod("wx")
    return (wx.CheckBox, wx.RadioButton, wx.ToggleButton, wx.Slider, wx.SpinCtrl, wx.ComboBox)


def _restore(fp: dict[str, Any]) -> None:
    """Bring back what differs from the recorded fresh fingerprint, where that can be done
    without the user: fold panels, notebooks, controls' values, tools' settings, the
    session, menu checks, the task panel."""
    wx = mod("wx")
    fresh = FRESH.get("fingerprint")
    if fresh is None:  # the instance's first reset: nothing recorded yet
        return
    fpb = mod("wx.lib.agw.foldpanelbar")
    wins = _windows()
    # fold panels: press the captions whose state differs, as a click on their arrow does (the
    # application's own handlers then switch editing modes and lay the panels out); a press
    # that opens one panel of a single-fold bar closes the others, so a few rounds
    for _round in range(4):
        pressed = False
        for want in ("expanded", "collapsed"):
            for path, w in wins.items():
                if not isinstance(w, fpb.CaptionBar):
                    continue
                f = fresh.get("w:" + path)
                if f is None or f[1] != want or _value_of(w) == want:
                    continue
                ev = fpb.CaptionBarEvent(fpb.wxEVT_CAPTIONBAR)
                ev.SetId(w.GetId())
                ev.SetEventObject(w)
                ev.SetBar(w)
                w.GetEventHandler().ProcessEvent(ev)
                pressed = True
        if not pressed:
            break
    for path, w in wins.items():
        key = "w:" + path
        if key not in fresh or fresh[key] == fp.get(key):
            continue
        want = fresh[key][1]
        try:
            if isinstance(w, wx.Notebook) and want is not None and want >= 0:
                w.SetSelection(want)
            elif want is not None and isinstance(w, _valued()):
                w.SetValue(want)
            elif isinstance(w, wx.Choice) and want is not None and want >= 0:
                w.SetSelection(want)
            elif isinstance(w, wx.TextCtrl) and want is not None:
                w.ChangeValue(want)
        except Exception:
            pass
    for name, obj in _holders().items():
        for k in list(vars(obj)):
            key = f"attr:{name}.{k}"
            if key == _LAYOUT_KEY:  # through its toggle below (the button's help and picture)
                continue
            if key in fresh and fp.get(key) != fresh[key]:
                setattr(obj, k, fresh[key])
    for name, cfg in _configs().items():
        for k in list(vars(cfg)):
            key = f"cfg:{name}.{k}"
            if key in fresh and fp.get(key) != fresh[key]:
                v = fresh[key]
                setattr(cfg, k, tuple(v) if isinstance(getattr(cfg, k), tuple) else v)
    ses = mod("invesalius.session").Session()
    for key, v in fresh.items():
        if key.startswith("ses:") and fp.get(key) != v:
            sec, _, k = key[4:].partition(".")
            ses._values[sec][k] = v
    for key in fp:
        if key.startswith("ses:") and key not in fresh:  # a setting the project added
            sec, _, k = key[4:].partition(".")
            ses._values[sec].pop(k, None)
    _restore_maximized()
    layout = _layout_toolbar()
    want_layout = fresh.get(_LAYOUT_KEY)
    if layout is not None and want_layout is not None and layout.ontool_layout != want_layout:
        layout.ToggleLayout()  # the task panel shown or hidden as the toolbar's button does
    frame = _frame()
    if frame is not None and frame.GetMenuBar() is not None:
        mb = frame.GetMenuBar()

        def menus(menu: Any, path: str) -> None:
            for item in menu.GetMenuItems():
                label = f"{path}/{item.GetItemLabelText()}"
                if item.GetSubMenu() is not None:
                    menus(item.GetSubMenu(), label)
                else:
                    want = fresh.get("menu:" + label)
                    if want is None:
                        continue
                    if item.IsCheckable() and bool(item.IsChecked()) != want[0]:
                        item.Check(want[0])
                    if bool(item.IsEnabled()) != want[1]:
                        item.Enable(want[1])

        for i in range(mb.GetMenuCount()):
            menus(mb.GetMenu(i), mb.GetMenuLabelText(i))
    auibar = mod("invesalius.gui.widgets.auibar")
    for path, w in wins.items():
        if not isinstance(w, auibar.AuiToolBar):
            continue
        for i in range(w.GetToolCount()):
            t = w.FindToolByIndex(i)
            if t is None or t.GetKind() == wx.ITEM_SEPARATOR:
                continue
            want = fresh.get(f"tool:{path}#{i}")
            if want is None:
                continue
            if bool(w.GetToolToggled(t.GetId())) != want[1]:
                w.ToggleTool(t.GetId(), want[1])
            if bool(w.GetToolEnabled(t.GetId())) != want[2]:
                w.EnableTool(t.GetId(), want[2])
        w.Refresh()
    if frame is not None:
        frame.Layout()


_LAYOUT_KEY = "attr:LayoutToolBar.ontool_layout"  # the task panel hidden by its button


def _restore_maximized() -> None:
    """A view pane left maximized shown beside the others again (as its restore button does)."""
    frame = _frame()
    if frame is None:
        return
    for mgr in _inner_aui_managers(frame):
        shown = [bool(p.IsShown()) for p in mgr.GetAllPanes()]
        mgr.RestoreMaximizedPane()  # (this wxPython's panes do not say they are maximized)
        if [bool(p.IsShown()) for p in mgr.GetAllPanes()] != shown:
            mgr.Update()


def _diff(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def _dismiss() -> list[str]:
    """Close the application's own windows other than the main frame (modal ones end with
    Cancel); GTK's native dialogs are the harness's (Escape)."""
    wx = mod("wx")
    closed = []
    for t in _other_windows():
        closed.append(str(t.GetTitle()))
        if isinstance(t, wx.Dialog) and t.IsModal():
            t.EndModal(wx.ID_CANCEL)
        else:
            t.Close(force=True)
            if t.IsShown():
                t.Destroy()
    return closed


def _is_splash(t: Any) -> bool:
    return "Splash" in type(t).__name__


def dismiss(args: dict[str, Any]) -> dict[str, Any]:
    return {"closed": _dismiss()}


def remember_fresh(args: dict[str, Any]) -> dict[str, Any]:
    """What a just-started InVesalius has: recorded once, before its first import."""
    import itertools

    const = mod("invesalius.constants")
    if "mask_colours" in FRESH:
        return {"fresh": sorted(FRESH)}
    FRESH["mask_colours"] = [list(c) for c in const.MASK_COLOUR]
    cyc = const.MEASURE_COLOUR
    first = [next(cyc) for _ in range(64)]
    FRESH["measure_colours"] = first[: _period(first)]
    const.MEASURE_COLOUR = itertools.cycle(FRESH["measure_colours"])
    _configs()  # created now (they are created lazily), before anything changes them
    return {"fresh": sorted(FRESH)}


def _period(seq: list[Any]) -> int:
    for p in range(1, len(seq)):
        if all(seq[i] == seq[i % p] for i in range(len(seq))):
            return p
    return len(seq)


def _image_checksum() -> int:
    sl = mod("invesalius.data.slice_").Slice()
    if sl.matrix is None:
        return -1
    return zlib.crc32(memoryview(sl.matrix).cast("B"))


class _NoRender:
    """While a reset imports and builds (about a hundred renders of the views, each tens of
    milliseconds with software OpenGL), the views do not render; they render once after."""

    def __enter__(self) -> None:
        # the class is loaded under two module names (vtk.wx..., vtkmodules.wx...)
        self.saved = [
            (m.wxVTKRenderWindowInteractor, m.wxVTKRenderWindowInteractor.Render)
            for name, m in list(sys.modules.items())
            if name.endswith("wx.wxVTKRenderWindowInteractor")
            and hasattr(m, "wxVTKRenderWindowInteractor")
        ]
        for cls, _ in self.saved:
            cls.Render = lambda *a, **k: None

    def __exit__(self, *exc: object) -> None:
        for cls, render in self.saved:
            cls.Render = render
        for v in [*_slice_viewers(), *_volume_viewers()]:
            with contextlib.suppress(Exception):
                v.interactor.Render()


def _close_project() -> None:
    ses = mod("invesalius.session").Session()
    const = mod("invesalius.constants")
    ctl = _controller()
    if ses.project_status != const.PROJ_CLOSE and ctl is not None:
        DISCARDS["ours"] = True
        try:
            ctl.CloseProject()
        finally:
            DISCARDS["ours"] = False
        pub = _pub()
        pub.sendMessage("Enable state project", state=False)
        pub.sendMessage("Set project name")
        pub.sendMessage("Stop Config Recording")
    # InVesalius leaves a closed project's renderers in the slice views (each import adds three:
    # they pile up, slow every render and keep drawing the last brush cursor): removed
    for v in _slice_viewers():
        if getattr(v, "slice_data", None) is None:
            for r in _renderers(v):
                v.interactor.GetRenderWindow().RemoveRenderer(r)
    LOADED.clear()


def _renderers(v: Any) -> list[Any]:
    rens = v.interactor.GetRenderWindow().GetRenderers()
    rens.InitTraversal()
    return [rens.GetNextItem() for _ in range(rens.GetNumberOfItems())]


def reset_ui(args: dict[str, Any]) -> dict[str, Any]:
    """The first half of a task's start: the application's own dialogs closed, the project
    closed without saving, the object counters and the application's own settings back to a
    just-started InVesalius's (`_restore`). What stays different is `ui_diff`'s (asked after
    this has settled: the panels lay themselves out afterwards)."""
    t0 = time.monotonic()
    if args.get("cwd"):
        os.chdir(args["cwd"])
    closed = _dismiss()
    remember_fresh({})
    _watch_closing()
    DISCARDS.update(count=0, saved_path=None)
    const = mod("invesalius.constants")
    ses = mod("invesalius.session").Session()
    if ses.project_status != const.PROJ_CLOSE:
        for v in _slice_viewers():
            with contextlib.suppress(Exception):
                v._set_editor_cursor_visibility(0)
        _pub().sendMessage("Enable style", style=const.STATE_DEFAULT)
    with _NoRender():
        _close_project()
    _reset_counters()
    _restore(fingerprint())
    return {"closed": closed, "reset_ui_s": time.monotonic() - t0}


def load_start(args: dict[str, Any]) -> dict[str, Any]:
    """The second half: the study imported, then the start's masks (by threshold, or voxels
    given), surfaces, current mask, slices, window, task panel and saved project file."""
    wx = mod("wx")
    t0 = time.monotonic()
    timings: dict[str, float] = {}
    _reset_counters()
    with _NoRender():
        _pub().sendMessage("Import directory", directory=args["dicom"], use_gui=True)
        LOADED.update(dicom=args["dicom"], checksum=_image_checksum())
        timings["import_s"] = time.monotonic() - t0
        _load_objects(args, timings)
    timings["total_s"] = time.monotonic() - t0
    wx.GetApp().Yield(True)
    return {"timings": timings, "project": _project_status()}


def _load_objects(args: dict[str, Any], timings: dict[str, float]) -> None:
    pub = _pub()
    prj = mod("invesalius.project").Project()
    sl = mod("invesalius.data.slice_").Slice()
    t2 = time.monotonic()
    masks = args.get("masks")
    if masks is not None and prj.mask_dict:
        _remove_all_masks()
        _reset_counters()
    names = [m.name for _, m in sorted(prj.mask_dict.items())]
    for m in masks or []:
        lo, hi = m["threshold"]
        colour = FRESH["mask_colours"][len(names) % len(FRESH["mask_colours"])]
        pub.sendMessage("Create new mask", mask_name=m["name"], thresh=(lo, hi), colour=colour)
        names.append(m["name"])
        if m.get("voxels") is not None:  # an edited mask: its voxels given
            _set_voxels(sl.current_mask, m["voxels"])
    for s in args.get("surfaces", []):
        _create_surface(s)
    cur = args.get("current")
    if cur is not None and cur in names:
        idx = names.index(cur)
        pub.sendMessage("Change mask selected", index=idx)
        pub.sendMessage("Show mask", index=idx, value=True)
    for m in prj.mask_dict.values():
        m.clear_history()
    timings["objects_s"] = time.monotonic() - t2
    _views(args)
    for v in _slice_viewers():
        with contextlib.suppress(Exception):
            v._set_editor_cursor_visibility(0)
    if args.get("project_file"):
        _controller().SaveProject(os.path.join(os.getcwd(), args["project_file"]))
    else:
        mod("invesalius.session").Session().ChangeProject()


def _remove_all_masks() -> None:
    """Every mask removed as the masks list's Remove button does (the list and the project
    together)."""
    dn = mod("invesalius.gui.data_notebook")
    frame = _frame()
    lists = [w for w in _walk(frame) if isinstance(w, dn.MasksListCtrlPanel)]
    if not lists:
        raise RuntimeError("no masks list")
    lc = lists[0]
    for i in range(lc.GetItemCount()):
        lc.Select(i, True)
    try:
        lc.RemoveMasks()
    except mod("wx").wxAssertionError:
        pass  # removing the last mask: the list marks "item 0" current after (as the UI does)


def _set_voxels(mask: Any, bits: str) -> None:
    np = mod("numpy")
    shape = tuple(n - 1 for n in mask.matrix.shape)
    raw = np.frombuffer(zlib.decompress(base64.b64decode(bits)), np.uint8)
    vox = np.unpackbits(raw)[: int(np.prod(shape))].reshape(shape).astype(bool)
    mask.matrix[1:, 1:, 1:] = np.where(vox, 255, 0).astype(np.uint8)
    mask.matrix[0, :, :] = 1
    mask.matrix[:, 0, :] = 1
    mask.matrix[:, :, 0] = 1
    mask.was_edited = True
    mask.modified(all_volume=True)
    sl = mod("invesalius.data.slice_").Slice()
    sl.discard_all_buffers()
    _pub().sendMessage("Reload actual slice")


def _create_surface(s: dict[str, Any]) -> None:
    prj = mod("invesalius.project").Project()
    index = [m.name for _, m in sorted(prj.mask_dict.items())].index(s["mask"])
    params = {
        "method": {"algorithm": "Default", "options": {}},
        "options": {
            "index": index, "name": s.get("name", ""), "quality": s.get("quality", "Optimal *"),
            "fill": False, "keep_largest": False, "overwrite": False,
        },
    }  # fmt: skip
    _pub().sendMessage("Create surface from index", surface_parameters=params)


def _views(args: dict[str, Any]) -> None:
    """Slices (each view's own number), window and level, the layout."""
    pub = _pub()
    names = {"axial": "AXIAL", "coronal": "CORONAL", "sagittal": "SAGITAL"}
    for view, n in (args.get("slices") or {}).items():
        orient = names[view]
        for v in _slice_viewers():
            if v.orientation == orient:
                v.set_slice_number(int(n))
                v.scroll.SetThumbPosition(int(n))
                pub.sendMessage("Update slice viewer")
    if args.get("window"):
        ww, wl = args["window"]
        pub.sendMessage("Bright and contrast adjustment image", window=ww, level=wl)
        pub.sendMessage("Update window level value", window=ww, level=wl)
        pub.sendMessage("Update slice viewer")
    frame = _frame()
    if frame is not None:  # the view the Go-to-slice dialog starts on, as in a fresh start
        frame._last_viewer_orientation_focus = "AXIAL"
    layout = _layout_toolbar()
    if layout is not None and args.get("task_panel") is False and not layout.ontool_layout:
        layout.ToggleLayout()  # as the toolbar's "Hide task panel" does


def image_sample(args: dict[str, Any]) -> dict[str, Any]:
    """Every `step`-th voxel of the loaded image (InVesalius's order), to check orientation."""
    np = mod("numpy")
    sl = mod("invesalius.data.slice_").Slice()
    step = int(args.get("step", 8))
    a = np.ascontiguousarray(sl.matrix[::step, ::step, ::step]).astype("<i2")
    return {"shape": list(a.shape), "data": base64.b64encode(a.tobytes()).decode("ascii")}


def ui_diff(args: dict[str, Any]) -> list[str]:
    """After `reset_ui` has settled: fold-panel bars laid out as fresh, then what still
    differs from the fresh fingerprint (`record: true` records it instead: the instance's
    first closed project)."""
    wx = mod("wx")
    for _ in range(3):  # the layouts the reset queued
        wx.GetApp().Yield(True)
    if args.get("record"):
        FRESH["fingerprint"] = fingerprint()
        return []
    fresh = FRESH.get("fingerprint")
    if fresh is None:
        return ["no fresh fingerprint recorded"]
    fpb = mod("wx.lib.agw.foldpanelbar")
    fp = fingerprint()
    for path, w in _windows().items():
        key = "box:" + path
        if isinstance(w, fpb.FoldPanelBar) and key in fresh and fp.get(key) != fresh[key]:
            size = wx.Size(fresh[key][2], fresh[key][3])
            w.SetMinSize(size)
            w.SetSize(size)
            parent = w.GetParent()
            if parent is not None:
                parent.Layout()
    now = fingerprint()
    # each difference with both values (for the log line that says why InVesalius restarts)
    return [f"{k}: {fresh.get(k)!r} -> {now.get(k)!r}"[:160] for k in _diff(fresh, now)[:200]]


OPS = {
    "state": read_state,
    "mask": read_mask,
    "widgets": read_widgets,
    "view_points": view_points,
    "dismiss": dismiss,
    "reset_ui": reset_ui,
    "load_start": load_start,
    "remember_fresh": remember_fresh,
    "image_sample": image_sample,
    "ui_diff": ui_diff,
}


# -- the socket server -------------------------------------------------------------------------


def _on_main(op: str, args: dict[str, Any], timeout: float) -> dict[str, Any]:
    wx = mod("wx")
    box: queue.Queue[dict[str, Any]] = queue.Queue()

    def run() -> None:
        try:
            box.put({"ok": True, "result": OPS[op](args)})
        except Exception as exc:
            box.put({"ok": False, "error": f"{type(exc).__name__}: {exc}",
                     "trace": traceback.format_exc()[-2000:]})  # fmt: skip

    wx.CallAfter(run)
    try:
        return box.get(timeout=timeout)
    except queue.Empty:
        return {
            "ok": False,
            "busy": True,
            "error": f"the main thread did not answer in {timeout} s",
        }


def _answer(req: dict[str, Any], token: str) -> dict[str, Any]:
    if req.get("token") != token:
        return {"ok": False, "error": "bad token"}
    op = req.get("op")
    if op == "ping":
        up = _app_up()
        return {"ok": True, "result": {"pid": os.getpid(), "app": up,
                                       "frame": up and _frame() is not None}}  # fmt: skip
    if op not in OPS:
        return {"ok": False, "error": f"unknown op {op!r}"}
    if not _app_up():
        return {"ok": False, "busy": True, "error": "the application is not up yet"}
    return _on_main(op, dict(req.get("args") or {}), float(req.get("timeout", 10)))


def _app_up() -> bool:
    """Whether wx is imported (completely) and its application object exists."""
    wx = sys.modules.get("wx")
    try:
        return wx is not None and wx.GetApp() is not None
    except AttributeError:  # wx is still being imported
        return False


def _client(conn: socket.socket, token: str) -> None:
    with conn:
        f = conn.makefile("rwb")
        for line in f:
            try:
                req = json.loads(line)
                res = _answer(req, token)
            except Exception as exc:
                res = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            f.write(json.dumps(res).encode() + b"\n")
            f.flush()


def serve(port_file: str, token: str) -> None:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    tmp = port_file + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(str(srv.getsockname()[1]))
    os.rename(tmp, port_file)

    def loop() -> None:
        while True:
            conn, _ = srv.accept()
            threading.Thread(target=_client, args=(conn, token), daemon=True).start()

    threading.Thread(target=loop, name="medspot-probe", daemon=True).start()


def main() -> None:
    import runpy

    inv = os.environ.get("INVESALIUS_DIR", "/usr/share/invesalius")
    sys.path[:0] = [inv, "/usr/lib/invesalius"]
    os.chdir(inv)
    random.seed(0)  # new masks' colours are random.choice(...): the same in every instance
    serve(os.environ["MEDSPOT_PROBE_FILE"], os.environ["MEDSPOT_PROBE_TOKEN"])
    sys.argv = ["app.py", *sys.argv[1:]]
    runpy.run_path(os.path.join(inv, "app.py"), run_name="__main__")


if __name__ == "__main__":
    main()
