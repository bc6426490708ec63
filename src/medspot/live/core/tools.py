"""The tools track: typed tools offered beside the GUI actions (`--tools NAME`).

A *toolset* is what an environment offers through an API of its application (Orthanc's REST
API: `medspot.live.envs.orthanc.tools`): each tool has a name, a description and a JSON schema
of its arguments (`ToolSpec`, from a pydantic model), and `call(name, args)` runs it and says
what it found or did (`ToolOutcome`). A call with arguments that do not fit, or of a tool the
set does not have, is a `ToolArgsError`: the `Episode` scores it as a no-action step (flag
`bad_tool_args` / `unknown_tool`), never as a guess. The arguments are the model's, so what a
call fails on because of them is the model's too (`run_tool`): the application refusing the
request (an HTTP 4xx), a value the client cannot send (a character no URL holds), any error of
a value (`ValueError`, `TypeError`, `LookupError`, `ArithmeticError`, `RecursionError`) is a
`ToolArgsError` with the reason; only the application's own fault (it is down, it answers
5xx, it times out) is an `EnvironmentFault`. A tool call is one action of the budget,
followed by the same checks as a GUI action: a deletion of the wrong study fires the task's
`fail_if` (harm), exactly as the same deletion through the GUI.

Not every task can be reached through an API: opening a viewer, a measurement, a download in
the browser are states of the GUI. `tool_reach(task, kinds, reads)` says whether a task's end
state lies where the toolset acts (every success check reads a state the tools change, and no
`requires`d GUI step); a task that cannot be reached stays GUI-only in the tools track and its
result says why.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel, ValidationError

from medspot.errors import MedspotError
from medspot.jsonsafe import json_safe
from medspot.live.core.checks import CheckKinds
from medspot.live.core.contract import EnvironmentFault
from medspot.live.core.harm import HarmLabel
from medspot.live.core.tasks import LiveTask

__all__ = [
    "BAD_TOOL_ARGS",
    "UNKNOWN_TOOL",
    "ToolArgsError",
    "ToolOutcome",
    "ToolReach",
    "ToolSpec",
    "Toolset",
    "check_tool_args",
    "run_tool",
    "tool_reach",
]

log = logging.getLogger(__name__)

BAD_TOOL_ARGS = "bad_tool_args"  # flag: the arguments do not fit the tool's schema
UNKNOWN_TOOL = "unknown_tool"  # flag: no such tool is offered


class ToolArgsError(MedspotError):
    """A tool call that cannot run: unknown tool or arguments that do not fit. `flag` is the
    step's flag."""

    def __init__(self, message: str, flag: str = BAD_TOOL_ARGS) -> None:
        super().__init__(message)
        self.flag = flag


@dataclass(frozen=True)
class ToolSpec:
    """One tool as an agent sees it: name, what it does, its arguments' JSON schema (from
    `params`, a pydantic model: the one definition of its arguments)."""

    name: str
    description: str
    params: type[BaseModel]
    changes_state: bool = False  # it may change the application's state (a deletion)
    # the harm a call does on the wrong target (the tools track's harm, `core.harm`): what the
    # task's harm rules judge when it is called (a deletion: data lost)
    harm: HarmLabel | None = None

    @property
    def schema(self) -> dict[str, Any]:
        schema = self.params.model_json_schema()
        schema.pop("title", None)
        return schema


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool call found or did: `text` for the agent (what it is told), `data` the same
    as JSON (journaled)."""

    text: str
    data: Mapping[str, Any] = field(default_factory=dict)


class Toolset(Protocol):
    """Tools over an application's API, bound to one running environment."""

    name: str  # the `--tools` name, e.g. "orthanc"
    reads: frozenset[str]  # the check states (`CheckKind.reads`) its tools can change

    @property
    def specs(self) -> tuple[ToolSpec, ...]: ...

    def call(self, name: str, args: Mapping[str, Any]) -> ToolOutcome:
        """Run a tool; `ToolArgsError` for an unknown tool, arguments that do not fit or that
        the application refuses; `EnvironmentFault` for a fault of the application."""
        ...


# errors of a value: what a tool raises because of the arguments it was given
_ARGUMENT_ERRORS = (ValueError, TypeError, LookupError, ArithmeticError, RecursionError)


def _short(text: str, most: int = 300) -> str:
    line = (text.strip().splitlines() or [""])[0]
    return line if len(line) <= most else line[:most] + "..."


def run_tool(tools: Toolset, name: str, args: Mapping[str, Any]) -> ToolOutcome:
    """`tools.call(name, args)` under the tools' contract (module doc): a `ToolArgsError` or an
    `EnvironmentFault` as the tool raised it; any error of a value the tool raises (what its
    arguments made it fail on) a `ToolArgsError` (flag `bad_tool_args`) naming it; what the
    tool said, made writable (`json_safe`: it may echo the arguments)."""
    try:
        out = tools.call(name, args)
    except (ToolArgsError, EnvironmentFault):
        raise
    except _ARGUMENT_ERRORS as e:
        log.warning("tool %s failed on its arguments", _short(repr(name), 80), exc_info=True)
        raise ToolArgsError(
            f"tool {_short(str(name), 80)}: its arguments made it fail: "
            f"{type(e).__name__}: {_short(str(e))}"
        ) from None
    return ToolOutcome(json_safe(out.text), json_safe(dict(out.data)))


def check_tool_args(specs: tuple[ToolSpec, ...], name: str, args: Mapping[str, Any]) -> BaseModel:
    """The arguments of a call of `name`, validated by its schema (pure); `ToolArgsError`
    naming the tool and the field otherwise."""
    spec = next((s for s in specs if s.name == name), None)
    if spec is None:
        known = ", ".join(s.name for s in specs) or "none"
        shown = _short(repr(name), 80)
        raise ToolArgsError(f"unknown tool {shown} (offered: {known})", UNKNOWN_TOOL)
    if not isinstance(args, Mapping):
        raise ToolArgsError(f"tool {name}: the arguments are not an object")
    try:
        return spec.params.model_validate(dict(args))
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "arguments"
        raise ToolArgsError(f"tool {name}: {_short(where, 80)}: {_short(err['msg'])}") from None


@dataclass(frozen=True)
class ToolReach:
    """Whether a task's end state can be reached through a toolset, and if not, why."""

    reachable: bool
    reason: str = ""


def tool_reach(task: LiveTask, kinds: CheckKinds, reads: frozenset[str]) -> ToolReach:
    """Can the toolset that changes the states `reads` reach `task`'s end state? Every success
    check must read one of them, and no step must be required to have happened in the GUI."""
    if task.requires:
        return ToolReach(False, "it requires GUI steps to happen: " + ", ".join(task.requires))
    gui = sorted(
        {c.kind for c in task.success if (k := kinds.get(c.kind)) is None or k.reads not in reads}
    )
    if gui:
        return ToolReach(False, "its success is read in the GUI: " + ", ".join(gui))
    return ToolReach(True)
