"""`medspot demo`: the whole pipeline offline on a CPU. Generates the synthetic clinical-GUI
suite into a cache folder (once), evaluates the `ocr` and `random` baselines on it, writes
results and an HTML report, and prints a side-by-side table. Run again, it resumes the runs
in `--out` (nothing is asked twice) and says that it reused them."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from medspot.cache import cache_root
from medspot.commands._common import (
    bootstrap_number,
    concurrency_number,
    positive_int,
    seed_number,
)
from medspot.errors import AdapterUnavailable

__all__ = ["default_cache", "register"]

SUITE_VERSION = "v1"


def default_cache() -> Path:
    """The demo's cache: the one medspot cache folder (`medspot.cache.cache_root`)."""
    return cache_root()


def _suite(cache: Path, tasks: int, seed: int, apps: int) -> tuple[Path, bool]:
    from medspot.synth import generate

    root = cache / f"synth-{SUITE_VERSION}-t{tasks}-s{seed}-a{apps}"
    if (root / "Annotations").is_dir() and (root / "synth_meta.json").exists():
        return root, False
    generate(root, tasks=tasks, seed=seed, apps=apps)
    return root, True


def _run(args: argparse.Namespace) -> int:
    from medspot.commands._common import progress_bar
    from medspot.dataset.loading import load_dataset
    from medspot.pipeline import EvalRequest, evaluate
    from medspot.runner import RunOptions

    t_all = time.perf_counter()
    cache = Path(args.cache) if args.cache else default_cache()
    t0 = time.perf_counter()
    print(
        f"synthetic suite: {args.tasks} tasks, {args.apps} applications, seed {args.seed}",
        file=sys.stderr,
    )
    root, made = _suite(cache, args.tasks, args.seed, args.apps)
    print(
        f"  {'generated' if made else 'found'} in {root} ({time.perf_counter() - t0:.1f}s)",
        file=sys.stderr,
    )
    ds = load_dataset(root)
    out = Path(args.out)
    rows: list[tuple[str, dict[str, float | None], int, float]] = []
    runs: list[Path] = []
    reused: list[str] = []
    for model in [m.strip() for m in args.models.split(",") if m.strip()]:
        t0 = time.perf_counter()
        earlier = (out / model / "run.json").exists()
        bar = progress_bar(args.no_progress, desc=model)
        try:
            outcome = evaluate(
                EvalRequest(
                    dataset=ds,
                    model=model,
                    out=out / model,
                    run=RunOptions(seed=args.seed, concurrency=args.concurrency),
                    n_boot=args.bootstrap,
                ),
                on_progress=bar.update if bar else None,
            )
        except AdapterUnavailable as e:
            print(f"medspot demo: skipping {model}: {e}", file=sys.stderr)
            continue
        finally:
            if bar:
                bar.close()
        m = outcome.score.overall.values
        rows.append((model, m, outcome.info.calls, time.perf_counter() - t0))
        runs.append(out / model)
        kept = outcome.info.calls - outcome.stats.requests
        if earlier and kept > 0:
            reused.append(f"{model} ({kept} of {outcome.info.calls} answers)")
    report_line = ""
    if runs and not args.no_report:
        try:
            from medspot.report.build import build_report

            res = build_report(runs, out / "report", data=root, n_boot=args.bootstrap)
            report_line = f"report: {res.index}"
        except AdapterUnavailable as e:
            report_line = f"no report: {e}"
    print(_table(rows))
    print(f"\nsuite: {root}\nruns: {', '.join(str(r) for r in runs)}")
    if report_line:
        print(report_line)
    print(f"total time: {time.perf_counter() - t_all:.1f}s")
    if reused:
        print(
            f"note: reused the earlier runs in {out}: {', '.join(reused)} came from the "
            f"journal, not asked again. To evaluate afresh, delete {out} or pass --out DIR.",
            file=sys.stderr,
        )
    return 0 if rows else 1


def _table(rows: list[tuple[str, dict[str, float | None], int, float]]) -> str:
    keys = [
        ("TCA", "task_completion_accuracy"),
        ("S1A", "step1_accuracy"),
        ("SHR", "step_hit_rate"),
        ("WPS", "avg_weighted_prefix_score"),
    ]
    head = f"{'model':<10}" + "".join(f"{k:>8}" for k, _ in keys) + f"{'calls':>8}{'time':>9}"
    lines = [head, "-" * len(head)]
    for name, m, calls, dt in rows:
        vals = "".join(
            f"{m.get(key):>8.3f}" if m.get(key) is not None else f"{'-':>8}" for _, key in keys
        )
        lines.append(f"{name:<10}{vals}{calls:>8}{dt:>8.1f}s")
    return "\n".join(lines)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "demo", help="offline demo: synthetic suite, ocr and random, report", description=__doc__
    )
    p.add_argument(
        "--out",
        default="results/demo",
        metavar="DIR",
        help="where the runs and the report go (default results/demo)",
    )
    p.add_argument(
        "--cache",
        default=None,
        metavar="DIR",
        help="where the suite is generated (default $MEDSPOT_CACHE, "
        "$XDG_CACHE_HOME/medspot or ~/.cache/medspot)",
    )
    p.add_argument("--tasks", type=positive_int, default=24, help="tasks in the suite (24)")
    p.add_argument("--apps", type=positive_int, default=5, help="applications (5)")
    p.add_argument("--seed", type=seed_number, default=0)
    p.add_argument("--models", default="ocr,random", help="comma-separated (ocr,random)")
    p.add_argument("--concurrency", type=concurrency_number, default=2)
    p.add_argument("--bootstrap", type=bootstrap_number, default=1000, metavar="N")
    p.add_argument("--no-report", action="store_true")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_run)
