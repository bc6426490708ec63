"""The one place where `medspot.live` meets the static harness's run-folder modules: the journal
writer, the atomic writers, `run.json` (and its live fields), the live rows and metric names,
the run folder's lock (one writer per folder), the static metric formulas and the run-folder
file names. Everything else in `medspot.live` imports them from here, so that moving those
modules changes this file only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel

from medspot.runfolder.journal import Journal, JournalRecord
from medspot.runfolder.layout import (
    APP_FAILURES,
    APP_METRICS,
    LOCK,
    OVERALL_FAILURES,
    OVERALL_METRICS,
    RUN_JSON,
    TASK_FAILURES,
    TASK_RESULTS,
)
from medspot.runfolder.live_schema import (
    FALSE_INFEASIBLE,
    HARMFUL,
    HIT_RATE,
    INFEASIBLE_ACCURACY,
    LIVE_KEYS,
    ON_PATH_HIT_RATE,
    PASS_AT_K,
    PASS_HAT_K,
    RECOVERY,
    SEGMENTATION_DICE,
    STEPS_RATIO,
    SUCCESS,
    TOOL_RATE,
    LiveEnding,
    LiveOutcome,
    LiveRunInfo,
    LiveStepRow,
    LiveTaskRow,
    repeat_task_id,
)
from medspot.runfolder.lock import RunFolderBusy, run_folder_lock
from medspot.runfolder.runinfo import DatasetInfo, RunInfo, git_revision, now_iso, package_versions
from medspot.runfolder.writer import (
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_json_lines,
    atomic_write_text,
    record_failed_run,
)
from medspot.scoring.metrics import (
    METRIC_KEYS,
    SHORT_NAMES,
    compute_metrics,
    percentile_intervals,
    resample_counts,
)

__all__ = [
    "APP_FAILURES",
    "APP_METRICS",
    "FALSE_INFEASIBLE",
    "HARMFUL",
    "HIT_RATE",
    "INFEASIBLE_ACCURACY",
    "LIVE_KEYS",
    "LOCK",
    "METRIC_KEYS",
    "ON_PATH_HIT_RATE",
    "OVERALL_FAILURES",
    "OVERALL_METRICS",
    "PASS_AT_K",
    "PASS_HAT_K",
    "RECOVERY",
    "RUN_JSON",
    "SEGMENTATION_DICE",
    "SHORT_NAMES",
    "STEPS_RATIO",
    "SUCCESS",
    "TASK_FAILURES",
    "TASK_RESULTS",
    "TOOL_RATE",
    "DatasetInfo",
    "LineJournal",
    "LiveEnding",
    "LiveOutcome",
    "LiveRunInfo",
    "LiveStepRow",
    "LiveTaskRow",
    "RunFolderBusy",
    "RunInfo",
    "StaticRow",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_json_lines",
    "atomic_write_text",
    "git_revision",
    "now_iso",
    "package_versions",
    "percentile_intervals",
    "record_failed_run",
    "repeat_task_id",
    "resample_counts",
    "run_folder_lock",
    "static_metrics",
]


class LineJournal(Journal):
    """The static journal's writer (one `write` per whole line, fsync, torn tail repaired) for
    any pydantic record. Live steps are slow, so every line is fsynced as it is written."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, fsync=True, fsync_interval=0)

    def append(self, record: BaseModel) -> None:
        super().append(cast(JournalRecord, record))

    def __enter__(self) -> LineJournal:
        return self


@dataclass(frozen=True)
class StaticRow:
    """A live task seen through the static metric formulas (protocol.md 2.4): `correct_steps`
    is the number of the oracle's steps achieved, `steps_evaluated` the actions used."""

    completed: bool
    step1_hit: bool
    correct_steps: int
    num_steps: int
    steps_evaluated: int
    weighted_prefix_score: float
    normalized_weighted_prefix_score: float
    status: str = "scored"
    independent_hits: int = 0
    independent_steps: int = 0
    num_unannotated_steps: int = 0


def static_metrics(
    rows: Sequence[StaticRow], *, n_boot: int, seed: int
) -> tuple[dict[str, Any], list[str]]:
    """The static metric keys (with their bootstrap intervals) of the rows, as the static
    writer puts them into `overall_dataset_metrics.json`, and the keys present."""
    ms = compute_metrics(cast(Any, rows), all_steps=False, n_boot=n_boot, seed=seed)
    return ms.to_json(), [k for k in METRIC_KEYS if k in ms.values]
