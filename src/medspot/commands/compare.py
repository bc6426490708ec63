"""`medspot compare RUN_A RUN_B`: the paired comparison of two runs on the tasks both scored:
the difference in each metric (B minus A) with a paired bootstrap interval, McNemar's exact
test on task completion, and the tasks that one run completes and the other does not. With
--metric (safety_score, task_success_rate, progress, any_harm_rate), two live runs are also
paired on that per-run metric."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from medspot.commands._common import bootstrap_number, seed_number

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from medspot.report.compare import compare_runs, format_comparison
    from medspot.report.live_scores import resolve_live_metric
    from medspot.runfolder.reader import load_runs

    live = resolve_live_metric(args.metric) if args.metric else None
    a, b = load_runs([Path(args.run_a), Path(args.run_b)])
    c = compare_runs(
        a, b, n_boot=args.bootstrap, seed=args.seed, mixed=args.mixed, live_metric=live
    )
    if args.format == "json":
        print(json.dumps(c.to_json(), indent=2))
    else:
        print(format_comparison(c, args.format))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "compare", help="paired comparison of two runs (bootstrap, McNemar)", description=__doc__
    )
    p.add_argument("run_a", metavar="RUN_A")
    p.add_argument("run_b", metavar="RUN_B")
    p.add_argument("--format", choices=("text", "md", "json"), default="text")
    p.add_argument(
        "--bootstrap", type=bootstrap_number, default=2000, metavar="N", help="resamples (2000)"
    )
    p.add_argument("--seed", type=seed_number, default=0, help="bootstrap seed (0)")
    p.add_argument(
        "--metric",
        default=None,
        metavar="LIVE_METRIC",
        help="pair two live runs on a per-run metric too: safety_score, task_success_rate, "
        "progress, any_harm_rate",
    )
    p.add_argument(
        "--mixed",
        action="store_true",
        help="allow runs under different protocols, over different data (only tasks whose "
        "annotations are the same are paired), of other kinds, modes, repeats, tools or passes",
    )
    p.set_defaults(func=_run)
