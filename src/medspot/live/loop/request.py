"""`medspot live run` as a function: tasks and agent in, a run folder out (resumable).

The request's environment (`EnvSpec`: the executor and its Ray address or its container engine
and image, environment options typed by the environment, the task file and ids) was checked
when it was made; the request's own options are checked first (against `medspot.limits`), then
the output folder, then the agent is built (its key, its mode, its files; a replay file held
against the tasks), and only then does the run folder go through the run-folder lifecycle
(`medspot.runfolder.lifecycle`, the same as `eval`'s): the folder is made and locked (one
writer, a second one is refused naming the holder), run.json is checked against an existing one
(the same model, prompt style, history, seed and task file, or the run is refused), the journal
is read back (`ResumeState`), the runner runs what is not finished, and the results are written
from the whole journal (`write_run_results`, which `medspot live serve` shares). run.json is
written only once the request is valid; an error after that leaves it with status "failed" and
the error (an interruption: "interrupted").
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medspot._version import __version__
from medspot.adapters.options import AdapterOptions
from medspot.adapters.retry import MAX_RETRIES
from medspot.errors import ConfigError
from medspot.interrupts import run_async, sigterm_stops
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
from medspot.live.core.episode import MODES, Mode
from medspot.live.core.tasks import LiveTask, LiveTaskFile
from medspot.live.envs.taskfiles import tasks_listing
from medspot.live.loop.envspec import EnvSpec
from medspot.live.loop.livefolder import (
    LiveRunInfo,
    RunLife,
    journal_state,
    live_run_folder,
    now_iso,
    open_journal,
)
from medspot.live.loop.outcomes import TaskResult, task_results
from medspot.live.loop.results import PROTOCOL, write_live_results
from medspot.live.loop.scheduler import HISTORY_MODES, LiveOptions, LiveStats, run_tasks
from medspot.live.loop.steplog import JournalState
from medspot.progress import ProgressEvent
from medspot.runfolder.guard import refuse_foreign_folder
from medspot.runfolder.layout import LIVE_LOG
from medspot.runfolder.runinfo import DatasetInfo, git_revision, package_versions

__all__ = [
    "LiveOutcome",
    "LiveRequest",
    "check_replay",
    "new_run_info",
    "run_live",
    "write_run_results",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class LiveRequest:
    """A live run: its environment (`spec`: the environment, its options, the tasks, the
    executor, spares, ...; checked when made), the model (or an agent), the run folder, how the
    loop runs (`loop`: concurrency, retries, history, mode, seed, budget, repeats, ...) and the
    model's own options.

        LiveRequest(spec=EnvSpec("orthanc-explorer"), model="oracle", out=Path("runs/o"),
                    loop=LiveOptions(concurrency=2, mode="agent"))
    """

    spec: EnvSpec
    model: str
    out: Path
    loop: LiveOptions = field(default_factory=LiveOptions)
    prompt_style: str | None = None  # None: the card's agent prompt in agent mode, else native
    n_boot: int = 2000
    max_retries: int = MAX_RETRIES
    options: AdapterOptions | Mapping[str, Any] = field(default_factory=dict)  # as eval's
    agent: LiveAgent | None = None  # an agent built elsewhere (tests, benchmarks)
    # --planner MODEL --grounder CARD (agent mode): `model` is then the pair's name; the
    # grounder's options are the planner's less those naming one model, then these
    planner: str | None = None
    grounder: str | None = None
    grounder_options: Mapping[str, Any] = field(default_factory=dict)


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


def _run_info(req: LiveRequest, agent: LiveAgent, style: str) -> LiveRunInfo:
    spec, loop = req.spec, req.loop
    return new_run_info(
        env=spec.env, out=req.out, fingerprint=spec.fingerprint, env_options=spec.env_options,
        model=req.model, adapter=agent.describe(), prompt_style=style, history=loop.history,
        seed=loop.seed, mode=loop.mode, repeats=loop.repeats, executor=spec.executor.name,
        tools=spec.tools, container=spec.container_run,
    )  # fmt: skip


def _check_request(req: LiveRequest) -> None:
    """The request's own options (the CLI checks them too; a library caller may not); its
    environment was checked when its `EnvSpec` was made."""
    loop = req.loop
    if loop.history not in HISTORY_MODES:
        raise ConfigError(f"unknown history {loop.history!r} (known: {', '.join(HISTORY_MODES)})")
    if loop.mode not in MODES:
        raise ConfigError(f"unknown mode {loop.mode!r} (known: {', '.join(MODES)})")
    for name, value, least, most in (
        ("--concurrency", loop.concurrency, 1, MAX_CONCURRENCY),
        ("--env-retries", loop.env_retries, 0, MAX_RETRIES_LIMIT),
        ("--max-retries", req.max_retries, 0, MAX_RETRIES_LIMIT),
        ("--repeats", loop.repeats, 1, MAX_REPEATS),
        ("--bootstrap", req.n_boot, 0, MAX_BOOTSTRAP),  # 0: no intervals (the audit)
    ):
        check_whole(name, value, least, most)
    check_seed(loop.seed)
    if loop.max_cost is not None:
        check_number("--max-cost", loop.max_cost)
    _check_pair(req)


def _check_pair(req: LiveRequest) -> None:
    """--planner and --grounder: both, in agent mode, models that can take these parts."""
    if not (req.planner or req.grounder):
        return
    if not (req.planner and req.grounder):
        raise ConfigError("--planner and --grounder go together")
    if req.loop.mode != "agent":
        raise ConfigError("--planner and --grounder plan from the goal: use --mode agent")
    check_planner_grounder(req.planner, req.grounder, req.prompt_style or "native")


def _agent(req: LiveRequest) -> tuple[LiveAgent, str]:
    """The run's agent and the prompt style recorded for it."""
    if req.planner and req.grounder:
        agent = create_planner_grounder(
            req.planner, req.grounder, options=req.options,
            grounder_overrides=req.grounder_options,
            grounder_style=req.prompt_style or "native", concurrency=req.loop.concurrency,
            seed=req.loop.seed, max_retries=req.max_retries,
        )  # fmt: skip
        return agent, f"planner+{req.prompt_style or 'native'}"
    if req.agent is not None:
        return req.agent, req.prompt_style or "native"
    loop = req.loop
    style = live_prompt_style(req.model, loop.mode, req.prompt_style)
    return create_agent(
        req.model, options=req.options, prompt_style=style,
        concurrency=loop.concurrency, seed=loop.seed, max_retries=req.max_retries,
        mode=loop.mode,
    ), style  # fmt: skip


def run_live(
    req: LiveRequest, on_progress: Callable[[ProgressEvent], None] | None = None
) -> LiveOutcome:
    _check_request(req)
    spec = req.spec
    tasks = list(spec.tasks)
    # everything that can be refused is refused before the run folder is made: the
    # environment (its spec: the executor, the environment's options, the tasks), the
    # request's options, the folder (new, empty or this run's), then the agent (its keys, its
    # mode, its replay file)
    refuse_foreign_folder(req.out, before_run=(LIVE_LOG,))
    agent, style = _agent(req)
    started = False  # until the run has the agent, this function closes it
    try:
        check_replay(agent, spec.task_file, tasks, spec.tasks_file)
        with live_run_folder(req.out) as folder:
            life = RunLife(folder, _run_info(req, agent, style))
            life.start()
            info = life.info
            assert isinstance(info, LiveRunInfo)

            def paid_until_now() -> None:  # a failed run's run.json counts the calls it paid
                _count_calls(info, tasks, journal_state(folder))

            # from here on an error or an interruption is recorded in run.json
            with life.failure_recorded(also=paid_until_now):
                state = journal_state(folder)
                log.info(
                    "medspot %s: live run of %s on %s (%s mode, %s executor, %d repeat(s)) "
                    "into %s", __version__, req.model, spec.env, req.loop.mode,
                    spec.executor.name, req.loop.repeats, req.out,
                )  # fmt: skip
                started = True  # from here on the run closes the agent
                return _run_and_write(req, tasks, agent, life, state, on_progress)
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


def _discard(agent: LiveAgent) -> None:
    """Close an agent whose run never started (its clients, its model's threads)."""
    try:
        run_async(agent.aclose)
    except Exception as e:  # closing what was never used must not hide the refusal
        log.debug("closing the unused agent: %s", e)


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


def write_run_results(
    life: RunLife,
    tasks: Sequence[LiveTask],
    *,
    repeats: int,
    n_boot: int,
    seed: int,
    keep: Callable[[TaskResult], bool] | None = None,
    ran_only: bool = False,
) -> tuple[JournalState, list[TaskResult], dict[str, Any]]:
    """The results of a live run folder from its whole journal, and run.json's counts (the
    caller then writes run.json: `life.finish`, or `life.save` for a run still going): what
    `run_live` writes at its end and `medspot live serve` after every episode. `keep` picks the
    task results written (the served agent's: the (task, repeat) it ran); `ran_only` leaves
    out the repeats never started (an interrupted run of K repeats), keeping at least the
    first."""
    info = life.info
    assert isinstance(info, LiveRunInfo)
    state = journal_state(life.folder)
    ran = max(1, state.highest_repeat() + 1) if ran_only else None
    results = task_results(tasks, state, info.env, repeats=repeats, ran=ran)
    if keep is not None:
        results = [r for r in results if keep(r)]
    metrics = write_live_results(life.folder.path, info.env, results, n_boot=n_boot, seed=seed)
    _count_calls(info, tasks, state)
    info.errors = sum(1 for r in results if r.outcome in ("error", "env_error"))
    return state, results, metrics


def _run_and_write(
    req: LiveRequest,
    tasks: list[LiveTask],
    agent: LiveAgent,
    life: RunLife,
    state: JournalState,
    on_progress: Callable[[ProgressEvent], None] | None,
) -> LiveOutcome:
    folder, info = life.folder, life.info
    assert isinstance(info, LiveRunInfo)
    stats = LiveStats()
    interrupted: KeyboardInterrupt | None = None

    async def main() -> LiveStats:
        try:
            return await run_tasks(
                req.spec, tasks, agent, journal, folder.path, req.loop, state, on_progress
            )
        finally:
            await agent.aclose()

    try:
        with sigterm_stops(), open_journal(folder) as journal:
            stats = run_async(main)
    except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM (medspot.interrupts)
        interrupted = e
    # rows and intervals over the repeats that ran (an interrupted run of K repeats builds
    # nothing for the ones never started), at least the first (its tasks: "not run yet")
    state, results, metrics = write_run_results(
        life,
        tasks,
        repeats=req.loop.repeats,
        n_boot=req.n_boot,
        seed=req.loop.seed,
        ran_only=True,
    )
    life.finish(
        complete=all(r.scored for r in results),
        budget_reached=stats.budget_reached,
        interrupted=interrupted,
    )
    given_up = tuple(
        dict.fromkeys(t.id for st in state.repeats.values() for t in tasks if t.id in st.given_up)
    )
    return LiveOutcome(info=info, metrics=metrics, stats=stats, given_up=given_up)
