"""The names of every file in a run folder, static or live (docs/results.md, docs/live.md "Run
folder"), and `RunFolder`, the one place that joins them to a path.

    .medspot.lock                     the writer's advisory lock, holding its pid
    run.json                          what was run (`RunInfo`, with `format_version`)
    predictions.jsonl                 the journal: one record per model call
    zoom_passes.jsonl                 a zoom-in run's passes: one record per model call
    overall_dataset_metrics.json      pooled metrics, intervals, macro average, breakdowns
    overall_failure_statistics.json   failure histograms over every app
    <App>/task_results.json           one `TaskRow` per task, with its `StepRow`s
    <App>/task_failures.json          the scored tasks that were not completed
    <App>/task_metrics.json           the app's metrics
    <App>/failure_statistics.json     the app's failure histograms

A live run (`medspot live run`) has no predictions.jsonl; its own files are

    live_journal.jsonl                every step as it happened (the live journal)
    trajectories/<task>.json          every step of a task: action, element hit, checks
    screens/<sha256>.png              each distinct screenshot once
    live.log                          the command's log in full

`runinfo.FORMAT_VERSION` is written into every new `run.json`. Version 0 is a folder written
before the field existed; it reads the same way.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from medspot.errors import ConfigError
from medspot.runfolder.runinfo import RunInfo

__all__ = [
    "APP_FAILURES",
    "APP_METRICS",
    "JOURNAL",
    "LIVE_JOURNAL",
    "LIVE_LOG",
    "LOCK",
    "OVERALL_FAILURES",
    "OVERALL_METRICS",
    "RUN_JSON",
    "SCREENS",
    "TASK_FAILURES",
    "TASK_RESULTS",
    "TRAJECTORIES",
    "ZOOM_PASSES",
    "RunFolder",
    "screen_rel",
    "trajectory_rel",
]

RUN_JSON = "run.json"
JOURNAL = "predictions.jsonl"
ZOOM_PASSES = "zoom_passes.jsonl"  # the passes of a zoom-in run (`medspot.adapters.zoom`)
LOCK = ".medspot.lock"  # the writer's lock (runfolder.lock)
OVERALL_METRICS = "overall_dataset_metrics.json"
OVERALL_FAILURES = "overall_failure_statistics.json"
TASK_RESULTS = "task_results.json"
TASK_FAILURES = "task_failures.json"
APP_METRICS = "task_metrics.json"
APP_FAILURES = "failure_statistics.json"
LIVE_JOURNAL = "live_journal.jsonl"  # a live run's journal (`medspot.live.loop.steplog`)
SCREENS = "screens"  # a live run's screenshots, each once: screens/<sha256>.png
TRAJECTORIES = "trajectories"  # a live run's trajectories: trajectories/<task>.json
LIVE_LOG = "live.log"  # a live command's log in full (written by `commands._runlog`)


def screen_rel(sha: str) -> str:
    """A live run's screenshot (by the sha256 of its PNG), relative to the run folder."""
    return f"{SCREENS}/{sha}.png"


def trajectory_rel(name: str) -> str:
    """A live task's trajectory file (`<task>` or `<task>@N`), relative to the run folder."""
    return f"{TRAJECTORIES}/{name}.json"


@dataclass(frozen=True)
class RunFolder:
    """A run folder's paths. Creating one touches nothing on disk."""

    path: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))

    @property
    def run_json(self) -> Path:
        return self.path / RUN_JSON

    @property
    def journal(self) -> Path:
        return self.path / JOURNAL

    @property
    def zoom_passes(self) -> Path:
        return self.path / ZOOM_PASSES

    @property
    def lock(self) -> Path:
        return self.path / LOCK

    @property
    def live_journal(self) -> Path:
        return self.path / LIVE_JOURNAL

    @property
    def overall_metrics(self) -> Path:
        return self.path / OVERALL_METRICS

    @property
    def overall_failures(self) -> Path:
        return self.path / OVERALL_FAILURES

    def task_results(self, app: str) -> Path:
        return self.path / app / TASK_RESULTS

    def task_failures(self, app: str) -> Path:
        return self.path / app / TASK_FAILURES

    def app_metrics(self, app: str) -> Path:
        return self.path / app / APP_METRICS

    def app_failures(self, app: str) -> Path:
        return self.path / app / APP_FAILURES

    def result_apps(self) -> list[str]:
        """The apps that have a task_results.json, sorted."""
        return sorted(p.parent.name for p in self.path.glob(f"*/{TASK_RESULTS}"))

    def resume_guard(self, info: RunInfo, ignore: Collection[str] = ()) -> RunInfo | None:
        """The run already in this folder that `info` continues (None: a fresh folder).
        Refuses a folder holding a run of another kind (a static run for a live one) or made
        with other prediction settings (but those named in `ignore`), and a journal without
        its run.json."""
        if self.run_json.exists():
            previous = info.resuming(RunInfo.load(self.run_json))
            if previous is None:
                raise ConfigError(
                    f"{self.path} holds a static run, not a live one; use another --out"
                )
            problems = [p for p in previous.mismatches(info) if p.partition(":")[0] not in ignore]
            if problems:
                raise ConfigError(
                    f"{self.path} holds a run made with other settings; use another --out, or "
                    "delete the folder to start again:\n  " + "\n  ".join(problems)
                )
            return previous
        j = self.journal
        if j.exists() and j.stat().st_size:
            raise ConfigError(f"{self.path} has {JOURNAL} but no {RUN_JSON}; use another --out")
        return None
