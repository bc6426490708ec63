"""`medspot stats DATA`: tasks, steps, action types and target sizes per application."""

from __future__ import annotations

import argparse
import json

from medspot.commands._common import parse_apps, positive_int

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "stats",
        help="per-application counts of a dataset",
        description="Tasks, steps, evaluable steps, steps per task, action types, target size "
        "classes and screenshots, per application and overall.",
    )
    p.add_argument(
        "data", metavar="DATA", help="dataset root, a tree containing it, or a hub dataset"
    )
    p.add_argument("--apps", metavar="A,B", help="only these applications (comma separated)")
    p.add_argument("--limit", type=positive_int, metavar="N", help="first N tasks per app")
    p.add_argument(
        "--no-images",
        action="store_true",
        help="do not check that the screenshots exist and are readable",
    )
    p.add_argument("--json", action="store_true", help="print the statistics as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from medspot.dataset.loading import load_dataset
    from medspot.dataset.summary import dataset_stats, format_stats

    ds = load_dataset(
        args.data, apps=parse_apps(args.apps), limit=args.limit, check_images=not args.no_images
    )
    st = dataset_stats(ds)
    if args.json:
        print(json.dumps(st.to_dict(), indent=2))
    else:
        print(f"dataset: {ds.root}")
        print(format_stats(st))
    return 0
