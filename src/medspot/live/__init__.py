"""MedSPOT-Live: closed-loop evaluation in real running clinical software.

An *environment* runs a real application (`env_names()`: Orthanc Explorer and OHIF in headless
chromium, DICOMscope under Xvfb), shows the agent its screen, executes its action and judges
the task on the application's state. The library API, imported lazily (`import medspot.live`
imports none of its parts)::

    from pathlib import Path
    import medspot.live as live

    tf, _ = live.env_task_file("orthanc-explorer")         # the packaged tasks, validated
    env = live.create_environment("orthanc-explorer", workdir=Path("/tmp/oe"))
    env.start()
    ep = live.Episode(env, tf.tasks[0])                      # the one definition of a step
    obs = ep.reset()
    res = ep.step(ep.oracle_action() or live.Done())         # your agent's action here
    env.close()

    spec = live.EnvSpec("orthanc-explorer")                   # the environment, checked
    live.run_live(live.LiveRequest(spec=spec, model="oracle", out=Path("runs/o")))

Parts: `medspot.live.core` (the environment contract, actions, tasks, the `Episode`), `.envs`
(one package per environment family, their registry and task files), `.agents` (models, the
oracle, replay; reading an answer into an action), `.loop` (the runner, the journal, metrics,
the run folder), `.drivers`, `.services`; the
Gymnasium API is `medspot.live.gym` (the `gym` extra). docs/live/library.md "Use it from Python".
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from medspot.errors import ConfigError, DataError, MedspotError, ModelCallError
    from medspot.live.agents.answer_reader import ParsedAction, parse_action, parse_answer
    from medspot.live.agents.factory import create_agent
    from medspot.live.agents.model import ModelAgent
    from medspot.live.agents.scripted import OracleAgent, ReplayAgent
    from medspot.live.agents.turn import AgentAnswer, AgentTurn, LiveAgent, PastTurn
    from medspot.live.core.actions import (
        Click,
        Done,
        Drag,
        Infeasible,
        Key,
        LiveAction,
        NotAnAction,
        Scroll,
        ToolCall,
        TypeText,
        action_from_json,
        action_to_json,
        describe_action,
    )
    from medspot.live.core.contract import (
        ActResult,
        ElementInfo,
        EnvEntry,
        Environment,
        EnvironmentFault,
        Observation,
        PixelBox,
    )
    from medspot.live.core.episode import (
        MODES,
        Episode,
        EpisodeError,
        Mode,
        StepResult,
        hit_intended,
    )
    from medspot.live.core.tasks import CheckSpec, LiveTask, LiveTaskFile, Locator, StepSpec
    from medspot.live.envs.registry import (
        create_environment,
        env_entry,
        env_names,
        register_env,
    )
    from medspot.live.envs.taskfiles import (
        env_task_file,
        load_task_file,
        parse_task_file,
        select_tasks,
    )
    from medspot.live.loop.envspec import EnvSpec, ExecutorSpec
    from medspot.live.loop.executors.options import ContainerOptions
    from medspot.live.loop.request import LiveOutcome, LiveRequest, run_live
    from medspot.live.loop.scheduler import LiveOptions
    from medspot.live.serve.openenv_client import MedspotAction, MedspotEnvClient

__all__ = [
    "MODES",
    "ActResult",
    "AgentAnswer",
    "AgentTurn",
    "CheckSpec",
    "Click",
    "ConfigError",
    "ContainerOptions",
    "DataError",
    "Done",
    "Drag",
    "ElementInfo",
    "EnvEntry",
    "EnvSpec",
    "Environment",
    "EnvironmentFault",
    "Episode",
    "EpisodeError",
    "ExecutorSpec",
    "Infeasible",
    "Key",
    "LiveAction",
    "LiveAgent",
    "LiveOptions",
    "LiveOutcome",
    "LiveRequest",
    "LiveTask",
    "LiveTaskFile",
    "Locator",
    "MedspotAction",
    "MedspotEnvClient",
    "MedspotError",
    "Mode",
    "ModelAgent",
    "ModelCallError",
    "NotAnAction",
    "Observation",
    "OracleAgent",
    "ParsedAction",
    "PastTurn",
    "PixelBox",
    "ReplayAgent",
    "Scroll",
    "StepResult",
    "StepSpec",
    "ToolCall",
    "TypeText",
    "action_from_json",
    "action_to_json",
    "create_agent",
    "create_environment",
    "describe_action",
    "env_entry",
    "env_names",
    "env_task_file",
    "hit_intended",
    "load_task_file",
    "parse_action",
    "parse_answer",
    "parse_task_file",
    "register_env",
    "run_live",
    "select_tasks",
]


# Each public name's one home (the names as one string per module).
_PARTS = {
    "medspot.errors": "ConfigError DataError MedspotError ModelCallError",
    "medspot.live.agents.answer_reader": "ParsedAction parse_action parse_answer",
    "medspot.live.agents.factory": "create_agent",
    "medspot.live.agents.model": "ModelAgent",
    "medspot.live.agents.scripted": "OracleAgent ReplayAgent",
    "medspot.live.agents.turn": "AgentAnswer AgentTurn LiveAgent PastTurn",
    "medspot.live.core.actions": "Click Done Drag Infeasible Key LiveAction NotAnAction Scroll "
    "ToolCall TypeText action_from_json action_to_json describe_action",
    "medspot.live.core.contract": "ActResult ElementInfo EnvEntry Environment EnvironmentFault "
    "Observation PixelBox",
    "medspot.live.core.episode": "MODES Episode EpisodeError Mode StepResult hit_intended",
    "medspot.live.envs.registry": "create_environment env_entry env_names register_env",
    "medspot.live.envs.taskfiles": "env_task_file load_task_file parse_task_file select_tasks",
    "medspot.live.core.tasks": "CheckSpec LiveTask LiveTaskFile Locator StepSpec",
    "medspot.live.loop.envspec": "EnvSpec ExecutorSpec",
    "medspot.live.loop.executors.options": "ContainerOptions",
    "medspot.live.loop.request": "LiveOutcome LiveRequest run_live",
    "medspot.live.loop.scheduler": "LiveOptions",
    # openenv-core, imported only when asked for (`pip install 'medspot[openenv]'`)
    "medspot.live.serve.openenv_client": "MedspotAction MedspotEnvClient",
}
_HOMES = {name: module for module, names in _PARTS.items() for name in names.split()}
# The homes that need an extra, by the extra's name: resolving their names imports it.
EXTRA_HOMES = {"medspot.live.serve.openenv_client": "openenv"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'medspot.live' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
