"""Task files: parsing with located errors, checking them against the environment that will run
them, and the packaged task files of each environment."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from medspot.errors import ConfigError, DataError, Location
from medspot.live.core.registry import env_entry
from medspot.live.core.tasks import CheckSpec, LiveTask, LiveTaskFile, location_of

__all__ = [
    "env_task_file",
    "load_task_file",
    "packaged_task_files",
    "parse_task_file",
    "select_tasks",
]


def parse_task_file(data: Any, file: str) -> LiveTaskFile:
    """Validate parsed JSON; the first problem becomes a located `DataError`; then check ids
    are unique and, where the environment is registered, its check kinds and locator keys."""
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


def _check_against_env(parsed: LiveTaskFile, file: str) -> None:
    entry = env_entry(parsed.env)  # ConfigError for an unknown env
    kinds, keys = set(entry.check_kinds), set(entry.locator_keys)
    for i, task in enumerate(parsed.tasks):
        checks: list[tuple[int | None, str, CheckSpec]] = []
        checks += [(None, "success", c) for c in task.success]
        checks += [(None, "fail_if", c) for c in task.fail_if]
        for k, step in enumerate(task.steps, start=1):
            if step.done_if is not None:
                checks.append((k, "done_if", step.done_if))
            for name, loc in (("target", step.target), ("to", step.to)):
                if loc is not None and not loc.keys() <= keys:
                    bad = ", ".join(sorted(loc.keys() - keys))
                    raise DataError(
                        f"locator key(s) {bad} not understood by {parsed.env}",
                        Location(file, task=i, step=k, field=name),
                    )
        for pos, fld, check in checks:
            if check.kind not in kinds:
                raise DataError(
                    f"check kind {check.kind!r} not understood by {parsed.env}",
                    Location(file, task=i, step=pos, field=fld),
                )


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
    """The packaged task files of `env`: its `tasks_resource` (`<stem>.json`) and the files
    beside it named `<stem>-<part>.json` (e.g. `orthanc_explorer-workflows.json`), in name
    order after the first; (path shown in errors, contents)."""
    entry = env_entry(env)
    if not entry.tasks_resource:
        raise ConfigError(f"live environment {env!r} has no packaged tasks; use --tasks-file")
    folder = resources.files("medspot.live") / "tasklists"
    stem = entry.tasks_resource.removesuffix(".json")
    more = sorted(
        f.name
        for f in folder.iterdir()
        if f.name.startswith(stem + "-") and f.name.endswith(".json")
    )
    names = [entry.tasks_resource, *more]
    return [(f"medspot/live/tasklists/{n}", (folder / n).read_bytes()) for n in names]


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


def select_tasks(tf: LiveTaskFile, ids: Sequence[str] | None) -> list[LiveTask]:
    if not ids:
        return list(tf.tasks)
    known = {t.id: t for t in tf.tasks}
    missing = [i for i in ids if i not in known]
    if missing:
        raise ConfigError(
            f"unknown task id(s) for {tf.env}: {', '.join(missing)} "
            f"(`medspot live tasks --env {tf.env}` lists them)"
        )
    return [known[i] for i in dict.fromkeys(ids)]
