"""The screens of a fictional DICOM viewer: a state in, an image and its clickable widgets out.

A `ScreenState` says everything visible: the study shown, the layout, the window/level preset,
the active tool, which menu, submenu or dialog is open and what is selected, checked or typed
in it. `Renderer.render` draws the base layer (title bar, menu bar, toolbar, side panel,
viewport, status bar) once per base state and draws the overlays (dropdowns, dialogs) on a copy.
Widget ids name elements stably across screens: `menu:File`, `item:File/Export`,
`item:File/Export/Screenshot (PNG)...`, `tool:zoom`, `tab:panel/Series`, `row:patient/2`,
`thumb:series/1`, `region:lesion`, `dlg:export/button:Export`, ...
"""

from __future__ import annotations

from PIL import Image

from medspot.synth.dialogs import draw_dialog
from medspot.synth.slices import PRESETS, SERIES, lesion_box, slice_image
from medspot.synth.state import ScreenState
from medspot.synth.themes import Theme
from medspot.synth.widgets import Canvas, Rect, Widget

__all__ = [
    "LAYOUTS",
    "MENUS",
    "PATIENTS",
    "TOOLS",
    "TOOL_MENUS",
    "Renderer",
    "tool_labelled",
]

LAYOUTS: tuple[str, ...] = ("1 x 1", "1 x 2", "2 x 2", "3 x 3")

# A menu entry: (label, hint) where hint is a shortcut, "" or a submenu's entries.
MenuEntry = tuple[str, "str | tuple[str, ...]"]

MENUS: dict[str, tuple[MenuEntry, ...]] = {
    "File": (
        ("Open Study...", "Ctrl+O"),
        ("Open DICOM Folder...", ""),
        ("Export", ("Screenshot (PNG)...", "Series as JPEG...", "DICOM Files...")),
        ("Anonymise...", ""),
        ("Print...", "Ctrl+P"),
        ("Exit", "Alt+F4"),
    ),
    "Edit": (
        ("Undo", "Ctrl+Z"),
        ("Redo", "Ctrl+Y"),
        ("Copy Image", "Ctrl+C"),
        ("Preferences...", ""),
    ),
    "View": (
        ("Layout", LAYOUTS),
        ("Window/Level", tuple(PRESETS)),
        ("Zoom to Fit", "F"),
        ("Reset View", "R"),
        ("Full Screen", "F11"),
    ),
    "Image": (
        ("Rotate Clockwise", ""),
        ("Rotate Counterclockwise", ""),
        ("Flip Horizontal", ""),
        ("Flip Vertical", ""),
        ("Invert Colours", "I"),
    ),
    "Tools": (
        ("Measure", ("Distance", "Angle", "Area (ROI)")),
        ("Annotate", ("Text Label", "Arrow")),
        ("Window/Level Settings...", ""),
        ("Measurement Settings...", ""),
    ),
    "Help": (("User Manual", "F1"), ("Check for Updates...", ""), ("About", "")),
}

# icon name -> tooltip / label
TOOLS: tuple[tuple[str, str], ...] = (
    ("open", "Open"), ("save", "Save"), ("export", "Export"), ("print", "Print"),
    ("layout", "Layout"), ("wl", "W/L"), ("zoom", "Zoom"), ("pan", "Pan"),
    ("measure", "Measure"), ("annotate", "Annotate"), ("rotate", "Rotate"), ("flip", "Flip"),
    ("reset", "Reset"), ("cine", "Cine"), ("anonymise", "Anonymise"), ("settings", "Settings"),
)  # fmt: skip
_GROUP_ENDS = {"print", "wl", "pan", "annotate", "reset", "cine"}
_SOME_LABELLED = {"open", "export", "layout", "measure", "anonymise", "settings"}

# toolbar buttons that open a dropdown: tool -> entries
TOOL_MENUS: dict[str, tuple[str, ...]] = {"layout": LAYOUTS, "wl": tuple(PRESETS)}

PATIENTS: tuple[tuple[str, str], ...] = (
    ("Doe, Jane", "CT Chest"), ("Roe, Richard", "CT Abdomen"), ("Moe, Alice", "MR Brain"),
    ("Poe, Martin", "CT Chest"), ("Loe, Sarah", "MR Brain"), ("Zoe, Peter", "CT Abdomen"),
    ("Hoe, Maria", "CT Chest"), ("Coe, Daniel", "MR Brain"),
)  # fmt: skip


def tool_labelled(theme: Theme, tool: str) -> bool:
    return theme.labelled_tools == "all" or (
        theme.labelled_tools == "some" and tool in _SOME_LABELLED
    )


class Renderer:
    """Draws screens of one theme; caches base layers."""

    def __init__(self, theme: Theme) -> None:
        self.theme = theme
        self._base: dict[ScreenState, tuple[Image.Image, tuple[Widget, ...]]] = {}

    def render(self, state: ScreenState) -> tuple[Image.Image, tuple[Widget, ...]]:
        base = state.base()
        if base not in self._base:
            self._base[base] = self._draw_base(base)
        image, widgets = self._base[base]
        c = Canvas(image.copy(), self.theme, list(widgets))
        if state.menu is not None:
            self._draw_menu(c, state)
        if state.dialog is not None:
            draw_dialog(c, state.dialog, state)
        return c.image, tuple(c.widgets)

    # -- base layer -----------------------------------------------------------------------
    def _draw_base(self, s: ScreenState) -> tuple[Image.Image, tuple[Widget, ...]]:
        t = self.theme
        w = t.size[0]
        c = Canvas(Image.new("RGB", t.size, t.bg), t)
        c.fill((0, 0, w, t.title_h), t.chrome)
        c.text(12, t.title_h / 2, f"{t.title} - {PATIENTS[s.patient][0]}", t.font_size, t.text)
        for k, glyph in enumerate(("close", "max", "min")):
            x2 = w - 6 - k * (t.title_h + 4)
            r = (x2 - t.title_h + 6, 3, x2, t.title_h - 3)
            c.fill(r, t.chrome, outline=t.border)
            cx, cy, a = (r[0] + r[2]) / 2, (r[1] + r[3]) / 2, (t.title_h - 14) / 2
            if glyph == "close":
                c.line([(cx - a, cy - a), (cx + a, cy + a)], t.text)
                c.line([(cx - a, cy + a), (cx + a, cy - a)], t.text)
            elif glyph == "max":
                c.draw.rectangle((cx - a, cy - a, cx + a, cy + a), outline=t.text)
            else:
                c.line([(cx - a, cy + a), (cx + a, cy + a)], t.text)
            c.add(Widget(f"win:{glyph}", "window_button", glyph, r, False))
        self._menubar(c)
        self._toolbar(c, s)
        self._statusbar(c, s)
        self._panel(c, s)
        self._viewport(c, s)
        return c.image, tuple(c.widgets)

    def menu_title(self, name: str) -> str:
        return name.upper() if self.theme.upper_menus else name

    def _menubar(self, c: Canvas) -> None:
        t = self.theme
        y1, y2 = t.title_h, t.title_h + t.menu_h
        c.fill((0, y1, t.size[0], y2), t.chrome)
        x = 6
        for name in MENUS:
            label = self.menu_title(name)
            tw = c.text_width(label, t.font_size) + (1 if t.bold_menus else 0)
            r = (x, y1 + 1, x + tw + 16, y2 - 1)
            c.text(x + 8, (y1 + y2) / 2, label, t.font_size, t.text, t.bold_menus)
            c.add(Widget(f"menu:{name}", "menu", label, r, True))
            x = r[2] + 2

    def tool_rects(self) -> dict[str, Rect]:
        t = self.theme
        y1 = t.title_h + t.menu_h
        rects: dict[str, Rect] = {}
        x = 6
        for tool, label in TOOLS:
            if tool_labelled(t, tool):
                bw = max(t.icon + 12, self._tw(label, t.small_font_size) + 10)
                rects[tool] = (x, y1 + 3, x + bw, y1 + t.toolbar_h - 3)
            else:
                bw = t.icon + 6
                top = y1 + (t.toolbar_h - bw) // 2
                rects[tool] = (x, top, x + bw, top + bw)
            x += bw + (14 if tool in _GROUP_ENDS else 3)
        return rects

    def _tw(self, s: str, size: int) -> int:
        return Canvas(Image.new("RGB", (1, 1)), self.theme).text_width(s, size)

    def _toolbar(self, c: Canvas, s: ScreenState) -> None:
        t = self.theme
        y1 = t.title_h + t.menu_h
        c.fill((0, y1, t.size[0], y1 + t.toolbar_h), t.chrome)
        c.line([(0, y1 + t.toolbar_h - 1), (t.size[0], y1 + t.toolbar_h - 1)], t.border)
        labels = dict(TOOLS)
        for tool, r in self.tool_rects().items():
            active = s.tool == tool or (s.menu == f"@{tool}")
            if active:
                c.fill(r, t.accent)
            colour = t.accent_text if active else t.text
            labelled = tool_labelled(t, tool)
            ix = round((r[0] + r[2] - t.icon) / 2)
            if labelled:
                iy = r[1] + 3
                c.text_centered((r[0], iy + t.icon, r[2], r[3]), labels[tool],
                                t.small_font_size, colour)  # fmt: skip
            else:
                iy = round((r[1] + r[3] - t.icon) / 2)
            c.icon(tool, ix, iy, t.icon, colour)
            c.add(Widget(f"tool:{tool}", "tool", labels[tool], r, labelled))
            if tool in _GROUP_ENDS:
                sx = r[2] + 7
                c.line([(sx, r[1] + 2), (sx, r[3] - 2)], t.border)

    def _statusbar(self, c: Canvas, s: ScreenState) -> None:
        t = self.theme
        w, h = t.size
        c.fill((0, h - t.status_h, w, h), t.chrome)
        cy = h - t.status_h / 2
        ww, wl = PRESETS[s.preset]
        tool = dict(TOOLS).get(s.tool or "", "")
        c.text(10, cy, f"{tool} tool active" if tool else "Ready", t.small_font_size, t.muted)
        right = f"WW {ww}  WL {wl}   |   Layout {s.layout}   |   100%"
        c.text(w - 14 - c.text_width(right, t.small_font_size), cy, right, t.small_font_size,
               t.muted)  # fmt: skip

    def panel_rect(self) -> Rect:
        t = self.theme
        w, h = t.size
        y1, y2 = t.title_h + t.menu_h + t.toolbar_h, h - t.status_h
        if t.panel_side == "left":
            return (0, y1, t.panel_w, y2)
        return (w - t.panel_w, y1, w, y2)

    def _panel(self, c: Canvas, s: ScreenState) -> None:
        t = self.theme
        px1, py1, px2, py2 = self.panel_rect()
        c.fill((px1, py1, px2, py2), t.panel, outline=t.border)
        tab_h = t.item_h + 6
        half = (px2 - px1 - 12) // 2
        for k, name in enumerate(("Patients", "Series")):
            r = (px1 + 6 + k * half, py1 + 6, px1 + 6 + (k + 1) * half, py1 + 6 + tab_h)
            c.tab(f"tab:panel/{name}", r, name, s.panel_tab == name)
        y = py1 + 12 + tab_h
        if s.panel_tab == "Patients":
            for i, (name, study) in enumerate(PATIENTS):
                r = (px1 + 6, y, px2 - 6, y + t.item_h + 4)
                c.row(f"row:patient/{i}", r, name, i == s.patient, hint=study)
                y = r[3] + 1
            return
        tw = px2 - px1 - 24
        th = int(tw * 0.5)
        for i, ser in enumerate(SERIES):
            r = (px1 + 12, y, px1 + 12 + tw, y + th + t.item_h + 4)
            if r[3] > py2 - 4:
                break
            c.fill(r, t.accent if i == s.series else t.field_bg, outline=t.border)
            img = slice_image(th - 8, th - 8, i, "Default")
            c.image.paste(img, (r[0] + (tw - img.width) // 2, r[1] + 4))
            colour = t.accent_text if i == s.series else t.text
            c.text_centered((r[0], r[1] + th, r[2], r[3]), ser.label, t.small_font_size, colour)
            c.add(Widget(f"thumb:series/{i}", "thumbnail", ser.label, r, True))
            y = r[3] + 8

    def viewport_rect(self) -> Rect:
        t = self.theme
        w = t.size[0]
        px1, py1, px2, py2 = self.panel_rect()
        if t.panel_side == "left":
            return (px2 + 2, py1 + 2, w - 2, py2 - 2)
        return (2, py1 + 2, px1 - 2, py2 - 2)

    def cell_rects(self, layout: str) -> list[Rect]:
        vx1, vy1, vx2, vy2 = self.viewport_rect()
        rows, cols = (int(p) for p in layout.split(" x "))
        cw, ch = (vx2 - vx1) // cols, (vy2 - vy1) // rows
        return [(vx1 + j * cw, vy1 + i * ch, vx1 + (j + 1) * cw, vy1 + (i + 1) * ch)
                for i in range(rows) for j in range(cols)]  # fmt: skip

    def lesion_rect(self, s: ScreenState) -> Rect:
        cell = self.cell_rects(s.layout)[0]
        x1, y1, x2, y2 = lesion_box(cell[2] - cell[0] - 4, cell[3] - cell[1] - 4, s.series)
        ox, oy = cell[0] + 2, cell[1] + 2
        return (ox + x1 - 2, oy + y1 - 2, ox + x2 + 2, oy + y2 + 2)

    def _viewport(self, c: Canvas, s: ScreenState) -> None:
        t = self.theme
        c.fill(self.viewport_rect(), t.viewport_bg)
        ww, wl = PRESETS[s.preset]
        small = t.small_font_size
        for i, r in enumerate(self.cell_rects(s.layout)):
            series = (s.series + i) % len(SERIES)
            img = slice_image(r[2] - r[0] - 4, r[3] - r[1] - 4, series, s.preset)
            c.image.paste(img, (r[0] + 2, r[1] + 2))
            c.draw.rectangle((r[0], r[1], r[2] - 1, r[3] - 1),
                             outline=t.accent if i == 0 else (70, 70, 70))  # fmt: skip
            if r[2] - r[0] < 260:
                continue
            ov = (230, 230, 120)
            c.text(r[0] + 8, r[1] + 8 + small / 2, PATIENTS[s.patient][0], small, ov)
            c.text(r[0] + 8, r[3] - 8 - small / 2, f"W: {ww} L: {wl}", small, ov)
            label = SERIES[series].label
            c.text(r[2] - 8 - c.text_width(label, small), r[1] + 8 + small / 2, label, small, ov)
        lr = self.lesion_rect(s)
        c.add(Widget("region:lesion", "region", "lesion", lr, False))
        if "distance" in s.marks:
            cy = (lr[1] + lr[3]) / 2
            c.line([(lr[0] + 2, cy), (lr[2] - 2, cy)], (255, 220, 0), 2)
            c.text(lr[2] + 6, cy, f"{(lr[2] - lr[0]) * 0.3:.1f} mm", small, (255, 220, 0))
        if "label" in s.marks:
            c.text(lr[0], lr[1] - small, "Lesion 1", small, (120, 220, 255))

    # -- menus ----------------------------------------------------------------------------
    def menu_entries(self, menu: str) -> tuple[MenuEntry, ...]:
        if menu.startswith("@"):
            return tuple((e, "") for e in TOOL_MENUS[menu[1:]])
        return MENUS[menu]

    def _dropdown(self, c: Canvas, x: int, y: int, prefix: str, entries: tuple[MenuEntry, ...],
                  selected: str | None) -> dict[str, Rect]:  # fmt: skip
        t = self.theme
        widest = max(c.text_width(label, t.font_size) for label, _ in entries)
        hints = [h for _, h in entries if isinstance(h, str) and h]
        hint_w = max((c.text_width(h, t.small_font_size) for h in hints), default=0)
        width = widest + hint_w + 54
        height = len(entries) * t.item_h + 8
        x = min(x, t.size[0] - width - 6)
        c.shadowed_panel((x, y, x + width, y + height), t.menu_bg)
        rects: dict[str, Rect] = {}
        for k, (label, hint) in enumerate(entries):
            r = (x + 3, y + 4 + k * t.item_h, x + width - 3, y + 4 + (k + 1) * t.item_h)
            shown = hint if isinstance(hint, str) else ">"
            c.row(f"{prefix}/{label}", r, label, label == selected, "menu_item", shown)
            rects[label] = r
        return rects

    def _draw_menu(self, c: Canvas, s: ScreenState) -> None:
        assert s.menu is not None
        t = self.theme
        if s.menu.startswith("@"):
            tr = self.tool_rects()[s.menu[1:]]
            self._dropdown(c, tr[0], tr[3] + 1, f"item:{s.menu}", self.menu_entries(s.menu),
                           None)  # fmt: skip
            return
        title = next(w for w in c.widgets if w.id == f"menu:{s.menu}")
        c.fill(title.rect, t.accent)
        c.text_centered(title.rect, self.menu_title(s.menu), t.font_size, t.accent_text,
                        t.bold_menus)  # fmt: skip
        entries = MENUS[s.menu]
        rects = self._dropdown(c, title.rect[0], title.rect[3] + 1, f"item:{s.menu}", entries,
                               s.submenu)  # fmt: skip
        if s.submenu is not None:
            sub = dict(entries)[s.submenu]
            assert isinstance(sub, tuple)
            r = rects[s.submenu]
            self._dropdown(c, r[2] + 1, r[1] - 4, f"item:{s.menu}/{s.submenu}",
                           tuple((e, "") for e in sub), None)  # fmt: skip
