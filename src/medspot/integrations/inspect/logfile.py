"""Reading Inspect logs (`.eval` or `.json`, through `inspect_ai.log.read_eval_log`): the one
place medspot touches Inspect's log format. What the rest of medspot needs of a log of
`medspot/medspot` is an `InspectStaticLog`: the run settings the task recorded, the model, and
per sample the journal records its store holds, its error and its score."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medspot.errors import ConfigError
from medspot.integrations.inspect import require_inspect
from medspot.integrations.inspect.rows import RECORDS_KEY, SETTINGS_KEY, records_of
from medspot.runfolder.journal import JournalRecord

__all__ = [
    "LOG_SUFFIXES",
    "STATIC_TASK",
    "InspectSample",
    "InspectStaticLog",
    "newest_static_log",
    "read_static_log",
]

STATIC_TASK = "medspot/medspot"  # the registry name of the static task
LOG_SUFFIXES = (".eval", ".json")  # Inspect's log formats


@dataclass(frozen=True)
class InspectSample:
    """One sample of the log: a MedSPOT task and what its solver journaled."""

    id: str
    epoch: int
    records: tuple[JournalRecord, ...]
    error: str | None = None
    score: Mapping[str, Any] | None = None  # the score's value (task-matrix columns)
    score_metadata: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class InspectStaticLog:
    """A log of `medspot/medspot`, as medspot reads it."""

    path: Path
    status: str  # Inspect's: success, error, cancelled, started
    model: str  # Inspect's model name (provider/model)
    model_base_url: str | None
    settings: Mapping[str, Any]  # `static_task.StaticSettings.record`
    samples: tuple[InspectSample, ...]
    metrics: Mapping[str, float]  # the log's own metrics (the medspot scorer's)
    created: str = ""
    eval_id: str = ""
    epochs: int = 1
    packages: Mapping[str, str] = field(default_factory=dict)


def _score(sample: Any) -> tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]:
    for s in (sample.scores or {}).values():
        if isinstance(s.value, dict):
            return s.value, s.metadata
    return None, None


def _task_name(log: Any) -> str:
    return str(log.eval.task_registry_name or log.eval.task)


def newest_static_log(folder: Path) -> Path:
    """The newest log of `medspot/medspot` in an Inspect log folder (`--log-dir`)."""
    require_inspect("reading an Inspect log")
    from inspect_ai.log import read_eval_log

    try:
        files = [p for p in folder.iterdir() if p.suffix in LOG_SUFFIXES and p.is_file()]
    except OSError as e:
        raise ConfigError(f"cannot read the log folder {folder}: {e.strerror or e}") from None
    for path in sorted(files, key=lambda p: p.stat().st_mtime, reverse=True):
        try:
            header = read_eval_log(str(path), header_only=True)
        except Exception:  # not a log: another file of the folder
            continue
        if _task_name(header) == STATIC_TASK:
            return path
    raise ConfigError(f"{folder} holds no Inspect log of {STATIC_TASK}")


def read_static_log(path: Path) -> InspectStaticLog:
    """The log at `path` of a `medspot/medspot` eval (a folder: its newest one); a
    `ConfigError` names the file when it is no Inspect log, or the log of another task."""
    require_inspect("reading an Inspect log")
    from inspect_ai.log import read_eval_log

    if path.is_dir():
        path = newest_static_log(path)
    try:
        log = read_eval_log(str(path))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such Inspect log") from None
    except Exception as e:  # Inspect raises its own errors for files it cannot read
        raise ConfigError(f"{path}: not an Inspect log ({type(e).__name__}: {e})") from None
    spec = log.eval
    name = _task_name(log)
    settings = (spec.metadata or {}).get(SETTINGS_KEY)
    if name != STATIC_TASK or not isinstance(settings, dict):
        raise ConfigError(
            f"{path}: the log of task {name!r}, not of {STATIC_TASK} (the static benchmark's "
            "Inspect task)"
        )
    samples = []
    for s in log.samples or []:
        value, meta = _score(s)
        rows = (s.store or {}).get(RECORDS_KEY, [])
        samples.append(
            InspectSample(
                id=str(s.id),
                epoch=int(s.epoch),
                records=tuple(records_of(rows)),
                error=s.error.message if s.error is not None else None,
                score=value,
                score_metadata=meta,
            )
        )
    metrics: dict[str, float] = {}
    for sc in log.results.scores if log.results is not None else []:
        metrics.update({k: float(m.value) for k, m in sc.metrics.items()})
    return InspectStaticLog(
        path=path,
        status=str(log.status),
        model=str(spec.model),
        model_base_url=spec.model_base_url,
        settings=settings,
        samples=tuple(samples),
        metrics=metrics,
        created=str(spec.created),
        eval_id=str(spec.eval_id),
        epochs=int(spec.config.epochs or 1),
        packages=dict(spec.packages or {}),
    )
