"""`medspot import-inspect LOG --out RUN_DIR`: a log of `inspect eval medspot/medspot` (an
`.eval` or `.json` file, or a log folder: its newest log of the task) as a medspot run folder
that `report`, `leaderboard`, `compare` and `score` accept: the journal the log's samples hold,
scored by medspot against the dataset the log names (or --data). Needs `pip install
'medspot[inspect]'`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from medspot.commands._common import bootstrap_number

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from medspot.dataset.loading import load_dataset
    from medspot.errors import ConfigError
    from medspot.integrations.inspect.importer import import_inspect, log_dataset_info
    from medspot.integrations.inspect.logfile import read_static_log
    from medspot.runfolder.writer import metrics_table

    log = read_static_log(Path(args.log))
    recorded = log_dataset_info(log)
    source = args.data or recorded.root or recorded.source
    if not source:
        raise ConfigError(f"{args.log} names no dataset; pass --data")
    ds = load_dataset(source, apps=recorded.apps or None, limit=recorded.limit, check_images=False)
    res = import_inspect(log, Path(args.out), ds, model=args.model, n_boot=args.bootstrap)
    print(metrics_table(res.score))
    print(
        f"\nImported {log.path} ({len(log.samples)} samples of {log.model}, "
        f"{res.info.protocol}) as '{res.info.model}' into {args.out}/"
    )
    for note in res.notes:
        print(f"medspot: note: {note}", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "import-inspect",
        help="read a log of `inspect eval medspot/medspot` into a run folder",
        description=__doc__,
    )
    p.add_argument(
        "log", metavar="LOG", help="the Inspect log (.eval or .json), or its --log-dir folder"
    )
    p.add_argument("--out", required=True, metavar="RUN_DIR", help="the run folder to write")
    p.add_argument(
        "--data", default=None, metavar="DATA", help="the dataset (default: the one the log names)"
    )
    p.add_argument("--model", default=None, help="run name (default: the log's model)")
    p.add_argument(
        "--bootstrap", type=bootstrap_number, default=2000, metavar="N", help="resamples (2000)"
    )
    p.set_defaults(func=_run)
