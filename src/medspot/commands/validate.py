"""`medspot validate DATA`: list every problem of a dataset with its location, then a summary.
Exit 0 when the data can be evaluated (warnings allowed), 2 otherwise."""

from __future__ import annotations

import argparse
import json

from medspot.commands._common import parse_apps

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "validate",
        help="check a dataset and list every problem",
        description="Check a MedSPOT dataset: every problem with its file, task, step and "
        "field, then a summary. Exit 0 when the data can be evaluated, 2 otherwise.",
    )
    p.add_argument(
        "data",
        metavar="DATA",
        help="dataset root (holding Annotations/ and Images/), a tree containing "
        "it, or a hub dataset (hf://Tajamul21/MedSPOT)",
    )
    p.add_argument(
        "--no-images",
        action="store_true",
        help="do not check that the screenshots exist and are readable",
    )
    p.add_argument("--apps", metavar="A,B", help="only these applications (comma separated)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from medspot.dataset.validate import format_report, validate_dataset

    report = validate_dataset(
        args.data, check_images=not args.no_images, apps=parse_apps(args.apps)
    )
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(format_report(report))
    return 0 if report.ok else 2
