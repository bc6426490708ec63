"""The tools a served agent calls, as pure argument schemas (BrowserGym's MCP server shape: one
tool per action of the documented action form, docs/live/agents.md "Action format"):

    list_tasks()                       the tasks offered (id, goal, tags, budget, tools)
    start_task(task_id)                a new episode: the goal and the first screenshot
    click(x, y), double_click(x, y), right_click(x, y), drag(x1, y1, x2, y2),
    scroll(x, y, dy), type(text), key(key)          one action each (one of the budget)
    wait(seconds)                      the screen after a pause (no action of the budget)
    done(), infeasible(reason)         the endings
    + the toolset's tools (`--tools orthanc`: find_studies, delete_study, ...)

Every action tool takes `episode` (the id `start_task` returned): optional with one
environment, required with several. Each argument model is strict (no extra keys, numbers are
finite numbers, strings are bounded: a typed text or a reason at most `MAX_TEXT_CHARS`, the
core's bound of one typed text, a name at most `MAX_NAME_CHARS`); `parse_call` turns a call
into what the host runs, or raises `ToolArgsError` with a message naming the tool and the
field. What fits the schema but cannot be executed (a point off the screen) is the episode's
to judge: a scored no-action step. Pure: no MCP, no environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from medspot.live.core import actions
from medspot.live.core.executable import MAX_TEXT_CHARS
from medspot.live.core.tools import UNKNOWN_TOOL, ToolArgsError, ToolSpec

__all__ = [
    "GUI_TOOLS",
    "MAX_NAME_CHARS",
    "ParsedCall",
    "ServeTool",
    "not_unicode",
    "parse_call",
    "serve_tools",
    "validation_message",
]

_EPISODE = "the episode id start_task returned (needed when several episodes run)"
# a task id, an episode id, a key name in a call (openenv-core bounds its episode ids alike)
MAX_NAME_CHARS = 255


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class _Episode(_Args):
    episode: str | None = Field(None, max_length=MAX_NAME_CHARS, description=_EPISODE)


class NoArgs(_Args):
    pass


class StartTask(_Args):
    task_id: str = Field(
        min_length=1, max_length=MAX_NAME_CHARS, description="a task id from list_tasks"
    )


class Point(_Episode):
    x: float = Field(description="pixels from the screenshot's left edge")
    y: float = Field(description="pixels from the screenshot's top edge")


class DragArgs(_Episode):
    x1: float = Field(description="press here (pixels)")
    y1: float
    x2: float = Field(description="release here (pixels)")
    y2: float


class ScrollArgs(Point):
    dy: int = Field(description="wheel notches; > 0 scrolls down, < 0 up")


class TypeArgs(_Episode):
    text: str = Field(max_length=MAX_TEXT_CHARS, description="typed into the focused element")


class KeyArgs(_Episode):
    key: str = Field(
        min_length=1, max_length=MAX_NAME_CHARS, description="a key or chord: Enter, Escape, ctrl+a"
    )


class WaitArgs(_Episode):
    seconds: float = Field(1.0, ge=0, le=10, description="how long to wait (0..10)")


class EndArgs(_Episode):
    pass


class InfeasibleArgs(_Episode):
    reason: str = Field("", max_length=MAX_TEXT_CHARS, description="why the task cannot be done")


Kind = Literal["list", "start", "action", "wait"]


@dataclass(frozen=True)
class ServeTool:
    """One tool of the server: its name, what it does, its argument model and what it is."""

    name: str
    description: str
    params: type[BaseModel]
    kind: Kind

    def schema(self, episode_required: bool = False) -> dict[str, Any]:
        schema = self.params.model_json_schema()
        schema.pop("title", None)
        if episode_required and "episode" in schema.get("properties", {}):
            schema["properties"]["episode"] = {
                "type": "string", "maxLength": MAX_NAME_CHARS, "description": _EPISODE,
            }  # fmt: skip
            schema["required"] = [*schema.get("required", []), "episode"]
        return schema


_PX = " (pixels of the last screenshot); returns the new screenshot and the step's flags"
GUI_TOOLS: tuple[ServeTool, ...] = (
    ServeTool("list_tasks", "The tasks this server offers: id, goal, tags, budget of actions.",
              NoArgs, "list"),
    ServeTool("start_task", "Start a task on a freshly reset application: returns its goal "
              "(and, in guided mode, the current step's instruction) and the first screenshot.",
              StartTask, "start"),
    ServeTool("click", "Left click at (x, y)" + _PX, Point, "action"),
    ServeTool("double_click", "Double click at (x, y)" + _PX, Point, "action"),
    ServeTool("right_click", "Right click at (x, y)" + _PX, Point, "action"),
    ServeTool("drag", "Press at (x1, y1), move, release at (x2, y2)" + _PX, DragArgs, "action"),
    ServeTool("scroll", "Turn the wheel at (x, y) by dy notches (> 0 down)" + _PX, ScrollArgs,
              "action"),
    ServeTool("type", "Type text into the focused element; returns the new screenshot",
              TypeArgs, "action"),
    ServeTool("key", "Press a key or chord (Enter, Escape, ctrl+a); returns the new screenshot",
              KeyArgs, "action"),
    ServeTool("wait", "Wait, then return the screenshot (uses no action of the budget)",
              WaitArgs, "wait"),
    ServeTool("done", "Declare the task finished: it is then judged on the application's state",
              EndArgs, "action"),
    ServeTool("infeasible", "Declare the task impossible (it ends the task); give the reason",
              InfeasibleArgs, "action"),
)  # fmt: skip


def _toolset_tool(spec: ToolSpec) -> ServeTool:
    params: type[BaseModel] = create_model(
        f"{spec.params.__name__}WithEpisode", __base__=spec.params,
        episode=(str | None, Field(None, max_length=MAX_NAME_CHARS, description=_EPISODE)),
    )  # fmt: skip
    note = " Changes the PACS." if spec.changes_state else ""
    return ServeTool(spec.name, f"[tools] {spec.description}{note} Uses one action of the budget.",
                     params, "action")  # fmt: skip


def serve_tools(toolset: tuple[ToolSpec, ...] = ()) -> tuple[ServeTool, ...]:
    """Every tool of a server: the GUI's, then the toolset's (`--tools`)."""
    return GUI_TOOLS + tuple(_toolset_tool(s) for s in toolset)


@dataclass(frozen=True)
class ParsedCall:
    """A call read: what the host runs (`kind`), on which episode, with what."""

    kind: Kind
    episode: str | None = None
    task_id: str | None = None
    action: actions.LiveAction | None = None
    seconds: float = 0.0
    raw: str = ""  # the call as text (journaled as the step's raw text)


def not_unicode(value: Any, where: str = "") -> str | None:
    """Where `value` (a call's arguments, at any depth) holds a string that is not Unicode text
    (a lone surrogate: JSON can carry one, no file can hold it), or None."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return where or "arguments"
    elif isinstance(value, Mapping):
        for k, v in value.items():
            at = f"{where}.{k}" if where else str(k)
            bad = not_unicode(k, at) or not_unicode(v, at)
            if bad is not None:
                return bad
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            bad = not_unicode(v, f"{where}.{i}" if where else str(i))
            if bad is not None:
                return bad
    return None


def validation_message(what: str, e: ValidationError) -> str:
    """`what: field: why` of the first thing wrong in a call or request, as an agent reads it
    (never the input itself, which may be long, nor pydantic's links)."""
    err = e.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(x) for x in err["loc"]) or "arguments"
    return f"{what}: {where}: {err['msg']}"


def _action(name: str, a: BaseModel) -> actions.LiveAction:
    d = a.model_dump()
    match name:
        case "click":
            return actions.Click(d["x"], d["y"])
        case "double_click":
            return actions.Click(d["x"], d["y"], double=True)
        case "right_click":
            return actions.Click(d["x"], d["y"], button="right")
        case "drag":
            return actions.Drag(d["x1"], d["y1"], d["x2"], d["y2"])
        case "scroll":
            return actions.Scroll(d["x"], d["y"], d["dy"])
        case "type":
            return actions.TypeText(d["text"])
        case "key":  # a name no key has is the episode's to judge (a no-action step)
            return actions.Key(actions.normalise_key(d["key"]) or d["key"])
        case "done":
            return actions.Done()
        case "infeasible":
            return actions.Infeasible(d["reason"])
    args = {k: v for k, v in d.items() if k != "episode" and v is not None}
    return actions.ToolCall(name, args)


def parse_call(
    name: str,
    arguments: Mapping[str, Any] | None,
    tools: tuple[ServeTool, ...],
    *,
    episode_required: bool = False,
) -> ParsedCall:
    """A call of `name` with `arguments` (as the client sent them) read against the server's
    tools; `ToolArgsError` names the tool and the field when it does not fit."""
    tool = next((t for t in tools if t.name == name), None)
    if tool is None:
        known = ", ".join(t.name for t in tools)
        raise ToolArgsError(f"unknown tool {name!r} (this server has: {known})", UNKNOWN_TOOL)
    bad = not_unicode(dict(arguments or {}))
    if bad is not None:
        raise ToolArgsError(f"{name}: {bad}: not Unicode text (it holds a lone surrogate)")
    try:
        a = tool.params.model_validate(dict(arguments or {}))
    except ValidationError as e:
        raise ToolArgsError(validation_message(name, e)) from None
    episode = getattr(a, "episode", None)
    if episode_required and tool.kind in ("action", "wait") and episode is None:
        raise ToolArgsError(f"{name}: episode: required (several episodes may run at once)")
    given = {k: v for k, v in a.model_dump(exclude_unset=True).items() if k != "episode"}
    raw = f"{name}({', '.join(f'{k}={v!r}' for k, v in given.items())})"
    if tool.kind == "start":
        return ParsedCall("start", task_id=a.model_dump()["task_id"], raw=raw)
    if tool.kind == "list":
        return ParsedCall("list", raw=raw)
    if tool.kind == "wait":
        return ParsedCall("wait", episode=episode, seconds=a.model_dump()["seconds"], raw=raw)
    return ParsedCall("action", episode=episode, action=_action(name, a), raw=raw)
