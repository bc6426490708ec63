"""Reading a run folder (docs/results.md) into typed objects: pydantic at the disk boundary,
frozen dataclasses inside. Optional files may be missing; a folder that is not a run raises
`ConfigError` naming the file. `live_view` types a live run's folder with the live schema
(`runfolder.live_schema`)."""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from medspot.errors import ConfigError
from medspot.runfolder.layout import (
    APP_FAILURES,
    APP_METRICS,
    OVERALL_FAILURES,
    OVERALL_METRICS,
    RUN_JSON,
    TASK_RESULTS,
    RunFolder,
)
from medspot.runfolder.live_schema import LiveRunInfo, LiveTaskRow
from medspot.runfolder.lock import lock_holder
from medspot.runfolder.runinfo import RunInfo
from medspot.runfolder.schema import TaskRow, first_error

__all__ = ["LiveRun", "Run", "live_view", "load_run", "load_runs", "unscored_advice"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Run:
    """A run folder, read. `overall` and the per-app dictionaries are the JSON files as
    written (metric keys at the top level); `tasks` are every app's task rows in order."""

    path: Path
    info: RunInfo
    overall: dict[str, Any]
    overall_failures: dict[str, Any]
    apps: tuple[str, ...]
    tasks: tuple[TaskRow, ...]
    app_metrics: dict[str, dict[str, Any]]
    app_failures: dict[str, dict[str, Any]]
    warnings: tuple[str, ...] = ()
    label: str = ""
    _by_id: dict[str, TaskRow] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for t in self.tasks:
            self._by_id[t.task_id] = t

    @property
    def name(self) -> str:
        return self.label or self.info.model

    @property
    def protocol(self) -> str:
        p = self.overall.get("protocol_label") or self.overall.get("protocol")
        return str(p) if p else self.info.protocol

    @property
    def protocol_settings(self) -> dict[str, Any]:
        s = self.overall.get("protocol_settings")
        return s if isinstance(s, dict) else {}

    @property
    def all_steps(self) -> bool:
        return bool(self.overall.get("all_steps", self.info.all_steps))

    @property
    def complete(self) -> bool:
        return bool(self.overall.get("complete", True)) and self.info.status in (
            "complete",
            "",
        )

    @property
    def kind(self) -> str:
        """ "oracle", "baseline", "imported" or "model": how the run should be labelled."""
        adapter_kind = str(self.info.adapter.get("kind", ""))
        if self.info.model == "oracle":
            return "oracle"
        if adapter_kind == "baseline":
            return "baseline"
        if adapter_kind == "upstream-import":
            return "imported"
        return "model"

    @property
    def kind_note(self) -> str:
        return {
            "oracle": "oracle: reads the target box, a ceiling of the protocol, not a model",
            "baseline": "baseline, not a model",
            "imported": "imported from the authors' scripts",
        }.get(self.kind, "")

    def task(self, task_id: str) -> TaskRow | None:
        return self._by_id.get(task_id)

    def metric(self, key: str) -> float | None:
        v = self.overall.get(key)
        return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None

    def interval(self, key: str) -> tuple[float, float] | None:
        ci = (self.overall.get("confidence_intervals") or {}).get(key)
        if (
            isinstance(ci, list | tuple)
            and len(ci) == 2
            and all(isinstance(x, int | float) for x in ci)
        ):
            return (float(ci[0]), float(ci[1]))
        return None


def _read_json(path: Path, *, required: bool) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if required:
            raise ConfigError(
                f"{path.parent} is not a medspot run folder (no {path.name})"
            ) from None
        return None
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror or e}") from None
    try:
        return json.loads(text)
    except ValueError as e:
        raise ConfigError(f"{path}: not valid JSON ({e})") from None


def _discover_apps(run_dir: Path, listed: list[str]) -> list[str]:
    found = RunFolder(run_dir).result_apps()
    ordered = [a for a in listed if a in found]
    return ordered + [a for a in found if a not in ordered]


def unscored_advice(run_dir: Path, info: RunInfo) -> str:
    """What to do with a run folder that has no results yet: wait for the process still
    writing it; resume a live run with its own command (`medspot score` scores static
    predictions, not a live journal); score a static run."""
    head = f"{run_dir} has no {OVERALL_METRICS} yet"
    holder = lock_holder(run_dir)
    if holder is not None:
        return (
            f"{head}: it is still running ({holder}); its results are written when it ends, "
            "or when it is stopped with Ctrl-C"
        )
    live = LiveRunInfo.of(info)
    if live is None:
        return f"{head}: the run was never scored (`medspot score {run_dir}` writes it)"
    mode = " --mode agent" if live.mode == "agent" else ""
    who = f"--model {live.model}"
    if live.adapter.get("kind") == "planner+grounder":
        planner, grounder = live.adapter.get("planner") or {}, live.adapter.get("grounder") or {}
        who = f"--planner {planner.get('name')} --grounder {grounder.get('name')}"
    command = f"medspot live run --env {live.env} {who}{mode} --out {run_dir} ..."
    if live.status == "failed":
        why = (live.error or "").strip().splitlines()[0][:200] if live.error else "an error"
        state = f"the live run failed before it wrote its results ({why})"
    elif live.status == "running":
        state = "the live run was stopped (killed) before it wrote its results"
    else:
        state = f"the live run ({live.status}) wrote no results"
    return (
        f"{head}: {state}; run the command that started it again (`{command}`, with the "
        "same options): it resumes from the journal and writes the results, then report it"
    )


def load_run(path: Path | str) -> Run:
    """Read a run folder. Needs `run.json` and `overall_dataset_metrics.json`; per-app files
    that are missing are reported in `Run.warnings`."""
    run_dir = Path(path)
    if not run_dir.is_dir():
        raise ConfigError(f"{run_dir} is not a folder (a run folder was expected)")
    if not (run_dir / RUN_JSON).exists():
        raise ConfigError(f"{run_dir} is not a medspot run folder (no {RUN_JSON})")
    info = RunInfo.load(run_dir / RUN_JSON)
    overall = _read_json(run_dir / OVERALL_METRICS, required=False)
    if overall is None:
        raise ConfigError(unscored_advice(run_dir, info))
    if not isinstance(overall, dict):
        raise ConfigError(f"{run_dir / OVERALL_METRICS}: expected a JSON object")
    warnings: list[str] = []
    failures = _read_json(run_dir / OVERALL_FAILURES, required=False) or {}
    apps = _discover_apps(run_dir, list(info.dataset.apps))
    missing_apps = [a for a in info.dataset.apps if a not in apps]
    if missing_apps:
        warnings.append(f"no {TASK_RESULTS} for: {', '.join(missing_apps)}")
    tasks: list[TaskRow] = []
    app_metrics: dict[str, dict[str, Any]] = {}
    app_failures: dict[str, dict[str, Any]] = {}
    for app in apps:
        f = run_dir / app / TASK_RESULTS
        raw = _read_json(f, required=True)
        if not isinstance(raw, list):
            raise ConfigError(f"{f}: expected a JSON list of tasks")
        for i, obj in enumerate(raw):
            try:
                tasks.append(TaskRow.model_validate(obj))
            except ValidationError as e:
                raise ConfigError(f"{f}: task {i}: {first_error(e)}") from None
        m = _read_json(run_dir / app / APP_METRICS, required=False)
        if isinstance(m, dict):
            app_metrics[app] = m
        elif isinstance((overall.get("per_app") or {}).get(app), dict):
            app_metrics[app] = overall["per_app"][app]
        fs = _read_json(run_dir / app / APP_FAILURES, required=False)
        app_failures[app] = fs if isinstance(fs, dict) else {}
    if not overall.get("complete", True) or info.status not in ("complete",):
        n_err = overall.get("num_errored_tasks", 0)
        warnings.append(
            f"run status '{info.status}'"
            + (
                f", {n_err} task(s) errored or incomplete and left out of the metrics"
                if n_err
                else ""
            )
        )
    return Run(
        path=run_dir,
        info=info,
        overall=overall,
        overall_failures=failures if isinstance(failures, dict) else {},
        apps=tuple(apps),
        tasks=tuple(tasks),
        app_metrics=app_metrics,
        app_failures=app_failures,
        warnings=tuple(warnings),
    )


def load_runs(paths: list[Path] | list[str]) -> list[Run]:
    """Read several runs and give each a distinct label (the model name, with the folder name
    added where two runs share a model)."""
    runs = [load_run(p) for p in paths]
    names = [r.info.model for r in runs]
    out: list[Run] = []
    for r in runs:
        label = r.info.model
        if names.count(label) > 1:
            label = f"{label} ({r.path.name})"
        out.append(dataclasses.replace(r, label=label))
    labels = [r.label for r in out]
    return [
        dataclasses.replace(r, label=f"{r.label} #{i + 1}") if labels.count(r.label) > 1 else r
        for i, r in enumerate(out)
    ]


@dataclass(frozen=True)
class LiveRun:
    """A live run folder, read: the run as `load_run` gives it, typed (`live_view`)."""

    run: Run
    info: LiveRunInfo
    tasks: tuple[LiveTaskRow, ...]


def live_view(run: Run) -> LiveRun | None:
    """`run` typed as a live run, or None when it is a static run. Bad live fields are a
    `ConfigError` naming the file and the task."""
    try:
        info = LiveRunInfo.of(run.info)
    except ConfigError as e:
        raise ConfigError(f"{run.path / RUN_JSON}: {str(e).partition(': ')[2]}") from None
    if info is None:
        return None
    tasks = []
    for t in run.tasks:
        try:
            tasks.append(LiveTaskRow.model_validate(t.model_dump()))
        except ValidationError as e:
            where = run.path / t.app / TASK_RESULTS
            raise ConfigError(f"{where}: task {t.task_id}: {first_error(e)}") from None
    return LiveRun(run=run, info=info, tasks=tuple(tasks))
