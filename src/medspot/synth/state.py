"""What a synthetic screen shows, as a frozen value: the key of the screen cache, the input of
`render` and `dialogs`."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

__all__ = ["ScreenState"]


@dataclass(frozen=True, slots=True)
class ScreenState:
    """Everything a screen shows. Base fields first; the overlay fields after `menu`."""

    patient: int = 0
    series: int = 0
    layout: str = "1 x 1"
    preset: str = "Default"
    tool: str | None = None  # active toolbar tool
    panel_tab: str = "Patients"
    marks: tuple[str, ...] = ()  # drawn on the viewport: "distance", "label"
    menu: str | None = None  # an open menu ("File") or toolbar dropdown ("@layout")
    submenu: str | None = None  # the open submenu's item label
    dialog: str | None = None  # "open", "export", "wl", "measure", "anonymise", "updates"
    dialog_tab: str | None = None
    selected: str | None = None  # selected row in the dialog
    checks: tuple[str, ...] = field(default=())  # checked boxes in the dialog
    typed: str = ""  # text typed in the dialog's field
    slider: float = 0.5

    def base(self) -> ScreenState:
        return replace(self, menu=None, submenu=None, dialog=None, dialog_tab=None,
                       selected=None, checks=(), typed="", slider=0.5)  # fmt: skip
