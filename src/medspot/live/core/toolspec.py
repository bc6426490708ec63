"""What a toolset offers, known without an application (`medspot.live.core.tools` runs them):
each tool's name, description and argument model (`ToolSpec`), and a toolset as an environment
family declares it in its entry (`ToolsetInfo`, `EnvEntry.toolsets`). Below the contract and the
tools, so that both can name them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from medspot.live.core.harm import HarmLabel

__all__ = ["ToolSpec", "ToolsetInfo"]


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
class ToolsetInfo:
    """A toolset as its environment family declares it (`EnvEntry.toolsets`), known without
    starting an environment: its `--tools` name, what it offers, and the check states
    (`CheckKind.reads`) its tools can change. The environment's `toolset(name)` makes the
    bound one (`Toolset`)."""

    name: str
    specs: tuple[ToolSpec, ...]
    reads: frozenset[str]
