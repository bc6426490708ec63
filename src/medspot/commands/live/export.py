"""`medspot live export`: the oracle through every feasible task, written as a MedSPOT dataset."""

from __future__ import annotations

import argparse
from pathlib import Path

from medspot.commands._common import add_executor_args, env_spec
from medspot.commands.live._common import env_args, run_logged, selection_args, task_ids

__all__ = ["register"]


def _export(args: argparse.Namespace) -> int:
    from medspot.live.loop.dataset_export import (
        EXPORT_INFO,
        INFEASIBLE_LEFT_OUT,
        RUN_SUBDIR,
        export_env,
    )

    out = Path(args.out)
    spec = env_spec(args, task_ids(args.tasks))
    res, stopped = run_logged(
        args, out / RUN_SUBDIR, "export",  # the log as in `live run`
        lambda update: export_env(
            spec, out, concurrency=args.concurrency, on_progress=update,
            retry_env_errors=args.retry_env_errors,
        ),
        f"The oracle's steps so far are in {out / RUN_SUBDIR}",
    )  # fmt: skip
    if stopped is not None:  # Ctrl-C or SIGTERM, said so
        return stopped
    assert res is not None
    print(
        f"{res.root}: {res.tasks} tasks, {res.steps} steps of {res.app} "
        f"(Annotations/{res.app}_Annotation.json, Images/{res.app}/, {EXPORT_INFO})"
    )
    if res.left_out:
        print(f"left out, {len(res.left_out)} task(s) ({INFEASIBLE_LEFT_OUT}): "
              f"{', '.join(res.left_out)}")  # fmt: skip
    if res.skipped:
        print(f"not exported (the oracle did not complete them): {', '.join(res.skipped)}")
        return 1
    return 0


def register(lsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    x = lsub.add_parser("export", help="write the oracle's screens as a MedSPOT dataset")
    env_args(x)
    x.add_argument("--out", required=True, metavar="DIR", help="dataset root to write")
    selection_args(x)
    add_executor_args(x)
    x.set_defaults(func=_export)
