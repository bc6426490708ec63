"""Benchmark 7: the reset of one live environment, over every packaged task.

One environment (started once, as the runner's slot does), the oracle through every packaged
task of `--env` in the task file's order (`--repeat N` passes), each task through
`medspot.live.core.episode.Episode`, the one definition of a live step that the runner uses:
`Episode.reset()` (the environment's reset plus the task's `start.prepare`) is what the runner
journals as `reset_s`. Reported: reset median / p90 / max, the environment's own reset without
`start.prepare` steps, where a reset's time goes (the phases the environment records in
`reset_phases`, summed over the tasks), and the oracle's outcomes (every task must still succeed:
a faster reset that is not complete shows here, and in `medspot live audit`).

    .venv/bin/python benchmarks/bench_reset.py --env ohif [--repeat 1] [--tasks ID ...]
        [--out benchmarks/results]
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

from medspot.live.core.episode import Episode
from medspot.live.envs.envoptions import check_env_options
from medspot.live.envs.registry import create_environment
from medspot.live.envs.taskfiles import env_task_file, select_tasks


def _q(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"median": None, "p90": None, "max": None}
    v = sorted(values)
    return {
        "median": round(statistics.median(v), 3),
        "p90": round(v[min(len(v) - 1, int(0.9 * len(v)))], 3),
        "max": round(v[-1], 3),
    }


def run(
    env_name: str, task_ids: list[str] | None, repeat: int, opts: dict[str, Any]
) -> dict[str, Any]:
    tf, _ = env_task_file(env_name)
    tasks = select_tasks(tf, task_ids or None)
    rows: list[dict[str, Any]] = []
    phases: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-reset-") as tmp:
        env: Any = create_environment(env_name, workdir=Path(tmp) / "env", **opts)
        t0 = time.perf_counter()
        env.start()
        start_s = time.perf_counter() - t0
        try:
            for rep in range(repeat):
                for task in tasks:
                    ep = Episode(env, task)
                    ep.reset()
                    own = dict(getattr(env, "reset_phases", {}) or {})
                    for k, v in own.items():
                        phases[k] = phases.get(k, 0.0) + v
                    while not ep.ended:
                        ep.step(ep.oracle_action())
                    rows.append({
                        "task": task.id, "pass": rep, "reset_s": round(ep.reset_s, 4),
                        "env_reset_s": round(own.get("total", ep.reset_s), 4),
                        "prepare_steps": len(task.start.prepare), "outcome": ep.outcome,
                        "phases": {k: round(v, 4) for k, v in own.items()},
                    })  # fmt: skip
                    print(json.dumps(rows[-1]), flush=True)
        finally:
            env.close()
    total = sum(phases.values()) - phases.get("total", 0.0)
    return {
        "env": env_name,
        "tasks": len(tasks),
        "repeat": repeat,
        "start_s": round(start_s, 2),
        "oracle_success": sum(1 for r in rows if r["outcome"] == "success"),
        "episodes": len(rows),
        "reset_s": _q([r["reset_s"] for r in rows]),
        "env_reset_s": _q([r["env_reset_s"] for r in rows]),
        "phase_share": {
            k: round(v / total, 3) for k, v in sorted(phases.items()) if k != "total" and total
        },
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--env", default="orthanc-explorer")
    ap.add_argument("--tasks", nargs="*", default=None, help="task ids (default: every task)")
    ap.add_argument("--repeat", type=int, default=1, help="passes over the tasks")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument(
        "--env-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option of the environment (e.g. reuse_document=true); repeatable",
    )
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args(argv)
    opts: dict[str, Any] = {"chromium": args.chromium} if args.env != "dicomscope" else {}
    for item in args.env_option:
        key, _, value = item.partition("=")
        opts[key] = value
    opts = check_env_options(args.env, opts)
    res = run(args.env, args.tasks, args.repeat, opts)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"reset_{args.env}.json").write_text(json.dumps(res, indent=2) + "\n")
    r, e = res["reset_s"], res["env_reset_s"]
    print(f"\n{res['env']}: {res['episodes']} resets, oracle {res['oracle_success']}/"
          f"{res['episodes']} success; reset median {r['median']} s, p90 {r['p90']} s, "
          f"max {r['max']} s; without start.prepare: median {e['median']} s, p90 {e['p90']} s; "
          f"phases {res['phase_share']}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
