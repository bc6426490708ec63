"""`medspot live audit`: are the tasks sound? The oracle through the runner, every check read
at each task's start; the findings per task."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from medspot.commands._common import add_executor_args, env_spec
from medspot.commands.live._common import bar, env_args, selection_args, task_ids

__all__ = ["AUDIT_FILE", "register"]

AUDIT_FILE = "audit.json"  # the findings, kept beside the oracle's run under `--out`


def _audit(args: argparse.Namespace) -> int:
    import json
    import shutil
    import tempfile

    from medspot.live.loop.task_audit import audit_env

    spec = env_spec(args, task_ids(args.tasks))  # bad input: exit 2, before anything is made
    work = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="medspot-audit-"))
    shown, update = bar(args, "audit")
    try:
        res = audit_env(spec, work, concurrency=args.concurrency, on_progress=update)
    finally:
        if shown:
            shown.close()
        if not args.out:
            shutil.rmtree(work, ignore_errors=True)
    if args.out:
        (work / AUDIT_FILE).write_text(json.dumps(res.to_json(), indent=1), encoding="utf-8")
    for task, found in res.by_task().items():
        for f in found:
            print(f"{task}: {f.kind}: {f.message}")
    n = len({f.task for f in res.findings})
    print(
        f"{args.env}: {len(res.tasks)} tasks audited, {n} with findings"
        + (f" ({len(res.findings)} findings)" if res.findings else "")
        + (f"; the runs are in {work}/" if args.out else ""),
        file=sys.stderr,
    )
    return 1 if res.findings else 0


def register(lsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    a = lsub.add_parser(
        "audit", help="the oracle through the tasks, checks read at each start: what is unsound",
        description="Runs the oracle through the runner, reading every check at each task's "
        "start (what done() at once is judged on), and reports per task: "
        "oracle failures, tasks solved at their start, oracle actions that change nothing, "
        "vacuous checks. Exit 0: nothing found; 1: findings; 2: bad input.",
    )  # fmt: skip
    env_args(a)
    a.add_argument(
        "--out", default=None, metavar="DIR",
        help="keep the oracle's run and audit.json here (default: a temporary folder)",
    )  # fmt: skip
    selection_args(a)
    add_executor_args(a)
    a.set_defaults(func=_audit)
