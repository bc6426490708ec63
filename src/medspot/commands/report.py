"""`medspot report RUN_DIR [RUN_DIR ...] --out DIR`: an offline HTML report of one or several
runs (summary, per-application tables, survival, failure taxonomy, every task step by step with
the screenshots, the targets and the clicks), with plots beside it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from medspot.commands._common import add_command, bootstrap_number, positive_int

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from medspot.report.build import build_report

    result = build_report(
        [Path(p) for p in args.run_dirs],
        Path(args.out),
        data=Path(args.data) if args.data else None,
        plots=not args.no_plots,
        thumb_width=args.thumb_width,
        title=args.title,
        n_boot=args.bootstrap,
    )
    for note in result.notes:
        print(f"medspot: note: {note}", file=sys.stderr)
    for r in result.runs:
        for w in r.warnings:
            print(f"medspot: warning: {r.name}: {w}", file=sys.stderr)
    print(
        f"Report of {len(result.runs)} run(s): {len(result.pages)} pages, "
        f"{result.thumbnails} thumbnails, {len(result.plots)} plot files"
    )
    print(f"Open {result.index}")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "report", "an offline HTML report of one or more runs", __doc__)
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for the report")
    p.add_argument(
        "--data",
        default=None,
        metavar="ROOT",
        help="dataset root with the screenshots (default: the one recorded in run.json)",
    )
    p.add_argument("--no-plots", action="store_true", help="skip the matplotlib figures")
    p.add_argument(
        "--thumb-width", type=positive_int, default=480, metavar="PX", help="thumbnail width"
    )
    p.add_argument("--title", default="MedSPOT report", help="page title")
    p.add_argument(
        "--bootstrap",
        type=bootstrap_number,
        default=2000,
        metavar="N",
        help="resamples for the paired intervals of the comparison pages (default 2000)",
    )
    p.set_defaults(func=_run)
