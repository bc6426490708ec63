"""`medspot live run` as a function: tasks and agent in, a run folder out (resumable).

run.json is checked against an existing one (the same model, prompt style, history, seed and
task file, or the run is refused), the journal is read back (`ResumeState`), the runner runs
what is not finished, and the results are written from the whole journal.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medspot.adapters.options import AdapterOptions
from medspot.errors import ConfigError
from medspot.live.agents.factory import create_agent
from medspot.live.agents.turn import LiveAgent
from medspot.live.core.episode import Mode
from medspot.live.core.taskfiles import env_task_file, select_tasks
from medspot.live.loop.executors import check_executor_options
from medspot.live.loop.executors.base import DEFAULT_CALL_TIMEOUT_S
from medspot.live.loop.outcomes import task_results
from medspot.live.loop.results import PROTOCOL, write_live_results
from medspot.live.loop.scheduler import LiveOptions, LiveStats, run_tasks
from medspot.live.loop.static_bridge import (
    RUN_JSON,
    DatasetInfo,
    LineJournal,
    RunInfo,
    atomic_write_json,
    git_revision,
    now_iso,
    package_versions,
)
from medspot.live.loop.steplog import JOURNAL_NAME, ResumeState, read_live_journal
from medspot.progress import ProgressEvent

__all__ = [
    "LiveOutcome",
    "LiveRequest",
    "run_live",
]


@dataclass(frozen=True)
class LiveRequest:
    env: str
    model: str
    out: Path
    task_ids: tuple[str, ...] = ()
    tasks_file: Path | None = None
    concurrency: int = 1
    env_retries: int = 2
    history: str = "actions"
    mode: Mode = "guided"  # guided: the current step's instruction; agent: the goal only
    prompt_style: str = "native"
    seed: int = 0
    n_boot: int = 2000
    max_retries: int = 4
    options: AdapterOptions | Mapping[str, Any] = field(default_factory=dict)  # as eval's
    env_options: Mapping[str, Any] = field(default_factory=dict)
    agent: LiveAgent | None = None  # an agent built elsewhere (tests, benchmarks)
    workroot: Path | None = None  # parent of the environments' private folders
    executor: str = "threads"  # where environments run: threads | ray (`loop.executors`)
    ray_address: str | None = None  # ray: None starts a local cluster; "auto" / HOST:PORT
    ray_cpus_per_env: float | None = None  # ray: CPUs per environment actor (None: default)
    call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S  # a call that never returns is a fault


@dataclass(frozen=True)
class LiveOutcome:
    info: RunInfo
    metrics: dict[str, Any]
    stats: LiveStats


def _run_info(req: LiveRequest, agent: LiveAgent, fingerprint: str) -> RunInfo:
    info = RunInfo(
        model=req.model,
        adapter=agent.describe(),
        protocol=PROTOCOL,
        prompt_style=req.prompt_style,
        history=req.history,
        seed=req.seed,
        dataset=DatasetInfo(
            source=f"live:{req.env}",
            root=str(req.out.resolve()),
            fingerprint=fingerprint,
            apps=[req.env],
        ),
        versions=package_versions(),
        git_revision=git_revision(),
        started=now_iso(),
    )
    env_opts = {
        k: v if isinstance(v, str | int | float | bool) or v is None else str(v)
        for k, v in req.env_options.items()
    }
    extra = {"kind": "live", "env": req.env, "env_options": env_opts, "mode": req.mode,
             "executor": req.executor}  # fmt: skip
    for k, v in extra.items():
        setattr(info, k, v)
    return info


def run_live(
    req: LiveRequest, on_progress: Callable[[ProgressEvent], None] | None = None
) -> LiveOutcome:
    check_executor_options(req.executor, req.ray_address, req.ray_cpus_per_env)
    tf, fingerprint = env_task_file(req.env, req.tasks_file)
    tasks = select_tasks(tf, req.task_ids)
    out = req.out
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"cannot create the output folder {out}: {e.strerror or e}") from None
    journal_path = out / JOURNAL_NAME
    run_json = out / RUN_JSON
    if not run_json.exists() and any(p.name != ".lock" for p in out.iterdir()):
        raise ConfigError(f"{out} is not empty and is not a live run folder; use another --out")
    agent = req.agent or create_agent(
        req.model, options=req.options, prompt_style=req.prompt_style,
        concurrency=req.concurrency, seed=req.seed, max_retries=req.max_retries,
    )  # fmt: skip
    info = _run_info(req, agent, fingerprint)
    if run_json.exists():
        previous = RunInfo.load(run_json)
        problems = previous.mismatches(info)
        if getattr(previous, "env", None) != req.env:
            problems.append(f"env: run folder has {getattr(previous, 'env', None)!r}")
        before = getattr(previous, "mode", None) or "guided"  # folders older than modes
        if before != req.mode:
            problems.append(f"mode: run folder has {before!r}, this command asks {req.mode!r}")
        if problems:
            raise ConfigError(
                f"{out} holds a run made with other settings; use another --out, or delete "
                "the folder to start again:\n  " + "\n  ".join(problems)
            )
        info.started = previous.started or info.started
    state = ResumeState.from_records(list(read_live_journal(journal_path)))
    atomic_write_json(run_json, info.model_dump())
    opts = LiveOptions(
        env=req.env, env_options=req.env_options, concurrency=req.concurrency,
        env_retries=req.env_retries, history=req.history, seed=req.seed, workroot=req.workroot,
        mode=req.mode, executor=req.executor, ray_address=req.ray_address,
        ray_cpus_per_env=req.ray_cpus_per_env, call_timeout_s=req.call_timeout_s,
    )  # fmt: skip
    stats = LiveStats()
    interrupted = False

    async def main() -> LiveStats:
        try:
            return await run_tasks(tasks, agent, journal, out, opts, state, on_progress)
        finally:
            await agent.aclose()

    previous_handler = None
    try:
        previous_handler = signal.getsignal(signal.SIGTERM)
        signal.signal(signal.SIGTERM, signal.default_int_handler)
    except ValueError:  # not the main thread
        previous_handler = None
    try:
        with LineJournal(journal_path) as journal:
            stats = asyncio.run(main())
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if previous_handler is not None:
            signal.signal(signal.SIGTERM, previous_handler)
    state = ResumeState.from_records(list(read_live_journal(journal_path)))
    results = task_results(tasks, state, req.env)
    metrics = write_live_results(out, req.env, results, n_boot=req.n_boot, seed=req.seed)
    asked = [
        s
        for t in tasks
        for steps in state.steps.get(t.id, {}).values()
        for s in steps
        if not s.replayed
    ]
    info.calls = len(asked)
    info.errors = sum(1 for r in results if r.outcome in ("error", "env_error"))
    costs = [s.cost_usd for s in asked if s.cost_usd is not None]
    info.cost_usd = round(sum(costs), 6) if costs else None
    info.finished = now_iso()
    if interrupted:
        info.status = "interrupted"
    else:
        info.status = "complete" if all(r.scored for r in results) else "incomplete"
    atomic_write_json(run_json, info.model_dump())
    if interrupted:
        raise KeyboardInterrupt
    return LiveOutcome(info=info, metrics=metrics, stats=stats)
