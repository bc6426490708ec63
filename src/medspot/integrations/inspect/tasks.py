"""The `@task`s of medspot, registered under the package's name when Inspect loads the
`inspect_ai` entry point (pyproject.toml), so that `inspect eval medspot/medspot` and
`inspect eval medspot/medspot_live` need no file path. Their arguments are the `-T` options
(docs/integrations.md)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from inspect_ai import Task, task

from medspot.errors import MedspotError

__all__ = ["medspot", "medspot_live"]


@contextlib.contextmanager
def _said_plainly() -> Iterator[None]:
    """A task argument medspot refuses (an unknown card, protocol, task id, a dataset with
    bad data) as Inspect's prerequisite error: its message alone, no traceback. (Inspect's
    `PrerequisiteError` is not in its public API; without it the error is raised as it is.)"""
    try:
        yield
    except MedspotError as e:
        try:
            from inspect_ai._util.error import PrerequisiteError
        except ImportError:
            raise e from None
        raise PrerequisiteError(f"medspot: {e}") from None


@task
def medspot(
    data: str,
    card: str,
    protocol: str = "medspot-v1",
    prompt: str | None = None,
    all_steps: bool = False,
    history: str = "none",
    seed: int = 0,
    tolerance: float | None = None,
    limit: int | None = None,
    apps: str | None = None,
    convention: str | None = None,
    prompt_template: str | None = None,
    server_extras: str = "auto",
) -> Task:
    """MedSPOT: a sample per task, its steps walked under `protocol` with the model card
    `card`'s prompt, image handling and answer parser; medspot's scores and metrics."""
    from medspot.integrations.inspect.static_task import static_task

    with _said_plainly():
        return static_task(
            data=data, card=card, protocol=protocol, prompt=prompt, all_steps=all_steps,
            history=history, seed=seed, tolerance=tolerance, limit=limit, apps=apps,
            convention=convention, prompt_template=prompt_template, server_extras=server_extras,
        )  # fmt: skip


@task
def medspot_live(
    env: str,
    tasks: str | None = None,
    out: str | None = None,
    mode: str = "agent",
    tools: str | None = None,
    max_turns: int | None = None,
    env_options: str | list[str] | None = None,
) -> Task:
    """MedSPOT-Live: a sample per live task of `env`; Inspect's ReAct agent acts in the real
    application through `medspot live serve --mcp` (stdio); medspot's success and harm."""
    from medspot.integrations.inspect.live_task import live_task

    with _said_plainly():
        return live_task(
            env=env, tasks=tasks, out=out, mode=mode, tools=tools, max_turns=max_turns,
            env_options=env_options,
        )  # fmt: skip
