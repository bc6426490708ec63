"""Benchmark 6: the live runner with the oracle, 1, 4 and 8 environments side by side.

`medspot live run --model oracle` (through `medspot.live.pipeline.run_live`, in process) on a
spread of the environment's packaged tasks, once per parallelism. From the journal: reset time
per task, settle time per action (the application's own), the environment's other time per
step (observe, locate, element_at, checks), and the harness overhead per step (wall time of the
step minus everything inside the environment; the oracle answers instantly, its `locate` is
environment time). Tasks per minute count the whole run, environment start-up included.

    .venv/bin/python benchmarks/bench_live.py [--env orthanc-explorer] [--tasks 16]
        [--envs 1 4 8] [--executor threads|ray] [--out benchmarks/results]

With `--executor ray` the environments are Ray actors of a local cluster (started per run);
the time of a step's environment calls is then measured in the runner's process, the actor
round trips included (`bench_ray_overhead.py` separates Ray's part).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from medspot.live.envs.taskfiles import env_task_file
from medspot.live.loop.executors import EXECUTORS, ExecutorName
from medspot.live.loop.request import LiveRequest, run_live
from medspot.live.loop.steplog import StepRecord, TaskRecord, read_live_journal
from medspot.runfolder.layout import LIVE_JOURNAL


def _q(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"median": None, "mean": None, "p90": None}
    v = sorted(values)
    return {
        "median": round(statistics.median(v), 4),
        "mean": round(statistics.fmean(v), 4),
        "p90": round(v[min(len(v) - 1, int(0.9 * len(v)))], 4),
    }


def one(
    env: str,
    ids: list[str],
    n_envs: int,
    folder: Path,
    opts: dict[str, Any],
    executor: ExecutorName = "threads",
) -> dict[str, Any]:
    out = folder / f"{executor}-envs-{n_envs}"
    t0 = time.perf_counter()
    res = run_live(LiveRequest(env=env, model="oracle", out=out, task_ids=tuple(ids),
                               concurrency=n_envs, n_boot=0, env_options=opts,
                               executor=executor))  # fmt: skip
    wall = time.perf_counter() - t0
    recs = list(read_live_journal(out / LIVE_JOURNAL))
    steps = [r for r in recs if isinstance(r, StepRecord) and r.executed]
    tasks = [r for r in recs if isinstance(r, TaskRecord)]
    return {
        "executor": executor,
        "envs": n_envs,
        "tasks": len(ids),
        "success": sum(1 for t in tasks if t.outcome == "success"),
        "wall_s": round(wall, 2),
        "tasks_per_minute": round(60 * len(ids) / wall, 2),
        "environments_started": res.stats.envs_started,
        "reset_s": _q([t.reset_s for t in tasks if t.reset_s is not None]),
        "settle_s": _q([s.settle_s for s in steps if s.settle_s is not None]),
        "env_other_s": _q([(s.env_s or 0) - (s.settle_s or 0) for s in steps]),
        "harness_overhead_s": _q([(s.step_s or 0) - (s.env_s or 0) for s in steps]),
        "step_s": _q([s.step_s for s in steps if s.step_s is not None]),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--env", default="orthanc-explorer")
    ap.add_argument("--tasks", type=int, default=16, help="tasks, spread over the task file")
    ap.add_argument("--envs", type=int, nargs="+", default=[1, 4, 8])
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--executor", choices=EXECUTORS, default="threads")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args(argv)
    tf, _ = env_task_file(args.env)
    every = max(1, len(tf.tasks) // args.tasks)
    ids = [t.id for t in tf.tasks[::every]][: args.tasks]
    opts: dict[str, Any] = {"chromium": args.chromium} if args.env != "dicomscope" else {}
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-live-") as tmp:
        for n in args.envs:
            row = one(args.env, ids, n, Path(tmp), opts, args.executor)
            rows.append(row)
            print(json.dumps(row), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    suffix = "" if args.executor == "threads" else f"_{args.executor}"
    (args.out / f"live_{args.env}{suffix}.json").write_text(json.dumps(rows, indent=2) + "\n")
    print("\n| envs | tasks | success | wall s | tasks/min | reset s (median) | settle s (median) "
          "| env other s (median) | harness overhead ms (median / p90) |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        oh = r["harness_overhead_s"]
        print(
            f"| {r['envs']} | {r['tasks']} | {r['success']} | {r['wall_s']} | "
            f"{r['tasks_per_minute']} | {r['reset_s']['median']} | {r['settle_s']['median']} | "
            f"{r['env_other_s']['median']} | {1000 * (oh['median'] or 0):.1f} / "
            f"{1000 * (oh['p90'] or 0):.1f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
