"""`medspot live`: closed-loop evaluation in running clinical software (docs/live.md).

live run     run a model (any card, as `eval` takes it) through an environment's tasks
live tasks   list an environment's tasks, or validate a task file
live export  the oracle through every feasible task, written as a MedSPOT dataset
live audit   are the tasks sound? the oracle and a do-nothing agent through every task
live setup   install the environments' system packages (apt-get as root; else print)
live doctor  say what an environment is missing (exit 1 when something is)
live serve   serve episodes to an agent that brings its own loop (MCP, OpenEnv)
live image   build and list the environments' container images (--executor container)
"""

from __future__ import annotations

import argparse

from medspot.commands.live import audit, export, host, image, run, serve, tasks
from medspot.commands.live.run import GIVEN_UP_EXIT_STATUS

__all__ = ["GIVEN_UP_EXIT_STATUS", "register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "live", help="closed-loop evaluation in running clinical software",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    lsub = p.add_subparsers(dest="live_command", metavar="SUBCOMMAND", required=True)
    for module in (run, tasks, export, audit, host, serve, image):  # the order of `live --help`
        module.register(lsub)
