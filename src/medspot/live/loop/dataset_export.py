"""`medspot live export`: the oracle through every task of an environment, written as a
MedSPOT-format dataset (protocol.md 1.1): `Annotations/<App>_Annotation.json` and
`Images/<App>/...png`, one step per oracle action with the screen before it and the target's
exact box from the application (DOM / AT-SPI). Steps without an on-screen target (typing, keys)
are written with no action (unannotated, not evaluable), as the format allows.

The oracle runs through the live runner into `DIR/.live-run` (journal and trajectories kept, so
an interrupted export resumes); the dataset is built from its trajectories. One export writes
into `DIR` at a time (the run folder's lock, on `DIR` and on `DIR/.live-run`).
"""

from __future__ import annotations

import logging
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medspot.errors import ConfigError
from medspot.live.core.tasks import LiveTask
from medspot.live.envs.envoptions import check_env_options
from medspot.live.envs.taskfiles import env_task_file, select_tasks
from medspot.live.loop.executors import check_executor_options, container_run
from medspot.live.loop.outcomes import task_results
from medspot.live.loop.request import LiveRequest, run_live
from medspot.live.loop.steplog import ResumeState, read_live_journal
from medspot.progress import ProgressEvent
from medspot.runfolder.layout import RunFolder, screen_rel
from medspot.runfolder.lock import run_folder_lock
from medspot.runfolder.writer import atomic_write_json

__all__ = ["ExportResult", "app_name", "export_env"]

log = logging.getLogger(__name__)
RUN_SUBDIR = ".live-run"


def app_name(env: str) -> str:
    """`orthanc-explorer` -> `LiveOrthancExplorer` (a MedSPOT application name)."""
    return "Live" + "".join(p[:1].upper() + p[1:] for p in re.split(r"[^A-Za-z0-9]+", env) if p)


@dataclass(frozen=True)
class ExportResult:
    root: Path
    app: str
    tasks: int
    steps: int
    skipped: tuple[str, ...]  # tasks the oracle did not complete


def export_env(
    env: str,
    out: Path,
    *,
    task_ids: Sequence[str] = (),
    tasks_file: Path | None = None,
    concurrency: int = 1,
    env_options: Mapping[str, Any] | None = None,
    on_progress: Callable[[ProgressEvent], None] | None = None,
    retry_env_errors: bool = False,
    spares: int | None = None,
    executor: Mapping[str, Any] | None = None,
) -> ExportResult:
    """The oracle through the tasks (`executor`: the `LiveRequest` fields of where the
    environments run, default threads), written as a MedSPOT-format dataset under `out`."""
    tf, _ = env_task_file(env, tasks_file)
    tasks = select_tasks(tf, task_ids, tasks_file)
    out = Path(out)
    check_env_options(env, env_options or {})  # before any folder is made
    where = dict(executor or {})
    name = str(where.get("executor", "threads"))
    check_executor_options(
        name, where.get("ray_address"), where.get("ray_cpus_per_env"), where.get("container")
    )
    if name == "container":  # the engine and the image, before any folder is made
        container_run(env, where.get("container"))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"cannot create the output folder {out}: {e.strerror or e}") from None
    with run_folder_lock(out):
        return _export_locked(
            env, out, tasks, tasks_file, concurrency, env_options, on_progress, retry_env_errors,
            spares, executor or {},
        )  # fmt: skip


def _export_locked(
    env: str,
    out: Path,
    tasks: list[LiveTask],
    tasks_file: Path | None,
    concurrency: int,
    env_options: Mapping[str, Any] | None,
    on_progress: Callable[[ProgressEvent], None] | None,
    retry_env_errors: bool,
    spares: int | None,
    executor: Mapping[str, Any],
) -> ExportResult:
    run_dir = out / RUN_SUBDIR
    run_live(
        LiveRequest(env=env, model="oracle", out=run_dir, task_ids=tuple(t.id for t in tasks),
                    tasks_file=tasks_file, concurrency=concurrency,
                    env_options=dict(env_options or {}), n_boot=0,
                    retry_env_errors=retry_env_errors, spares=spares, **executor),
        on_progress,
    )  # fmt: skip
    state = ResumeState.from_records(list(read_live_journal(RunFolder(run_dir).live_journal)))
    results = task_results(tasks, state, env)
    app = app_name(env)
    img_dir = out / "Images" / app
    img_dir.mkdir(parents=True, exist_ok=True)
    ann_tasks: list[dict[str, Any]] = []
    skipped: list[str] = []
    n_steps = 0
    for r in results:
        if r.outcome != "success":
            skipped.append(r.task.id)
            log.warning("export: the oracle did not complete %s (%s)", r.task.id, r.reason)
            continue
        steps: list[dict[str, Any]] = []
        for s in r.executed:
            if s.screen_size is None or s.target_step is None:
                continue
            name = f"{r.task.id}_{s.n}.png"
            shutil.copyfile(run_dir / screen_rel(s.screen), img_dir / name)
            spec = r.task.steps[s.target_step - 1]
            actions = []
            if s.intended_box is not None:
                w, h = s.screen_size
                x1, y1, x2, y2 = s.intended_box
                x1, x2 = max(0.0, min(x1, w - 1)), max(1.0, min(x2, w))
                y1, y2 = max(0.0, min(y1, h - 1)), max(1.0, min(y2, h))
                actions.append({
                    "type": {"drag": "drag", "double_click": "double_click",
                             "type": "type"}.get(spec.action, "click"),
                    "target": f"{spec.action} target of step {s.target_step}",
                    "bbox": [round(100 * x1 / w, 4), round(100 * y1 / h, 4),
                             round(100 * (x2 - x1) / w, 4), round(100 * (y2 - y1) / h, 4)],
                })  # fmt: skip
            steps.append({
                "step_id": len(steps) + 1,
                "image_path": f"Images/{app}/{name}",
                "instruction": spec.instruction,
                "actions": actions,
            })  # fmt: skip
        n_steps += len(steps)
        ann_tasks.append({"task_overview": r.task.instruction, "steps": steps})
    if not ann_tasks:
        raise ConfigError(f"export: the oracle completed no task of {env}; nothing to export")
    atomic_write_json(out / "Annotations" / f"{app}_Annotation.json", {"tasks": ann_tasks})
    return ExportResult(out, app, len(ann_tasks), n_steps, tuple(skipped))
