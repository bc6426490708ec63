"""What a Gymnasium step costs beyond the application: `env.step(action)`'s wall time minus the
time spent inside the environment during that step (`last_result.env_s`), on orthanc-explorer,
the oracle's path of the same tasks.

Only the public Gymnasium API is used (`LiveGymEnv`, `reset`, `step`, `oracle_action`,
`last_result`), so the same script measures any version of medspot: point PYTHONPATH at
another checkout's `src` to compare (benchmarks/README.md section 14).

    .venv/bin/python benchmarks/bench_gym.py [--tasks 4] [--executor threads]
        [--chromium /usr/bin/chromium] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_ray_overhead import _q

from medspot.live.envs.taskfiles import env_task_file

ENV = "orthanc-explorer"


def bench(tasks: list[str], chromium: str, executor: str | None) -> dict[str, Any]:
    from medspot.live.gym import LiveGymEnv

    kw: dict[str, Any] = {"chromium": chromium, "tasks": tasks}
    if executor is not None:  # a version without executors takes no such keyword
        kw["executor"] = executor
    harness: list[float] = []
    steps: list[float] = []
    resets: list[float] = []
    outcomes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="msbg", dir="/tmp") as root:
        env = LiveGymEnv(ENV, workroot=root, **kw)
        try:
            for task in tasks:
                t = time.perf_counter()
                env.reset(options={"task": task})
                resets.append(time.perf_counter() - t)
                done = False
                while not done:
                    action = env.oracle_action()
                    t = time.perf_counter()
                    _, _, terminated, truncated, info = env.step(action)
                    wall = time.perf_counter() - t
                    res = env.last_result
                    assert res is not None
                    steps.append(wall)
                    harness.append(wall - res.env_s)
                    done = terminated or truncated
                outcomes.append(str(info.get("outcome")))
        finally:
            env.close()
    return {
        "tasks": len(tasks),
        "steps": len(steps),
        "success": outcomes.count("success"),
        "step_ms": _q(steps),
        "harness_ms": _q(harness),
        "reset_ms": _q(resets),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--tasks", type=int, default=4, help="tasks (every 21st packaged one)")
    ap.add_argument("--executor", default=None, help="threads, ray or container (default: none "
                    "given, the environment's own default)")  # fmt: skip
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    every = [t.id for t in env_task_file(ENV)[0].tasks][::21][: args.tasks]
    out = bench(every, args.chromium, args.executor)
    h, s = out["harness_ms"], out["step_ms"]
    print(f"{out['tasks']} tasks ({out['success']} success), {out['steps']} steps: step "
          f"{s['median']} ms median, harness {h['median']} / {h['p90']} ms (median / p90), "
          f"reset {out['reset_ms']['median']} ms")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
