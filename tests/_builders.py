"""Small hand-made datasets for tests: annotation JSON written in the real format, with
placeholder screenshots, loaded through the real loader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PIL import Image


def step(
    image: str,
    instruction: str,
    *boxes: tuple[float, float, float, float],
    types: tuple[str, ...] = (),
) -> dict[str, Any]:
    return {
        "image_path": image,
        "instruction": instruction,
        "actions": [
            {
                "type": types[i] if i < len(types) else "click",
                "target": f"target {i}",
                "bbox": list(b),
            }
            for i, b in enumerate(boxes)
        ],
    }


def write_app(
    root: Path, app: str, tasks: list[list[dict[str, Any]]], size: tuple[int, int] = (1000, 500)
) -> None:
    """Write `root/Annotations/<app>_Annotation.json` and paint every image it names."""
    ann: dict[str, list[dict[str, Any]]] = {"tasks": []}
    for ti, steps in enumerate(tasks):
        for k, s in enumerate(steps, 1):
            s["step_id"] = k
        ann["tasks"].append({"task_overview": f"{app} task {ti}", "steps": steps})
    (root / "Annotations").mkdir(parents=True, exist_ok=True)
    (root / "Annotations" / f"{app}_Annotation.json").write_text(json.dumps(ann))
    for steps in tasks:
        for s in steps:
            p = root / s["image_path"]
            if not p.exists():
                p.parent.mkdir(parents=True, exist_ok=True)
                Image.new("RGB", size, (40, 40, 40)).save(p)
