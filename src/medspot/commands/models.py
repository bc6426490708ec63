"""`medspot models`: the available adapters and their coordinate conventions."""

from __future__ import annotations

import argparse
import json

from medspot.adapters import registry

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    entries = registry.available()
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "name": e.name + (":NAME" if e.kind == "generic" else ""),
                        "kind": e.kind,
                        "convention": e.convention,
                        "extra": e.extra,
                        "summary": e.summary,
                        **(e.info or {}),
                    }
                    for e in entries
                ],
                indent=2,
            )
        )
        return 0
    rows = [
        (
            e.name + (":NAME" if e.kind == "generic" else ""),
            e.kind,
            e.convention,
            e.extra or "-",
            e.summary,
        )
        for e in entries
    ]
    head = ("name", "kind", "convention", "extra", "summary")
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(4)]
    for r in [head, *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(r[:4], widths, strict=True)) + "  " + r[4])
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("models", help="list the available models and baselines")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_run)
