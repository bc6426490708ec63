"""`medspot live run` as a function: tasks and agent in, a run folder out (resumable).

The request is checked first (options against `medspot.limits`, the executor and its Ray
address, environment options typed by the environment, the task file and ids, the output
folder), the agent is built (its key, its mode, its files; a replay file held against the
tasks), and only then is the run folder made and locked (one writer: `run_folder_lock`, a second
writer is refused naming the holder), run.json is checked against an existing one (the same
model, prompt style, history, seed and task file, or the run is refused), the journal is read
back (`ResumeState`), the runner runs what is not finished, and the results are written from
the whole journal. run.json is written only once the request is valid; an error after that
leaves it with status "failed" and the error (an interruption: "interrupted").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medspot._version import __version__
from medspot.adapters.options import AdapterOptions
from medspot.adapters.retry import MAX_RETRIES
from medspot.errors import ConfigError
from medspot.interrupts import sigterm_stops
from medspot.limits import (
    MAX_BOOTSTRAP,
    MAX_CONCURRENCY,
    MAX_REPEATS,
    MAX_RETRIES_LIMIT,
    check_number,
    check_seed,
    check_whole,
)
from medspot.live.agents.factory import (
    check_planner_grounder,
    create_agent,
    create_planner_grounder,
    live_prompt_style,
)
from medspot.live.agents.scripted import ReplayAgent
from medspot.live.agents.turn import LiveAgent
from medspot.live.core.envoptions import check_env_options, check_viewport
from medspot.live.core.episode import MODES, Mode
from medspot.live.core.taskfiles import env_task_file, select_tasks, tasks_listing
from medspot.live.core.tasks import LiveTask, LiveTaskFile
from medspot.live.envs.toolsets import toolset_info
from medspot.live.loop.executors import ExecutorName, check_executor_options
from medspot.live.loop.executors.base import DEFAULT_CALL_TIMEOUT_S
from medspot.live.loop.outcomes import TaskResult, task_results
from medspot.live.loop.results import LIVE_LOG, PROTOCOL, write_live_results
from medspot.live.loop.scheduler import HISTORY_MODES, LiveOptions, LiveStats, run_tasks
from medspot.live.loop.static_bridge import (
    LOCK,
    RUN_JSON,
    DatasetInfo,
    LineJournal,
    LiveRunInfo,
    RunInfo,
    atomic_write_json,
    git_revision,
    now_iso,
    package_versions,
    record_failed_run,
    run_folder_lock,
)
from medspot.live.loop.steplog import JOURNAL_NAME, JournalState, read_live_journal
from medspot.progress import ProgressEvent

__all__ = [
    "LiveOutcome",
    "LiveRequest",
    "check_replay",
    "new_run_info",
    "prepare_run_folder",
    "run_live",
    "write_run_results",
]

log = logging.getLogger(__name__)


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
    prompt_style: str | None = None  # None: the card's agent prompt in agent mode, else native
    seed: int = 0
    n_boot: int = 2000
    max_retries: int = MAX_RETRIES
    options: AdapterOptions | Mapping[str, Any] = field(default_factory=dict)  # as eval's
    env_options: Mapping[str, Any] = field(default_factory=dict)
    agent: LiveAgent | None = None  # an agent built elsewhere (tests, benchmarks)
    workroot: Path | None = None  # parent of the environments' private folders
    max_cost: float | None = None  # USD: stop starting model calls once spent (resumable)
    retry_env_errors: bool = False  # run again tasks given up on (their fault recurred)
    repeats: int = 1  # runs of each task, each on a freshly reset environment (pass@k, pass^k)
    executor: ExecutorName = "threads"  # where environments run: threads | ray (`executors`)
    ray_address: str | None = None  # ray: None starts a local cluster; "auto" / HOST:PORT
    ray_cpus_per_env: float | None = None  # ray: CPUs per environment actor (None: default)
    call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S  # a call that never returns is a fault
    start_checks: bool = False  # read every check at each task's start (the audit)
    # --planner MODEL --grounder CARD (agent mode): `model` is then the pair's name; the
    # grounder's options are the planner's less those naming one model, then these
    planner: str | None = None
    grounder: str | None = None
    grounder_options: Mapping[str, Any] = field(default_factory=dict)
    tools: str | None = None  # the tools track: a toolset offered beside the GUI (`orthanc`)


@dataclass(frozen=True)
class LiveOutcome:
    info: LiveRunInfo
    metrics: dict[str, Any]
    stats: LiveStats
    # tasks ended as environment errors whose fault recurs: a resume does not run them again
    # unless `retry_env_errors`
    given_up: tuple[str, ...] = ()


def new_run_info(
    *,
    env: str,
    out: Path,
    fingerprint: str,
    env_options: Mapping[str, Any],
    model: str,
    adapter: dict[str, Any],
    prompt_style: str,
    history: str,
    seed: int,
    mode: Mode,
    **live: Any,
) -> LiveRunInfo:
    """run.json of a live run starting now (`run_live`'s, and `medspot live serve`'s); `live`
    holds further `LiveRunInfo` fields (repeats, executor, tools, served)."""
    env_opts = {
        k: v if isinstance(v, str | int | float | bool) or v is None else str(v)
        for k, v in env_options.items()
    }
    return LiveRunInfo(
        model=model,
        adapter=adapter,
        protocol=PROTOCOL,
        prompt_style=prompt_style,
        history=history,
        seed=seed,
        dataset=DatasetInfo(
            source=f"live:{env}",
            root=str(out.resolve()),
            fingerprint=fingerprint,
            apps=[env],
        ),
        versions=package_versions(),
        git_revision=git_revision(),
        started=now_iso(),
        env=env,
        env_options=env_opts,
        mode=mode,
        **live,
    )


def _run_info(
    req: LiveRequest,
    agent: LiveAgent,
    fingerprint: str,
    env_options: Mapping[str, Any],
    style: str,
) -> LiveRunInfo:
    return new_run_info(
        env=req.env, out=req.out, fingerprint=fingerprint, env_options=env_options,
        model=req.model, adapter=agent.describe(), prompt_style=style, history=req.history,
        seed=req.seed, mode=req.mode, repeats=req.repeats, executor=req.executor,
        tools=req.tools,
    )  # fmt: skip


def _check_request(req: LiveRequest) -> None:
    """The request's own options (the CLI checks them too; a library caller may not)."""
    if req.history not in HISTORY_MODES:
        raise ConfigError(f"unknown history {req.history!r} (known: {', '.join(HISTORY_MODES)})")
    if req.mode not in MODES:
        raise ConfigError(f"unknown mode {req.mode!r} (known: {', '.join(MODES)})")
    for name, value, least, most in (
        ("--concurrency", req.concurrency, 1, MAX_CONCURRENCY),
        ("--env-retries", req.env_retries, 0, MAX_RETRIES_LIMIT),
        ("--max-retries", req.max_retries, 0, MAX_RETRIES_LIMIT),
        ("--repeats", req.repeats, 1, MAX_REPEATS),
        ("--bootstrap", req.n_boot, 0, MAX_BOOTSTRAP),  # 0: no intervals (the audit)
    ):
        check_whole(name, value, least, most)
    check_seed(req.seed)
    if req.max_cost is not None:
        check_number("--max-cost", req.max_cost)
    _check_pair(req)


# Files a fresh run folder may hold before its run.json (the lock; the log, opened lazily)
_BEFORE_RUN_JSON = frozenset({LOCK, LIVE_LOG})


def _check_pair(req: LiveRequest) -> None:
    """--planner and --grounder: both, in agent mode, models that can take these parts."""
    if not (req.planner or req.grounder):
        return
    if not (req.planner and req.grounder):
        raise ConfigError("--planner and --grounder go together")
    if req.mode != "agent":
        raise ConfigError("--planner and --grounder plan from the goal: use --mode agent")
    check_planner_grounder(req.planner, req.grounder, req.prompt_style or "native")


def _agent(req: LiveRequest) -> tuple[LiveAgent, str]:
    """The run's agent and the prompt style recorded for it."""
    if req.planner and req.grounder:
        agent = create_planner_grounder(
            req.planner, req.grounder, options=req.options,
            grounder_overrides=req.grounder_options,
            grounder_style=req.prompt_style or "native", concurrency=req.concurrency,
            seed=req.seed, max_retries=req.max_retries,
        )  # fmt: skip
        return agent, f"planner+{req.prompt_style or 'native'}"
    if req.agent is not None:
        return req.agent, req.prompt_style or "native"
    style = live_prompt_style(req.model, req.mode, req.prompt_style)
    return create_agent(
        req.model, options=req.options, prompt_style=style,
        concurrency=req.concurrency, seed=req.seed, max_retries=req.max_retries, mode=req.mode,
    ), style  # fmt: skip


def write_run_results(
    out: Path,
    tasks: Sequence[LiveTask],
    info: LiveRunInfo,
    *,
    repeats: int,
    n_boot: int,
    seed: int,
    status: str | None = None,
    keep: Callable[[TaskResult], bool] | None = None,
    ran_only: bool = False,
) -> tuple[JournalState, list[TaskResult], dict[str, Any]]:
    """The results of a live run folder from its whole journal, and run.json's counts and
    status (`status`, else complete or incomplete): what `run_live` writes at its end and
    `medspot live serve` after every episode. `keep` picks the task results written (the
    served agent's: the (task, repeat) it ran); `ran_only` leaves out the repeats never
    started (an interrupted run of K repeats), keeping at least the first."""
    state = JournalState.from_records(list(read_live_journal(out / JOURNAL_NAME)))
    ran = max(1, state.highest_repeat() + 1) if ran_only else None
    results = task_results(tasks, state, info.env, repeats=repeats, ran=ran)
    if keep is not None:
        results = [r for r in results if keep(r)]
    metrics = write_live_results(out, info.env, results, n_boot=n_boot, seed=seed)
    _count_calls(info, tasks, state)
    info.errors = sum(1 for r in results if r.outcome in ("error", "env_error"))
    info.finished = now_iso()
    info.status = status or ("complete" if all(r.scored for r in results) else "incomplete")
    atomic_write_json(out / RUN_JSON, info.model_dump())
    return state, results, metrics


def run_live(
    req: LiveRequest, on_progress: Callable[[ProgressEvent], None] | None = None
) -> LiveOutcome:
    """Everything that can be refused is refused before the run folder is made: the options,
    the executor (a Ray address is reached first), the environment's options, the tasks, the
    folder (`--out` must be new, empty or this run's), then the agent is built (its keys, its
    mode, its replay file); only then is the folder created and locked."""
    _check_request(req)
    check_executor_options(req.executor, req.ray_address, req.ray_cpus_per_env)
    if req.tools is not None:
        toolset_info(req.env, req.tools)
    env_options = check_env_options(req.env, req.env_options)
    tf, fingerprint = env_task_file(req.env, req.tasks_file)
    tasks = select_tasks(tf, req.task_ids, req.tasks_file)
    check_viewport(env_options, tasks)
    out = req.out
    _refuse_foreign_folder(out)
    agent, style = _agent(req)
    started = False  # from here on the run closes the agent
    try:
        check_replay(agent, tf, tasks, req.tasks_file)
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ConfigError(f"cannot create the output folder {out}: {e.strerror or e}") from None
        with run_folder_lock(out):
            _refuse_foreign_folder(out)  # filled meanwhile by another process
            info, state = _open_run(req, agent, fingerprint, env_options, style)
            started = True
            return _run_locked(req, tasks, agent, info, state, env_options, on_progress)
    finally:
        if not started and req.agent is None:  # a caller's own agent stays the caller's
            _discard(agent)


def check_replay(
    agent: LiveAgent, tf: LiveTaskFile, tasks: Sequence[LiveTask], tasks_file: Path | None
) -> None:
    """A replay agent's file against the run's tasks: a task named nowhere is refused, lines
    for tasks not run and tasks run without a line are warned of (`ReplayAgent.check_tasks`)."""
    if not isinstance(agent, ReplayAgent):
        return
    known = [t.id for t in tf.tasks]
    where = str(tasks_file) + "'s tasks" if tasks_file else f"the packaged {tf.env} tasks"
    listing = tasks_listing(tf.env, tasks_file)
    for warning in agent.check_tasks(known, [t.id for t in tasks], where=where, listing=listing):
        log.warning("%s", warning)


def _refuse_foreign_folder(out: Path) -> None:
    """`--out` must be missing, empty, or a live run folder (it holds run.json)."""
    if not out.exists():
        return
    if not out.is_dir():
        raise ConfigError(f"--out {out} is a file, not a folder")
    if (out / RUN_JSON).exists():
        return
    try:
        foreign = sorted(p.name for p in out.iterdir() if p.name not in _BEFORE_RUN_JSON)
    except OSError as e:
        raise ConfigError(f"cannot read --out {out}: {e.strerror or e}") from None
    if foreign:
        raise ConfigError(f"{out} is not empty and is not a live run folder; use another --out")


def prepare_run_folder(
    out: Path, info: LiveRunInfo, *, ignore: tuple[str, ...] = ()
) -> JournalState:
    """A locked live run folder made ready for `info`'s run (`run_live`, and `medspot live
    serve`'s episodes): a folder that holds something else is refused, an existing run.json
    must have the same settings (but `ignore`'s keys), the journal is read back and run.json
    written (keeping the first start time)."""
    run_json = out / RUN_JSON
    if not run_json.exists() and any(p.name not in _BEFORE_RUN_JSON for p in out.iterdir()):
        raise ConfigError(f"{out} is not empty and is not a live run folder; use another --out")
    if run_json.exists():
        previous = LiveRunInfo.of(RunInfo.load(run_json))
        if previous is None:
            raise ConfigError(f"{out} holds a static run, not a live one; use another --out")
        problems = [p for p in previous.mismatches(info) if p.partition(":")[0] not in ignore]
        if problems:
            raise ConfigError(
                f"{out} holds a run made with other settings; use another --out, or delete "
                "the folder to start again:\n  " + "\n  ".join(problems)
            )
        info.started = previous.started or info.started
    state = JournalState.from_records(list(read_live_journal(out / JOURNAL_NAME)))
    atomic_write_json(run_json, info.model_dump())
    return state


def _discard(agent: LiveAgent) -> None:
    """Close an agent whose run never started (its clients, its model's threads)."""
    try:
        asyncio.run(agent.aclose())
    except Exception as e:  # closing what was never used must not hide the refusal
        log.debug("closing the unused agent: %s", e)


def _open_run(
    req: LiveRequest,
    agent: LiveAgent,
    fingerprint: str,
    env_options: dict[str, Any],
    style: str,
) -> tuple[LiveRunInfo, JournalState]:
    """run.json checked against an existing one and written; the journal read back."""
    out = req.out
    info = _run_info(req, agent, fingerprint, env_options, style)
    state = prepare_run_folder(out, info)
    log.info(
        "medspot %s: live run of %s on %s (%s mode, %s executor, %d repeat(s)) into %s",
        __version__, req.model, req.env, req.mode, req.executor, req.repeats, out,
    )  # fmt: skip
    return info, state


def _run_locked(
    req: LiveRequest,
    tasks: list[LiveTask],
    agent: LiveAgent,
    info: LiveRunInfo,
    state: JournalState,
    env_options: dict[str, Any],
    on_progress: Callable[[ProgressEvent], None] | None,
) -> LiveOutcome:
    out = req.out
    opts = LiveOptions(
        env=req.env, env_options=env_options, concurrency=req.concurrency,
        env_retries=req.env_retries, history=req.history, seed=req.seed, workroot=req.workroot,
        mode=req.mode, max_cost=req.max_cost, retry_env_errors=req.retry_env_errors,
        repeats=req.repeats,
        executor=req.executor, ray_address=req.ray_address,
        ray_cpus_per_env=req.ray_cpus_per_env, call_timeout_s=req.call_timeout_s,
        start_checks=req.start_checks, tools=req.tools,
    )  # fmt: skip
    try:
        return _run_and_write(req, tasks, agent, info, opts, state, on_progress)
    except Exception as e:  # run.json says why the run stopped, not "running"
        journal_path = out / JOURNAL_NAME
        try:  # and the calls paid until then
            journaled = list(read_live_journal(journal_path))
            _count_calls(info, tasks, JournalState.from_records(journaled))
        except Exception as again:  # the journal itself may be what failed
            log.warning("%s: cannot count the calls: %s", journal_path, again)
        record_failed_run(out / RUN_JSON, info, e)
        raise


def _count_calls(info: LiveRunInfo, tasks: Sequence[LiveTask], state: JournalState) -> None:
    """run.json's `calls` (every paid model call journaled, a computer-use turn's API calls
    each) and `cost_usd`."""
    asked = [
        s
        for repeat in state.repeats.values()
        for t in tasks
        for steps in repeat.steps.get(t.id, {}).values()
        for s in steps
        if not s.replayed
    ]
    info.calls = sum(s.calls_made for s in asked)
    costs = [s.cost_usd for s in asked if s.cost_usd is not None]
    info.cost_usd = round(sum(costs), 6) if costs else None


def _run_and_write(
    req: LiveRequest,
    tasks: list[LiveTask],
    agent: LiveAgent,
    info: LiveRunInfo,
    opts: LiveOptions,
    state: JournalState,
    on_progress: Callable[[ProgressEvent], None] | None,
) -> LiveOutcome:
    out = req.out
    journal_path = out / JOURNAL_NAME
    stats = LiveStats()
    interrupted: KeyboardInterrupt | None = None

    async def main() -> LiveStats:
        try:
            return await run_tasks(tasks, agent, journal, out, opts, state, on_progress)
        finally:
            await agent.aclose()

    try:
        with sigterm_stops(), LineJournal(journal_path) as journal:
            stats = asyncio.run(main())
    except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM (medspot.interrupts)
        interrupted = e
    status = (
        "interrupted" if interrupted is not None
        else "budget_reached" if stats.budget_reached
        else None
    )  # fmt: skip
    # rows and intervals over the repeats that ran (an interrupted run of K repeats builds
    # nothing for the ones never started), at least the first (its tasks: "not run yet")
    state, _, metrics = write_run_results(
        out,
        tasks,
        info,
        repeats=req.repeats,
        n_boot=req.n_boot,
        seed=req.seed,
        status=status,
        ran_only=True,
    )
    if interrupted is not None:
        raise interrupted
    given_up = tuple(
        dict.fromkeys(t.id for st in state.repeats.values() for t in tasks if t.id in st.given_up)
    )
    return LiveOutcome(info=info, metrics=metrics, stats=stats, given_up=given_up)
