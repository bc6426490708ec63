"""Drawing primitives of the synthetic screens, each recording the clickable rectangle it drew.

Rectangles are `(x1, y1, x2, y2)` in pixels, `x2`/`y2` exclusive: the widget's pixels are
`x1 <= x < x2`, `y1 <= y < y2`. A `Canvas` keeps the list of clickable widgets of one screen;
drawing an overlay (a dropdown, a dialog) removes the widgets it covers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PIL import Image, ImageDraw

from medspot.synth.themes import RGB, Theme, font

__all__ = ["ICONS", "Canvas", "Rect", "Widget", "intersects"]

Rect = tuple[int, int, int, int]

ICONS: tuple[str, ...] = (
    "open",
    "save",
    "export",
    "layout",
    "wl",
    "zoom",
    "pan",
    "measure",
    "annotate",
    "rotate",
    "flip",
    "reset",
    "anonymise",
    "print",
    "settings",
    "cine",
)


@dataclass(frozen=True, slots=True)
class Widget:
    """A clickable element of a screen. `text` is True when its label is drawn as text inside
    `rect` (menu items, labelled buttons, tabs, list rows); False for icon-only buttons, slider
    handles and image regions."""

    id: str
    kind: str
    label: str
    rect: Rect
    text: bool

    @property
    def center(self) -> tuple[float, float]:
        x1, y1, x2, y2 = self.rect
        return (x1 + x2) / 2, (y1 + y2) / 2


def intersects(a: Rect, b: Rect) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _mix(a: RGB, b: RGB, t: float) -> RGB:
    return (
        round(a[0] + (b[0] - a[0]) * t),
        round(a[1] + (b[1] - a[1]) * t),
        round(a[2] + (b[2] - a[2]) * t),
    )


class Canvas:
    """An image being drawn, with its theme and its clickable widgets."""

    def __init__(self, image: Image.Image, theme: Theme, widgets: list[Widget] | None = None):
        self.image = image
        self.draw = ImageDraw.Draw(image)
        self.theme = theme
        self.widgets: list[Widget] = list(widgets or [])

    # -- bookkeeping ----------------------------------------------------------------------
    def add(self, widget: Widget) -> Widget:
        self.widgets.append(widget)
        return widget

    def occlude(self, rect: Rect) -> None:
        """Forget the widgets an overlay drawn over `rect` hides."""
        self.widgets = [w for w in self.widgets if not intersects(w.rect, rect)]

    # -- text -----------------------------------------------------------------------------
    def text_width(self, s: str, size: int) -> int:
        return math.ceil(font(size).getlength(s))

    def text(self, x: int, cy: float, s: str, size: int, fill: RGB, bold: bool = False) -> int:
        """Draw `s` with its left edge at x, vertically centred on cy; returns its width."""
        f = font(size)
        top, bottom = f.getbbox("Ag")[1], f.getbbox("Ag")[3]
        y = round(cy - (top + bottom) / 2)
        self.draw.text((x, y), s, font=f, fill=fill)
        if bold:
            self.draw.text((x + 1, y), s, font=f, fill=fill)
        return self.text_width(s, size) + (1 if bold else 0)

    def text_centered(self, rect: Rect, s: str, size: int, fill: RGB, bold: bool = False) -> None:
        w = self.text_width(s, size) + (1 if bold else 0)
        self.text(round((rect[0] + rect[2] - w) / 2), (rect[1] + rect[3]) / 2, s, size, fill, bold)

    # -- shapes ---------------------------------------------------------------------------
    def fill(self, rect: Rect, colour: RGB, outline: RGB | None = None) -> None:
        x1, y1, x2, y2 = rect
        self.draw.rectangle((x1, y1, x2 - 1, y2 - 1), fill=colour, outline=outline)

    def line(self, xy: list[tuple[float, float]], colour: RGB, width: int = 1) -> None:
        self.draw.line(xy, fill=colour, width=width)

    def shadowed_panel(self, rect: Rect, colour: RGB) -> None:
        """An overlay panel (dropdown, dialog) with a border and a drop shadow; hides what
        lies under it, shadow included."""
        x1, y1, x2, y2 = rect
        shadow = _mix(self.theme.bg, (0, 0, 0), 0.45)
        self.fill((x1 + 3, y1 + 3, x2 + 3, y2 + 3), shadow)
        self.fill(rect, colour, outline=self.theme.border)
        self.occlude((x1, y1, x2 + 3, y2 + 3))

    # -- widgets --------------------------------------------------------------------------
    def button(
        self, wid: str, rect: Rect, label: str, default: bool = False, kind: str = "button"
    ) -> Widget:
        t = self.theme
        face = t.accent if default else _mix(t.menu_bg, t.chrome, 0.6)
        self.fill(rect, face, outline=t.border)
        self.text_centered(rect, label, t.font_size, t.accent_text if default else t.text)
        return self.add(Widget(wid, kind, label, rect, True))

    def checkbox(self, wid: str, x: int, cy: int, label: str, checked: bool) -> Widget:
        t = self.theme
        s = max(12, t.font_size - 1)
        y1 = cy - s // 2
        box = (x, y1, x + s, y1 + s)
        self.fill(box, t.field_bg, outline=t.border)
        if checked:
            self.line([(x + 3, cy), (x + s // 2 - 1, y1 + s - 4), (x + s - 3, y1 + 3)], t.accent, 2)
        w = self.text(x + s + 6, cy, label, t.font_size, t.text)
        if t.checkbox_box_only:
            return self.add(Widget(wid, "checkbox", label, (x, y1, x + s, y1 + s), False))
        rect = (x - 2, y1 - 2, x + s + 6 + w + 2, y1 + s + 2)
        return self.add(Widget(wid, "checkbox", label, rect, True))

    def field(self, wid: str, rect: Rect, value: str, placeholder: str = "") -> Widget:
        t = self.theme
        self.fill(rect, t.field_bg, outline=t.border)
        shown = value or placeholder
        if shown:
            self.text(rect[0] + 6, (rect[1] + rect[3]) / 2, shown, t.font_size,
                      t.text if value else t.muted)  # fmt: skip
        return self.add(Widget(wid, "field", value or placeholder, rect, bool(shown)))

    def slider(self, wid: str, x1: int, x2: int, cy: int, frac: float, label: str) -> Widget:
        """A horizontal slider; the handle is the clickable widget (icon-like, no text)."""
        t = self.theme
        self.fill((x1, cy - 2, x2, cy + 2), _mix(t.field_bg, t.border, 0.5))
        self.fill((x1, cy - 2, x1 + round((x2 - x1) * frac), cy + 2), t.accent)
        hx = x1 + round((x2 - x1) * frac)
        hw, hh = max(8, t.icon // 2), max(14, t.icon - 4)
        rect = (hx - hw // 2, cy - hh // 2, hx - hw // 2 + hw, cy - hh // 2 + hh)
        self.fill(rect, _mix(t.menu_bg, t.text, 0.25), outline=t.border)
        return self.add(Widget(wid, "slider", label, rect, False))

    def tab(self, wid: str, rect: Rect, label: str, active: bool) -> Widget:
        t = self.theme
        self.fill(rect, t.menu_bg if active else _mix(t.chrome, t.bg, 0.5), outline=t.border)
        if active:
            self.fill((rect[0] + 1, rect[1], rect[2] - 1, rect[1] + 3), t.accent)
        self.text_centered(rect, label, t.font_size, t.text if active else t.muted, active)
        return self.add(Widget(wid, "tab", label, rect, True))

    def row(
        self, wid: str, rect: Rect, label: str, selected: bool, kind: str = "list_row",
        hint: str = "",
    ) -> Widget:  # fmt: skip
        """A list or menu row: label left, optional hint (shortcut, arrow) right."""
        t = self.theme
        if selected:
            self.fill(rect, t.accent)
        colour = t.accent_text if selected else t.text
        cy = (rect[1] + rect[3]) / 2
        self.text(rect[0] + 10, cy, label, t.font_size, colour)
        if hint == ">":
            ax = rect[2] - 14
            self.draw.polygon([(ax, cy - 4), (ax + 5, cy), (ax, cy + 4)], fill=colour)
        elif hint:
            hw = self.text_width(hint, t.small_font_size)
            self.text(rect[2] - 10 - hw, cy, hint, t.small_font_size, t.muted)
        return self.add(Widget(wid, kind, label, rect, True))

    # -- icons ----------------------------------------------------------------------------
    def icon(self, name: str, x: int, y: int, s: int, colour: RGB) -> None:
        """Draw the glyph `name` in the square (x, y, x + s, y + s). No letters: icons must not
        be readable as text."""
        d, t = self.draw, self.theme
        filled = t.icon_style == "filled"
        w = max(1, s // 10)

        def P(u: float, v: float) -> tuple[float, float]:
            return (x + u * s, y + v * s)

        if name == "open":
            pts = [P(0.08, 0.25), P(0.4, 0.25), P(0.5, 0.35), P(0.92, 0.35), P(0.92, 0.85),
                   P(0.08, 0.85)]  # fmt: skip
            d.polygon(pts, fill=colour if filled else None, outline=colour, width=w)
        elif name == "save":
            d.rectangle((*P(0.12, 0.12), *P(0.88, 0.88)), outline=colour, width=w,
                        fill=colour if filled else None)  # fmt: skip
            d.rectangle((*P(0.3, 0.12), *P(0.7, 0.4)), fill=t.chrome if filled else colour)
        elif name == "export":
            d.rectangle((*P(0.12, 0.35), *P(0.7, 0.9)), outline=colour, width=w)
            d.line([P(0.4, 0.6), P(0.88, 0.12)], fill=colour, width=w + 1)
            d.polygon([P(0.6, 0.1), P(0.9, 0.1), P(0.9, 0.4)], fill=colour)
        elif name == "layout":
            for u in (0.1, 0.55):
                for v in (0.1, 0.55):
                    d.rectangle((*P(u, v), *P(u + 0.35, v + 0.35)), outline=colour, width=w,
                                fill=colour if filled and u == v else None)  # fmt: skip
        elif name == "wl":
            d.ellipse((*P(0.1, 0.1), *P(0.9, 0.9)), outline=colour, width=w)
            d.pieslice((*P(0.1, 0.1), *P(0.9, 0.9)), 90, 270, fill=colour)
        elif name == "zoom":
            d.ellipse((*P(0.1, 0.1), *P(0.62, 0.62)), outline=colour, width=w + 1,
                      fill=colour if filled else None)  # fmt: skip
            d.line([P(0.55, 0.55), P(0.9, 0.9)], fill=colour, width=w + 2)
        elif name == "pan":
            d.line([P(0.5, 0.1), P(0.5, 0.9)], fill=colour, width=w)
            d.line([P(0.1, 0.5), P(0.9, 0.5)], fill=colour, width=w)
            for tip, b1, b2 in (((0.5, 0.05), (0.38, 0.2), (0.62, 0.2)),
                            ((0.5, 0.95), (0.38, 0.8), (0.62, 0.8)),
                            ((0.05, 0.5), (0.2, 0.38), (0.2, 0.62)),
                            ((0.95, 0.5), (0.8, 0.38), (0.8, 0.62))):  # fmt: skip
                d.polygon([P(*tip), P(*b1), P(*b2)], fill=colour)
        elif name == "measure":
            d.polygon([P(0.05, 0.7), P(0.7, 0.05), P(0.95, 0.3), P(0.3, 0.95)],
                      outline=colour, width=w, fill=colour if filled else None)  # fmt: skip
            for k in range(1, 5):
                u = 0.05 + k * 0.13
                d.line([P(u + 0.05, 0.7 - k * 0.13), P(u + 0.14, 0.79 - k * 0.13)],
                       fill=t.chrome if filled else colour, width=w)  # fmt: skip
        elif name == "annotate":
            d.polygon([P(0.15, 0.85), P(0.22, 0.6), P(0.7, 0.12), P(0.88, 0.3), P(0.4, 0.78)],
                      outline=colour, width=w, fill=colour if filled else None)  # fmt: skip
        elif name == "rotate":
            d.arc((*P(0.12, 0.12), *P(0.88, 0.88)), 40, 320, fill=colour, width=w + 1)
            d.polygon([P(0.72, 0.02), P(0.95, 0.3), P(0.62, 0.32)], fill=colour)
        elif name == "flip":
            d.line([P(0.5, 0.05), P(0.5, 0.95)], fill=colour, width=w)
            d.polygon([P(0.42, 0.2), P(0.42, 0.8), P(0.08, 0.8)], fill=colour)
            d.polygon([P(0.58, 0.2), P(0.58, 0.8), P(0.92, 0.8)], outline=colour, width=w)
        elif name == "reset":
            d.arc((*P(0.12, 0.12), *P(0.88, 0.88)), 300, 240, fill=colour, width=w + 1)
            d.polygon([P(0.18, 0.08), P(0.42, 0.2), P(0.2, 0.38)], fill=colour)
        elif name == "anonymise":
            d.ellipse((*P(0.32, 0.08), *P(0.68, 0.44)), fill=colour)
            d.pieslice((*P(0.12, 0.5), *P(0.88, 1.2)), 180, 360, fill=colour)
            d.rectangle((*P(0.2, 0.2), *P(0.8, 0.3)), fill=t.chrome)
        elif name == "print":
            d.rectangle((*P(0.25, 0.08), *P(0.75, 0.35)), outline=colour, width=w)
            d.rectangle((*P(0.08, 0.35), *P(0.92, 0.7)), fill=colour)
            d.rectangle((*P(0.25, 0.6), *P(0.75, 0.92)), outline=colour, width=w,
                        fill=t.chrome)  # fmt: skip
        elif name == "settings":
            o = P(0.5, 0.5)
            for k in range(8):
                ang = k * math.pi / 4
                d.line([o, (o[0] + math.cos(ang) * s * 0.45, o[1] + math.sin(ang) * s * 0.45)],
                       fill=colour, width=w + 2)  # fmt: skip
            d.ellipse((*P(0.22, 0.22), *P(0.78, 0.78)), fill=colour)
            d.ellipse((*P(0.4, 0.4), *P(0.6, 0.6)), fill=t.chrome)
        elif name == "cine":
            d.polygon([P(0.2, 0.1), P(0.9, 0.5), P(0.2, 0.9)], fill=colour if filled else None,
                      outline=colour, width=w)  # fmt: skip
        else:  # pragma: no cover - a programming error
            raise KeyError(name)
