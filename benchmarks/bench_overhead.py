"""Benchmark 2: harness cost per step, the model excluded (the server answers at once).

The test server runs in a child process (so its CPU does not count); this process runs the
runner (`medspot.runner.run_model`) with the real OpenAI-compatible adapter (`openai:scripted`,
screenshots sent as they are) and the journal, and measures its own CPU time per call. A second
measurement uses an in-memory adapter to separate the scheduler and the journal from the HTTP
client. With `--profile` it prints where the time goes (cProfile, top functions).

    .venv/bin/python benchmarks/bench_overhead.py [--concurrency 32] [--repeat 2] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import multiprocessing as mp
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_throughput import default_annotations

from medspot.adapters import registry
from medspot.adapters.base import AdapterContext, Convention, Prediction, StepRequest
from medspot.dataset.images import ImageStore
from medspot.dataset.loading import load_dataset
from medspot.dataset.records import Dataset
from medspot.runfolder.journal import Journal
from medspot.runner import RunOptions, run_model
from medspot.scoring.protocol import get_protocol
from medspot.testing import make_placeholder_root


def _serve(root: str, miss_rate: float, q: Any, stop: Any) -> None:
    from scripted import ScriptedAnswers

    from medspot.testing.openai_server import OpenAITestServer

    script = ScriptedAnswers(load_dataset(root), miss_rate=miss_rate)
    with OpenAITestServer(answer=script, latency=0.0, keep_requests=0) as srv:
        q.put(srv.base_url)
        stop.wait()


class Instant:
    """An in-memory adapter: answers the first box centre at once (scheduler + journal cost)."""

    name = "instant"
    convention = Convention.NORMALISED
    max_concurrency = 1024

    def __init__(self, ds: Dataset) -> None:
        self.ds = ds

    async def predict(self, request: StepRequest) -> Prediction:
        p = self.ds.step(request.step_uid).boxes[0].center
        return Prediction(raw_text=str(p), point=p)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}

    async def aclose(self) -> None:
        return None


def measure(ds: Dataset, adapter: Any, work: Path, concurrency: int, prof: Any) -> dict[str, Any]:
    opts = RunOptions(protocol=get_protocol("medspot-v1"), concurrency=concurrency, all_steps=True)
    path = work / f"j-{time.monotonic_ns()}.jsonl"

    async def go() -> Any:
        with Journal(path) as j:
            return await run_model(ds, adapter, j, ImageStore(ds.root), opts)

    c0, w0 = time.process_time(), time.perf_counter()
    if prof is not None:
        prof.enable()
    stats = asyncio.run(go())
    if prof is not None:
        prof.disable()
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    return {
        "calls": stats.calls,
        "errors": stats.errors,
        "cpu_ms_per_step": round(1000 * cpu / max(1, stats.calls), 3),
        "wall_ms_per_step": round(1000 * wall / max(1, stats.calls), 3),
        "steps_per_s": round(stats.calls / wall, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--annotations", type=Path, default=default_annotations())
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=2, help="runs per adapter (best is kept)")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    result: dict[str, Any] = {"concurrency": args.concurrency}
    with tempfile.TemporaryDirectory(prefix="medspot-bench-") as tmp:
        work = Path(tmp)
        root = make_placeholder_root(work, args.annotations)
        ds = load_dataset(root)
        ctx = mp.get_context("spawn")
        q, stop = ctx.Queue(), ctx.Event()
        server = ctx.Process(target=_serve, args=(str(root), 0.35, q, stop), daemon=True)
        server.start()
        try:
            url = q.get(timeout=60)
            os.environ["OPENAI_API_KEY"] = "bench"
            prof = cProfile.Profile() if args.profile else None
            for label, make in (
                ("openai_adapter", lambda: _openai_adapter(ds, url, args.concurrency)),
                ("in_memory_adapter", lambda: Instant(ds)),
            ):
                best: dict[str, Any] | None = None
                for i in range(args.repeat):
                    p = prof if (label == "openai_adapter" and i == args.repeat - 1) else None
                    row = measure(ds, make(), work, args.concurrency, p)
                    if best is None or row["cpu_ms_per_step"] < best["cpu_ms_per_step"]:
                        best = row
                result[label] = best
                print(label, json.dumps(best), flush=True)
        finally:
            stop.set()
            server.join(timeout=10)
    if prof is not None:
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(25)
        print(s.getvalue())
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(30)
        print(s.getvalue())
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


def _openai_adapter(ds: Dataset, url: str, concurrency: int) -> Any:
    ctx = AdapterContext.with_options(
        dataset=None,
        images=ImageStore(ds.root),
        options={
            "model": "openai:scripted",
            "convention": "rel1000",
            "base_urls": [url],
            "concurrency": concurrency,
        },
    )
    return registry.create("openai:scripted", ctx)


if __name__ == "__main__":
    sys.exit(main())
