"""Task files: parsing with located errors, checking them against the environment that will run
them, and the packaged task files of each environment."""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Sequence
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from medspot.errors import ConfigError, DataError, Location
from medspot.live.core.harm import DIMENSIONS, SEVERITIES
from medspot.live.core.taskcheck import check_against_entry
from medspot.live.core.tasks import HARM_FIELDS, LiveTask, LiveTaskFile, location_of
from medspot.live.envs.registry import env_entry
from medspot.spelling import did_you_mean

__all__ = [
    "env_task_file",
    "load_task_file",
    "packaged_task_files",
    "parse_task_file",
    "select_tasks",
    "tasks_listing",
    "unknown_task_ids",
]

_SOURCE_ROOT = Path(__file__).resolve().parents[3]  # holds the `medspot` package


def parse_task_file(data: Any, file: str) -> LiveTaskFile:
    """Validate parsed JSON; the first problem becomes a located `DataError`; then check ids
    are unique and the tasks against their environment: check kinds and their parameters,
    locator keys, the environment's own rules (`EnvEntry.task_check`)."""
    try:
        parsed = LiveTaskFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise DataError(_message(err), location_of(file, tuple(err["loc"]), data)) from None
    seen: dict[str, int] = {}
    for i, task in enumerate(parsed.tasks):
        if task.id in seen:
            raise DataError(
                f"duplicate task id {task.id!r} (tasks {seen[task.id]} and {i} of the file, "
                "0-based)",
                Location(file, task=i, field="id", task_id=task.id),
            )
        seen[task.id] = i
    check_against_entry(parsed, file, env_entry(parsed.env))  # ConfigError: an unknown env
    return parsed


def _message(err: Any) -> str:
    """A validation error's message; an unlabelled harm rule says what it lacks and where the
    labels are explained."""
    loc = tuple(err["loc"])
    if err["type"] == "missing" and "fail_if" in loc and loc[-1] in HARM_FIELDS:
        known = ", ".join(SEVERITIES if loc[-1] == "severity" else DIMENSIONS)
        return (
            f"an unlabelled harm rule: every fail_if check carries a {loc[-1]} ({known}); "
            'docs/live.md "Harm: severity and dimension"'
        )
    return str(err["msg"])


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
    """The packaged task files of `env` (`EnvEntry.tasks`, a folder): `<stem>.json` first, then
    the files beside it named `<stem>-<part>.json` (e.g. `orthanc_explorer-workflows.json`) in
    name order; (path shown in errors, contents)."""
    entry = env_entry(env)
    if entry.tasks is None:
        raise ConfigError(f"live environment {env!r} has no packaged tasks; use --tasks-file")
    files = [f for f in entry.tasks.iterdir() if f.name.endswith(".json")]
    files.sort(key=lambda f: ("-" in f.name, f.name))
    return [(_shown(f), f.read_bytes()) for f in files]


def _shown(file: Traversable) -> str:
    """A packaged file's path as errors name it: from the package root (`medspot/live/...`)."""
    if isinstance(file, Path) and file.is_relative_to(_SOURCE_ROOT):
        return file.relative_to(_SOURCE_ROOT).as_posix()
    return file.name


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
                    Location(name, task=i, field="id", task_id=task.id),
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
            digest.update(Path(name).name.encode() + b"\0" + text)
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
    near = [f"{i!r}: {hint}" for i in missing if (hint := did_you_mean(i, known))]
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
