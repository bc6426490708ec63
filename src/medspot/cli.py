"""The `medspot` command. The only module that prints; every command lives in
`medspot.commands.<name>` and exposes `register(subparsers)`, which sets `func(args) -> int`.

Exit statuses: what the command returns; a `MedspotError`'s `exit_code` (1, 2, 3); 128 + the
signal's number for a run stopped by SIGINT (130) or SIGTERM (143, `medspot.interrupts`); 141
when stdout's reader went away; and `BUG_EXIT_STATUS` (70) for any other exception, a bug: one
line on stderr names the file its traceback was written to, inside the run folder when the
command set `args.run_folder` to a folder holding a `run.json`, else in the temp folder.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import tempfile
import traceback
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from medspot._version import __version__
from medspot.errors import BUG_EXIT_STATUS, MedspotError
from medspot.interrupts import exit_status, sigterm_stops

__all__ = ["COMMAND_MODULES", "build_parser", "main"]

# Add a command by adding its module here (order = order in --help).
COMMAND_MODULES: list[str] = [
    "medspot.commands.validate",
    "medspot.commands.stats",
    "medspot.commands.demo",
    "medspot.commands.eval",
    "medspot.commands.score",
    "medspot.commands.models",
    "medspot.commands.check_model",
    "medspot.commands.synth",
    "medspot.commands.report",
    "medspot.commands.leaderboard",
    "medspot.commands.compare",
    "medspot.commands.export_results",
    "medspot.commands.import_upstream",
    "medspot.commands.import_inspect",
    "medspot.commands.serve_test",
    "medspot.commands.live",
]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="medspot",
        description="Evaluate multimodal models on MedSPOT, sequential GUI grounding in "
        "clinical imaging software.",
    )
    p.add_argument("--version", action="version", version=f"medspot {__version__}")
    p.add_argument("-v", "--verbose", action="count", default=0, help="more log output")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as e:  # a command whose module is not there yet
            if e.name == name:
                continue
            raise
        mod.register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.WARNING - 10 * min(args.verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        with sigterm_stops():
            code: int = args.func(args)
        return code
    except MedspotError as e:
        print(f"medspot: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt as e:
        print("medspot: interrupted", file=sys.stderr)
        return exit_status(e)
    except BrokenPipeError:  # `medspot ... | head`: the reader left; stop quietly
        _silence_stdout()
        return 141  # 128 + SIGPIPE, as a shell reports it
    except Exception as e:  # not bad input, not a failed call: a bug of ours
        return _report_bug(e, getattr(args, "run_folder", None))


def _report_bug(exc: Exception, run_folder: Path | None) -> int:
    """Write the traceback to a file and say so in one line; `BUG_EXIT_STATUS`."""
    text = "".join(traceback.format_exception(exc))
    where = _write_traceback(text, run_folder)
    what = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    if where is None:  # nowhere to write it: the traceback itself is the report
        print(text, file=sys.stderr, end="")
        where_text = "the traceback is above"
    else:
        where_text = f"the traceback is in {where}"
    print(
        f"medspot: internal error, a bug in medspot ({what}); {where_text}. Please report it.",
        file=sys.stderr,
    )
    return BUG_EXIT_STATUS


def _write_traceback(text: str, run_folder: Path | None) -> Path | None:
    from medspot.runfolder.layout import RUN_JSON

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    header = f"medspot {__version__}, {stamp}, pid {os.getpid()}\n{' '.join(sys.argv)}\n\n"
    name = f"medspot-bug-{stamp}-{os.getpid()}.txt"
    folders = [Path(tempfile.gettempdir())]
    if run_folder is not None and (Path(run_folder) / RUN_JSON).is_file():
        folders.insert(0, Path(run_folder))  # never into a folder that is not a run's
    for folder in folders:
        path = folder / name
        try:
            path.write_text(header + text, encoding="utf-8")
        except OSError:
            continue
        return path
    return None


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the flush at exit does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
