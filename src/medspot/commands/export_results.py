"""`medspot export-results RUN_DIR ... --format hf-eval|eee`: finished runs in a format others
read. `hf-eval` (the Hugging Face Hub's "Eval Results"): writes each run's
`.eval_results/<name>.yaml` under --out (the folder a model repository carries; with the runs of
several models, one such folder per model, `--out/<owner>/<name>/`) and prints the `eval.yaml` a
MedSPOT benchmark dataset would carry. `eee` ("Every Eval Ever" records): writes each run's
aggregate log and per-task records under --out in that repository's `data/` layout. Every run
and option is checked, and every file made, before the first one is written."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from medspot.runfolder.reader import Run

__all__ = ["register"]


def _dataset_id(text: str) -> str:
    from medspot.errors import ConfigError
    from medspot.report.hub_results import check_dataset_id

    try:
        return check_dataset_id(text)
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("--dataset ")) from None


def _source_url(text: str) -> str:
    from medspot.errors import ConfigError
    from medspot.report.hub_results import check_source_url

    try:
        return check_source_url(text)
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("--source-url ")) from None


def _check_options(args: argparse.Namespace) -> None:
    """Options that do not apply to the format asked are refused, not ignored."""
    from medspot.errors import ConfigError

    if args.format == "eee":
        given = [o for o, v in (("--source-url", args.source_url),
                                ("--source-name", args.source_name)) if v is not None]  # fmt: skip
        if given:
            raise ConfigError(f"{' and '.join(given)} apply to --format hf-eval only")
    else:
        if args.organization is not None:
            raise ConfigError("--organization applies to --format eee only")
        if args.source_name is not None and args.source_url is None:
            raise ConfigError("--source-name names the --source-url: give both")


def _hf_eval_files(runs: list[Run], args: argparse.Namespace, out: Path) -> dict[Path, str]:
    from medspot.errors import ConfigError
    from medspot.report.hub_results import (
        RESULTS_DIR,
        dump_yaml,
        eval_results,
        folder_name,
        model_id,
        result_file_name,
    )

    several = len({model_id(r) for r in runs}) > 1
    files: dict[Path, str] = {}
    made_from: dict[Path, Path] = {}
    for run in runs:
        model = model_id(run)
        repo = out.joinpath(*(folder_name(p) for p in model.split("/"))) if several else out
        path = repo / RESULTS_DIR / result_file_name(run)
        if path in files:
            raise ConfigError(
                f"{run.path} and {made_from[path]} are the same kind of run of {model} "
                f"({path.name}); a model repository holds one result per benchmark variant: "
                "export them apart"
            )
        entries = eval_results(
            run, dataset=args.dataset, source_url=args.source_url, source_name=args.source_name
        )
        files[path], made_from[path] = dump_yaml(entries), run.path
    return files


def _eee_files(runs: list[Run], args: argparse.Namespace, out: Path) -> dict[Path, str]:
    from medspot.report.eee_records import eee_export

    files: dict[Path, str] = {}
    for run in runs:
        rec = eee_export(run, organization=args.organization or "unknown", dataset=args.dataset)
        files[out / rec.samples_path] = rec.samples
        files[out / rec.log_path] = json.dumps(rec.log, indent=2, ensure_ascii=False) + "\n"
    return files


def _run(args: argparse.Namespace) -> int:
    from medspot.atomic_write import atomic_write_text
    from medspot.report.comparable import refuse_repeated_runs
    from medspot.runfolder.reader import load_runs

    _check_options(args)
    runs = load_runs([Path(p) for p in args.run_dirs])
    refuse_repeated_runs(runs)
    out = Path(args.out)
    # every run is checked and every file made before the first is written: a refused run
    # (incomplete, the oracle, a variant given twice) leaves nothing behind
    if args.format == "hf-eval":
        files = _hf_eval_files(runs, args, out)
    else:
        files = _eee_files(runs, args, out)
    for path, text in files.items():
        atomic_write_text(path, text)
    if args.format == "hf-eval":
        from medspot.report.hub_results import dump_yaml, eval_yaml

        print(f"# eval.yaml of the benchmark dataset {args.dataset}")
        print(dump_yaml(eval_yaml()), end="")
    for path in files:
        print(f"medspot: wrote {path}", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "export-results",
        help="finished runs as hub Eval Results (hf-eval) or Every Eval Ever records (eee)",
        description=__doc__,
    )
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    p.add_argument("--format", choices=("hf-eval", "eee"), required=True)
    p.add_argument(
        "--out",
        default=".",
        metavar="DIR",
        help="where the files go (hf-eval: DIR/.eval_results/, DIR/<owner>/<name>/.eval_results/ "
        "for the runs of several models; eee: DIR/data/...); default .",
    )
    p.add_argument(
        "--dataset",
        default="Tajamul21/MedSPOT",
        type=_dataset_id,
        metavar="ID",
        help="the benchmark's hub dataset the results name, owner/name (default Tajamul21/MedSPOT)",
    )
    p.add_argument(
        "--source-url",
        default=None,
        type=_source_url,
        metavar="URL",
        help="hf-eval: where the logs are (an http(s) URL)",
    )
    p.add_argument(
        "--source-name", default=None, metavar="TEXT", help="hf-eval: the --source-url's name"
    )
    p.add_argument(
        "--organization",
        default=None,
        metavar="NAME",
        help="eee: the organization that ran the evaluation (source_organization_name; "
        "default unknown)",
    )
    p.set_defaults(func=_run)
