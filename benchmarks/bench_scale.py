"""Benchmark 3: scale. A synthetic dataset of N steps (the synthetic suite's annotations, its
tasks repeated until N steps, the screenshots shared), a journal of N predictions (every step
answered: 80% at the target's centre, the rest far off), then, each in a fresh process:
loading the dataset, `medspot score` (read the journal, score every task, 2000 bootstrap
resamples, write the results), with the time of each phase and the peak memory.

    .venv/bin/python benchmarks/bench_scale.py [--sizes 1000 10000 100000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any


def build(root: Path, n_steps: int, seed: int = 0) -> None:
    """The synthetic suite (small), its tasks repeated to `n_steps` steps, and a journal."""
    from medspot.dataset.images import ImageStore
    from medspot.dataset.loading import load_dataset
    from medspot.runfolder.runinfo import DatasetInfo, RunInfo
    from medspot.synth import generate

    generate(root, tasks=12, seed=seed, apps=3)
    ann = root / "Annotations"
    docs = {p: json.loads(p.read_text()) for p in sorted(ann.glob("*_Annotation.json"))}
    per_file = n_steps // len(docs)
    for p, doc in docs.items():
        base = doc["tasks"]
        tasks, count, i = [], 0, 0
        while count < per_file:
            t = base[i % len(base)]
            tasks.append(t)
            count += len(t["steps"])
            i += 1
        doc["tasks"] = tasks
        p.write_text(json.dumps(doc))
    ds = load_dataset(root)
    store = ImageStore(root)
    run = root / "run"
    run.mkdir()
    info = RunInfo(
        model="synthetic",
        all_steps=True,
        dataset=DatasetInfo(source=str(root), root=str(root), fingerprint=ds.fingerprint),
    )
    (run / "run.json").write_text(info.model_dump_json())
    with (run / "predictions.jsonl").open("w") as f:
        for s in ds.steps():
            if not s.annotated:
                continue
            c = s.boxes[0].center
            hit = zlib.crc32(s.uid.encode()) % 10 < 8
            x, y = (c.x, c.y) if hit else (1.0 - c.x / 2, 1.0 - c.y / 2)
            f.write(
                json.dumps(
                    {
                        "step": s.uid,
                        "task": s.task_uid,
                        "image_path": s.image_path,
                        "image_size": list(store.size(s.image_path)),
                        "raw_text": f"({round(x * 1000)}, {round(y * 1000)})",
                        "point": [x, y],
                        "latency_s": 0.2,
                        "time": "2026-01-01T00:00:00.000+00:00",
                    }
                )
                + "\n"
            )


def child(root: Path) -> dict[str, Any]:
    """The phases of `medspot score`, timed, in this (fresh) process."""
    from medspot.dataset.loading import load_dataset
    from medspot.runfolder.journal import read_journal
    from medspot.runfolder.writer import write_results
    from medspot.scoring.protocol import get_protocol
    from medspot.scoring.score import score_run

    out: dict[str, Any] = {}
    t = time.perf_counter()
    ds = load_dataset(root)
    out["load_s"] = time.perf_counter() - t
    rss_loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    records = list(read_journal(root / "run" / "predictions.jsonl"))
    out["read_journal_s"] = time.perf_counter() - t
    rss_records = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    score = score_run(ds, records, get_protocol("medspot-v1"), all_steps=True, n_boot=2000)
    out["score_and_bootstrap_s"] = time.perf_counter() - t
    t = time.perf_counter()
    write_results(root / "scored", score, dataset=ds)
    out["write_s"] = time.perf_counter() - t
    out["records"] = len(records)
    out["tasks"] = len(score.tasks)
    out["rss_after_load_mb"] = rss_loaded / 1024
    out["rss_after_journal_mb"] = rss_records / 1024
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in out.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child)))
        return 0
    rows = []
    with tempfile.TemporaryDirectory(prefix="medspot-scale-") as tmp:
        for n in args.sizes:
            root = Path(tmp) / f"n{n}"
            build(root, n)
            phases = subprocess.run(
                [sys.executable, __file__, "--child", str(root)],
                capture_output=True,
                text=True,
                check=True,
            )
            row = {"steps": n, **json.loads(phases.stdout.strip().splitlines()[-1])}
            t = time.perf_counter()
            cli = subprocess.run(
                [sys.executable, "-m", "medspot", "score", str(root / "run"), "--data", str(root)],
                capture_output=True,
                text=True,
            )
            row["medspot_score_command_s"] = round(time.perf_counter() - t, 3)
            if cli.returncode != 0:
                raise SystemExit(f"medspot score failed: {cli.stderr[-2000:]}")
            rows.append(row)
            print(json.dumps(row), flush=True)
    print()
    print(
        "| steps | load s | read journal s | score+bootstrap s | write s | `medspot score` s "
        "| RSS after load MB | RSS after journal MB | peak RSS MB |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['records']} | {r['load_s']:.2f} | {r['read_journal_s']:.2f} | "
            f"{r['score_and_bootstrap_s']:.2f} | {r['write_s']:.2f} | "
            f"{r['medspot_score_command_s']:.2f} | {r['rss_after_load_mb']:.0f} | "
            f"{r['rss_after_journal_mb']:.0f} | {r['peak_rss_mb']:.0f} |"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
