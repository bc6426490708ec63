"""`medspot eval`: run a model over the benchmark and write the results layout. Running the
same command again resumes: steps already in predictions.jsonl are not asked again."""

from __future__ import annotations

import argparse
import sys
import time

from medspot.adapters.retry import MAX_RETRIES
from medspot.commands._common import (
    adapter_options,
    add_data_args,
    add_model_args,
    add_protocol_args,
    concurrency_number,
    non_negative_float,
    out_dir,
    parse_apps,
    progress_bar,
    retries_number,
    seed_number,
    whole_number,
)
from medspot.errors import BudgetExceeded
from medspot.interrupts import exit_status
from medspot.limits import MAX_SEED, MAX_ZOOM_PASSES

__all__ = ["register"]


def _crop_fraction(text: str) -> float:
    """A `--zoom-crop` value, checked by `ZoomSpec` (the owner of its bounds)."""
    from medspot.adapters.zoom import ZoomSpec
    from medspot.errors import ConfigError

    try:
        v = float(text)
        ZoomSpec(2, v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return v


def _run(args: argparse.Namespace) -> int:
    from medspot.adapters import registry
    from medspot.adapters.zoom import ZoomSpec
    from medspot.dataset.loading import load_dataset
    from medspot.pipeline import EvalRequest, evaluate
    from medspot.runfolder.writer import metrics_table
    from medspot.runner import RunOptions
    from medspot.scoring.protocol import get_protocol

    # The protocol, resolved once: bad options are reported before the data is read.
    protocol = get_protocol(args.protocol or "medspot-v1", tolerance_px=args.tolerance)
    registry.entry(args.model)
    zoom = ZoomSpec.of(args.zoom, args.zoom_crop) if args.zoom > 1 else None
    ds = load_dataset(args.data, apps=parse_apps(args.apps), limit=args.limit)
    style = args.prompt or protocol.prompt_style
    run = RunOptions(
        protocol=protocol,
        all_steps=args.all_steps,
        history=args.history,
        concurrency=args.concurrency,
        max_retries=args.max_retries,
        max_cost=args.max_cost,
        seed=args.seed,
    )
    req = EvalRequest(
        dataset=ds,
        model=args.model,
        out=out_dir(args.out, args.model),
        run=run,
        prompt_style=style,
        n_boot=args.bootstrap,
        options=adapter_options(args),
        limit=args.limit,
        zoom=zoom,
    )
    if args.dry_run:
        from medspot.dryrun import dry_run

        print(dry_run(req))
        return 0
    args.run_folder = req.out  # where a bug's traceback goes (medspot.cli)
    bar = progress_bar(args.no_progress)
    t0 = time.perf_counter()
    try:
        outcome = evaluate(req, on_progress=bar.update if bar else None)
    except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM
        if bar:
            bar.close()
        print(
            f"\nmedspot: interrupted. Everything answered so far is in {req.out}/"
            "predictions.jsonl; run the same command again to resume.",
            file=sys.stderr,
        )
        return exit_status(e)
    finally:
        if bar:
            bar.close()
    dt = time.perf_counter() - t0
    info, score = outcome.info, outcome.score
    print(metrics_table(score))
    print(
        f"\n{info.model} on {len(ds.app_names)} apps under {protocol.name} "
        f"({style} prompt): {outcome.stats.requests} new calls, {info.calls} in all, "
        f"{dt:.1f}s. Results in {req.out}/"
    )
    if info.model == "oracle":
        print(
            "note: `oracle` reads the target boxes; these numbers are the protocol's ceiling "
            "and a pipeline check, not a model's score."
        )
    if info.zoom is not None and info.zoom.model_calls is not None:
        from medspot.runfolder.journal import read_journal
        from medspot.runfolder.layout import RunFolder

        steps = sum(1 for r in read_journal(RunFolder(req.out).journal) if r.error is None)
        per = info.zoom.model_calls / steps if steps else 0.0
        print(
            f"zoom-in: {info.zoom.passes} passes, crop {info.zoom.crop:g}: "
            f"{info.zoom.model_calls} model calls for {steps} steps ({per:.2f} per step)"
        )
    if info.cost_usd:
        print(f"cost so far: ${info.cost_usd:.4f}")
    if outcome.stats.budget_reached:
        raise BudgetExceeded(
            f"--max-cost {args.max_cost} reached; the run stopped cleanly. Raise --max-cost "
            "and run the same command again to continue."
        )
    if info.status != "complete":
        print(
            f"medspot: the run is incomplete ({info.errors} failed calls in the journal); "
            "run the same command again to retry what is missing.",
            file=sys.stderr,
        )
        return 1
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "eval", help="run a model on the benchmark and score it", description=__doc__
    )
    add_data_args(p)
    add_model_args(p)
    p.add_argument("--out", default=None, metavar="DIR", help="run folder (default results/MODEL)")
    add_protocol_args(p)
    p.add_argument(
        "--all-steps",
        action="store_true",
        help="ask every step, not only those the sequential protocol reaches",
    )
    p.add_argument(
        "--history",
        choices=["none", "text", "actions"],
        default="none",
        help="context given with each step (protocol 2.6)",
    )
    p.add_argument(
        "--concurrency",
        type=concurrency_number,
        default=16,
        metavar="N",
        help="model calls in flight (default 16)",
    )
    p.add_argument(
        "--max-retries",
        type=retries_number,
        default=MAX_RETRIES,
        metavar="N",
        help=f"retries of a failed call before it is recorded as an error (default {MAX_RETRIES})",
    )
    p.add_argument(
        "--max-cost",
        type=non_negative_float,
        default=None,
        metavar="USD",
        help="stop cleanly (and resumably) when the run has cost this much",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the calls and the estimated cost without making them",
    )
    p.add_argument(
        "--zoom",
        type=whole_number(1, MAX_ZOOM_PASSES),
        default=1,
        metavar="K",
        help="K passes per step: after the answer, ask again on a crop of the screenshot "
        "around it, K-1 times (default 1: single pass); the run is marked multi-pass",
    )
    p.add_argument(
        "--zoom-crop",
        type=_crop_fraction,
        default=None,
        metavar="F",
        help="each zoom pass looks at F (0 < F < 1) of the width and height of the pass "
        "before (default: half)",
    )
    p.add_argument(
        "--seed", type=seed_number, default=0,
        help=f"seed for baselines and bootstrap (0 to {MAX_SEED}; default 0)",
    )  # fmt: skip
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_run)
