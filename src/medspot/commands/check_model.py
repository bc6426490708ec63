"""`medspot check-model MODEL`: a few synthetic screens with one obvious button each, asked
through the same card and backend as `eval`; reports whether answers land on the buttons and
fits scale and offset per axis. Run it first against any new server or checkpoint. Exit 0
when the answers are consistent with the card's convention, 1 when not."""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
from pathlib import Path

from medspot.adapters.options import AdapterOptions
from medspot.commands._common import (
    adapter_options,
    add_command,
    concurrency_number,
    positive_float,
    positive_int,
)

__all__ = ["options_from_args", "register"]


def options_from_args(args: argparse.Namespace) -> AdapterOptions:
    """Adapter options, as `eval` builds them, plus the prompt style and concurrency."""
    return dataclasses.replace(
        adapter_options(args),
        prompt_style=args.prompt,
        concurrency=args.concurrency,
    )


def _run(args: argparse.Namespace) -> int:
    from medspot.commands.check_model_fit import check_model, format_report

    opts = options_from_args(args)
    if args.keep:
        report = check_model(args.model, opts, Path(args.keep))
    else:
        with tempfile.TemporaryDirectory(prefix="medspot-check-") as tmp:
            report = check_model(args.model, opts, Path(tmp))
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(format_report(report))
    return 0 if report.consistent else 1


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(
        sub, "check-model", "check a model's coordinate frame on synthetic screens", __doc__
    )
    p.add_argument("model", metavar="MODEL", help="a name from `medspot models`, or openai:NAME")
    p.add_argument("--backend", choices=["openai", "hf"], default=None)
    p.add_argument(
        "--base-url", action="append", metavar="URL", help="OpenAI-compatible server (repeatable)"
    )
    p.add_argument(
        "--api-key-env", default=None, metavar="VAR",
        help="the variable holding the API key, and the only one read (default OPENAI_API_KEY)",
    )  # fmt: skip
    p.add_argument(
        "--api-model", default=None, metavar="NAME", help="model name sent to the server"
    )
    p.add_argument("--timeout", type=positive_float, default=None, metavar="S")
    p.add_argument("--checkpoint", default=None, metavar="ID_OR_DIR", help="weights (--backend hf)")
    p.add_argument("--device", default=None)
    p.add_argument("--dtype", default=None)
    p.add_argument("--batch-size", type=positive_int, default=None, metavar="N")
    p.add_argument("--concurrency", type=concurrency_number, default=None, metavar="N")
    p.add_argument("--prompt", choices=["native", "upstream"], default=None)
    p.add_argument("--convention", choices=["rel1000", "rel1", "abs_sent"], default=None)
    p.add_argument("--prompt-template", default=None, metavar="FILE")
    p.add_argument(
        "--keep", default=None, metavar="DIR", help="paint the screens here and keep them"
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_run)
