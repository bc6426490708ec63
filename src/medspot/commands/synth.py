"""`medspot synth`: write a synthetic suite of clinical-GUI tasks in MedSPOT's format."""

from __future__ import annotations

import argparse
from pathlib import Path

from medspot.commands._common import seed_number
from medspot.synth.themes import THEMES

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "synth",
        help="render a synthetic suite of fictional DICOM viewer screens and tasks",
        description="Render screens of fictional DICOM viewers and multi-step clinical tasks "
        "into a dataset root in MedSPOT's layout (Annotations/, Images/), with exact target "
        "boxes and a synth_meta.json sidecar. Same arguments, same bytes.",
    )
    p.add_argument("--out", type=Path, required=True, help="folder to write (empty, or an "
                   "earlier synthetic suite, which is replaced)")  # fmt: skip
    p.add_argument("--tasks", type=int, default=40, help="number of tasks (default 40)")
    p.add_argument("--seed", type=seed_number, default=0, help="random seed (default 0)")
    p.add_argument("--apps", type=int, default=5,
                   help=f"number of applications, 1 to {len(THEMES)} (default 5)")  # fmt: skip
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from medspot.synth.generate import generate

    s = generate(args.out, tasks=args.tasks, seed=args.seed, apps=args.apps)
    print(f"wrote {s.tasks} tasks ({s.steps} steps, {s.screens} screens) for "
          f"{len(s.apps)} applications ({', '.join(s.apps)}) to {s.root}")  # fmt: skip
    print(f"targets: {s.text_steps} with a text label, {s.icon_steps} without; "
          f"{s.small_targets} small (< 4e-4 of the screen)")  # fmt: skip
    return 0
