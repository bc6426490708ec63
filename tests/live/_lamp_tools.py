"""A toolset on the lamp panel (`tests/live/_lamp_panel.py`), `--tools lamp`: tools that fail
on their arguments the ways a real API client does, for the tests that drive generated tool
calls through the `Episode` and the runner quickly.

    switch(lamp)      toggles a lamp: an unknown lamp is a KeyError of the panel's table
    label(text)       sends the text as ASCII (as an HTTP client puts an ID into a URL): a
                      full-width letter or an emoji is a UnicodeEncodeError
    scale(factor)     whole steps of a float: NaN or infinity is a ValueError / OverflowError

None of these is the application's fault: every one is the model's (`bad_tool_args`).
`register(monkeypatch)` registers the panel with this toolset as `lamp-panel`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from _lamp_panel import ENTRY, NAME, LampPanel
from pydantic import BaseModel, ConfigDict, Field

from medspot.live.core.tools import ToolOutcome, ToolSpec, check_tool_args
from medspot.live.envs import registry, toolsets

__all__ = ["LAMP_TOOLS", "TOOLSET", "LampTools", "register"]

TOOLSET = "lamp"


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Switch(_Args):
    lamp: str = Field(max_length=50)


class Label(_Args):
    text: str


class Scale(_Args):
    factor: float


LAMP_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("switch", "Toggle a lamp.", Switch, changes_state=True),
    ToolSpec("label", "Label the panel.", Label),
    ToolSpec("scale", "Scale the panel.", Scale),
)


class LampTools:
    name = TOOLSET
    reads = frozenset({"lamps"})

    def __init__(self, panel: LampPanel) -> None:
        self.panel = panel

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        return LAMP_TOOLS

    def call(self, name: str, args: Mapping[str, Any]) -> ToolOutcome:
        p = check_tool_args(LAMP_TOOLS, name, args)
        if isinstance(p, Switch):
            self.panel.on[p.lamp] = not self.panel.on[p.lamp]  # KeyError: no such lamp
            return ToolOutcome(f"switched {p.lamp}", {"lamp": p.lamp, "on": self.panel.on[p.lamp]})
        if isinstance(p, Label):
            sent = p.text.encode("ascii")  # UnicodeEncodeError: not ASCII
            return ToolOutcome(f"labelled {p.text}", {"label": p.text, "bytes": len(sent)})
        assert isinstance(p, Scale)
        steps = int(p.factor * 10)  # OverflowError, ValueError: no finite number
        return ToolOutcome(f"scaled by {steps} steps", {"steps": steps})


class ToolLampPanel(LampPanel):
    def toolset(self, name: str) -> LampTools | None:
        return LampTools(self) if name == TOOLSET else None


def _create(workdir: Path, **options: Any) -> ToolLampPanel:
    return ToolLampPanel(workdir, **options)


def register(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lamp panel with this toolset, registered for the test (`--tools lamp`)."""
    entry = dataclasses.replace(ENTRY, factory=_create, toolsets=(TOOLSET,))
    monkeypatch.setitem(registry._ENVS, NAME, entry)
    monkeypatch.setitem(
        toolsets.TOOLSETS, TOOLSET, toolsets.ToolsetInfo(TOOLSET, LAMP_TOOLS, LampTools.reads)
    )
