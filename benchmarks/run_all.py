"""`make bench`: every benchmark at its default size, results as JSON in benchmarks/results/
(or `--out`). A few minutes on two cores; `--quick` shrinks the sizes for a smoke run.

    .venv/bin/python benchmarks/run_all.py [--quick] [--out DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--out", type=Path, default=HERE / "results")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    o = args.out
    if args.quick:
        runs = [
            ["bench_throughput.py", "--concurrency", "32", "--json", str(o / "throughput.json")],
            ["bench_overhead.py", "--repeat", "1", "--json", str(o / "overhead.json")],
            ["bench_scale.py", "--sizes", "1000", "10000", "--json", str(o / "scale.json")],
            ["bench_local.py", "--batch-sizes", "1", "4", "--json", str(o / "local.json")],
            ["bench_parsers.py", "--digits", "100", "--json", str(o / "parsers.json")],
        ]
    else:
        runs = [
            [
                "bench_throughput.py",
                "--concurrency", "8", "32", "64", "--all-steps",
                "--json", str(o / "throughput.json"),
            ],
            [
                "bench_throughput.py",
                "--concurrency", "1", "--latency", "0.05",
                "--json", str(o / "throughput_c1.json"),
            ],
            ["bench_overhead.py", "--profile", "--json", str(o / "overhead.json")],
            ["bench_scale.py", "--json", str(o / "scale.json")],
            ["bench_local.py", "--json", str(o / "local.json")],
            ["bench_parsers.py", "--json", str(o / "parsers.json")],
        ]  # fmt: skip
    failed = 0
    for cmd in runs:
        print(f"\n== {' '.join(cmd)}", flush=True)
        t = time.perf_counter()
        code = subprocess.call([sys.executable, str(HERE / cmd[0]), *cmd[1:]])
        print(f"== {cmd[0]}: exit {code}, {time.perf_counter() - t:.0f}s", flush=True)
        failed += code != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
