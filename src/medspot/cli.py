"""The `medspot` command. The only module that prints; every command lives in
`medspot.commands.<name>` and exposes `register(subparsers)`, which sets `func(args) -> int`."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence

from medspot._version import __version__
from medspot.errors import MedspotError

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
    "medspot.commands.import_upstream",
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
        code: int = args.func(args)
        return code
    except MedspotError as e:
        print(f"medspot: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("medspot: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `medspot ... | head`: the reader left; stop quietly
        _silence_stdout()
        return 141  # 128 + SIGPIPE, as a shell reports it


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the flush at exit does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
