"""Benchmark 4: a local model on the CPU with batch sizes 1, 4 and 8.

A tiny, randomly initialised Qwen2.5-VL checkpoint built offline (the builder of
tests/test_hf_backend.py; nothing is downloaded), run through the real card path
(`qwen2.5-vl-7b` on the `hf` backend, its resize bounds shrunk so that a screenshot is 16
visual tokens), in all-steps mode over real annotations with placeholder screenshots, so
every batch size does the same work. Reports steps per second per batch size. The absolute
numbers say nothing about a 7B model; the ratios say what batching buys in the harness.

    .venv/bin/python benchmarks/bench_local.py [--batch-sizes 1 4 8] [--apps Orthanc,Bluelight]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from bench_throughput import default_annotations  # noqa: E402

from medspot.dataset.images import ImageStore  # noqa: E402
from medspot.dataset.loading import load_dataset  # noqa: E402
from medspot.runfolder.journal import Journal, read_journal  # noqa: E402
from medspot.runner import RunOptions, run_model  # noqa: E402
from medspot.scoring.protocol import get_protocol  # noqa: E402
from medspot.testing import make_placeholder_root  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--annotations", type=Path, default=default_annotations())
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 4, 8])
    ap.add_argument("--apps", default="Orthanc,Bluelight")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    try:
        import torch

        import test_hf_backend as hf  # the offline tiny-checkpoint builder
    except Exception as e:  # torch / transformers missing: say so, do not fail `make bench`
        print(f"skipped: the hf extra is not installed ({type(e).__name__}: {e})")
        return 0
    torch.manual_seed(0)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="medspot-local-") as tmp:
        work = Path(tmp)
        ckpt = hf.build_qwen(work / "tiny-qwen2.5-vl", "qwen2_5_vl")
        root = make_placeholder_root(work, args.annotations)
        ds = load_dataset(root, apps=args.apps.split(","))
        card = hf.qwen_card("qwen2_5_vl")
        hf.run_adapter(hf.make(card, ckpt), [hf.step(work)])  # warm-up: first-call costs
        for bs in args.batch_sizes:
            adapter = hf.make(card, ckpt, batch_size=bs)
            opts = RunOptions(protocol=get_protocol("medspot-v1"), all_steps=True, concurrency=64)

            async def go(adapter: Any = adapter, bs: int = bs, opts: RunOptions = opts) -> Any:
                try:
                    with Journal(work / f"bs{bs}.jsonl") as j:
                        return await run_model(ds, adapter, j, ImageStore(ds.root), opts)
                finally:
                    await adapter.aclose()

            t = time.perf_counter()
            stats = asyncio.run(go())
            wall = time.perf_counter() - t
            recs = list(read_journal(work / f"bs{bs}.jsonl"))
            out_tokens = sum(r.output_tokens or 0 for r in recs)
            row = {
                "batch_size": bs,
                "output_tokens": out_tokens,
                "tokens_per_s": round(out_tokens / wall, 1),
                "steps": stats.calls,
                "errors": stats.errors,
                "wall_s": round(wall, 2),
                "steps_per_s": round(stats.calls / wall, 2),
                "torch_threads": torch.get_num_threads(),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    base = rows[0]["steps_per_s"] if rows else 1.0
    print()
    print("| batch size | steps | wall s | steps/s | speed-up | generated tokens | tokens/s |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['batch_size']} | {r['steps']} | {r['wall_s']:.1f} | {r['steps_per_s']:.2f} | "
            f"{r['steps_per_s'] / base:.2f}x | {r['output_tokens']} | {r['tokens_per_s']:.0f} |"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
