"""The live part of a run folder (docs/live/metrics.md "Run folder"), declared once for the writer
(`medspot.live.loop.request` and `.results`) and the readers (`medspot.report`):

- `LiveRunInfo`: `run.json` of a live run, the static `RunInfo` plus the live fields (`kind`,
  `env`, `env_options`, `mode`, `executor`; another field is added here, with a default);
- `LiveTaskRow`, `LiveStepRow`: the rows of `<env>/task_results.json`, the static rows plus
  the live fields;
- `LIVE_KEYS`: the names of the live metrics in `overall_dataset_metrics.json`;
  `LIVE_TIMING_KEYS` the run's timings there (the wait between tasks, the resets), never
  ranked;
- `dataset_root`: where a run's screenshots are.

A run folder read (`runfolder.reader.Run`) is typed as a live run by `runfolder.reader.live_view`.

Folders written before these types read the same way: every field added since has a default
(a run.json without `mode` is a guided run).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator

from medspot.errors import ConfigError
from medspot.runfolder.layout import RUN_JSON
from medspot.runfolder.runinfo import RunInfo
from medspot.runfolder.schema import StepRow, TaskRow, first_error

__all__ = [
    "ANY_HARM",
    "BETWEEN_TASKS",
    "FALSE_INFEASIBLE",
    "FIRST_FAILED_SUBGOAL",
    "HARMFUL",
    "HARM_BY_DIMENSION",
    "HARM_BY_SEVERITY",
    "HIT_RATE",
    "INFEASIBLE_ACCURACY",
    "LIVE_KEYS",
    "LIVE_KIND",
    "LIVE_LOWER_IS_BETTER",
    "LIVE_OPTIONAL_KEYS",
    "LIVE_PREDICTION_KEYS",
    "LIVE_SIGNED",
    "LIVE_TIMING_KEYS",
    "LIVE_UNRANKED",
    "ON_PATH_HIT_RATE",
    "PASS_AT_K",
    "PASS_HAT_K",
    "PROGRESS",
    "RECOVERY",
    "RESET",
    "SAFETY",
    "SEGMENTATION_DICE",
    "STEPS_RATIO",
    "SUCCESS",
    "TOOL_RATE",
    "ContainerImage",
    "ContainerRun",
    "EnvOptionValue",
    "LiveEnding",
    "LiveExecutor",
    "LiveHarm",
    "LiveMode",
    "LiveOutcome",
    "LiveRunInfo",
    "LiveStepRow",
    "LiveTaskRow",
    "LiveTiming",
    "dataset_root",
    "repeat_task_id",
]

LIVE_KIND = "live"
LiveMode = Literal["guided", "agent"]  # the same values as `medspot.live.core.episode.Mode`
# "abandoned": an agent served by `medspot live serve` left before its episode ended (a
# disconnect, the server stopped): scored, never a success
LiveOutcome = Literal["success", "harmful", "failure", "abandoned", "error", "env_error", "missing"]
# How a run of a task ended: the agent said done / infeasible(reason), the budget was spent,
# the checks ended it after an action (success, or a fail_if: harm), the agent left
# (abandoned), or it was not scored
LiveEnding = Literal[
    "done", "infeasible", "budget", "checks", "abandoned", "error", "env_error", "missing"
]
EnvOptionValue = str | int | float | bool | None
# the names of `medspot.live.loop.executors.EXECUTORS`
LiveExecutor = Literal["threads", "ray", "container"]

# The live metrics (docs/live/metrics.md "Metrics"), beside the static keys.
SUCCESS = "task_success_rate"
HARMFUL = "harmful_failure_rate"
RECOVERY = "recovery_rate"
# over every executed action: it hit the intended element of the current step (an action
# taken off the oracle's path, where that element is not on the screen, is no hit)
HIT_RATE = "intended_hit_rate"
# over the executed actions whose intended element was on the screen (on the oracle's path):
# what `intended_hit_rate` counted in folders written before it was defined over every action
ON_PATH_HIT_RATE = "on_path_hit_rate"
STEPS_RATIO = "steps_ratio"
# over the tasks whose right ending is infeasible: ended with infeasible(...), nothing changed
INFEASIBLE_ACCURACY = "infeasible_accuracy"
# over the feasible tasks: ended with infeasible(...) (each such run is a failure)
FALSE_INFEASIBLE = "false_infeasible_rate"
# with repeats (K > 1), over the tasks whose K repeats were all scored
PASS_AT_K = "pass_at_k"  # at least one of the K runs succeeded
PASS_HAT_K = "pass_hat_k"  # all K succeeded
# the tools track (`--tools`), over the runs of tasks that were offered tools: the agent called
# at least one tool
TOOL_RATE = "tool_invocation_rate"
# over the runs whose environment measured the segmentation they end with (a task judged on a
# mask's Dice with the truth): the mean Dice of that mask, whether or not the task succeeded
SEGMENTATION_DICE = "segmentation_dice"
# graded harm (docs/live/metrics.md "Harm: severity and dimension"): the mean over runs of the
# safety score (success minus the harm's penalties, clipped to [-1, 1]) and the share of runs
# with any harm event (a minor one too); the shares of runs with a harm of each severity and of
# each dimension (dicts, no interval)
SAFETY = "safety_score"
ANY_HARM = "any_harm_rate"
HARM_BY_SEVERITY = "harm_by_severity"
HARM_BY_DIMENSION = "harm_by_dimension"
# partial credit (docs/live/metrics.md "Partial credit"), over the runs of tasks with subgoals: the
# mean share of the subgoals reached at the end, and the mean 1-based position of the first
# subgoal not reached (over the runs that left one)
PROGRESS = "progress"
FIRST_FAILED_SUBGOAL = "first_failed_subgoal_mean"
# written since repeats, infeasible tasks, the on-path hit rate, the tools track, the
# segmentation Dice, graded harm and partial credit (the pass keys only with K > 1): a folder
# written before has none of them
LIVE_OPTIONAL_KEYS = (
    INFEASIBLE_ACCURACY, FALSE_INFEASIBLE, PASS_AT_K, PASS_HAT_K, ON_PATH_HIT_RATE, TOOL_RATE,
    SEGMENTATION_DICE, SAFETY, ANY_HARM, PROGRESS,
)  # fmt: skip
LIVE_KEYS = (SUCCESS, HARMFUL, RECOVERY, HIT_RATE, STEPS_RATIO, *LIVE_OPTIONAL_KEYS)
# The live metrics of which a smaller value is better (harm, steps against the oracle's, a
# feasible task called infeasible), and the one no value of is better (how many runs called a
# tool): diagnostics read beside the others, never ranked on their own where a format cannot say
# which way is better (the hub's leaderboards)
LIVE_LOWER_IS_BETTER = frozenset({HARMFUL, STEPS_RATIO, FALSE_INFEASIBLE, ANY_HARM})
# the live metrics that are not shares of 0..1 (the safety score lies in -1..1)
LIVE_SIGNED = frozenset({SAFETY})
LIVE_UNRANKED = frozenset({TOOL_RATE})

# The run's timings (seconds), per task run, beside the metrics: what the user waited for
# between two tasks of an environment (from the end of its previous task, or fault, to this
# task's first observation; a swap with a spare, a reset without) and the environment's own
# reset (with `start.prepare`; with a spare it ran in the background). Each is a `LiveTiming`
# in the metrics files; a folder written before them has neither.
BETWEEN_TASKS = "between_tasks_s"
RESET = "reset_s"
LIVE_TIMING_KEYS = (BETWEEN_TASKS, RESET)

# run.json's live fields that change what an agent is asked: a resumed run must match them.
LIVE_PREDICTION_KEYS = ("env", "mode", "repeats", "tools")


def repeat_task_id(uid: str, repeat: int, repeats: int) -> str:
    """A task row's id: `env/task` without repeats, `env/task@N` (N = repeat + 1) with."""
    return uid if repeats <= 1 else f"{uid}@{repeat + 1}"


class LiveTiming(BaseModel):
    """One timing of a run's task runs (`LIVE_TIMING_KEYS`): median and 90th percentile
    (nearest rank) over the `n` runs that have it; None without any."""

    median: float | None = None
    p90: float | None = None
    n: int = 0

    @classmethod
    def of(cls, values: Sequence[float]) -> LiveTiming:
        if not values:
            return cls()
        v = sorted(values)
        mid = len(v) // 2
        median = v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2
        p90 = v[max(0, math.ceil(0.9 * len(v)) - 1)]
        return cls(median=round(median, 4), p90=round(p90, 4), n=len(v))


class ContainerImage(BaseModel):
    """The image an environment ran in (`--executor container`): what the engine and the
    image's labels say of it."""

    ref: str  # the reference it was run by (localhost/medspot-orthanc-explorer:0.1.0)
    id: str  # sha256:... the image's content address
    digest: str | None = None  # the manifest digest (podman; docker: a registry's, if any)
    medspot_version: str = ""
    source: str = ""  # the source hash of the medspot inside
    base: str = ""  # the base image it was built on
    packages: dict[str, str] = Field(default_factory=dict)  # Debian packages and versions
    pinned: bool = True  # every package at its validated version


class ContainerRun(BaseModel):
    """`--executor container`: the engine and each environment's image."""

    engine: str  # podman | docker
    engine_version: str
    images: dict[str, ContainerImage] = Field(default_factory=dict)  # by environment


class LiveRunInfo(RunInfo):
    """`run.json` of a live run."""

    kind: Literal["live"] = "live"
    env: str  # the environment (also the "app" of the rows)
    env_options: dict[str, EnvOptionValue] = Field(default_factory=dict)  # --env-option
    mode: LiveMode = "guided"  # guided: told the current step; agent: the goal only
    repeats: int = Field(1, ge=1)  # runs of each task (--repeats), each on a fresh reset
    # where the environments ran (`medspot.live.loop.executors.EXECUTORS`); not a prediction
    # setting: a run may resume on the other executor
    executor: LiveExecutor = "threads"
    # `--executor container`: the engine and the images (of the session that wrote run.json
    # last: a resumed run records where it ran then)
    container: ContainerRun | None = None
    # the tools track: the toolset offered beside the GUI actions (`--tools orthanc`), or none
    tools: str | None = None
    # `medspot live serve`: the protocol the agent came through ("mcp", "openenv"), or none
    served: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _env_from_source(cls, data: Any) -> Any:
        """A run.json without `env` (written by hand) names it in its dataset source."""
        if isinstance(data, dict) and "env" not in data:
            source = str((data.get("dataset") or {}).get("source") or "")
            if source.startswith(f"{LIVE_KIND}:"):
                data = {**data, "env": source.partition(":")[2]}
        return data

    @classmethod
    def of(cls, info: RunInfo) -> LiveRunInfo | None:
        """`info` as a live run.json, or None when it is a static run's."""
        if isinstance(info, LiveRunInfo):
            return info
        if (info.model_extra or {}).get("kind") != LIVE_KIND:
            return None
        try:
            return cls.model_validate(info.model_dump())
        except ValidationError as e:
            raise ConfigError(
                f"{RUN_JSON}: the live fields are not valid: {first_error(e)}"
            ) from None

    def resuming(self, previous: RunInfo) -> LiveRunInfo | None:
        """`previous` as a live run's run.json; None when it is a static run's."""
        return LiveRunInfo.of(previous)

    def mismatches(self, other: RunInfo) -> list[str]:
        """The static prediction settings, then the live ones (`LIVE_PREDICTION_KEYS`)."""
        out = super().mismatches(other)
        theirs = LiveRunInfo.of(other)
        if theirs is None:
            return [*out, "kind: this command asks a static run"]
        for key in LIVE_PREDICTION_KEYS:
            a, b = getattr(self, key), getattr(theirs, key)
            if a != b:
                out.append(f"{key}: run folder has {a!r}, this command asks {b!r}")
        return out


class LiveHarm(BaseModel):
    """One harm event of a run, as the rows keep it (`medspot.live.core.harm.HarmEvent`, whose
    vocabulary this is): the rule (`check`, its kind; `rule`, its place in the task), its
    `severity` and `dimension` (None: a run written before labels, `legacy`) and the 1-based
    action it happened at."""

    check: str
    rule: str = "fail_if"
    severity: str
    dimension: str | None = None
    step: int = 0
    legacy: bool = False


class LiveStepRow(StepRow):
    """One action of a live trajectory as a step row: the static fields (the screen before
    the action, the point and the intended element's box, normalised) plus these."""

    live_action: dict[str, Any] | None = None  # the executed action (actions.action_to_json)
    element: dict[str, Any] | None = None  # what the action hit (ElementInfo)
    checks: dict[str, Any] = Field(default_factory=dict)  # success / fail_if / done_if
    achieved: list[int] = Field(default_factory=list)  # oracle steps this action achieved
    settle_s: float | None = None
    changed: bool | None = None  # the screen changed
    url: str | None = None
    url_after: str | None = None
    replayed: bool = False  # the answer came from the journal
    thought: str | None = None  # the agent's own reasoning text, where it has one
    # why the action was not executed (one the environment cannot execute, an answer that
    # does not read as an action): a no-action step, scored as a miss
    not_executed: str | None = None
    # the tools track: what a tool call returned (`name`, `text`, `data`) or why it did not run
    tool_result: dict[str, Any] | None = None
    # the harm recorded at this action (a rule that fired: its label)
    harms: list[LiveHarm] = Field(default_factory=list)


class LiveTaskRow(TaskRow):
    """One live task as a task row: the static fields (the live outcome seen through the
    static formulas) plus these; `steps` are its actions."""

    steps: Sequence[LiveStepRow] = Field(default_factory=list)
    live_outcome: LiveOutcome = "missing"
    live_reason: str = ""
    tags: list[str] = Field(default_factory=list)
    steps_used: int = 0
    oracle_steps: int = 0
    recovered: bool = False  # succeeded after an action that missed the intended element
    missed_intended: bool = False
    final_screen: str | None = None  # relative to the run folder
    trajectory: str | None = None  # trajectories/<task>.json (<task>@N.json with repeats)
    ending: LiveEnding | None = None  # None: a folder written before typed endings
    ending_reason: str | None = None  # the agent's reason with infeasible(...)
    infeasible_task: bool = False  # the task's right ending is infeasible(...)
    task: str = ""  # the task id of the task file (task_id adds the env, and @N with repeats)
    repeat: int = 0  # 0-based (--repeats)
    repeats: int = 1
    task_successes: int | None = None  # successful runs of this task over its repeats
    task_runs_scored: int | None = None  # its scored runs
    success_fraction: float | None = None  # task_successes / task_runs_scored
    # timings of its last attempt (`LIVE_TIMING_KEYS`); None: a slot's first task, a folder
    # written before them
    between_tasks_s: float | None = None
    reset_s: float | None = None
    swapped: bool = False  # it started on a spare swapped in (pipelined start)
    # the tools track: the tools this run of the task was offered (None: no tools track), the
    # tool calls it made, and why a task stays GUI-only
    tools_offered: list[str] | None = None
    tool_calls: int = 0
    gui_only: str | None = None
    # the Dice of the segmentation the run ended with, with the truth (tasks judged on one)
    dice: float | None = None
    # graded harm: each harm event of the run (None: a folder written before harm events; a
    # harm event marked `legacy`: a journal written before labels, its harm counted as major)
    # and the run's safety score (success minus the penalties, clipped to [-1, 1])
    harms: list[LiveHarm] | None = None
    safety_score: float | None = None
    # partial credit: the task's subgoals, those reached at the end, the share reached and the
    # first not reached (its name; None when all were, or for a folder written before)
    subgoals: int | None = None
    subgoals_reached: int | None = None
    progress: float | None = None
    first_failed_subgoal: str | None = None
    first_failed_at: int | None = None  # its 1-based position among the task's subgoals


def dataset_root(info: RunInfo, run_dir: Path) -> str:
    """Where the screenshots of the run in `run_dir` are: a live run's own folder, wherever it
    is now (run.json's `dataset.root` is where it was written; a copied or moved folder reads
    its own `screens/`, never the original's), else the dataset root run.json records ("" when
    it names none)."""
    if LiveRunInfo.of(info) is not None:
        return str(run_dir)
    return info.dataset.root
