"""What the `medspot live` sub-commands share (the package's own; `medspot.commands._common`
holds what every command shares): the task selection, the environment and executor arguments,
the progress bar, the command's log in the run folder."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from medspot.commands._common import (
    add_spare_args,
    concurrency_number,
    progress_bar,
)
from medspot.commands._runlog import run_log
from medspot.errors import ConfigError
from medspot.interrupts import exit_status

__all__ = [
    "bar",
    "env_args",
    "envs",
    "logged",
    "run_logged",
    "selection_args",
    "task_ids",
]

T = TypeVar("T")

EVERY_TASK = "ids separated by commas; leave --tasks out to run every task"


def task_ids(raw: str | None, hint: str = EVERY_TASK) -> tuple[str, ...]:
    """`--tasks a,b,c` as ids (none: every task); `hint` says what leaving it out does."""
    if raw is None:
        return ()
    ids = tuple(t.strip() for t in raw.split(",") if t.strip())
    if not ids:
        raise ConfigError(f"--tasks {raw!r} names no task id ({hint})")
    return ids


@contextlib.contextmanager
def logged(args: argparse.Namespace, run_folder: Path) -> Iterator[None]:
    """The command's log in full into `<run_folder>/live.log`, one line per record on stderr;
    a bug's traceback goes into the run folder too (`medspot.cli`)."""
    from medspot.runfolder.layout import LIVE_LOG

    args.run_folder = run_folder
    with run_log(run_folder, run_folder / LIVE_LOG, verbose=getattr(args, "verbose", 0)):
        yield


def run_logged(
    args: argparse.Namespace,
    folder: Path,
    desc: str,
    work: Callable[[Callable[[Any], None] | None], T],
    kept: str,
) -> tuple[T | None, int | None]:
    """`work(on_progress)` under the progress bar (`desc`) with the command's log in `folder`:
    its result and None; or, when Ctrl-C or SIGTERM stopped it, None and the exit status,
    having said where what was done is (`kept`) and that the same command resumes."""
    shown, update = bar(args, desc)
    stopped = 0
    # the exception is let go inside the log's block: what its frames held (environments, a
    # browser driver's futures) is collected, and reported, while the log still takes it
    with logged(args, folder):
        try:
            return work(update), None
        except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM
            stopped = exit_status(e)
        finally:
            if shown:
                shown.close()
    print(f"\nmedspot: interrupted. {kept}; run the same command again to resume.", file=sys.stderr)
    return None, stopped


def env_args(p: argparse.ArgumentParser, *, required: bool = True) -> None:
    p.add_argument("--env", required=required, metavar="ENV", help="a live environment")


def selection_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tasks", default=None, metavar="IDS", help="only these task ids (a,b,c)")
    p.add_argument(
        "--tasks-file", default=None, metavar="FILE", help="a task file instead of the packaged"
    )
    p.add_argument(
        "--concurrency", type=concurrency_number, default=1, metavar="N",
        help="environments side by side (default 1)",
    )  # fmt: skip
    add_spare_args(
        p, "default: the environment's own, 1 or 2; each adds its memory, docs/live/running.md"
    )
    p.add_argument(
        "--env-option", action="append", metavar="KEY=VALUE",
        help="an option of the environment (e.g. headless=false); repeatable",
    )  # fmt: skip
    p.add_argument(
        "--retry-env-errors", action="store_true",
        help="run again the tasks given up on because their environment fault recurred",
    )  # fmt: skip
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def bar(args: argparse.Namespace, desc: str) -> tuple[Any, Callable[[Any], None] | None]:
    """The progress bar (none under `--no-progress`) and its update, for the runner."""
    shown = progress_bar(args.no_progress, desc=desc)
    return shown, (shown.update if shown else None)


def envs(name: str | None) -> list[str]:
    """`--env NAME` (checked), or every registered environment without it."""
    from medspot.live.envs.registry import env_entry, env_names

    if name:
        env_entry(name)
        return [name]
    return env_names()
