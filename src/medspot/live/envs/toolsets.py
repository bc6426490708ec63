"""The toolsets of the tools track by name (`--tools NAME`), known without starting an
environment: what each offers (`ToolSpec`s), the check states it can change, and which
environments have it (`EnvEntry.toolsets`). An environment makes a bound toolset with its
`toolset(name)` (`medspot.live.core.tools`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from medspot.errors import ConfigError
from medspot.live.core.tasks import LiveTask
from medspot.live.core.tools import ToolReach, ToolSpec, tool_reach
from medspot.live.envs.orthanc.tools import ORTHANC_TOOLS, TOOLSET, OrthancTools
from medspot.live.envs.registry import env_entry

__all__ = ["TOOLSETS", "ToolsetInfo", "offered_tools", "tools_fields", "toolset_info"]


@dataclass(frozen=True)
class ToolsetInfo:
    name: str
    specs: tuple[ToolSpec, ...]
    reads: frozenset[str]  # the check states (`CheckKind.reads`) its tools can change


TOOLSETS: dict[str, ToolsetInfo] = {
    TOOLSET: ToolsetInfo(TOOLSET, ORTHANC_TOOLS, OrthancTools.reads),
}


def toolset_info(env: str, name: str) -> ToolsetInfo:
    """The toolset `name` of environment `env` (`ConfigError` when it has none such)."""
    info = TOOLSETS.get(name)
    offered = env_entry(env).toolsets
    if info is None or name not in offered:
        has = ", ".join(offered) or "none"
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
