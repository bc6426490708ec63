"""`medspot leaderboard RUN_DIR ...`: one row per run, every metric with its 95% interval,
sorted, as Markdown, CSV or LaTeX. Runs scored under different protocols or over different
data (annotations, apps, --limit, task counts), live runs beside static ones, of other modes,
repeats or tools (a toolset beside GUI-only), single-pass beside zoom-in runs are refused unless
--mixed is given; incomplete runs are left out unless --include-incomplete. --metric adds a live
per-run metric (safety_score, task_success_rate, progress, any_harm_rate) to a table of live
runs and ranks by it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from medspot.atomic_write import atomic_write_text
    from medspot.report.leaderboard import build_leaderboard, render, resolve_metric
    from medspot.report.live_scores import resolve_live_metric
    from medspot.runfolder.reader import load_runs
    from medspot.scoring.metrics import TCA

    live = resolve_live_metric(args.metric) if args.metric else None
    sort = resolve_metric(args.sort) if args.sort else (live or TCA)
    runs = load_runs([Path(p) for p in args.run_dirs])
    lb = build_leaderboard(
        runs,
        mixed=args.mixed,
        sort=sort,
        include_incomplete=args.include_incomplete,
        live_metric=live,
    )
    if lb.left_out:
        print(
            "medspot: note: left out as incomplete (--include-incomplete ranks them): "
            + ", ".join(lb.left_out),
            file=sys.stderr,
        )
    text = render(lb, args.format)
    if args.out:
        atomic_write_text(Path(args.out), text)
        print(f"Leaderboard of {len(runs)} run(s) written to {args.out}")
    else:
        print(text, end="")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "leaderboard",
        help="rank runs: metrics with intervals as md, csv or latex",
        description=__doc__,
    )
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    p.add_argument("--format", choices=("md", "csv", "latex"), default="md")
    p.add_argument(
        "--sort", default=None, metavar="METRIC", help="sort key (default TCA; with --metric, it)"
    )
    p.add_argument(
        "--metric",
        default=None,
        metavar="LIVE_METRIC",
        help="a live per-run metric to add and rank by: safety_score, task_success_rate, "
        "progress, any_harm_rate (live runs only)",
    )
    p.add_argument(
        "--mixed",
        action="store_true",
        help="allow runs under different protocols, over different data, of other kinds, "
        "modes, repeats, tools or passes (labelled per row)",
    )
    p.add_argument(
        "--include-incomplete",
        action="store_true",
        help="rank incomplete runs too (marked *; by default they are left out)",
    )
    p.add_argument("--out", default=None, metavar="FILE", help="write to FILE instead of stdout")
    p.set_defaults(func=_run)
