"""Task files: parsing with located errors, checking them against the environment that will run
them, and the packaged task files of each environment."""

from __future__ import annotations

import difflib
import hashlib
import json
import shlex
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from medspot.errors import ConfigError, DataError, Location
from medspot.live.core.registry import env_entry, env_names
from medspot.live.core.tasks import CheckSpec, LiveTask, LiveTaskFile, Locator, location_of

__all__ = [
    "check_task_for_env",
    "env_task_file",
    "load_task_file",
    "packaged_task_files",
    "parse_task_file",
    "select_tasks",
    "task_checks",
    "tasks_listing",
    "unknown_task_ids",
]


def parse_task_file(data: Any, file: str) -> LiveTaskFile:
    """Validate parsed JSON; the first problem becomes a located `DataError`; then check ids
    are unique and the tasks against their environment: check kinds and their parameters,
    locator keys, the environment's own rules (`EnvEntry.task_check`)."""
    try:
        parsed = LiveTaskFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise DataError(err["msg"], location_of(file, tuple(err["loc"]))) from None
    seen: set[str] = set()
    for i, task in enumerate(parsed.tasks):
        if task.id in seen:
            raise DataError(f"duplicate task id {task.id!r}", Location(file, task=i, field="id"))
        seen.add(task.id)
    _check_against_env(parsed, file)
    return parsed


def task_checks(task: LiveTask) -> list[tuple[str, CheckSpec]]:
    """Every check of a task with its dotted place: `success.0`, `fail_if.1`,
    `steps.2.done_if`, `start.prepare.0.done_if` (0-based, as pydantic's locations)."""
    out: list[tuple[str, CheckSpec]] = []
    out += [(f"success.{j}", c) for j, c in enumerate(task.success)]
    out += [(f"fail_if.{j}", c) for j, c in enumerate(task.fail_if)]
    out += [(f"steps.{k}.done_if", s.done_if) for k, s in enumerate(task.steps) if s.done_if]
    out += [
        (f"start.prepare.{k}.done_if", s.done_if)
        for k, s in enumerate(task.start.prepare)
        if s.done_if is not None
    ]
    return out


def _where(file: str, i: int, place: str) -> Location:
    parts: list[int | str] = [int(p) if p.isdigit() else p for p in place.split(".")]
    return location_of(file, ("tasks", i, *parts))


def _check_against_env(parsed: LiveTaskFile, file: str) -> None:
    """Check kinds, their parameters (seeded names, locators inside them), an infeasible task's
    success checks that need a change (`CheckParams.needs_change`), locator keys of every step
    (the path and `start.prepare`) and the environment's own task rules: the first problem is a
    located `DataError`."""
    entry = env_entry(parsed.env)  # ConfigError for an unknown env
    keys = set(entry.locator_keys)
    lint = entry.hook("task_check")

    def bad_keys(loc: Locator) -> str | None:
        if loc.keys() <= keys:
            return None
        bad = ", ".join(sorted(loc.keys() - keys))
        return f"locator key(s) {bad} not understood by {parsed.env}"

    for i, task in enumerate(parsed.tasks):
        for place, check in task_checks(task):
            try:
                params = entry.check_kinds.parse(check, parsed.env)
            except DataError as exc:
                raise DataError(exc.message, _where(file, i, place)) from None
            for name, loc in params.locators():
                why = bad_keys(loc)
                if why is not None:
                    raise DataError(
                        f"check {check.kind!r}: {why}", _where(file, i, f"{place}.{name}")
                    )
            change = params.needs_change(task.start) if task.infeasible else None
            if change is not None and place.startswith("success."):
                raise DataError(
                    f"check {check.kind!r} needs a change ({change}), but an infeasible "
                    "task's success checks say that nothing changed: no agent can succeed",
                    _where(file, i, place),
                )
        for place, name, loc in task.step_locators():
            why = bad_keys(loc)
            if why is not None:
                raise DataError(why, _where(file, i, f"{place}.{name}"))
        for place, message in lint(task) if lint is not None else ():
            raise DataError(message, _where(file, i, place))


def load_task_file(path: Path) -> LiveTaskFile:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise DataError(f"cannot read task file: {exc.strerror}", Location(str(path))) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(
            f"not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}",
            Location(str(path)),
        ) from None
    except RecursionError:  # the parser recurses once per level of [ or {
        raise DataError(
            "JSON nested too deeply (over about a thousand levels of [ or {); not a task file",
            Location(str(path)),
        ) from None
    return parse_task_file(data, str(path))


def packaged_task_files(env: str) -> list[tuple[str, bytes]]:
    """The packaged task files of `env`: its `tasks_resource` (`<stem>.json` in
    medspot/live/tasklists, or `package:path/<stem>.json` in the environment's own package)
    and the files beside it named `<stem>-<part>.json` (e.g.
    `orthanc_explorer-workflows.json`), in name order after the first; (path shown in errors,
    contents)."""
    entry = env_entry(env)
    if not entry.tasks_resource:
        raise ConfigError(f"live environment {env!r} has no packaged tasks; use --tasks-file")
    package, _, resource = entry.tasks_resource.rpartition(":")
    parts = resource.split("/")
    folder = resources.files(package or "medspot.live").joinpath(*(parts[:-1] or ["tasklists"]))
    shown = "/".join([*(package or "medspot.live").split("."), *(parts[:-1] or ["tasklists"])])
    first = parts[-1]
    stem = first.removesuffix(".json")
    more = sorted(
        f.name
        for f in folder.iterdir()
        if f.name.startswith(stem + "-") and f.name.endswith(".json")
    )
    names = [first, *more]
    return [(f"{shown}/{n}", (folder / n).read_bytes()) for n in names]


def _merge(parts: list[tuple[str, LiveTaskFile]]) -> LiveTaskFile:
    """One task file of several of the same environment; a task id given twice is an error."""
    first = parts[0][1]
    seen: dict[str, str] = {}
    tasks: list[LiveTask] = []
    for name, tf in parts:
        if tf.env != first.env:
            raise DataError(
                f"the task file is for {tf.env!r}, not {first.env!r}", Location(name, field="env")
            )
        for i, task in enumerate(tf.tasks):
            if task.id in seen:
                raise DataError(
                    f"duplicate task id {task.id!r} (also in {seen[task.id]})",
                    Location(name, task=i, field="id"),
                )
            seen[task.id] = name
            tasks.append(task)
    return first.model_copy(update={"tasks": tuple(tasks)})


def env_task_file(env: str, path: Path | None = None) -> tuple[LiveTaskFile, str]:
    """The task file given, or the environment's packaged ones as one; and its fingerprint."""
    if path is not None:
        tf = load_task_file(path)
        digest = hashlib.sha256(path.read_bytes())
    else:
        files = packaged_task_files(env)
        parts = [(name, parse_task_file(_json(text, name), name)) for name, text in files]
        tf = _merge(parts)
        digest = hashlib.sha256(files[0][1])
        for name, text in files[1:]:  # one file: the fingerprint of its bytes, as before
            digest.update(name.encode() + b"\0" + text)
    if tf.env != env:
        raise DataError(
            f"the task file is for {tf.env!r}, not {env!r}", Location(str(path), field="env")
        )
    return tf, digest.hexdigest()[:16]


def _json(text: bytes, name: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(
            f"not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}", Location(name)
        ) from None


def tasks_listing(env: str, tasks_file: Path | None = None) -> str:
    """The command that lists the tasks a run chooses from: the packaged ones, or a file's."""
    if tasks_file is None:
        return f"medspot live tasks --env {env}"
    return f"medspot live tasks --env {env} --tasks-file {shlex.quote(str(tasks_file))}"


def unknown_task_ids(
    tf: LiveTaskFile, ids: Sequence[str], tasks_file: Path | None = None
) -> str | None:
    """What to say of the ids in `ids` that `tf` does not hold (None: it holds them all):
    them, the nearest known id of each, and the command that lists the known ones."""
    known = [t.id for t in tf.tasks]
    missing = [i for i in dict.fromkeys(ids) if i not in set(known)]
    if not missing:
        return None
    near = []
    for i in missing:
        close = difflib.get_close_matches(i, known, n=1)
        if close:
            near.append(f"{i!r}: did you mean {close[0]!r}?")
    where = f"in {tasks_file}" if tasks_file is not None else f"for {tf.env}"
    return (
        f"unknown task id(s) {where}: {', '.join(missing)}"
        + (f" ({'; '.join(near)})" if near else "")
        + f"; `{tasks_listing(tf.env, tasks_file)}` lists them"
    )


def select_tasks(
    tf: LiveTaskFile, ids: Sequence[str] | None, tasks_file: Path | None = None
) -> list[LiveTask]:
    """The tasks `ids` names (all when none), in that order; an unknown id is a `ConfigError`
    pointing to the listing of `tasks_file`'s tasks (the packaged ones when None)."""
    if not ids:
        return list(tf.tasks)
    problem = unknown_task_ids(tf, ids, tasks_file)
    if problem is not None:
        raise ConfigError(problem)
    known = {t.id: t for t in tf.tasks}
    return [known[i] for i in dict.fromkeys(ids)]


def check_task_for_env(task: LiveTask, env: str) -> None:
    """A task object (from any file, or built in a program) checked against the environment
    it is to run in, as a task file is: a task of another environment, whose check kinds,
    locator keys or start keys this one does not have, is a `DataError` naming both. Nothing
    is checked for an environment that is not registered."""
    if env not in env_names():
        return
    try:
        _check_against_env(LiveTaskFile(env=env, tasks=(task,)), f"task {task.id}")
    except DataError as exc:
        where = exc.location
        field = f" (field '{where.field}')" if where is not None and where.field else ""
        raise DataError(
            f"task {task.id} cannot run in {env}{field}: {exc.message}; is it a task of "
            "another environment?"
        ) from None
