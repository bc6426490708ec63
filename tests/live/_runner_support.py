"""Helpers of the runner tests: a request from flat keywords (`live_request`), task subsets
as files, the env options of the tests, the processes a test started (found by their parent or
their private folder, never by name), and a command killed in mid-run and resumed
(`KillAndResume`, the `kill_and_resume` fixture)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from _orthanc_support import CHROMIUM

from _children import start
from medspot.live.loop.envspec import EnvSpec, ExecutorSpec
from medspot.live.loop.request import LiveRequest
from medspot.live.loop.scheduler import LiveOptions

ENV = "orthanc-explorer"


def live_request(**kw: Any) -> LiveRequest:
    """A `LiveRequest` from flat keywords, each to its home: the environment's (`EnvSpec`; its
    executor's as `executor`, `ray_address`, `ray_cpus_per_env`), the loop's (`LiveOptions`),
    else the request's own."""

    def take(names: Sequence[str]) -> dict[str, Any]:
        return {n: kw.pop(n) for n in names if n in kw}

    executor = take(("ray_address", "ray_cpus_per_env"))
    if "executor" in kw:
        executor["name"] = kw.pop("executor")
    spec = take([f.name for f in fields(EnvSpec) if f.init])
    loop = take([f.name for f in fields(LiveOptions)])
    return LiveRequest(spec=EnvSpec(**spec, executor=ExecutorSpec(**executor)),
                       loop=LiveOptions(**loop), **kw)  # fmt: skip


def packaged_tasks(env: str = ENV) -> dict[str, Any]:
    """The environment's packaged tasks (all its files) as one task file's JSON."""
    from medspot.live.envs.taskfiles import env_task_file

    tf, _ = env_task_file(env)
    data: dict[str, Any] = tf.model_dump(mode="json", exclude_defaults=True)
    data["env"] = env
    return data


def subset_file(
    path: Path, ids: list[str], *, max_steps: int | None = None, env: str = ENV
) -> Path:
    """A task file with only `ids` (in that order), optionally with a smaller budget."""
    data = packaged_tasks(env)
    by_id = {t["id"]: t for t in data["tasks"]}
    tasks = []
    for i in ids:
        t = dict(by_id[i])
        if max_steps is not None:
            t["max_steps"] = max_steps
        tasks.append(t)
    path.write_text(json.dumps({**data, "tasks": tasks}), encoding="utf-8")
    return path


def env_options(seed_cache: Path) -> dict[str, Any]:
    return {"chromium": CHROMIUM, "seed_cache": seed_cache}


def _proc_info(pid: int) -> tuple[int, str] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return None
    ppid = int(stat.rsplit(")", 1)[1].split()[1])
    return ppid, cmd


def processes_mentioning(text: str) -> list[int]:
    """Processes whose command line names `text` (a test's own private folder)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid():
            info = _proc_info(int(d))
            if info is not None and text in info[1]:
                out.append(int(d))
    return out


def processes_of(folder: Path) -> list[int]:
    """Processes whose command line or environment names `folder` (a test's private folder,
    e.g. the TMPDIR a run was given: its children inherit it)."""
    key = str(folder).encode()
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{d}/cmdline").read_bytes()
            environ = Path(f"/proc/{d}/environ").read_bytes()
        except OSError:
            continue
        if key in cmd or key in environ:
            out.append(int(d))
    return out


def descendants(root: int) -> list[int]:
    """Every process below `root` (by parent links), e.g. what a killed CLI run left."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            info = _proc_info(int(d))
            if info is not None:
                children.setdefault(info[0], []).append(int(d))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        for c in children.get(p, []):
            out.append(c)
            todo.append(c)
    return out


def kill(pids: list[int], sig: int = signal.SIGKILL) -> None:
    for p in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, sig)


def steps_journaled(journal: Path) -> int:
    """How many step lines a live journal holds (0: not written yet)."""
    return journal.read_bytes().count(b'"type":"step"') if journal.exists() else 0


@dataclass(frozen=True)
class KillAndResume:
    """A `medspot` command (`cmd`, its environment `env`, its environments' private folders
    under `workroot`) killed in mid-run and run again: `kill_when(until)` starts it as a child
    (`_children.start`: SIGINT and SIGTERM at their defaults) and, once `until()` holds while
    it runs, SIGKILLs it, everything below it and whatever
    still runs from `workroot`; `resume()` runs the same command again to its end."""

    cmd: Sequence[str]
    env: Mapping[str, str]
    workroot: Path

    def kill_when(self, until: Callable[[], bool], timeout_s: float = 300.0) -> None:
        proc = start(self.cmd, env=dict(self.env), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and proc.poll() is None and not until():
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()[1].decode()[-3000:]
        below = descendants(proc.pid)
        kill([proc.pid])
        proc.communicate()
        kill(below)
        kill(processes_mentioning(str(self.workroot)))

    def resume(self, timeout_s: float = 600.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(self.cmd), env=dict(self.env), capture_output=True, text=True, timeout=timeout_s
        )
