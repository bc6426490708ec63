"""Benchmark 9 (memory): what one more instance of a live environment adds, as a spare does.

Instances of `--env` are started one after the other, each on a thread of its own (as a runner
slot's spares are: a web environment's Playwright driver is per thread) and reset for the first
packaged task; after each, the proportional set size (PSS) of every process of this run is
summed: this process's descendants and the processes that carry an instance's private folder
(Orthanc runs in a session of its own). The growth from one instance to the next is what a
spare costs (`SparePlan.memory_mb`, docs/live/running.md "Pipelined starts"); the first
instance costs more, since it alone holds the libraries the others share. Linux only (/proc).

    .venv/bin/python benchmarks/bench_spare_memory.py --env ohif [--instances 3]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from medspot.live.envs.envoptions import env_options_of
from medspot.live.envs.registry import create_environment, env_entry
from medspot.live.envs.taskfiles import env_task_file, select_tasks


def _children(pid: int, table: dict[int, list[int]]) -> list[int]:
    out = []
    for child in table.get(pid, []):
        out += [child, *_children(child, table)]
    return out


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def run_pss_mb(folders: list[Path]) -> tuple[int, int]:
    """(PSS in MB, processes) of this process's descendants and of the processes whose command
    line or environment names one of `folders`."""
    table: dict[int, list[int]] = {}
    marked: set[int] = set()
    keys = [str(f).encode() for f in folders]
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
            with open(f"/proc/{pid}/cmdline", "rb") as fb:
                blob = fb.read()
            with open(f"/proc/{pid}/environ", "rb") as fb:
                blob += fb.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        table.setdefault(ppid, []).append(pid)
        if any(k in blob for k in keys):
            marked.add(pid)
    ours = (set(_children(os.getpid(), table)) | marked) - {os.getpid()}
    return sum(_pss_kb(p) for p in ours) // 1024, len(ours)


def measure(env_name: str, instances: int) -> dict[str, Any]:
    tf, _ = env_task_file(env_name)
    task = select_tasks(tf, None)[0]
    options: dict[str, Any] = {}
    declared = env_options_of(env_entry(env_name)) or {}
    if "chromium" in declared:
        options["chromium"] = "/usr/bin/chromium"
    folders: list[Path] = []
    ready: list[Any] = []
    failed: list[BaseException] = []
    done = threading.Event()

    def instance() -> None:
        folder = Path(tempfile.mkdtemp(prefix="msmem", dir="/tmp"))
        folders.append(folder)
        env: Any = create_environment(env_name, workdir=folder / "env", **options)
        try:
            env.start()
            env.reset(task)
            ready.append(env)
            done.wait()
        except BaseException as e:
            failed.append(e)
        finally:
            env.close()

    rows = []
    threads = []
    try:
        for n in range(1, instances + 1):
            t = threading.Thread(target=instance, name=f"instance-{n}")
            t.start()
            threads.append(t)
            while len(ready) < n and not failed:
                time.sleep(0.2)
            if failed:
                raise RuntimeError(f"instance {n} did not start: {failed[0]}")
            time.sleep(2.0)  # what the reset left to settle
            mb, procs = run_pss_mb(folders)
            rows.append({"instances": n, "pss_mb": mb, "processes": procs})
            print(json.dumps({"env": env_name, **rows[-1]}), flush=True)
    finally:
        done.set()
        for t in threads:
            t.join(timeout=120)
    growth = [b["pss_mb"] - a["pss_mb"] for a, b in itertools.pairwise(rows)]
    return {"env": env_name, "task": task.id, "rows": rows, "one_more_mb": growth}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--env", required=True)
    ap.add_argument("--instances", type=int, default=3)
    args = ap.parse_args(argv)
    res = measure(args.env, max(2, args.instances))
    print(json.dumps(res))
    print(f"{args.env}: one more instance adds {res['one_more_mb']} MB "
          f"(the first: {res['rows'][0]['pss_mb']} MB)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
