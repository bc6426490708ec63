"""Benchmark 8: what a Ray actor adds to each live step, against the thread executor.

One orthanc-explorer environment in a thread slot of this process and one in a Ray actor (a
local cluster, as `--executor ray` starts it), the oracle's path of the same tasks through
each, alternating task by task. Per call the harness cost is the wall time of `slot.call(...)`
minus the time spent inside the environment (measured where it runs: in the thread, or inside
the actor); per step it is the sum over the step's calls, as the runner makes them with the
oracle as its agent (`intended` only where `reset` or the last `step` brought back no boxes:
both bring back the next screen's, so a step is one environment call; `oracle_action` and
`step`; with an actor `intended` and `oracle_action` are answered from what `reset` / `step`
brought back, so a step is one round trip). Also the bare round trip of an
empty call and of a screen-sized payload (what a step's answer carries).

    .venv/bin/python benchmarks/bench_ray_overhead.py [--tasks 8] [--repeat 1]
        [--chromium /usr/bin/chromium] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from medspot.live.core.tasks import LiveTask
from medspot.live.envs.taskfiles import env_task_file
from medspot.live.loop.executors.base import CallSlot, EpisodeCalls, SlotConfig, reset_episode
from medspot.live.loop.executors.ray_actors import RayExecutor, RaySlot, RemoteEpisode
from medspot.live.loop.executors.threads import ThreadExecutor

T = TypeVar("T")
ENV = "orthanc-explorer"


def _q(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"median": None, "p90": None, "mean": None}
    v = sorted(values)
    return {
        "median": round(1000 * statistics.median(v), 3),
        "p90": round(1000 * v[min(len(v) - 1, int(0.9 * len(v)))], 3),
        "mean": round(1000 * statistics.fmean(v), 3),
    }


class Meter:
    """Calls through a slot, each timed outside (wall) and inside (where the env runs)."""

    def __init__(self, slot: CallSlot) -> None:
        self.slot = slot
        self.step_overheads: list[float] = []
        self.first_step_overheads: list[float] = []  # a task's first step (after the reset)
        self.call_overheads: list[float] = []

    async def call(self, ep: EpisodeCalls, fn: Callable[..., T], *args: Any) -> tuple[T, float]:
        """`fn(*args)` through the slot; its harness cost: wall time minus the time inside the
        environment (in the thread: around `fn`; for an actor: what the actor measured)."""
        local: list[float] = []

        def timed(*a: Any) -> T:
            t = time.perf_counter()
            try:
                return fn(*a)
            finally:
                local.append(time.perf_counter() - t)

        remote = isinstance(ep, RemoteEpisode)
        inside0 = ep.inside_total_s if isinstance(ep, RemoteEpisode) else 0.0
        t0 = time.perf_counter()
        out = await self.slot.call(fn if remote else timed, *args)
        wall = time.perf_counter() - t0
        spent = ep.inside_total_s - inside0 if isinstance(ep, RemoteEpisode) else local[0]
        self.call_overheads.append(wall - spent)
        return out, wall - spent

    async def task(self, task: LiveTask) -> bool:
        ep = await self.slot.episode(task, "guided")
        (_, boxes), _ = await self.call(ep, reset_episode, ep)  # as `slot.reset` makes it
        while True:
            a = 0.0
            if boxes is None:
                boxes, a = await self.call(ep, ep.intended)
            action, b = await self.call(ep, ep.oracle_action)
            res, c = await self.call(ep, ep.step, action)
            boxes = res.next_intended
            self.step_overheads.append(a + b + c)
            if res.n == 1:
                self.first_step_overheads.append(a + b + c)
            if res.outcome is not None:
                return res.outcome == "success"


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    tf, _ = env_task_file(ENV)
    every = max(1, len(tf.tasks) // args.tasks)
    tasks = list(tf.tasks[::every])[: args.tasks]
    with tempfile.TemporaryDirectory(prefix="bro", dir="/tmp") as tmp:
        cfg = SlotConfig(ENV, {"chromium": args.chromium, "seed_cache": Path(tmp) / "seed"},
                         180.0, Path(tmp))  # fmt: skip
        threads, ray_ex = ThreadExecutor(cfg), RayExecutor(cfg, address=None, cpus_per_env=1.0)
        ray_ex.open(1)
        slots = {"threads": threads.slot(0, lambda: None), "ray": ray_ex.slot(0, lambda: None)}
        meters = {k: Meter(s) for k, s in slots.items()}  # type: ignore[arg-type]
        ok = {k: 0 for k in slots}
        try:
            for slot in slots.values():  # start both before measuring
                await slot.episode(tasks[0], "guided")
            for _ in range(args.repeat):
                for t in tasks:
                    for name, m in meters.items():
                        ok[name] += await m.task(t)
            rtt: dict[str, dict[str, list[float]]] = {"threads": {}, "ray": {}}
            payload = b"\0" * args.payload
            ray_slot = slots["ray"]
            assert isinstance(ray_slot, RaySlot)
            for _ in range(200):
                for size, data in (("empty", b""), ("screen", payload)):
                    t0 = time.perf_counter()
                    await slots["threads"].call(lambda d: d, data)
                    rtt["threads"].setdefault(size, []).append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    await ray_slot.call(ray_slot.remote, ray_slot.actor.echo, data)
                    rtt["ray"].setdefault(size, []).append(time.perf_counter() - t0)
        finally:
            for s in slots.values():
                await s.shutdown()
            ray_ex.close()
    steps = {k: len(m.step_overheads) for k, m in meters.items()}
    out: dict[str, Any] = {"tasks": len(tasks) * args.repeat, "steps": steps, "success": ok}
    for k, m in meters.items():
        out[f"{k}_step_overhead_ms"] = _q(m.step_overheads)
        out[f"{k}_first_step_overhead_ms"] = _q(m.first_step_overheads)
        out[f"{k}_call_overhead_ms"] = _q(m.call_overheads)
        for size, v in rtt[k].items():
            out[f"{k}_round_trip_{size}_ms"] = _q(v)
    t_med = out["threads_step_overhead_ms"]["median"] or 0.0
    r_med = out["ray_step_overhead_ms"]["median"] or 0.0
    out["ray_added_per_step_ms_median"] = round(r_med - t_med, 3)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--tasks", type=int, default=8, help="tasks, spread over the task file")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--payload", type=int, default=250_000, help="bytes of the screen payload")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    out = asyncio.run(main_async(args))
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    print(
        f"\nharness per step, median / p90 ms: threads {out['threads_step_overhead_ms']['median']}"
        f" / {out['threads_step_overhead_ms']['p90']}, ray {out['ray_step_overhead_ms']['median']}"
        f" / {out['ray_step_overhead_ms']['p90']}; Ray adds "
        f"{out['ray_added_per_step_ms_median']} ms a step (median)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
