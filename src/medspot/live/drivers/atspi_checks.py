"""The check kinds of the X11 desktop environments (`atspi.*`, `window.*`): application state
read through AT-SPI (never a box), judged by pure functions of the tree.

A check names its widget with the locator fields (`role`, `text`, `contains`, `description`,
`nth`) or `after_label` (the first text widget after the label with that name, e.g. "c:"),
matched over the WHOLE tree (hidden tabs included) unless `showing: true` is given.

    {"kind": "atspi.text", "after_label": "Factor:", "number": 1.5, "tol": 0.01}
    {"kind": "atspi.text", "role": "text", "nth": 3, "includes": "rows = 256"}
    {"kind": "atspi.text", "contains": "c/w:", "equals": "c/w: 40.0/400.0"}
    {"kind": "atspi.state", "description": "Invert", "state": "checked"}      (value: true)
    {"kind": "atspi.exists", "role": "push button", "text": "Ok", "showing": true, "value": false}
    {"kind": "atspi.value", "role": "scroll bar", "nth": 1, "showing": true, "min": 1100}
    {"kind": "atspi.rows", "role": "label", "contains": "Series ", "showing": true,
     "exactly": ["Series CT * Chest Axial 5mm", "Series CT * Scout"]}
    {"kind": "window.title_matches", "pattern": "^DICOMscope"}

`atspi.text` compares the widget's text content (its name where it has no text: labels) by
exactly one of `equals` (after trimming), `includes` (substring), `matches` (regex search) or
`number` (the first number in it, within `tol`, default 1e-6). `atspi.value` reads the Value
interface (scroll bars, sliders, spin buttons): `min` / `max` (inclusive), `equals` within
`tol`. `atspi.rows`: the widgets matching the query (every match, no `nth`) are exactly the
entries, one each (`match`: `contains`, the default, or `equals`; `ordered`: in tree order).
"""

from __future__ import annotations

import re
from typing import ClassVar

from pydantic import Field, field_validator, model_validator

from medspot.live.core import checks
from medspot.live.drivers.atspi import AtspiNode, AtspiTree, NodeQuery

__all__ = ["ATSPI_STATES", "DESKTOP_KINDS", "find_target", "widget_content"]

_NUM = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
# the AT-SPI state names as the tree reader writes them (pyatspi's, lower case, "-")
ATSPI_STATES = (
    "active", "animated", "armed", "busy", "checkable", "checked", "collapsed", "defunct",
    "editable", "enabled", "expandable", "expanded", "focusable", "focused", "has-popup",
    "has-tooltip", "horizontal", "iconified", "indeterminate", "invalid-entry", "is-default",
    "manages-descendants", "modal", "multi-line", "multiselectable", "opaque", "pressed",
    "read-only", "required", "resizable", "selectable", "selectable-text", "selected",
    "sensitive", "showing", "single-line", "stale", "supports-autocompletion", "transient",
    "truncated", "vertical", "visible", "visited",
)  # fmt: skip
_TEXT_ROLES = ("text", "password text", "spin button", "combo box")


def widget_content(n: AtspiNode) -> str:
    return (n.text if n.text else n.name).strip()


class _Query(checks.CheckParams):
    """Which widgets: AT-SPI `role`, exact `text` (name, or description when the name is
    empty), `contains` (in name, description or text), exact `description`; `showing: true`:
    only what is on screen."""

    role: str | None = Field(None, min_length=1)
    text: str | None = None
    contains: str | None = Field(None, min_length=1)
    description: str | None = None
    showing: bool = False

    def query(self, nth: int = 0) -> NodeQuery:
        return NodeQuery(self.role, self.text, self.contains, self.description, nth)

    def _names_something(self) -> bool:
        return any(x is not None for x in (self.role, self.text, self.contains, self.description))


class WidgetParams(_Query):
    """One widget: the query's `nth` match (tree order), or `after_label`."""

    nth: int = Field(0, ge=0)
    after_label: str | None = Field(None, min_length=1)

    @model_validator(mode="after")
    def _one_widget(self) -> WidgetParams:
        if self.after_label is not None:
            if self._names_something() or self.nth:
                raise ValueError("'after_label' names the widget alone (no role/text/.../nth)")
        elif not self._names_something():
            raise ValueError("names no widget: give role, text, contains, description or "
                             "after_label")  # fmt: skip
        return self


def find_target(tree: AtspiTree, p: WidgetParams) -> AtspiNode | None:
    if p.after_label is not None:
        want = p.after_label.strip().rstrip(":").strip()
        nodes = tree.nodes
        for n in nodes:
            if n.role == "label" and n.name.strip().rstrip(":").strip() == want:
                for m in nodes[n.index + 1 :]:
                    if m.parent != n.parent:
                        continue
                    if m.role in _TEXT_ROLES:
                        if not p.showing or tree.visible_box(m) is not None:
                            return m
                        break
        return None
    hits = tree.find(p.query(p.nth), visible_only=p.showing)
    return hits[p.nth] if p.nth < len(hits) else None


class TextParams(WidgetParams):
    equals: str | None = None
    includes: str | None = None
    matches: checks.Regex | None = None
    number: float | None = None
    tol: float | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _one_test(self) -> TextParams:
        tests = [x is not None for x in (self.equals, self.includes, self.matches, self.number)]
        if sum(tests) != 1:
            raise ValueError("needs exactly one of 'equals', 'includes', 'matches', 'number'")
        if self.tol is not None and self.number is None:
            raise ValueError("'tol' goes with 'number'")
        return self

    def vacuous(self) -> str | None:
        if self.includes == "" or (
            self.matches is not None and checks.pattern_matches_anything(self.matches)
        ):
            return "the text test holds for any text"
        return None

    def unapplied(self) -> str | None:
        if self.after_label is None:
            return None
        return (f"reads the input field after {self.after_label!r}, which shows typed text "
                "before the application applies it: read the applied value (in DICOMscope "
                "dicomscope.window, dicomscope.zoom)")  # fmt: skip


def _text(p: TextParams, tree: AtspiTree) -> bool:
    node = find_target(tree, p)
    if node is None:
        return False
    content = widget_content(node)
    if p.equals is not None:
        return content == p.equals.strip()
    if p.includes is not None:
        return p.includes in content
    if p.matches is not None:
        return re.search(p.matches, content) is not None
    m = _NUM.search(content)
    assert p.number is not None
    return m is not None and abs(float(m.group()) - p.number) <= (
        p.tol if p.tol is not None else 1e-6
    )


class StateParams(WidgetParams):
    """The widget has AT-SPI `state` (`value: false`: it has not)."""

    state: str = "checked"
    value: bool = True

    @field_validator("state")
    @classmethod
    def _known_state(cls, v: str) -> str:
        if v not in ATSPI_STATES:
            raise ValueError(f"unknown AT-SPI state {v!r} (known: {', '.join(ATSPI_STATES)})")
        return v


def _state(p: StateParams, tree: AtspiTree) -> bool:
    node = find_target(tree, p)
    return node is not None and (p.state in node.states) == p.value


class ValueParams(WidgetParams):
    equals: float | None = None
    min: float | None = None
    max: float | None = None
    tol: float | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _range(self) -> ValueParams:
        if self.equals is None and self.min is None and self.max is None:
            raise ValueError("needs 'equals', 'min' or 'max'")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min} > max {self.max}: no value satisfies it")
        if self.tol is not None and self.equals is None:
            raise ValueError("'tol' goes with 'equals'")
        return self


def _value(p: ValueParams, tree: AtspiTree) -> bool:
    node = find_target(tree, p)
    if node is None or node.value is None:
        return False
    v = node.value
    if p.equals is not None and abs(v - p.equals) > (p.tol if p.tol is not None else 1e-6):
        return False
    if p.min is not None and v < p.min:
        return False
    return not (p.max is not None and v > p.max)


class ExistsParams(WidgetParams):
    """The widget exists (`value: false`: it does not)."""

    value: bool = True


def _exists(p: ExistsParams, tree: AtspiTree) -> bool:
    return (find_target(tree, p) is not None) == p.value


class RowsParams(_Query):
    exactly: list[str] = Field(max_length=200)
    match: checks.RowMatch = "contains"
    ordered: bool = False

    @model_validator(mode="after")
    def _names_rows(self) -> RowsParams:
        if not self._names_something():
            raise ValueError("names no widgets: give role, text, contains or description")
        return self


def _rows(p: RowsParams, tree: AtspiTree) -> bool:
    texts = [n.label for n in tree.find(p.query(), visible_only=p.showing)]
    return checks.rows_match(texts, p.exactly, p.match, p.ordered)


class TitleParams(checks.RegexParams):
    searched: ClassVar[str] = "title"


def _title(p: TitleParams, titles: tuple[str, ...]) -> bool:
    return any(re.search(p.pattern, t) for t in titles)


DESKTOP_KINDS = checks.CheckKinds(
    checks.CheckKind("atspi.text", TextParams, "atspi", _text, "a widget's text"),
    checks.CheckKind("atspi.state", StateParams, "atspi", _state,
                     "a widget's AT-SPI state (value false: the state is absent)"),
    checks.CheckKind("atspi.value", ValueParams, "atspi", _value,
                     "a widget's Value (scroll bars, sliders, spin buttons)"),
    checks.CheckKind("atspi.exists", ExistsParams, "atspi", _exists,
                     "a widget exists (value false: it does not)"),
    checks.CheckKind("atspi.rows", RowsParams, "atspi", _rows,
                     "the widgets a query names are exactly these"),
    checks.CheckKind("window.title_matches", TitleParams, "window", _title,
                     "a regex searched in the titles of the showing windows"),
)  # fmt: skip
