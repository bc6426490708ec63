"""Reading a results folder written by the MedSPOT authors' scripts (`<App>_Annotation/`
folders with `task_results.json`, `task_metrics.json`, `failure_statistics.json`, their key
names) into a medspot run folder that `report`, `leaderboard` and `compare` accept.

What their output lacks is recorded in run.json under `imported.lacks`: some scripts store no
raw answer, most no image size (pixel points can then only be normalised with the screenshots
at hand), none the target boxes or instructions (taken from the annotations when `data` is
given). Their numbers are kept as they scored them, under their own preset.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medspot.atomic_write import atomic_write_json, atomic_write_text
from medspot.dataset.records import Dataset, Task, size_class
from medspot.errors import ConfigError, DataError
from medspot.runfolder.layout import APP_FAILURES, APP_METRICS, TASK_RESULTS, RunFolder
from medspot.runfolder.runinfo import DatasetInfo, RunInfo, now_iso
from medspot.runfolder.schema import RowOutcome, StepRow, TaskRow
from medspot.runfolder.upstream_check import check_task_row
from medspot.scoring.metrics import (
    SEQUENTIAL_KEYS,
    MetricSet,
    breakdown,
    compute_metrics,
    failure_statistics,
    macro_average,
    survival,
)
from medspot.scoring.protocol import PRESETS, get_protocol

__all__ = ["COORDS", "ImportResult", "guess_protocol", "import_upstream"]

log = logging.getLogger(__name__)

COORDS = ("auto", "pixel", "normalized")
_ALPHA = 0.8
_SUFFIX = "_Annotation"

# Results folder names of the authors' scripts -> the preset that reproduces their scoring
# (protocol.md section 3). More specific patterns first.
_PRESET_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"tars", "upstream-e"),
    (r"seeclick|gui[-_ ]?actor", "upstream-d"),
    (r"gpt", "upstream-b"),
    (r"gemma|llama|qwen[-_ ]?3|qwen[-_ ]?2[._]?5", "upstream-c"),
    (r"aguvis|cogagent|deepseek|mistral|atlas|qwen[-_ ]?2|uground", "upstream-a"),
)


def guess_protocol(name: str) -> str | None:
    """The preset of the authors' script family that a results folder name points to."""
    low = name.lower()
    for pattern, preset in _PRESET_PATTERNS:
        if re.search(pattern, low):
            return preset
    return None


@dataclass(frozen=True)
class ImportResult:
    out: Path
    model: str
    protocol: str
    protocol_guessed: bool
    apps: tuple[str, ...]
    num_tasks: int
    lacks: tuple[str, ...]
    notes: tuple[str, ...]


def _load_list(path: Path) -> list[dict[str, Any]]:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path}: cannot read ({e})") from None
    if not isinstance(obj, list) or not all(isinstance(x, dict) for x in obj):
        raise ConfigError(f"{path}: expected a JSON list of task objects")
    return obj


def _load_dict(path: Path) -> dict[str, Any] | None:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path}: cannot read ({e})") from None
    return obj if isinstance(obj, dict) else None


def _pair(v: Any) -> tuple[float, float] | None:
    if isinstance(v, list | tuple) and len(v) >= 2:
        try:
            x, y = float(v[0]), float(v[1])
        except (TypeError, ValueError):
            return None
        if math.isfinite(x) and math.isfinite(y):
            return (x, y)
    return None


class _Importer:
    def __init__(self, dataset: Dataset | None, coords: str) -> None:
        self.ds = dataset
        self.coords = coords
        self.notes: list[str] = []
        self.lacks: set[str] = set()
        self.records: list[dict[str, Any]] = []
        self._sizes: dict[str, tuple[int, int] | None] = {}

    def _image_size(self, log_step: Mapping[str, Any], rel: str) -> tuple[int, int] | None:
        w, h = log_step.get("image_w"), log_step.get("image_h")
        if isinstance(w, int) and isinstance(h, int) and w > 0 and h > 0:
            return (w, h)
        if self.ds is None or not rel:
            return None
        if rel not in self._sizes:
            from medspot.dataset.images import ImageStore

            try:
                self._sizes[rel] = ImageStore(self.ds.root).size(rel)
            except (DataError, OSError):
                self._sizes[rel] = None
        return self._sizes[rel]

    def _point(
        self, raw: tuple[float, float] | None, size: tuple[int, int] | None, where: str
    ) -> tuple[float, float] | None:
        if raw is None:
            return None
        pixel = self.coords == "pixel" or (self.coords == "auto" and max(raw) > 1.0)
        if not pixel:
            return raw
        if size is None:
            self.lacks.add("image_size")
            self.notes.append(f"{where}: pixel point {raw} without an image size, not drawn")
            return None
        return (raw[0] / size[0], raw[1] / size[1])

    def task(self, app: str, index: int, obj: Mapping[str, Any], ann: Task | None) -> TaskRow:
        tid = f"{app}/{index}"
        logs_raw = obj.get("steps") or []
        logs: dict[int, Mapping[str, Any]] = {}
        for k, s in enumerate(logs_raw, 1):
            if isinstance(s, dict):
                sid = s.get("step_id")
                logs[sid if isinstance(sid, int) else k] = s
        failed_at = next((p for p, s in sorted(logs.items()) if s.get("hit") == 0), None)
        last_logged = max(logs) if logs else 0
        positions = [s.position for s in ann.steps] if ann is not None else sorted(logs)
        steps: list[StepRow] = []
        for pos in positions:
            a = ann.steps[pos - 1] if ann is not None and pos <= len(ann.steps) else None
            lg = logs.get(pos, {})
            rel = str(lg.get("image_path") or (a.image_path if a else ""))
            size = self._image_size(lg, rel)
            if lg and "raw_output" not in lg:
                self.lacks.add("raw_output")
            raw_pt = _pair(lg.get("pred_point"))
            if raw_pt is None and isinstance(lg.get("pred_points"), list) and lg["pred_points"]:
                raw_pt = _pair(lg["pred_points"][0])
            point = self._point(raw_pt, size, f"{tid} step {pos}")
            hit_v = lg.get("hit")
            hit = None if hit_v is None else bool(hit_v)
            if hit is True:
                outcome = "hit"
            elif hit is False:
                outcome = "miss"
            elif lg:
                outcome = "not_evaluable"
            elif (failed_at is not None and pos > failed_at) or (
                pos > last_logged and not obj.get("completed")
            ):
                outcome = "not_reached"
            else:
                outcome = "not_evaluable"
            boxes: list[tuple[float, float, float, float]] = []
            if a is not None:
                boxes = [(b.x1, b.y1, b.x2, b.y2) for b in a.boxes]
            elif isinstance(lg.get("gt_bbox"), list) and len(lg["gt_bbox"]) == 4:
                gb = [float(v) for v in lg["gt_bbox"]]
                if max(gb) <= 1.0:
                    boxes = [(gb[0], gb[1], gb[2], gb[3])]
                elif size is not None:
                    w, h = size
                    boxes = [(gb[0] / w, gb[1] / h, gb[2] / w, gb[3] / h)]
            difficulty = lg.get("difficulty")
            if difficulty not in ("small", "medium", "large"):
                difficulty = None
                if boxes:
                    x1, y1, x2, y2 = boxes[0]
                    difficulty = size_class((x2 - x1) * (y2 - y1))
            offset = None
            if point is not None and boxes:
                x1, y1, x2, y2 = boxes[0]
                if x2 > x1 and y2 > y1:
                    offset = (
                        (point[0] - (x1 + x2) / 2) / (x2 - x1),
                        (point[1] - (y1 + y2) / 2) / (y2 - y1),
                    )
            raw_out = lg.get("raw_output")
            uid = f"{tid}/{pos}"
            steps.append(
                StepRow(
                    step=uid,
                    position=pos,
                    step_id=a.step_id if a else pos,
                    instruction=a.instruction if a else "",
                    action_types=list(dict.fromkeys(x.type for x in a.actions))
                    if a
                    else ([str(lg["action_type"])] if lg.get("action_type") else []),
                    evaluable=outcome != "not_evaluable",
                    outcome=outcome,
                    hit=hit,
                    failure_type=lg.get("failure_type") if hit is False else None,
                    difficulty=difficulty,
                    target_boxes=boxes,
                    pred_point=point,
                    raw_output=str(raw_out) if raw_out is not None else None,
                    image_path=rel,
                    image_size=size,
                    offset=offset,
                )
            )
            if lg and hit is not None and self.ds is not None and self.ds.has_step(uid):
                self.records.append(
                    {
                        "step": uid,
                        "task": tid,
                        "image_path": rel,
                        "image_size": list(size) if size else None,
                        "raw_text": str(raw_out) if raw_out is not None else None,
                        "point": list(point) if point else None,
                        "flags": ["imported-upstream"],
                    }
                )
        completed = bool(obj.get("completed"))
        num_steps = int(obj.get("num_steps") or 0)
        shr_den = int(obj.get("evaluated_steps", num_steps) or 0)
        wps = float(obj.get("weighted_prefix_score") or 0.0)
        if isinstance(obj.get("normalised_weighted_score"), int | float):
            nwps = float(obj["normalised_weighted_score"])
        else:
            max_w = sum(_ALPHA**i for i in range(num_steps))
            nwps = wps / max_w if max_w > 0 else (1.0 if completed else 0.0)
        logged = [logs[p] for p in sorted(logs)]
        step1 = obj.get("step1_hit")
        step1_hit = bool(step1) if step1 is not None else bool(logged and logged[0].get("hit") == 1)
        ftype = None
        if not completed and logged:
            ftype = logged[-1].get("failure_type") or "unknown"
        return TaskRow(
            task_id=tid,
            app=app,
            task_index=index,
            task_overview=str(obj.get("task_overview") or (ann.overview if ann else "")),
            status="scored",
            completed=completed,
            correct_steps=int(obj.get("correct_steps") or 0),
            num_steps=shr_den,
            num_evaluable_steps=num_steps,
            steps_evaluated=sum(1 for s in logged if s.get("hit") in (0, 1)),
            weighted_prefix_score=wps,
            normalized_weighted_prefix_score=nwps,
            failure_type=ftype,
            failed_step=failed_at,
            step1_hit=step1_hit,
            steps=steps,
        )


def _outcomes(tasks: Sequence[TaskRow]) -> list[RowOutcome]:
    return [t.outcome() for t in tasks]


def _metrics(tasks: Sequence[TaskRow], n_boot: int, seed: int) -> MetricSet:
    """The sequential metrics of imported rows, by the shared formulas (`compute_metrics`)."""
    return compute_metrics(_outcomes(tasks), all_steps=False, n_boot=n_boot, seed=seed)


def _failure_stats(tasks: Sequence[TaskRow]) -> dict[str, Any]:
    """Failure statistics of imported rows when the authors wrote none: the shared
    `failure_statistics`. Where their `failure_statistics.json` exists it is copied as it is
    instead (the authors' own semantics: their counting of types and totals, which this harness
    does not recompute; `upstream_metrics` keeps their metrics beside ours the same way)."""
    return failure_statistics(_outcomes(tasks), all_steps=False)


def _match_task(app_tasks: Sequence[Task], index: int, overview: str) -> Task | None:
    """The annotated task a result row describes: by position, checked against the overview
    (the authors' resume mode may reorder), else the one task with that overview."""
    if index < len(app_tasks) and (not overview or app_tasks[index].overview == overview.strip()):
        return app_tasks[index]
    same = [t for t in app_tasks if t.overview == overview.strip()]
    return same[0] if len(same) == 1 else None


def import_upstream(
    src: Path,
    out: Path,
    *,
    dataset: Dataset | None = None,
    data_root: str = "",
    model: str | None = None,
    protocol: str | None = None,
    coords: str = "auto",
    n_boot: int = 2000,
    seed: int = 0,
) -> ImportResult:
    """Write the run folder `out` from the authors' results folder `src`."""
    src, out = Path(src), Path(out)
    if coords not in COORDS:
        raise ConfigError(f"--coords must be one of {', '.join(COORDS)}, not {coords!r}")
    if not src.is_dir():
        raise ConfigError(f"{src} is not a folder")
    authors, dest = RunFolder(src), RunFolder(out)
    app_dirs = sorted(d for d in src.iterdir() if (d / TASK_RESULTS).is_file())
    if not app_dirs:
        raise ConfigError(
            f"{src} holds no <App>_Annotation/task_results.json: not a results folder of the "
            "authors' scripts"
        )
    if out.exists() and any(out.iterdir()):
        raise ConfigError(f"{out} exists and is not empty; choose another --out")
    name = model or src.name
    guessed = guess_protocol(src.name) if protocol is None else None
    proto = protocol or guessed
    if proto is None:
        raise ConfigError(
            f"cannot tell from the folder name {src.name!r} which authors' script made it; "
            f"pass --protocol (one of {', '.join(p for p in PRESETS if p.startswith('upstream-'))})"
        )
    get_protocol(proto)  # a real preset name, or a ConfigError naming them
    imp = _Importer(dataset, coords)
    if dataset is None:
        imp.lacks.update({"target_boxes", "instructions"})
    apps: list[str] = []
    tasks_by_app: dict[str, list[TaskRow]] = {}
    upstream_metrics: dict[str, Any] = {}
    their_failures: dict[str, dict[str, Any] | None] = {}
    for d in app_dirs:
        app = d.name.removesuffix(_SUFFIX)
        rows = _load_list(d / TASK_RESULTS)
        ann_tasks: Sequence[Task] = ()
        if dataset is not None:
            found = [a for a in dataset.apps if a.name == app]
            if not found:
                imp.notes.append(f"{app}: not in the dataset given; no boxes or instructions")
            else:
                ann_tasks = found[0].tasks
                if len(ann_tasks) != len(rows):
                    imp.notes.append(
                        f"{app}: {len(rows)} result rows for {len(ann_tasks)} annotated tasks"
                    )
        out_rows = []
        rel_file = (d / TASK_RESULTS).as_posix()
        for i, obj in enumerate(rows):
            check_task_row(obj, rel_file, i)
            ann = _match_task(ann_tasks, i, str(obj.get("task_overview") or ""))
            index = ann.index if ann is not None else i
            if ann_tasks and ann is None:
                imp.notes.append(f"{app}/{i}: no annotated task with this overview")
            out_rows.append(imp.task(app, index, obj, ann))
        apps.append(app)
        tasks_by_app[app] = out_rows
        upstream_metrics[app] = _load_dict(d / APP_METRICS) or {}
        their_failures[app] = _load_dict(d / APP_FAILURES)
    overall_theirs = _load_dict(authors.overall_metrics) or {}
    all_tasks = [t for a in apps for t in tasks_by_app[a]]

    per_app_sets = {a: _metrics(tasks_by_app[a], n_boot, seed) for a in apps}
    per_app = {a: ms.to_json() for a, ms in per_app_sets.items()}
    overall = _metrics(all_tasks, n_boot, seed).to_json()
    for where, mine, theirs in [
        *((a, per_app[a], upstream_metrics[a]) for a in apps),
        ("overall", overall, overall_theirs),
    ]:
        for k in SEQUENTIAL_KEYS:
            v = theirs.get(k)
            if isinstance(v, int | float) and mine.get(k) is not None and abs(v - mine[k]) > 1e-9:
                imp.notes.append(
                    f"{where}: {k} recomputed from the task rows is {mine[k]:.6f}, their file "
                    f"says {v:.6f}"
                )
    macro = macro_average(per_app_sets)

    for a in apps:
        atomic_write_json(dest.task_results(a), [t.model_dump() for t in tasks_by_app[a]])
        atomic_write_json(
            dest.task_failures(a),
            [t.model_dump() for t in tasks_by_app[a] if not t.completed],
        )
        atomic_write_json(
            dest.app_metrics(a),
            {**per_app[a], "protocol": proto, "upstream_metrics": upstream_metrics[a]},
        )
        fs = their_failures[a] or _failure_stats(tasks_by_app[a])
        fs.setdefault("total_failed_tasks", sum(1 for t in tasks_by_app[a] if not t.completed))
        atomic_write_json(dest.app_failures(a), fs)
    overall.update(
        protocol=proto,
        protocol_label=proto,
        all_steps=False,
        missing_steps=[],
        macro_average=macro,
        per_app=per_app,
        survival=survival(_outcomes(all_tasks)),
        by_target_size=breakdown(_outcomes(all_tasks), "target_size"),
        upstream_metrics=overall_theirs,
    )
    atomic_write_json(dest.overall_metrics, overall)
    theirs_overall_fs = _load_dict(authors.overall_failures)
    atomic_write_json(dest.overall_failures, theirs_overall_fs or _failure_stats(all_tasks))
    if imp.records:
        lines = [json.dumps(r, ensure_ascii=False) for r in imp.records]
        atomic_write_text(dest.journal, "\n".join(lines) + "\n")
    lacks = sorted(imp.lacks)
    info = RunInfo(
        model=name,
        adapter={"kind": "upstream-import", "name": name, "source": str(src)},
        protocol=proto,
        dataset=DatasetInfo(
            source=DatasetInfo.of(dataset).source if dataset else "",
            root=str(Path(data_root).resolve())
            if data_root
            else (DatasetInfo.of(dataset).root if dataset else ""),
            fingerprint=dataset.fingerprint if dataset else "",
            apps=apps,
        ),
        started=now_iso(),
        finished=now_iso(),
        status="complete",
    )
    payload = info.model_dump()
    payload["imported"] = {
        "from": str(src),
        "protocol_guessed": guessed is not None,
        "coords": coords,
        "lacks": lacks,
        "notes": imp.notes[:200],
    }
    atomic_write_json(dest.run_json, payload)
    return ImportResult(
        out=out,
        model=name,
        protocol=proto,
        protocol_guessed=guessed is not None,
        apps=tuple(apps),
        num_tasks=len(all_tasks),
        lacks=tuple(lacks),
        notes=tuple(imp.notes),
    )
