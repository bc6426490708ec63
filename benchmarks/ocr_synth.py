"""Accuracy of the `ocr` baseline on the synthetic suite, split by text-labelled and icon-only
targets (every step asked independently, as in all-steps mode; a hit is the point inside the
target box with no tolerance).

    .venv/bin/python benchmarks/ocr_synth.py [--tasks 60] [--seed 0] [--apps 6] [--data DIR]

Generates the suite into a temporary folder unless `--data` names an existing one, runs the
adapter on every step, and prints markdown tables: by label kind, by widget kind, by
application, and the sequential task metrics (TCA, SHR) from the same predictions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from medspot.adapters.base import StepRequest
from medspot.adapters.ocr import OcrAdapter
from medspot.dataset.images import ImageStore
from medspot.dataset.loading import load_dataset
from medspot.geometry import point_in_box
from medspot.synth import META_FILE, generate


def _pct(hits: int, n: int) -> str:
    return f"{100 * hits / n:.1f}% ({hits}/{n})" if n else "-"


async def _run(root: Path) -> dict[str, bool]:
    ds = load_dataset(root)
    store = ImageStore(ds.root)
    adapter = OcrAdapter()
    hits: dict[str, bool] = {}
    for step in ds.steps():
        req = StepRequest(
            step_uid=step.uid,
            task_uid=step.task_uid,
            image_rel=step.image_path,
            image_path=store.path(step.image_path),
            image_size=store.size(step.image_path),
            instruction=step.instruction,
        )
        pred = await adapter.predict(req)
        hits[step.uid] = pred.point is not None and any(
            point_in_box(pred.point, b) for b in step.boxes
        )
    return hits


def _table(title: str, groups: dict[str, list[bool]]) -> list[str]:
    lines = [f"| {title} | steps | hit rate |", "|---|---:|---:|"]
    for key in sorted(groups):
        g = groups[key]
        lines.append(f"| {key} | {len(g)} | {_pct(sum(g), len(g))} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--apps", type=int, default=6)
    ap.add_argument("--data", type=Path, default=None, help="an existing synthetic suite")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.data or Path(tmp) / "synth"
        if args.data is None:
            generate(root, tasks=args.tasks, seed=args.seed, apps=args.apps)
        meta = json.loads((root / META_FILE).read_text("utf-8"))
        t0 = time.perf_counter()
        hits = asyncio.run(_run(root))
        elapsed = time.perf_counter() - t0
    by_label: dict[str, list[bool]] = defaultdict(list)
    by_kind: dict[str, list[bool]] = defaultdict(list)
    by_app: dict[str, list[bool]] = defaultdict(list)
    tasks: dict[str, list[bool]] = defaultdict(list)
    for uid, hit in hits.items():
        m = meta["steps"][uid]
        by_label["text-labelled" if m["label_kind"] == "text" else "no text (icon-only)"].append(
            hit
        )
        by_kind[m["kind"]].append(hit)
        by_app[uid.split("/")[0]].append(hit)
        tasks[uid.rsplit("/", 1)[0]].append(hit)
    prefix = [next((i for i, h in enumerate(t) if not h), len(t)) for t in tasks.values()]
    n_steps = sum(len(t) for t in tasks.values())
    out = [
        f"Synthetic suite: {len(tasks)} tasks, {len(hits)} steps, seed {meta['seed']}, "
        f"{len(meta['apps'])} applications; OCR time {elapsed:.0f} s.",
        "",
        *_table("target", by_label),
        "",
        *_table("widget kind", by_kind),
        "",
        *_table("application", by_app),
        "",
        f"Sequential: TCA {_pct(sum(p == len(t) for p, t in zip(prefix, tasks.values(), strict=True)), len(tasks))}, "  # noqa: E501
        f"SHR {_pct(sum(prefix), n_steps)}.",
    ]
    sys.stdout.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
