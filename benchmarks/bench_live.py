"""Benchmark 6 (and 9): the live runner with the oracle, environments side by side, with and
without spares.

`medspot live run --model oracle` (through `medspot.live.pipeline.run_live`, in process) on a
spread of the environment's packaged tasks, once per parallelism (and per spare setting). From
the journal: the wait between two tasks of an environment (`between_tasks_s`: from the end of
its previous task to this task's first observation; a swap with a spare, a reset without), the
reset per task (`reset_s`: with a spare it runs in the background), settle time per action (the
application's own), the environment's other time per step (observe, locate, element_at,
checks), and the harness overhead per step (wall time of the step minus everything inside the
environment; the oracle answers instantly, its `locate` is environment time). Tasks per minute
count the whole run, environment start-up included.

    .venv/bin/python benchmarks/bench_live.py [--env orthanc-explorer] [--tasks 16]
        [--envs 1 4 8] [--spares default|off|N|both] [--repeats K]
        [--env-option KEY=VALUE ...] [--executor threads|ray] [--out benchmarks/results]

`--spares both` runs every parallelism twice, without then with spares, side by side (section
9 of benchmarks/README.md); `default` is the environment's own choice (its `SparePlan`), `off`
none (`--no-spare`), N that many per environment (`--spares N`).
With `--executor ray` the environments are Ray actors of a local cluster (started per run);
the time of a step's environment calls is then measured in the runner's process, the actor
round trips included (`bench_ray_overhead.py` separates Ray's part).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from medspot.live.envs.envoptions import check_env_options, env_options_of
from medspot.live.envs.registry import env_entry
from medspot.live.envs.taskfiles import env_task_file
from medspot.live.loop.envspec import EnvSpec, ExecutorSpec
from medspot.live.loop.executors import EXECUTORS, ExecutorName
from medspot.live.loop.request import LiveRequest, run_live
from medspot.live.loop.scheduler import LiveOptions
from medspot.live.loop.steplog import StepRecord, TaskRecord, read_live_journal
from medspot.runfolder.layout import LIVE_JOURNAL


def _spare_settings(text: str) -> list[int | None]:
    """`--spares`: the runs' spare settings (None the environment's own, 0 none, N that many)."""
    named: dict[str, list[int | None]] = {"default": [None], "off": [0], "both": [0, None]}
    if text in named:
        return named[text]
    if text.isdigit():
        return [int(text)]
    raise argparse.ArgumentTypeError(f"{text!r}: default, off, both or a number of spares")


def _spares_label(spares: int | None) -> str:
    return "default" if spares is None else "off" if spares == 0 else str(spares)


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
    spares: int | None = None,
    repeats: int = 1,
) -> dict[str, Any]:
    label = _spares_label(spares)
    out = folder / f"{executor}-envs-{n_envs}-spares-{label}"
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    res = run_live(
        LiveRequest(
            spec=EnvSpec(
                env,
                task_ids=tuple(ids),
                env_options=opts,
                spares=spares,
                executor=ExecutorSpec(name=executor),
            ),
            model="oracle",
            out=out,
            n_boot=0,
            loop=LiveOptions(concurrency=n_envs, repeats=repeats),
        )
    )
    wall = time.perf_counter() - t0
    recs = list(read_live_journal(out / LIVE_JOURNAL))
    steps = [r for r in recs if isinstance(r, StepRecord) and r.executed]
    tasks = [r for r in recs if isinstance(r, TaskRecord)]
    runs = len(ids) * repeats
    return {
        "executor": executor,
        "envs": n_envs,
        "spares": label,
        "tasks": len(ids),
        "repeats": repeats,
        "success": sum(1 for t in tasks if t.outcome == "success"),
        "failed": sorted(f"{t.task}@{t.repeat}" for t in tasks if t.outcome != "success"),
        "wall_s": round(wall, 2),
        "tasks_per_minute": round(60 * runs / wall, 2),
        "load_before": round(load, 2),
        "load_after": round(os.getloadavg()[0], 2),
        "environments_started": res.stats.envs_started,
        "spares_started": res.stats.spares_started,
        "swaps": res.stats.swaps,
        "spare_faults": res.stats.spare_faults,
        "env_faults": res.stats.faults,
        "between_tasks_s": _q([t.between_tasks_s for t in tasks if t.between_tasks_s is not None]),
        "reset_s": _q([t.reset_s for t in tasks if t.reset_s is not None]),
        "settle_s": _q([s.settle_s for s in steps if s.settle_s is not None]),
        "env_other_s": _q([(s.env_s or 0) - (s.settle_s or 0) for s in steps]),
        "harness_overhead_s": _q([(s.step_s or 0) - (s.env_s or 0) for s in steps]),
        # a task's first step apart: what the step does beyond the later ones (the first
        # screen's boxes, asked of the environment after the reset or brought back by it)
        "harness_overhead_first_s": _q(
            [(s.step_s or 0) - (s.env_s or 0) for s in steps if s.n == 1]
        ),
        "harness_overhead_later_s": _q(
            [(s.step_s or 0) - (s.env_s or 0) for s in steps if s.n > 1]
        ),
        "step_s": _q([s.step_s for s in steps if s.step_s is not None]),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--env", default="orthanc-explorer")
    ap.add_argument("--tasks", type=int, default=16, help="tasks, spread over the task file")
    ap.add_argument("--envs", type=int, nargs="+", default=[1, 4, 8])
    ap.add_argument("--spares", type=_spare_settings, default=[None], metavar="default|off|N|both")
    ap.add_argument("--repeats", type=int, default=1, help="runs of each task (--repeats)")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument(
        "--env-option", action="append", default=[], metavar="KEY=VALUE",
        help="an option of the environment (e.g. reuse_document=true); repeatable",
    )  # fmt: skip
    ap.add_argument("--executor", choices=EXECUTORS, default="threads")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    ap.add_argument(
        "--keep",
        type=Path,
        default=None,
        metavar="DIR",
        help="keep the run folders (and the log) in DIR (default: a temp folder)",
    )
    args = ap.parse_args(argv)
    tf, _ = env_task_file(args.env)
    every = max(1, len(tf.tasks) // args.tasks)
    ids = [t.id for t in tf.tasks[::every]][: args.tasks]
    own = env_options_of(env_entry(args.env)) or {}
    opts: dict[str, Any] = {"chromium": args.chromium} if "chromium" in own else {}
    for item in args.env_option:
        key, _, value = item.partition("=")
        opts[key] = value
    opts = check_env_options(args.env, opts)
    rows = []
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(args.keep / "bench.log")
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(message)s"))
        logging.getLogger("medspot.live").addHandler(handler)
        logging.getLogger("medspot.live").setLevel(logging.DEBUG)
    with tempfile.TemporaryDirectory(prefix="bench-live-") as tmp:
        for n in args.envs:
            for spares in args.spares:
                row = one(args.env, ids, n, args.keep or Path(tmp), opts, args.executor, spares,
                          args.repeats)  # fmt: skip
                rows.append(row)
                print(json.dumps(row), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    suffix = "" if args.executor == "threads" else f"_{args.executor}"
    if args.spares != [None]:
        suffix += "_spares-" + ("both" if len(args.spares) > 1 else _spares_label(args.spares[0]))
    (args.out / f"live_{args.env}{suffix}.json").write_text(json.dumps(rows, indent=2) + "\n")
    print("\n| envs | spares | task runs | success | wall s | tasks/min | wait between tasks s "
          "(median / p90) | reset s (median) | settle s (median) | harness overhead ms "
          "(median / p90) | load |")  # fmt: skip
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        oh, w = r["harness_overhead_s"], r["between_tasks_s"]
        print(
            f"| {r['envs']} | {r['spares']} | {r['tasks'] * r['repeats']} | {r['success']} | "
            f"{r['wall_s']} | {r['tasks_per_minute']} | {w['median']} / {w['p90']} | "
            f"{r['reset_s']['median']} | {r['settle_s']['median']} | "
            f"{1000 * (oh['median'] or 0):.1f} / {1000 * (oh['p90'] or 0):.1f} | "
            f"{r['load_before']}-{r['load_after']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
