"""The looks of the fictional DICOM viewers: colours, sizes, layout and font choices.

Fonts are always Pillow's bundled scalable font (`ImageFont.load_default(size)`, Pillow >= 10.1)
with the basic layout engine, so the same seed gives the same bytes on any machine with the
same Pillow, whatever fonts the system has. Looks vary by size, case, weight (drawn twice with a
one-pixel offset), colours and layout instead of typeface.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from PIL import ImageFont

from medspot.errors import ConfigError

__all__ = ["THEMES", "Theme", "font", "select_themes"]

RGB = tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class Theme:
    """One application's look. `name` is the application name used in file names."""

    name: str
    title: str  # shown in the title bar
    size: tuple[int, int]  # screen (width, height)
    dark: bool
    bg: RGB  # window background
    chrome: RGB  # title, menu and tool bars
    panel: RGB  # side panel
    text: RGB
    muted: RGB  # secondary text
    accent: RGB  # selection and highlights
    accent_text: RGB  # text on the accent colour
    border: RGB
    menu_bg: RGB  # dropdowns and dialogs
    field_bg: RGB  # text fields and lists
    viewport_bg: RGB
    font_size: int
    small_font_size: int  # toolbar labels, status bar, overlays
    bold_menus: bool
    upper_menus: bool  # menu bar titles in capitals
    title_h: int
    menu_h: int
    toolbar_h: int
    icon: int  # icon size in pixels
    labelled_tools: str  # "all", "some" or "none": which toolbar buttons carry a text label
    panel_side: str  # "left" or "right"
    panel_w: int
    status_h: int
    item_h: int  # dropdown and list row height
    icon_style: str  # "outline" or "filled"
    checkbox_box_only: bool  # a checkbox's clickable area is its square, not its label


def _t(**kw: object) -> Theme:
    return Theme(**kw)  # type: ignore[arg-type]


# fmt: off
THEMES: tuple[Theme, ...] = (
    _t(
        name="NovaView", title="NovaView DICOM Viewer 4.2", size=(1280, 800), dark=False,
        bg=(236, 236, 236), chrome=(222, 224, 228), panel=(245, 245, 247), text=(20, 20, 24),
        muted=(96, 98, 104), accent=(48, 112, 206), accent_text=(255, 255, 255),
        border=(168, 170, 176), menu_bg=(250, 250, 250), field_bg=(255, 255, 255),
        viewport_bg=(0, 0, 0), font_size=13, small_font_size=11, bold_menus=False,
        upper_menus=False, title_h=26, menu_h=22, toolbar_h=44, icon=20,
        labelled_tools="all", panel_side="left", panel_w=230, status_h=22, item_h=22,
        icon_style="outline", checkbox_box_only=False,
    ),
    _t(
        name="RadiQ", title="RadiQ Workstation", size=(1920, 1080), dark=True,
        bg=(34, 36, 40), chrome=(44, 47, 52), panel=(38, 40, 45), text=(226, 228, 232),
        muted=(150, 154, 160), accent=(232, 140, 40), accent_text=(20, 20, 20),
        border=(80, 84, 92), menu_bg=(52, 55, 61), field_bg=(28, 30, 33),
        viewport_bg=(0, 0, 0), font_size=15, small_font_size=12, bold_menus=False,
        upper_menus=False, title_h=30, menu_h=26, toolbar_h=38, icon=22,
        labelled_tools="none", panel_side="left", panel_w=300, status_h=24, item_h=26,
        icon_style="filled", checkbox_box_only=True,
    ),
    _t(
        name="KestrelPACS", title="Kestrel PACS Client", size=(1366, 768), dark=False,
        bg=(228, 234, 240), chrome=(205, 216, 228), panel=(238, 242, 246), text=(16, 28, 44),
        muted=(84, 98, 116), accent=(0, 128, 128), accent_text=(255, 255, 255),
        border=(140, 156, 174), menu_bg=(246, 249, 252), field_bg=(255, 255, 255),
        viewport_bg=(6, 6, 10), font_size=12, small_font_size=10, bold_menus=True,
        upper_menus=True, title_h=24, menu_h=22, toolbar_h=34, icon=18,
        labelled_tools="some", panel_side="right", panel_w=220, status_h=20, item_h=20,
        icon_style="outline", checkbox_box_only=True,
    ),
    _t(
        name="HelixView", title="HelixView Medical Imaging", size=(2560, 1440), dark=True,
        bg=(18, 22, 30), chrome=(26, 32, 44), panel=(22, 27, 37), text=(214, 222, 236),
        muted=(130, 142, 160), accent=(64, 160, 255), accent_text=(10, 16, 24),
        border=(58, 68, 86), menu_bg=(32, 39, 53), field_bg=(14, 18, 25),
        viewport_bg=(0, 0, 0), font_size=20, small_font_size=15, bold_menus=True,
        upper_menus=False, title_h=38, menu_h=32, toolbar_h=60, icon=24,
        labelled_tools="some", panel_side="left", panel_w=400, status_h=30, item_h=34,
        icon_style="outline", checkbox_box_only=False,
    ),
    _t(
        name="OrbisDicom", title="Orbis DICOM Studio", size=(1600, 900), dark=False,
        bg=(246, 244, 238), chrome=(232, 228, 218), panel=(250, 248, 244), text=(40, 32, 24),
        muted=(118, 108, 96), accent=(150, 60, 140), accent_text=(255, 255, 255),
        border=(176, 168, 154), menu_bg=(255, 253, 248), field_bg=(255, 255, 255),
        viewport_bg=(12, 12, 12), font_size=14, small_font_size=11, bold_menus=False,
        upper_menus=False, title_h=28, menu_h=24, toolbar_h=30, icon=16,
        labelled_tools="none", panel_side="right", panel_w=260, status_h=22, item_h=24,
        icon_style="filled", checkbox_box_only=True,
    ),
    _t(
        name="VistaScan", title="VistaScan Viewer", size=(1440, 900), dark=True,
        bg=(30, 30, 30), chrome=(20, 20, 20), panel=(36, 36, 36), text=(240, 240, 240),
        muted=(160, 160, 160), accent=(76, 175, 80), accent_text=(0, 0, 0),
        border=(90, 90, 90), menu_bg=(48, 48, 48), field_bg=(24, 24, 24),
        viewport_bg=(0, 0, 0), font_size=13, small_font_size=11, bold_menus=False,
        upper_menus=True, title_h=26, menu_h=24, toolbar_h=50, icon=22,
        labelled_tools="all", panel_side="left", panel_w=250, status_h=22, item_h=23,
        icon_style="outline", checkbox_box_only=False,
    ),
)
# fmt: on


def select_themes(k: int) -> tuple[Theme, ...]:
    """The first `k` looks (1 <= k <= len(THEMES)), in a fixed order."""
    if not 1 <= k <= len(THEMES):
        raise ConfigError(f"--apps must be between 1 and {len(THEMES)}, got {k}")
    return THEMES[:k]


@lru_cache(maxsize=64)
def font(size: int) -> ImageFont.FreeTypeFont:
    """Pillow's bundled scalable font at `size`, with the basic layout engine."""
    base = ImageFont.load_default(size)
    if not isinstance(base, ImageFont.FreeTypeFont):  # pragma: no cover - Pillow without FreeType
        raise RuntimeError("the synthetic suite needs Pillow built with FreeType (Pillow >= 10.1)")
    return base.font_variant(layout_engine=ImageFont.Layout.BASIC)
