"""Every card's answer parser on answers with runaway numbers (a model that writes a coordinate
of hundreds of digits): the time of one parse, slowest parser first.

A parse must cost about the same whatever the answer: a regular expression that backtracks over
a long run of digits makes one answer cost seconds (benchmarks/README.md section 13).

    .venv/bin/python benchmarks/bench_parsers.py [--digits 100 400 1600] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from medspot.adapters.base import Convention
from medspot.adapters.card import PromptStyle
from medspot.adapters.cards import CARDS, make_generic_card

SIZE = (1920, 1080)


def _specs() -> list[tuple[str, Any]]:
    """Every parser: each card's prompt styles, planners, the generic conventions."""
    out = [
        (f"{name}/{s.value}", card.style(s))
        for name, card in CARDS.items()
        for s in PromptStyle
        if s is not PromptStyle.AGENT or card.agent is not None
    ]
    out += [(f"{name}/planner", c.planner) for name, c in CARDS.items() if c.planner is not None]
    out += [(f"generic/{conv}", make_generic_card("x", Convention(conv), None).native)
            for conv in ("rel1000", "rel1", "abs_sent")]  # fmt: skip
    return out


def _answers(digits: int) -> dict[str, str]:
    """Answers around a number of `digits` digits, in the shapes the parsers look for."""
    big = "9" * digits
    return {
        "one pair, unclosed": f"({big},{big}",
        "box pair, unclosed": f"({big},{big}),({big}",
        "named": f'{{"x": {big},y={big}.',
        "tuple": f"[{big}, {big}, 3",
        "bare": f"{big}, {big}.{big}",
    }


def bench(digits: list[int], repeat: int) -> dict[str, Any]:
    specs = _specs()
    rows: dict[str, Any] = {}
    for d in digits:
        answers = _answers(d)
        per: list[tuple[float, str, str]] = []
        for name, spec in specs:
            for shape, text in answers.items():
                best = min(_time(spec, text) for _ in range(repeat))
                per.append((best, name, shape))
        per.sort(reverse=True)
        times = [t for t, _, _ in per]
        rows[str(d)] = {
            "parsers": len(specs),
            "parses": len(per),
            "median_ms": round(statistics.median(times) * 1000, 4),
            "max_ms": round(times[0] * 1000, 3),
            "slowest": [
                {"parser": n, "answer": s, "ms": round(t * 1000, 3)} for t, n, s in per[:3]
            ],
            "total_s": round(sum(times), 3),
        }
    return {"digits": rows}


def _time(spec: Any, text: str) -> float:
    t = time.perf_counter()
    spec.parse(text, SIZE, SIZE)
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--digits", type=int, nargs="+", default=[100, 400, 1600])
    ap.add_argument("--repeat", type=int, default=3, help="parses per answer (the best counts)")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args(argv)
    out = bench(args.digits, args.repeat)
    for d, row in out["digits"].items():
        worst = row["slowest"][0]
        print(f"{d:>5} digits: {row['parses']} parses, median {row['median_ms']} ms, "
              f"max {row['max_ms']} ms ({worst['parser']}, {worst['answer']}), "
              f"all {row['total_s']} s")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
