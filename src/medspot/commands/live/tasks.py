"""`medspot live tasks`: an environment's tasks listed, or a task file validated."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from medspot.commands.live._common import env_args
from medspot.errors import ConfigError

__all__ = ["register"]


def _tasks(args: argparse.Namespace) -> int:
    from medspot.live.envs.taskfiles import env_task_file

    if args.validate and args.tasks_file:
        raise ConfigError("give --validate FILE or --tasks-file FILE, not both")
    path = Path(args.validate or args.tasks_file) if args.validate or args.tasks_file else None
    tf, fp = env_task_file(args.env, path)
    if args.validate:
        print(f"{path}: {len(tf.tasks)} tasks for {tf.env}, valid (fingerprint {fp})")
        return 0
    for t in tf.tasks:
        tags = f" [{', '.join(t.tags)}]" if t.tags else ""
        print(f"{t.id}\t{len(t.steps)} steps, budget {t.budget}{tags}\t{t.instruction}")
    print(f"{len(tf.tasks)} tasks", file=sys.stderr)
    return 0


def register(lsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    t = lsub.add_parser("tasks", help="list an environment's tasks or validate a task file")
    env_args(t)
    t.add_argument("--validate", default=None, metavar="FILE", help="validate this task file")
    t.add_argument(
        "--tasks-file", default=None, metavar="FILE",
        help="list this task file's tasks instead of the packaged ones",
    )  # fmt: skip
    t.set_defaults(func=_tasks)
