"""`medspot export-results RUN_DIR ... --format hf-eval|eee`: finished runs in a format others
read. `hf-eval` (the Hugging Face Hub's "Eval Results"): writes each run's
`.eval_results/<name>.yaml` under --out (the folder a model repository carries) and prints the
`eval.yaml` a MedSPOT benchmark dataset would carry. `eee` ("Every Eval Ever" records): writes
each run's aggregate log and per-task records under --out in that repository's `data/` layout."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from medspot.errors import ConfigError
    from medspot.runfolder.reader import load_runs
    from medspot.runfolder.writer import atomic_write_text

    runs = load_runs([Path(p) for p in args.run_dirs])
    out = Path(args.out)
    written: list[Path] = []
    if args.format == "hf-eval":
        from medspot.report.hub_results import (
            RESULTS_DIR,
            dump_yaml,
            eval_results,
            eval_yaml,
            result_file_name,
        )

        files: dict[str, str] = {}
        for run in runs:
            name = result_file_name(run)
            if name in files:
                raise ConfigError(
                    f"{run.path} and {files[name]} are the same kind of run ({name}); a model "
                    "repository holds one result per benchmark variant: export them apart"
                )
            files[name] = str(run.path)
            entries = eval_results(
                run, dataset=args.dataset, source_url=args.source_url, source_name=args.source_name
            )
            path = out / RESULTS_DIR / name
            atomic_write_text(path, dump_yaml(entries))
            written.append(path)
        print(f"# eval.yaml of the benchmark dataset {args.dataset}")
        print(dump_yaml(eval_yaml()), end="")
    else:
        from medspot.report.eee_records import eee_export

        for run in runs:
            rec = eee_export(run, organization=args.organization, dataset=args.dataset)
            log_path, samples_path = out / rec.log_path, out / rec.samples_path
            atomic_write_text(samples_path, rec.samples)
            atomic_write_text(log_path, json.dumps(rec.log, indent=2, ensure_ascii=False) + "\n")
            written += [log_path, samples_path]
    for path in written:
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
        help="where the files go (hf-eval: DIR/.eval_results/; eee: DIR/data/...); default .",
    )
    p.add_argument(
        "--dataset",
        default="Tajamul21/MedSPOT",
        metavar="ID",
        help="the benchmark's hub dataset the results name (default Tajamul21/MedSPOT)",
    )
    p.add_argument("--source-url", default=None, metavar="URL", help="hf-eval: where the logs are")
    p.add_argument("--source-name", default=None, metavar="TEXT", help="hf-eval: the source's name")
    p.add_argument(
        "--organization",
        default="unknown",
        metavar="NAME",
        help="eee: the organization that ran the evaluation (source_organization_name)",
    )
    p.set_defaults(func=_run)
