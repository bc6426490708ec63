"""`medspot import-upstream DIR --out RUN_DIR`: read a results folder written by the MedSPOT
authors' evaluation scripts (<App>_Annotation/task_results.json ...) into a medspot run folder
that `report`, `leaderboard` and `compare` accept. Pass --data to take target boxes,
instructions and screenshot sizes from the dataset."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from medspot.commands._common import add_command, bootstrap_number

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from medspot.runfolder.upstream import import_upstream

    dataset = None
    if args.data:
        from medspot.dataset.loading import load_dataset

        dataset = load_dataset(args.data, check_images=False)
    res = import_upstream(
        Path(args.dir),
        Path(args.out),
        dataset=dataset,
        model=args.model,
        protocol=args.protocol,
        coords=args.coords,
        n_boot=args.bootstrap,
    )
    guessed = (
        " (guessed from the folder name; --protocol to set it)" if res.protocol_guessed else ""
    )
    print(
        f"Imported {res.num_tasks} tasks of {len(res.apps)} application(s) as '{res.model}', "
        f"protocol {res.protocol}{guessed}, into {res.out}/"
    )
    if res.lacks:
        print(f"medspot: note: the authors' output lacks: {', '.join(res.lacks)}", file=sys.stderr)
    for n in res.notes[:20]:
        print(f"medspot: note: {n}", file=sys.stderr)
    if len(res.notes) > 20:
        from medspot.runfolder.layout import RUN_JSON

        print(f"medspot: note: ... {len(res.notes) - 20} more in {RUN_JSON}", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(
        sub,
        "import-upstream",
        "read the MedSPOT authors' results folder into a run folder",
        __doc__,
    )
    p.add_argument("dir", metavar="DIR", help="their results folder (holds <App>_Annotation/)")
    p.add_argument("--out", required=True, metavar="RUN_DIR", help="the run folder to write")
    p.add_argument("--data", default=None, metavar="DATA", help="the dataset (boxes, sizes)")
    p.add_argument("--model", default=None, help="run name (default: the folder's name)")
    p.add_argument(
        "--protocol",
        default=None,
        metavar="P",
        help="the preset their script scores under (default: guessed from the folder name)",
    )
    p.add_argument(
        "--coords",
        choices=("auto", "pixel", "normalized"),
        default="auto",
        help="their pred_point units (auto: pixels when a value exceeds 1)",
    )
    p.add_argument(
        "--bootstrap", type=bootstrap_number, default=2000, metavar="N", help="resamples (2000)"
    )
    p.set_defaults(func=_run)
