"""`medspot score`: re-score a run folder from predictions.jsonl alone, with no model call."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from medspot.commands._common import add_protocol_args
from medspot.errors import ConfigError

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from medspot.dataset.loading import load_dataset
    from medspot.pipeline import rescore
    from medspot.runfolder.layout import RunFolder
    from medspot.runfolder.live_schema import LiveRunInfo
    from medspot.runfolder.runinfo import RunInfo
    from medspot.runfolder.writer import metrics_table

    run_dir = Path(args.run_dir)
    info = RunInfo.load(RunFolder(run_dir).run_json)
    if LiveRunInfo.of(info) is not None:
        # its results come from the application's state as it ran (the live journal), not
        # from static predictions; said of the folder given, never the path run.json records
        raise ConfigError(
            f"{run_dir} is a live run: it was scored on the application's state after each "
            "action, and `medspot score` re-scores a static run's predictions. Its results are "
            f"in {run_dir} already; to write them again from its journal, run the "
            f"`medspot live run` command that made it with --out {run_dir}"
        )
    source = args.data or info.dataset.root or info.dataset.source
    if not source:
        raise ConfigError(f"{run_dir}/run.json names no dataset; pass --data")
    ds = load_dataset(
        source, apps=info.dataset.apps or None, limit=info.dataset.limit, check_images=False
    )
    if info.dataset.fingerprint and ds.fingerprint != info.dataset.fingerprint:
        print(
            "medspot: warning: the annotations differ from those the run was made on",
            file=sys.stderr,
        )
    new_info, score = rescore(
        run_dir,
        ds,
        protocol_name=args.protocol,
        tolerance_px=args.tolerance,
        out=Path(args.out) if args.out else None,
        n_boot=args.bootstrap,
    )
    print(metrics_table(score))
    target = args.out or run_dir
    if not score.complete:
        missing = score.missing_steps
        shown = ", ".join(missing[:20]) + (" ..." if len(missing) > 20 else "")
        print(
            f"\nmedspot: INCOMPLETE under {new_info.protocol}: {len(missing)} steps this "
            f"protocol needs have no prediction ({shown}). A sequential run only asks the "
            "steps its own protocol reaches; re-run eval with --all-steps to score any "
            "preset.",
            file=sys.stderr,
        )
        print(f"Results (marked incomplete) in {target}/")
        return 1
    print(f"\nResults under {new_info.protocol} in {target}/")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "score", help="re-score a run from its predictions (no model call)", description=__doc__
    )
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument(
        "--out", default=None, metavar="DIR2", help="write the results here instead of into RUN_DIR"
    )
    p.add_argument(
        "--data",
        default=None,
        metavar="DATA",
        help="dataset (default: the one recorded in run.json)",
    )
    add_protocol_args(p)
    p.set_defaults(func=_run)
