"""Modal dialogs of the synthetic viewers: Open, Export, Window/Level presets, Measurement
settings, Anonymise, Check for updates. Widget ids start with `dlg:<kind>/`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from medspot.synth.slices import PRESETS
from medspot.synth.widgets import Canvas, Widget

if TYPE_CHECKING:
    from medspot.synth.state import ScreenState

__all__ = ["DIALOGS", "DIALOG_TITLES", "FILES", "MEASURE_TABS", "draw_dialog"]

FILES: tuple[str, ...] = (
    "CT_CHEST_0001.dcm",
    "CT_ABDOMEN_0002.dcm",
    "MR_BRAIN_T1_0003.dcm",
    "MR_BRAIN_T2_0004.dcm",
    "CT_CHEST_FU_0005.dcm",
    "CR_HAND_0006.dcm",
)

MEASURE_TABS: dict[str, tuple[str, ...]] = {
    "General": ("Show length labels", "Snap to pixel grid", "Keep tool active"),
    "Units": ("Millimetres", "Centimetres", "Pixels"),
    "Display": ("Show measurement handles", "Thick lines", "High contrast colours"),
}

DIALOG_TITLES: dict[str, str] = {
    "open": "Open Study",
    "export": "Export Image",
    "wl": "Window/Level Presets",
    "measure": "Measurement Settings",
    "anonymise": "Anonymise Study",
    "updates": "Check for Updates",
}

# kind -> (checkbox labels, field label or "", buttons; the first button is the default one)
DIALOGS: dict[str, tuple[tuple[str, ...], str, tuple[str, ...]]] = {
    "open": ((), "File name:", ("Open", "Cancel")),
    "export": (
        ("PNG", "JPEG", "DICOM", "Include annotations", "Burn in patient data"),
        "File name:",
        ("Export", "Cancel"),
    ),
    "wl": ((), "", ("OK", "Apply", "Cancel")),
    "measure": ((), "", ("OK", "Cancel")),
    "anonymise": (
        ("Remove patient name", "Remove birth date", "Remove institution", "Keep study date"),
        "New patient ID:",
        ("Anonymise", "Cancel"),
    ),
    "updates": ((), "", ("OK",)),
}


def draw_dialog(c: Canvas, kind: str, s: ScreenState) -> None:
    """Draw the dialog `kind` centred on the screen, in the state `s`."""
    t = c.theme
    f, ih = t.font_size, t.item_h
    sw, sh = t.size
    width = 30 * f + 120
    rows = {"open": 9, "export": 9, "wl": 11, "measure": 7, "anonymise": 8, "updates": 3}[kind]
    height = (rows + 3) * (ih + 6) + ih
    x1, y1 = (sw - width) // 2, (sh - height) // 2
    x2, y2 = x1 + width, y1 + height
    c.shadowed_panel((x1, y1, x2, y2), t.menu_bg)
    c.fill((x1 + 1, y1 + 1, x2 - 1, y1 + ih + 8), t.chrome)
    c.text(x1 + 12, y1 + (ih + 8) / 2, DIALOG_TITLES[kind], f, t.text, True)
    xr = (x2 - ih - 4, y1 + 4, x2 - 5, y1 + ih + 4)
    a = (ih - 10) / 2
    cx, cy = (xr[0] + xr[2]) / 2, (xr[1] + xr[3]) / 2
    c.line([(cx - a, cy - a), (cx + a, cy + a)], t.text, 2)
    c.line([(cx - a, cy + a), (cx + a, cy - a)], t.text, 2)
    c.add(Widget(f"dlg:{kind}/close", "dialog_close", "close", xr, False))
    p = f"dlg:{kind}/"
    x, y = x1 + 16, y1 + ih + 20
    checks, field_label, buttons = DIALOGS[kind]
    inner = (x, x2 - 16)
    if kind == "open":
        c.text(x, y + ih / 2, "Look in:   /data/studies", f, t.muted)
        y += ih + 8
        c.fill((inner[0], y, inner[1], y + len(FILES) * ih + 6), t.field_bg, outline=t.border)
        for k, name in enumerate(FILES):
            r = (inner[0] + 3, y + 3 + k * ih, inner[1] - 3, y + 3 + (k + 1) * ih)
            c.row(f"{p}row:{name}", r, name, name == s.selected)
        y += len(FILES) * ih + 16
    elif kind == "wl":
        names = tuple(PRESETS)
        c.fill((inner[0], y, inner[1], y + len(names) * ih + 6), t.field_bg, outline=t.border)
        for k, name in enumerate(names):
            ww, wl = PRESETS[name]
            r = (inner[0] + 3, y + 3 + k * ih, inner[1] - 3, y + 3 + (k + 1) * ih)
            c.row(f"{p}row:{name}", r, name, name == s.selected, hint=f"W {ww} / L {wl}")
        y += len(names) * ih + 20
        for k, label in enumerate(("Width", "Level")):
            cy = y + ih // 2
            c.text(x, cy, label, f, t.text)
            frac = s.slider if k == 0 else 0.5
            c.slider(f"{p}slider:{label}", x + 8 * f, inner[1] - 8, cy, frac, label)
            y += ih + 14
    elif kind == "measure":
        tab = s.dialog_tab or "General"
        tw = 9 * f
        for k, name in enumerate(MEASURE_TABS):
            c.tab(f"{p}tab:{name}", (x + k * tw, y, x + (k + 1) * tw - 2, y + ih + 6), name,
                  name == tab)  # fmt: skip
        y += ih + 16
        checks = MEASURE_TABS[tab]
    elif kind == "updates":
        c.text(x, y + ih / 2, "You are running the latest version.", f, t.text)
        y += ih + 12
    for label in checks:
        c.checkbox(f"{p}check:{label}", x + 4, y + ih // 2, label, label in s.checks)
        y += ih + 6
    if field_label:
        y += 6
        lw = c.text(x, y + ih / 2 + 2, field_label, f, t.text)
        value = s.typed or (s.selected or "" if kind == "open" else "")
        c.field(f"{p}field:{field_label.rstrip(':')}", (x + lw + 10, y, inner[1], y + ih + 4),
                value)  # fmt: skip
    bw = max(c.text_width(b, f) for b in buttons) + 36
    bx = x2 - 16
    for k, label in enumerate(buttons):
        r = (bx - bw, y2 - ih - 20, bx, y2 - 14)
        c.button(f"{p}button:{label}", r, label, default=k == 0)
        bx -= bw + 10
