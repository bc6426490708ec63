"""What a prompted agent (a card's agent prompt, the planner) is told of the tools track
(`--tools`): the tools offered beside the GUI actions, called in the text form
`tool(name, {"arg": value})` (docs/live/agents.md "Tools"), and what each earlier call returned,
as a line of its history. Pure."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from medspot.live.core.tools import ToolSpec

__all__ = ["tool_result_line", "tools_prompt", "with_tools"]

MAX_RESULT_CHARS = 2000  # a tool's answer in a history line is cut here


def _args(spec: ToolSpec) -> str:
    props = spec.schema.get("properties") or {}
    required = set(spec.schema.get("required") or ())
    parts = []
    for name, p in props.items():
        kind = p.get("type") or next(
            (a.get("type") for a in p.get("anyOf") or () if a.get("type") != "null"), "any"
        )
        parts.append(f'"{name}": {kind}' + ("" if name in required else " (optional)"))
    return "{" + ", ".join(parts) + "}"


def tools_prompt(tools: Sequence[ToolSpec]) -> str:
    """The tools offered, as an agent's prompt states them (empty without tools)."""
    if not tools:
        return ""
    lines = [
        "Besides the GUI actions you may call these tools of the application's API, one per "
        'action, written tool(name, {"argument": value}) with JSON arguments; each call is one '
        "action of the budget and its result is shown in your history:"
    ]
    lines += [f"- tool({s.name}, {_args(s)}): {s.description}" for s in tools]
    return "\n".join(lines)


def with_tools(goal: str, tools: Sequence[ToolSpec]) -> str:
    """The goal followed by the tools offered (the goal alone without tools)."""
    text = tools_prompt(tools)
    return f"{goal}\n\n{text}" if text else goal


def tool_result_line(result: Mapping[str, Any] | None) -> str | None:
    """An earlier tool call's result as a history line (None for a GUI action)."""
    if result is None:
        return None
    if "error" in result:
        return f"Tool error: {result['error']}"
    text = str(result.get("text") or json.dumps(result.get("data") or {}))
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + " ..."
    return f"Tool result ({result.get('name', 'tool')}): {text}"
