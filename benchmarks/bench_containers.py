"""Benchmark 12: environments in containers (`--executor container`) against threads.

1. **Per step and reset**: one orthanc-explorer environment in a thread slot of this process and
   one in a container slot, the oracle's path of the same tasks through each, alternating task
   by task (as `bench_ray_overhead.py` does for Ray): per step the harness cost is the wall time
   of the step's calls minus the time spent inside the environment (measured where it runs),
   the reset's wall time, and a bare round trip (empty, and a screen-sized payload).
2. **Runs**: the oracle through the same tasks with `run_live`, threads then containers, at
   each `--concurrency`: wall time, tasks per minute, the wait between tasks and the resets
   (medians from the run's metrics), and their ratios.
3. **Memory of one instance**: a container slot with no spare after a task, its memory as the
   engine's `stats` reads it (the container's cgroup: the worker, Orthanc, chromium).
4. **Images** (`--build`): each family built without the engine's cache on the base already
   there, its time and size (the base's own debootstrap is timed once with `--build-base`).

    .venv/bin/python benchmarks/bench_containers.py [--tasks 6] [--concurrency 1 2]
        [--build] [--build-base] [--families orthanc-explorer dicomscope] [--json out.json]

Needs a container engine and the orthanc-explorer image (`medspot live image build --env
orthanc-explorer`).
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

from bench_ray_overhead import Meter, _q

from medspot.live.envs.taskfiles import env_task_file
from medspot.live.images.build import build_image, make_base
from medspot.live.images.engine import Engine, find_engine
from medspot.live.images.names import BASE_IMAGE
from medspot.live.loop.envspec import EnvSpec, ExecutorSpec
from medspot.live.loop.executors import ContainerOptions, ExecutorName
from medspot.live.loop.executors.base import SlotConfig
from medspot.live.loop.executors.container import ContainerExecutor, ContainerSlot
from medspot.live.loop.executors.threads import ThreadExecutor
from medspot.live.loop.request import LiveRequest, run_live
from medspot.live.loop.scheduler import LiveOptions

ENV = "orthanc-explorer"


def _tasks(n: int) -> list[Any]:
    tf, _ = env_task_file(ENV)
    every = max(1, len(tf.tasks) // n)
    return list(tf.tasks[::every])[:n]


class ResetMeter(Meter):
    """`Meter`, with each task's start (a new episode and its reset) timed whole."""

    def __init__(self, slot: Any) -> None:
        super().__init__(slot)
        self.resets: list[float] = []

    async def task(self, task: Any) -> bool:
        t0 = time.perf_counter()
        ep = await self.slot.episode(task, "guided")
        await self.call(ep, ep.reset)
        self.resets.append(time.perf_counter() - t0)
        boxes = None
        while True:
            a = 0.0
            if boxes is None:
                boxes, a = await self.call(ep, ep.intended)
            action, b = await self.call(ep, ep.oracle_action)
            res, c = await self.call(ep, ep.step, action)
            boxes = res.next_intended
            self.step_overheads.append(a + b + c)
            if res.outcome is not None:
                return bool(res.outcome == "success")


async def per_step(tasks: list[Any], payload: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bco", dir="/tmp") as tmp:
        cfg = SlotConfig(ENV, {}, 180.0, Path(tmp), spares=0)
        threads = ThreadExecutor(cfg)
        containers = ContainerExecutor(cfg, ContainerOptions())
        containers.open(1)
        slots = {
            "threads": threads.slot(0, lambda: None),
            "container": containers.slot(0, lambda: None),
        }
        meters = {k: ResetMeter(s) for k, s in slots.items()}
        ok = {k: 0 for k in slots}
        rtt: dict[str, dict[str, list[float]]] = {k: {} for k in slots}
        try:
            for slot in slots.values():  # start both before measuring
                await slot.episode(tasks[0], "guided")
            for t in tasks:
                for name, m in meters.items():
                    ok[name] += await m.task(t)
            data = b"\0" * payload
            box = slots["container"]
            assert isinstance(box, ContainerSlot)
            for _ in range(200):
                for size, d in (("empty", b""), ("screen", data)):
                    t0 = time.perf_counter()
                    await slots["threads"].call(lambda x: x, d)
                    rtt["threads"].setdefault(size, []).append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    await box.call(box.remote, "echo", d)
                    rtt["container"].setdefault(size, []).append(time.perf_counter() - t0)
        finally:
            for s in slots.values():
                await s.shutdown()
            containers.close()
    out: dict[str, Any] = {"tasks": len(tasks), "success": ok}
    for k, m in meters.items():
        out[f"{k}_step_overhead_ms"] = _q(m.step_overheads)
        out[f"{k}_reset_ms"] = _q(m.resets)
        for size, v in rtt[k].items():
            out[f"{k}_round_trip_{size}_ms"] = _q(v)
    t_med = out["threads_step_overhead_ms"]["median"] or 0.0
    c_med = out["container_step_overhead_ms"]["median"] or 0.0
    out["container_added_per_step_ms_median"] = round(c_med - t_med, 3)
    return out


def runs(tasks: list[Any], concurrency: list[int], rounds: int) -> list[dict[str, Any]]:
    """Each concurrency's runs in the order threads, container, container, threads, ... (so a
    load that changes during the benchmark weighs on both alike); one row per run."""
    rows = []
    ids = tuple(t.id for t in tasks)
    for n in concurrency:
        pairs: list[tuple[ExecutorName, ExecutorName]] = [
            ("threads", "container"), ("container", "threads")
        ]  # fmt: skip
        order = pairs * rounds
        for executor in [e for pair in order[:rounds] for e in pair]:
            with tempfile.TemporaryDirectory(prefix="bcr", dir="/tmp") as tmp:
                t0 = time.perf_counter()
                spec = EnvSpec(ENV, task_ids=ids, executor=ExecutorSpec(executor),
                               workroot=Path(tmp) / "w")  # fmt: skip
                req = LiveRequest(spec=spec, model="oracle", out=Path(tmp) / "r", n_boot=0,
                                  loop=LiveOptions(concurrency=n))  # fmt: skip
                res = run_live(req)
                wall = time.perf_counter() - t0
            m = res.metrics
            rows.append({
                "executor": executor, "concurrency": n, "tasks": len(ids),
                "success": round(m.get("task_success_rate") or 0.0, 3), "wall_s": round(wall, 2),
                "tasks_per_min": round(60 * len(ids) / wall, 2),
                "between_tasks_s_median": (m.get("between_tasks_s") or {}).get("median"),
                "reset_s_median": (m.get("reset_s") or {}).get("median"),
                "envs_started": res.stats.envs_started, "faults": res.stats.faults,
            })  # fmt: skip
            print(json.dumps(rows[-1]), flush=True)
    return rows


def _mean(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if r[key] is not None]
    return round(sum(values) / len(values), 3) if values else None


def _memory_bytes(engine: Engine, name: str) -> int:
    out = engine.query("stats", "--no-stream", "--format", "{{.MemUsage}}", name)
    used = out.strip().split("/")[0].strip().lower().replace("ib", "b")
    units = {"kb": 1e3, "mb": 1e6, "gb": 1e9, "b": 1}
    for u, f in units.items():
        if used.endswith(u):
            return int(float(used[: -len(u)]) * f)
    return int(float(used))


async def memory(tasks: list[Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bcm", dir="/tmp") as tmp:
        cfg = SlotConfig(ENV, {}, 180.0, Path(tmp), spares=0)
        ex = ContainerExecutor(cfg, ContainerOptions())
        ex.open(1)
        slot = ex.slot(0, lambda: None)
        try:
            m = ResetMeter(slot)
            assert await m.task(tasks[0])
            await asyncio.sleep(2)
            assert slot.name is not None
            used = _memory_bytes(ex.engine, slot.name)
        finally:
            await slot.shutdown()
            ex.close()
    return {"one_instance_mb": round(used / 1e6)}


def builds(engine: Engine, families: list[str], base: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if base:
        engine.run("rmi", BASE_IMAGE)
        t0 = time.perf_counter()
        info = make_base(engine, print)
        out["base"] = {
            "seconds": round(time.perf_counter() - t0, 1),
            "size_mb": round(info.size / 1e6),
        }
    for env in families:
        res = build_image(env, engine, echo=lambda _: None, no_cache=True)
        out[env] = {"seconds": round(res.seconds, 1), "size_mb": round(res.image.size / 1e6)}
        print(env, out[env], flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--tasks", type=int, default=6, help="tasks, spread over the task file")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--payload", type=int, default=250_000, help="bytes of the screen payload")
    ap.add_argument("--build", action="store_true", help="time each family's image build")
    ap.add_argument("--build-base", action="store_true", help="time the base's debootstrap too")
    ap.add_argument("--families", nargs="+", default=["orthanc-explorer", "dicomscope"])
    ap.add_argument("--rounds", type=int, default=1, help="run pairs per concurrency (ABBA)")
    ap.add_argument("--parts", nargs="+", default=["step", "runs", "memory"],
                    choices=["step", "runs", "memory"], help="what to measure")  # fmt: skip
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    engine = find_engine()
    tasks = _tasks(args.tasks)
    out: dict[str, Any] = {"engine": f"{engine.name} {engine.version}"}
    if args.build or args.build_base:
        out["builds"] = builds(engine, args.families if args.build else [], args.build_base)
    if "step" in args.parts:
        out["per_step"] = asyncio.run(per_step(tasks, args.payload))
    if "runs" in args.parts:
        out["runs"] = runs(tasks, args.concurrency, args.rounds)
        for n in args.concurrency:
            mean = {}
            for e in ("threads", "container"):
                rows = [r for r in out["runs"] if r["executor"] == e and r["concurrency"] == n]
                mean[e] = {k: _mean(rows, k) for k in ("wall_s", "tasks_per_min",
                           "between_tasks_s_median", "reset_s_median")}  # fmt: skip
            out[f"mean_c{n}"] = mean
            th, co = mean["threads"]["tasks_per_min"], mean["container"]["tasks_per_min"]
            out[f"ratio_tasks_per_min_c{n}"] = round(co / th, 3) if th and co else None
    if "memory" in args.parts:
        out["memory"] = asyncio.run(memory(tasks))
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
