"""`medspot live export`: the oracle through every task of an environment, written as a
MedSPOT-format dataset (protocol.md 1.1): `Annotations/<App>_Annotation.json` and
`Images/<App>/...png`, one step per oracle action with the screen before it and the target's
exact box from the application (DOM / AT-SPI). Steps without an on-screen target (typing, keys)
are written with no action (unannotated, not evaluable), as the format allows.

Infeasible tasks (`"infeasible": true`) are left out, and the oracle is not run on them: the
static format has no "infeasible" answer (a step is a click on a box), and an infeasible task's
screens until its `infeasible` step would read as a feasible task cut short. The export says so
in its summary (`ExportResult.left_out`) and in `DIR/export.json` (`EXPORT_INFO`: which live
task each exported task is, which were left out and why).

The oracle runs through the live runner into `DIR/.live-run` (journal and trajectories kept, so
an interrupted export resumes); the dataset is built from its trajectories. One export writes
into `DIR` at a time (the run folder's lock, on `DIR` and on `DIR/.live-run`).
"""

from __future__ import annotations

import logging
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medspot.atomic_write import atomic_write_json
from medspot.errors import ConfigError
from medspot.live.core.tasks import LiveTask
from medspot.live.loop.envspec import EnvSpec
from medspot.live.loop.outcomes import task_results
from medspot.live.loop.request import LiveRequest, run_live
from medspot.live.loop.scheduler import LiveOptions
from medspot.live.loop.steplog import ResumeState, read_live_journal
from medspot.progress import ProgressEvent
from medspot.runfolder.layout import RunFolder, screen_rel
from medspot.runfolder.lock import run_folder_lock

__all__ = [
    "EXPORT_INFO",
    "INFEASIBLE_LEFT_OUT",
    "ExportResult",
    "app_name",
    "export_env",
    "percent_box",
]

log = logging.getLogger(__name__)
RUN_SUBDIR = ".live-run"
EXPORT_INFO = "export.json"  # what the export holds: its tasks' live ids, those left out
INFEASIBLE_LEFT_OUT = (
    "infeasible: a MedSPOT step is a click on a box; the static format has no infeasible answer"
)


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
    left_out: tuple[str, ...] = ()  # infeasible tasks: no static form (the oracle not run)


def percent_box(box: tuple[float, float, float, float], size: tuple[int, int]) -> list[float]:
    """A box in screen pixels `(x1, y1, x2, y2)` as a MedSPOT `bbox` `[x, y, w, h]` in percent
    of the screen `size`, one `medspot validate` accepts whatever the box: clamped to the
    screen and at least one pixel wide and high (a box off the screen, or of no width, would be
    refused), the corners rounded to 4 decimals and the size taken between the rounded corners
    (`x + w` is the rounded right edge: never past 100)."""
    w, h = size
    x1, y1, x2, y2 = box
    x1, x2 = max(0.0, min(x1, w - 1)), max(1.0, min(x2, w))
    y1, y2 = max(0.0, min(y1, h - 1)), max(1.0, min(y2, h))
    x1, y1 = min(x1, x2 - 1), min(y1, y2 - 1)  # at least one pixel
    px1, px2 = round(100 * x1 / w, 4), round(100 * x2 / w, 4)
    py1, py2 = round(100 * y1 / h, 4), round(100 * y2 / h, 4)
    return [px1, py1, round(px2 - px1, 4), round(py2 - py1, 4)]


def export_env(
    spec: EnvSpec,
    out: Path,
    *,
    concurrency: int = 1,
    on_progress: Callable[[ProgressEvent], None] | None = None,
    retry_env_errors: bool = False,
) -> ExportResult:
    """The oracle through the feasible tasks of `spec` into `out/.live-run`, then the dataset
    from its trajectories (module docstring)."""
    selected = spec.tasks
    tasks = [t for t in selected if not t.infeasible]
    left_out = tuple(t.id for t in selected if t.infeasible)
    if not tasks:
        raise ConfigError(
            f"export: every task selected is infeasible ({', '.join(left_out)}); a MedSPOT "
            "dataset has no infeasible answer, so there is nothing to export"
        )
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"cannot create the output folder {out}: {e.strerror or e}") from None
    with run_folder_lock(out):
        return _export_locked(spec, out, tasks, left_out, concurrency, on_progress,
                              retry_env_errors)  # fmt: skip


def _export_locked(
    spec: EnvSpec,
    out: Path,
    tasks: list[LiveTask],
    left_out: tuple[str, ...],
    concurrency: int,
    on_progress: Callable[[ProgressEvent], None] | None,
    retry_env_errors: bool,
) -> ExportResult:
    env = spec.env
    run_dir = out / RUN_SUBDIR
    loop = LiveOptions(concurrency=concurrency, retry_env_errors=retry_env_errors)
    feasible = spec.with_tasks(tuple(t.id for t in tasks)) if left_out else spec
    run_live(LiveRequest(spec=feasible, model="oracle", out=run_dir, n_boot=0, loop=loop),
             on_progress)  # fmt: skip
    state = ResumeState.from_records(list(read_live_journal(RunFolder(run_dir).live_journal)))
    results = task_results(tasks, state, env)
    app = app_name(env)
    img_dir = out / "Images" / app
    img_dir.mkdir(parents=True, exist_ok=True)
    ann_tasks: list[dict[str, Any]] = []
    exported: list[dict[str, Any]] = []  # export.json's row of each annotation task
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
            step = r.task.steps[s.target_step - 1]
            actions = []
            if s.intended_box is not None:
                actions.append({
                    "type": {"drag": "drag", "double_click": "double_click",
                             "type": "type"}.get(step.action, "click"),
                    "target": f"{step.action} target of step {s.target_step}",
                    "bbox": percent_box(s.intended_box, s.screen_size),
                })  # fmt: skip
            steps.append({
                "step_id": len(steps) + 1,
                "image_path": f"Images/{app}/{name}",
                "instruction": step.instruction,
                "actions": actions,
            })  # fmt: skip
        n_steps += len(steps)
        exported.append({"index": len(ann_tasks), "id": r.task.id, "steps": len(steps)})
        ann_tasks.append({"task_overview": r.task.instruction, "steps": steps})
    if not ann_tasks:
        raise ConfigError(f"export: the oracle completed no task of {env}; nothing to export")
    atomic_write_json(out / "Annotations" / f"{app}_Annotation.json", {"tasks": ann_tasks})
    atomic_write_json(out / EXPORT_INFO, {
        "env": env, "app": app, "annotation": f"Annotations/{app}_Annotation.json",
        "tasks": exported,
        "left_out": [{"id": t, "why": INFEASIBLE_LEFT_OUT} for t in left_out]
        + [{"id": t, "why": "the oracle did not complete it (see .live-run)"} for t in skipped],
    })  # fmt: skip
    return ExportResult(out, app, len(ann_tasks), n_steps, tuple(skipped), left_out)
