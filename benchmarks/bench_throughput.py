"""Benchmark 1: throughput against the limit.

The real annotations with placeholder screenshots; `medspot eval --model openai:scripted
--convention rel1000` in a subprocess against the OpenAI test server (in this process) that
answers after `--latency` seconds with a scripted model (`scripted.py`: some steps hit, some
miss). For each concurrency it reports the wall time of the calling phase (first request in
to last answer out, as the server sees it) and of the whole command, the calls made, the
protocol's minimum, and the ideal time: max(calls / concurrency, longest chain) x latency.

    .venv/bin/python benchmarks/bench_throughput.py [--concurrency 1 8 32 64] [--latency 0.2]
        [--all-steps] [--miss-rate 0.35] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scripted import ScriptedAnswers, protocol_minimum

from medspot.dataset.loading import load_dataset
from medspot.scoring.protocol import get_protocol
from medspot.testing import make_placeholder_root
from medspot.testing.openai_server import OpenAITestServer, SeenRequest

REPO = Path(__file__).resolve().parents[1]


def default_annotations() -> Path:
    env = os.environ.get("MEDSPOT_ANNOTATIONS")
    return Path(env) if env else REPO.parent / "shared" / "medspot" / "Annotations"


class Timed:
    """Wraps the answer function to note when the first and last answers were made."""

    def __init__(self, inner: ScriptedAnswers) -> None:
        self.inner = inner
        self.first: float | None = None
        self.last: float | None = None
        self._lock = threading.Lock()

    def __call__(self, req: SeenRequest) -> str:
        now = time.perf_counter()
        with self._lock:
            self.first = now if self.first is None else min(self.first, now)
            self.last = now if self.last is None else max(self.last, now)
        return self.inner(req)

    def reset(self) -> None:
        self.first = self.last = None


def run_once(
    root: Path,
    script: ScriptedAnswers,
    *,
    concurrency: int,
    latency: float,
    all_steps: bool,
    work: Path,
) -> dict[str, Any]:
    timed = Timed(script)
    with OpenAITestServer(answer=timed, latency=latency, keep_requests=0) as srv:
        out = work / f"c{concurrency}{'-all' if all_steps else ''}"
        cmd = [
            sys.executable,
            "-m",
            "medspot",
            "eval",
            "--data",
            str(root),
            "--model",
            "openai:scripted",
            "--convention",
            "rel1000",
            "--base-url",
            srv.base_url,
            "--out",
            str(out),
            "--concurrency",
            str(concurrency),
            "--no-progress",
            "--bootstrap",
            "200",
            *(["--all-steps"] if all_steps else []),
        ]
        env = {**os.environ, "OPENAI_API_KEY": "bench"}
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        c0, t0 = time.process_time(), time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        server_cpu = time.process_time() - c0
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        harness_cpu = (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)
        if proc.returncode != 0:
            raise SystemExit(f"eval failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        requests = srv.request_count
        peak = srv.max_in_flight
    info = json.loads((out / "run.json").read_text())
    protocol = get_protocol("medspot-v1")
    minimum = protocol_minimum(script.dataset, script, protocol, all_steps=all_steps)
    phase = (timed.last - timed.first + latency) if timed.first and timed.last else float("nan")
    ideal = max(math.ceil(minimum.calls / concurrency), minimum.chain) * latency
    return {
        "concurrency": concurrency,
        "all_steps": all_steps,
        "latency_s": latency,
        "calls": requests,
        "journal_calls": info["calls"],
        "minimum_calls": minimum.calls,
        "longest_chain": minimum.chain,
        "ideal_s": round(ideal, 3),
        "calling_phase_s": round(phase, 3),
        "ratio": round(phase / ideal, 3) if ideal else None,
        "command_wall_s": round(wall, 3),
        "server_peak_in_flight": peak,
        "harness_cpu_s": round(harness_cpu, 3),
        "server_cpu_s": round(server_cpu, 3),
        "unplaced_requests": script.unknown,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--annotations", type=Path, default=default_annotations())
    ap.add_argument("--concurrency", type=int, nargs="+", default=[8, 32, 64])
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--miss-rate", type=float, default=0.35)
    ap.add_argument("--all-steps", action="store_true", help="also run all-steps mode")
    ap.add_argument("--json", type=Path, default=None, help="write the rows here")
    args = ap.parse_args(argv)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="medspot-bench-") as tmp:
        work = Path(tmp)
        root = make_placeholder_root(work, args.annotations)
        ds = load_dataset(root)
        script = ScriptedAnswers(ds, miss_rate=args.miss_rate)
        modes = [(c, False) for c in args.concurrency]
        if args.all_steps:
            modes.append((max(args.concurrency), True))
        for c, all_steps in modes:
            row = run_once(
                root, script, concurrency=c, latency=args.latency, all_steps=all_steps, work=work
            )
            rows.append(row)
            print(json.dumps(row), flush=True)
    print()
    print(
        "| concurrency | mode | calls | minimum | chain | ideal s | calling s | ratio | command s |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        mode = "all-steps" if r["all_steps"] else "sequential"
        print(
            f"| {r['concurrency']} | {mode} | {r['calls']} | {r['minimum_calls']} | "
            f"{r['longest_chain']} | {r['ideal_s']:.2f} | {r['calling_phase_s']:.2f} | "
            f"{r['ratio']:.2f} | {r['command_wall_s']:.2f} |"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
