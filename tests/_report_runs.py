"""Helpers for the report, leaderboard, compare and import tests: a small dataset written in
the real annotation format with painted screenshots, and run folders produced through the real
scoring and results writer (`medspot.scoring.score.score_run`,
`medspot.runfolder.writer.write_results`) from hand-made journal records. No test lives here."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from PIL import Image

from medspot.atomic_write import atomic_write_json
from medspot.dataset.loading import load_dataset
from medspot.dataset.records import Dataset
from medspot.runfolder.journal import JournalRecord
from medspot.runfolder.runinfo import DatasetInfo, RunInfo
from medspot.runfolder.writer import write_results
from medspot.scoring.protocol import get_protocol
from medspot.scoring.score import score_run

SIZE = (1000, 500)

# percent [x, y, w, h] boxes; the first box of a step is its target
DATA: dict[str, list[list[tuple[str, list[tuple[float, float, float, float]]]]]] = {
    "Alpha": [
        [("Open the File menu", [(10, 10, 20, 20)]), ("Click Open", [(50, 50, 10, 10)])],
        [("Press the zoom button", [(60, 20, 20, 20)])],
        [
            ("Select the series", [(20, 40, 20, 20)]),
            ("Click Measure", [(40, 60, 20, 20)]),
            ("Click the ruler", [(70, 70, 20, 20)]),
        ],
    ],
    "Beta": [
        [("Open settings", [(30, 30, 20, 20)]), ("Toggle the grid", [(10, 60, 20, 20)])],
        [("Close the dialog", [(80, 80, 10, 10)])],
    ],
}

# planned outcomes per task, step by step; a sequential run stops at the first miss
PLAN_A: dict[str, list[bool]] = {
    "Alpha/0": [True, True],
    "Alpha/1": [True],
    "Alpha/2": [False],
    "Beta/0": [True, True],
    "Beta/1": [False],
}
PLAN_B: dict[str, list[bool]] = {
    "Alpha/0": [True, False],
    "Alpha/1": [True],
    "Alpha/2": [True, True, True],
    "Beta/0": [False],
    "Beta/1": [False],
}
MISS_POINT = (0.5, 0.95)  # inside the image, outside every box above


def write_dataset(
    root: Path,
    *,
    images: bool = True,
    instruction_override: str | None = None,
    overview_override: str | None = None,
) -> Path:
    """Write `root/Annotations/<App>_Annotation.json` (and the screenshots when `images`)."""
    (root / "Annotations").mkdir(parents=True, exist_ok=True)
    for app, tasks in DATA.items():
        ann: dict[str, list[dict[str, Any]]] = {"tasks": []}
        for ti, steps in enumerate(tasks):
            out_steps = []
            for k, (instr, boxes) in enumerate(steps, 1):
                img = f"Images/{app}/t{ti}_s{k}.png"
                out_steps.append(
                    {
                        "step_id": k,
                        "image_path": img,
                        "instruction": instruction_override
                        if instruction_override and ti == 0 and k == 1
                        else instr,
                        "actions": [
                            {"type": "click", "target": f"target {i}", "bbox": list(b)}
                            for i, b in enumerate(boxes)
                        ],
                    }
                )
                if images:
                    p = root / img
                    p.parent.mkdir(parents=True, exist_ok=True)
                    Image.new("RGB", SIZE, (200, 210, 220)).save(p)
            overview = f"{app} task {ti}"
            if overview_override and ti == 0:
                overview = overview_override
            ann["tasks"].append({"task_overview": overview, "steps": out_steps})
        (root / "Annotations" / f"{app}_Annotation.json").write_text(json.dumps(ann))
    return root


def records_for(
    ds: Dataset, plan: Mapping[str, Sequence[bool]], raw: Mapping[str, str] | None = None
) -> list[JournalRecord]:
    """Journal records that realise `plan`: a hit clicks the centre of the step's first box,
    a miss clicks MISS_POINT."""
    out = []
    for tid, outcomes in plan.items():
        task = ds.task(tid)
        for step, hit in zip(task.steps, outcomes, strict=False):
            c = step.boxes[0].center
            pt = (c.x, c.y) if hit else MISS_POINT
            out.append(
                JournalRecord(
                    step=step.uid,
                    task=tid,
                    image_path=step.image_path,
                    image_size=SIZE,
                    raw_text=(raw or {}).get(step.uid, f"click({pt[0]:.3f}, {pt[1]:.3f})"),
                    point=pt,
                )
            )
    return out


def make_run(
    out: Path,
    root: Path,
    plan: Mapping[str, Sequence[bool]],
    *,
    model: str = "model-a",
    protocol: str = "medspot-v1",
    adapter_kind: str = "api",
    raw: Mapping[str, str] | None = None,
    n_boot: int = 200,
) -> Path:
    """A scored run folder of the results layout made from `plan` on the dataset at `root`."""
    ds = load_dataset(root, check_images=False)
    recs = records_for(ds, plan, raw)
    score = score_run(ds, recs, get_protocol(protocol), all_steps=False, n_boot=n_boot, seed=0)
    out.mkdir(parents=True, exist_ok=True)
    write_results(out, score, dataset=ds)
    (out / "predictions.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in recs))
    info = RunInfo(
        model=model,
        adapter={"name": model, "kind": adapter_kind},
        protocol=protocol,
        dataset=DatasetInfo(
            source=str(root), root=str(root), fingerprint=ds.fingerprint, apps=list(ds.app_names)
        ),
        started="2025-01-01T00:00:00+00:00",
        finished="2025-01-01T00:10:00+00:00",
        status="complete" if score.complete else "incomplete",
        calls=len(recs),
    )
    atomic_write_json(out / "run.json", info.model_dump())
    return out
