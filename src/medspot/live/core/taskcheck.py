"""A task checked against the environment that will run it, from what the environment declares
(`EnvEntry`: its check kinds, locator keys and own task rules): for a task file
(`medspot.live.envs.taskfiles`) and for a task an `Episode` is given."""

from __future__ import annotations

from dataclasses import replace

from medspot.errors import DataError, Location
from medspot.live.core.contract import REGISTERED, EnvEntry
from medspot.live.core.tasks import (
    CheckSpec,
    HarmCheckSpec,
    LiveTask,
    LiveTaskFile,
    Locator,
    location_of,
)

__all__ = ["check_against_entry", "check_task_for_env", "task_checks"]


def task_checks(task: LiveTask) -> list[tuple[str, CheckSpec]]:
    """Every check of a task with its dotted place: `success.0`, `fail_if.1`,
    `checkpoints.0.check`, `steps.2.done_if`, `start.prepare.0.done_if` (0-based, as
    pydantic's locations)."""
    out: list[tuple[str, CheckSpec]] = []
    out += [(f"success.{j}", c) for j, c in enumerate(task.success)]
    out += [(f"fail_if.{j}", c) for j, c in enumerate(task.fail_if)]
    out += [(f"checkpoints.{j}.check", c.check) for j, c in enumerate(task.checkpoints)]
    out += [(f"steps.{k}.done_if", s.done_if) for k, s in enumerate(task.steps) if s.done_if]
    out += [
        (f"start.prepare.{k}.done_if", s.done_if)
        for k, s in enumerate(task.start.prepare)
        if s.done_if is not None
    ]
    return out


def _where(file: str, i: int, task: LiveTask, place: str) -> Location:
    """Task `i` of `file` (named by its id) at its dotted `place`."""
    parts: list[int | str] = [int(p) if p.isdigit() else p for p in place.split(".")]
    return replace(location_of(file, ("tasks", i, *parts)), task_id=task.id)


def check_against_entry(parsed: LiveTaskFile, file: str, entry: EnvEntry) -> None:
    """The tasks of `parsed` against the environment `entry` declares: check kinds, their
    parameters (seeded names, locators inside them), their regions against the environment's
    geometry (`CheckParams.geometry_problem`), the label of a built-in harm rule
    (`CheckParams.harm`), an infeasible task's success checks that need a change
    (`CheckParams.needs_change`), locator keys of every step (the path and `start.prepare`)
    and the environment's own task rules: the first problem is a located
    `DataError`."""
    keys = set(entry.locator_keys)
    lint = entry.task_check

    def bad_keys(loc: Locator) -> str | None:
        if loc.keys() <= keys:
            return None
        bad = ", ".join(sorted(loc.keys() - keys))
        return f"locator key(s) {bad} not understood by {parsed.env}"

    for i, task in enumerate(parsed.tasks):
        geometry = entry.geometry(task) if entry.geometry is not None else None
        for place, check in task_checks(task):
            try:
                params = entry.check_kinds.parse(check, parsed.env)
            except DataError as exc:
                raise DataError(exc.message, _where(file, i, task, place)) from None
            for name, loc in params.locators():
                why = bad_keys(loc)
                if why is not None:
                    raise DataError(
                        f"check {check.kind!r}: {why}", _where(file, i, task, f"{place}.{name}")
                    )
            off = params.geometry_problem(geometry) if geometry is not None else None
            if off is not None:
                name, why = off
                raise DataError(
                    f"check {check.kind!r}: {why}", _where(file, i, task, f"{place}.{name}")
                )
            builtin = type(params).harm
            if isinstance(check, HarmCheckSpec) and builtin is not None and check.label != builtin:
                raise DataError(
                    f"check {check.kind!r} is the environment's built-in harm rule, labelled "
                    f"{builtin}: severity {builtin.severity!r}, dimension {builtin.dimension!r} "
                    f"(not {check.label})",
                    _where(file, i, task, f"{place}.severity"),
                )
            change = params.needs_change(task.start) if task.infeasible else None
            if change is not None and place.startswith("success."):
                raise DataError(
                    f"check {check.kind!r} needs a change ({change}), but an infeasible "
                    "task's success checks say that nothing changed: no agent can succeed",
                    _where(file, i, task, place),
                )
        for place, name, loc in task.step_locators():
            why = bad_keys(loc)
            if why is not None:
                raise DataError(why, _where(file, i, task, f"{place}.{name}"))
        for place, message in lint(task) if lint is not None else ():
            raise DataError(message, _where(file, i, task, place))


def check_task_for_env(task: LiveTask, env: str) -> None:
    """A task object (from any file, or built in a program) checked against the environment
    it is to run in, as a task file is: a task of another environment, whose check kinds,
    locator keys or start keys this one does not have, is a `DataError` naming both. Nothing
    is checked for an environment that is not registered."""
    entry = REGISTERED.get(env)
    if entry is None:
        return
    try:
        check_against_entry(LiveTaskFile(env=env, tasks=(task,)), f"task {task.id}", entry)
    except DataError as exc:
        where = exc.location
        field = f" (field '{where.field}')" if where is not None and where.field else ""
        raise DataError(
            f"task {task.id} cannot run in {env}{field}: {exc.message}; is it a task of "
            "another environment?"
        ) from None
