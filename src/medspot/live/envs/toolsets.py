"""The toolsets of the tools track (`--tools NAME`) by environment, known without starting
one: each family declares its own (`EnvEntry.toolsets`: what each offers, the check states it
can change); an environment makes a bound toolset with its `toolset(name)`
(`medspot.live.core.tools`)."""

from __future__ import annotations

from typing import Any

from medspot.errors import ConfigError
from medspot.live.core.tasks import LiveTask
from medspot.live.core.tools import ToolReach, ToolsetInfo, ToolSpec, tool_reach
from medspot.live.envs.registry import env_entry

__all__ = ["ToolsetInfo", "offered_tools", "tools_fields", "toolset_info"]


def toolset_info(env: str, name: str) -> ToolsetInfo:
    """The toolset `name` of environment `env` (`ConfigError` when it has none such)."""
    entry = env_entry(env)
    info = entry.toolset(name)
    if info is None:
        has = ", ".join(t.name for t in entry.toolsets) or "none"
        raise ConfigError(f"--tools {name}: {env} offers no such toolset (it offers: {has})")
    return info


def offered_tools(
    env: str, name: str | None, task: LiveTask
) -> tuple[tuple[ToolSpec, ...], ToolReach | None]:
    """The tools an episode of `task` is offered under `--tools name` (none without), and the
    task's reach (None without tools): a task the toolset cannot reach stays GUI-only."""
    if name is None:
        return (), None
    info = toolset_info(env, name)
    reach = tool_reach(task, env_entry(env).check_kinds, info.reads)
    return (info.specs if reach.reachable else ()), reach


def tools_fields(tools: tuple[ToolSpec, ...], reach: ToolReach | None) -> dict[str, Any]:
    """A task record's tools-track fields: the tools offered, why it stays GUI-only."""
    if reach is None:
        return {}
    return {"tools_offered": [s.name for s in tools],
            "gui_only": None if reach.reachable else reach.reason}  # fmt: skip
