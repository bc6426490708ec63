"""Episodes driven from outside: an agent that brings its own loop (an MCP client, an OpenEnv
trainer) starts tasks and sends actions; the host runs them through the same `Episode` as
`medspot live run` and journals them into a run folder exactly as `live run` writes it
(`live_journal.jsonl`, screens, task rows, metrics: `medspot report`, `leaderboard` and
`compare` take it like any other live run).

- The run folder goes through the run-folder lifecycle of `live run` and `eval`
  (`medspot.runfolder.lifecycle`: one writer, held for the server's life; the same settings on
  a resumed folder, checked once the first client is known: run.json records the client's name
  and version as the model). The results are written after every episode
  (`loop.request.write_run_results`, over the (task, repeat) the agent ran; run.json says
  "running") and once more when the server stops.
- Each start of a task is the next repeat of that task in the folder (`@N` in the rows when a
  task ran more than once), on a freshly reset environment.
- `concurrency` environments side by side (each a `ThreadSlot`: one environment and the one
  thread that touches it; no spare instance, as `live run --no-spare`: the next task is the
  agent's choice, so each start is a reset); with one, the calls need not name the episode.
- An episode the agent leaves (a disconnect, a new task started over it, the server stopping)
  ends as `abandoned`: scored, never a success. An environment fault ends it as an environment
  error (not scored); the agent may start the task again.
- Every episode belongs to the caller that started it (`ClientInfo.key`: the front's session,
  `medspot.live.serve.episodes`): a call naming another caller's episode gets the answer an
  unknown episode gets, and nothing is executed or journaled. An episode that ended is
  remembered for its owner: naming it again says how it ended ("was abandoned: no call for
  600 s").
- Whatever action an agent sends goes through `Episode.step`: one it cannot execute (off the
  screen, a key the driver lacks, a tool the task is not offered: `core.executable`) is a
  scored no-action step (`executed: false`, its `not_executable:<why>` flag and reason).
- A call that is no action of a running episode (no task started, an unknown task or episode,
  an episode that has ended) is a `ServeError` with a message for the agent, worded in the
  front's own verbs (`Hints`); nothing is journaled and the host goes on. A start when every
  environment is taken first waits up to `FREE_WAIT_S` for one to be given back (a client that
  closed its session a moment ago, a disconnect still on its way) before it says the
  environments are busy.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medspot.errors import ConfigError, MedspotError
from medspot.limits import MIN_IDLE_TIMEOUT_S
from medspot.live.core.actions import LiveAction, action_to_json
from medspot.live.core.contract import EnvironmentFault, Observation
from medspot.live.core.episode import MODES, Episode, Mode, StepResult
from medspot.live.core.rewards import START, EpisodeScore, step_rewards
from medspot.live.core.tasks import LiveTask
from medspot.live.core.tools import ToolReach, ToolSpec
from medspot.live.envs.envoptions import check_env_options, check_viewport
from medspot.live.envs.taskfiles import env_task_file, select_tasks
from medspot.live.envs.toolsets import offered_tools, tools_fields, toolset_info
from medspot.live.loop.executors.base import DEFAULT_CALL_TIMEOUT_S, SlotConfig, episode_tools
from medspot.live.loop.executors.threads import ThreadSlot
from medspot.live.loop.livefolder import (
    Journal,
    LiveRunInfo,
    RunFolder,
    RunLife,
    journal_state,
    live_run_folder,
    now_iso,
    save_screen,
)
from medspot.live.loop.outcomes import TaskResult
from medspot.live.loop.request import new_run_info, write_run_results
from medspot.live.loop.steplog import FaultRecord, JournalState, StepRecord, TaskRecord
from medspot.live.serve.episodes import EpisodeBook, new_episode_id
from medspot.spelling import suggestion

__all__ = ["ClientInfo", "EpisodeHost", "Hints", "ServeError", "ServeOptions", "Turn"]

log = logging.getLogger(__name__)

MAX_WAIT_S = 10.0  # the longest `wait` an agent may ask for
# how long a start waits for an environment that is ending (a client that has just left: its
# disconnect reaches the server a moment after the client goes on) before it answers "busy"
FREE_WAIT_S = 5.0


class ServeError(MedspotError):
    """A call the host cannot serve (the agent's mistake): its message is for the agent."""


@dataclass(frozen=True)
class ServeOptions:
    env: str
    out: Path
    mode: Mode = "agent"  # agent: the goal only; guided: also the current step's instruction
    concurrency: int = 1  # environments side by side (episodes at once)
    task_ids: tuple[str, ...] = ()  # the tasks offered (default: all of the task file)
    tasks_file: Path | None = None
    env_options: Mapping[str, Any] = field(default_factory=dict)
    tools: str | None = None  # the tools track (`orthanc`), or GUI actions only
    workroot: Path | None = None
    call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S
    n_boot: int = 2000
    seed: int = 0
    protocol: str = "mcp"  # how agents come in: "mcp" or "openenv" (run.json `served`)


@dataclass(frozen=True)
class Hints:
    """How an agent of one front does what the host's messages point it to: each protocol
    words its own verbs (an OpenEnv agent has no `start_task`, an MCP agent no `reset`)."""

    start: str = "start a task"  # "no task started: {start} first"
    tasks: str = ""  # where the task ids are listed (none: the message gives examples only)
    end: str = "end it"  # how an episode is ended
    episode: str = ""  # how a call names its episode
    agent: str = "its name and version"  # where the client says who it is (run.json's model)


@dataclass(frozen=True)
class ClientInfo:
    """Who drives the episodes: the client's name and version (run.json's model), and `key`,
    one connection (its episodes end as abandoned when it goes)."""

    name: str
    version: str = ""
    key: str = ""

    @property
    def model(self) -> str:
        return f"{self.name} {self.version}".strip() or "unknown-client"


@dataclass(frozen=True)
class Turn:
    """What the agent is told after `start` or an action: the screen and where the episode is;
    `result` is the step's (None after a start or a wait)."""

    episode: str
    task: LiveTask
    mode: Mode
    observation: Observation
    n: int
    instruction: str | None
    tools: tuple[ToolSpec, ...]
    reach: ToolReach | None
    result: StepResult | None = None
    ended: bool = False
    outcome: str | None = None
    reason: str = ""
    note: str = ""  # what the host did besides (an episode abandoned by this start)
    # the step's reward under each of `core.rewards.REWARDS` (none after a start or a wait)
    rewards: Mapping[str, float] = field(default_factory=dict)

    @property
    def goal(self) -> str:
        return self.task.instruction

    @property
    def budget(self) -> int:
        return self.task.budget


@dataclass
class _Running:
    id: str
    task: LiveTask
    repeat: int
    slot: ThreadSlot
    ep: Episode
    client: ClientInfo
    screen: str  # sha of the screen the agent sees now
    tools: tuple[ToolSpec, ...]
    reach: ToolReach | None
    started: float = field(default_factory=time.perf_counter)
    last_call: float = field(default_factory=time.monotonic)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    ended: bool = False
    standing: EpisodeScore = START  # where the episode stands for the rewards

    @property
    def owner(self) -> str:
        """The caller key of the client that started it: only that caller reaches it."""
        return self.client.key


class EpisodeHost:
    """The episodes of one server and its run folder. Use from one asyncio loop:
    `await open()`, then `start` / `act` / `wait` / `abandon`, `await close()` at the end."""

    def __init__(self, opts: ServeOptions, hints: Hints | None = None) -> None:
        if opts.mode not in MODES:
            raise ConfigError(f"unknown mode {opts.mode!r} (known: {', '.join(MODES)})")
        if opts.concurrency < 1:
            raise ConfigError(f"--concurrency {opts.concurrency}: must be 1 or more")
        if opts.tools is not None:
            toolset_info(opts.env, opts.tools)
        self.opts = opts
        self.hints = hints or Hints()
        self.env_options = check_env_options(opts.env, opts.env_options)
        tf, self.fingerprint = env_task_file(opts.env, opts.tasks_file)
        self.tasks = select_tasks(tf, opts.task_ids)
        check_viewport(self.env_options, self.tasks)
        self._by_id = {t.id: t for t in self.tasks}
        # no spare instance: a spare is prepared for the next task, which here is the
        # agent's choice, unknown until it starts it (every start is a reset)
        cfg = SlotConfig(opts.env, self.env_options, opts.call_timeout_s, opts.workroot,
                         opts.tools, spares=0)  # fmt: skip
        self._slots = [ThreadSlot(i, cfg, lambda: None) for i in range(opts.concurrency)]
        self._free: list[ThreadSlot] = list(self._slots)
        self._freed = asyncio.Event()  # set when an environment is given back
        self._book: EpisodeBook[_Running] = EpisodeBook()
        self._repeats: dict[str, int] = {}  # task -> episodes of it so far (its next repeat)
        self._stack = contextlib.ExitStack()
        self._folder: RunFolder | None = None
        self._life: RunLife | None = None
        self._journal: Journal | None = None
        self.info: LiveRunInfo | None = None
        self.state = JournalState()
        self._closed = False

    # -- the run folder -------------------------------------------------------------------------

    async def open(self) -> None:
        """Guard and lock the run folder (one writer) for the server's life."""
        self._folder = self._stack.enter_context(live_run_folder(self.opts.out))

    def _run_info(self, client: ClientInfo) -> LiveRunInfo:
        proto = self.opts.protocol
        return new_run_info(
            env=self.opts.env, out=self.opts.out, fingerprint=self.fingerprint,
            env_options=self.env_options, model=client.model,
            adapter={"kind": f"{proto}-client", "name": client.name,
                     "version": client.version, "protocol": proto},
            prompt_style=f"{proto}-client", history="client", seed=self.opts.seed,
            mode=self.opts.mode, tools=self.opts.tools, served=proto,
        )  # fmt: skip

    def _ensure_folder(self, client: ClientInfo) -> None:
        """run.json for the first client; a later client must be the same agent (one run
        folder holds one agent's episodes: its name and version are run.json's model)."""
        if self.info is not None:
            if client.model != self.info.model:
                raise ServeError(
                    f"this server's run folder records the agent {self.info.model!r}; "
                    f"{client.model!r} cannot add episodes to it: one run folder holds one "
                    f"agent's episodes. Connect as {self.info.model!r} ({self.hints.agent}), "
                    "or start a server with another --out for this agent"
                )
            return
        info = self._run_info(client)
        assert self._folder is not None, "open() first"
        self._life = RunLife(self._folder, info)
        self._life.start(ignore=("repeats",))
        self.state = journal_state(self._folder)
        for repeat, st in self.state.repeats.items():
            for task_id in {*st.last, *st.steps}:
                self._repeats[task_id] = max(self._repeats.get(task_id, 0), repeat + 1)
        info.repeats = max(self._repeats.values(), default=1)
        self.info = info
        self._journal = self._stack.enter_context(
            Journal(self._folder.live_journal, fsync_interval=0)
        )

    def _append(self, rec: StepRecord | FaultRecord | TaskRecord) -> None:
        assert self._journal is not None
        self._journal.append(rec)
        self.state.add(rec)

    def _ran(self, r: TaskResult) -> bool:
        return r.record is not None

    async def _write_results(self, running: bool = True) -> None:
        """The results so far, and run.json: "running" while the server serves, else (it
        stops) complete or incomplete."""
        if self.info is None or self._life is None:
            return
        info, life = self.info, self._life
        ran = [t for t in self.tasks if self._repeats.get(t.id)]
        if not ran:
            return
        info.repeats = max(self._repeats.values(), default=1)

        def write() -> None:
            _, results, _ = write_run_results(
                life, ran, repeats=info.repeats, n_boot=self.opts.n_boot, seed=self.opts.seed,
                keep=self._ran,
            )  # fmt: skip
            if running:
                life.save("running")
            else:
                life.finish(complete=all(r.scored for r in results))

        await asyncio.to_thread(write)

    async def _save_screen(self, obs: Observation) -> str:
        assert self._folder is not None, "open() first"
        return await save_screen(self._folder, obs)

    # -- what an agent may ask ------------------------------------------------------------------

    def task_list(self) -> list[dict[str, Any]]:
        """The tasks offered, as the agent sees them (no oracle path)."""
        out = []
        for t in self.tasks:
            tools, reach = offered_tools(self.opts.env, self.opts.tools, t)
            row: dict[str, Any] = {"id": t.id, "goal": t.instruction, "tags": list(t.tags),
                                   "budget": t.budget}  # fmt: skip
            if reach is not None:
                row["tools"] = [s.name for s in tools]
                if not reach.reachable:
                    row["gui_only"] = reach.reason
            out.append(row)
        return out

    def episodes(self, client: ClientInfo | None = None) -> list[str]:
        """The running episodes of `client` (None: all)."""
        return [r.id for r in self._book.of(client.key if client is not None else None)]

    def _episode(self, episode: str | None, client: ClientInfo) -> _Running:
        """`client`'s running episode `episode` (None: its only one). Another client's episode
        is not found: the answer is an unknown episode's."""
        h = self.hints
        if episode is not None:
            run = self._book.running(client.key, episode)
            if run is None:
                told = self._book.ended(client.key, episode)
                raise ServeError(
                    f"{told}; {h.start} to start another" if told is not None
                    else f"no running episode {episode!r} (it ended, or was never started); "
                    f"{h.start} to start one"
                )  # fmt: skip
            run.last_call = time.monotonic()
            return run
        mine = self._book.of(client.key)
        if not mine:
            told = self._book.ended(client.key)
            if told is not None:
                raise ServeError(f"{told}; {h.start} to start another")
            where = f" ({h.tasks})" if h.tasks else ""
            raise ServeError(f"no task started: {h.start} first{where}")
        if len(mine) > 1:
            names = ", ".join(r.id for r in mine)
            how = f" ({h.episode})" if h.episode else ""
            raise ServeError(f"several episodes run ({names}): name the episode in the call{how}")
        mine[0].last_call = time.monotonic()
        return mine[0]

    def _task(self, task_id: str) -> LiveTask:
        task = self._by_id.get(task_id)
        if task is None:
            some = ", ".join(list(self._by_id)[:5])
            where = f"{self.hints.tasks}: " if self.hints.tasks else ""
            raise ServeError(
                f"unknown task {task_id!r}{suggestion(task_id, self._by_id)}: {len(self._by_id)} "
                f"tasks are offered ({where}e.g. {some})"
            )
        return task

    async def start(
        self,
        task_id: str,
        client: ClientInfo,
        *,
        episode_id: str | None = None,
        one_at_a_time: bool = False,
    ) -> Turn:
        """A new episode of `task_id` on a freshly reset environment (named `episode_id` when
        given). With one environment, or `one_at_a_time` (a client that holds one episode at
        a time), an episode of the same client still running is abandoned first (the turn says
        so)."""
        if self._closed:
            raise ServeError("the server is stopping")
        task = self._task(task_id)
        if episode_id is not None and self._book.running(client.key, episode_id) is not None:
            raise ServeError(f"your episode {episode_id!r} is running; name a new episode")
        self._ensure_folder(client)
        note = ""
        if one_at_a_time or self.opts.concurrency == 1:
            for old in self._book.of(client.key):
                await self._abandon(old, "a new task was started before it ended")
                note = f"episode {old.id} ({old.task.id}) was abandoned: a new task started"
        if not await self._wait_for_free(FREE_WAIT_S):
            if self.opts.concurrency == 1:
                raise ServeError("the environment is busy with another client's episode")
            raise ServeError(
                f"all {self.opts.concurrency} environments are busy: end an episode "
                f"({self.hints.end}) before starting another"
            )
        slot = self._free.pop(0)
        repeat = self._repeats.get(task.id, 0)
        self._repeats[task.id] = repeat + 1
        run_id = episode_id or new_episode_id(task.id, repeat + 1)
        try:
            env = await slot.ensure()
            tools = await slot.call(episode_tools, env, task, slot.cfg)
            ep = Episode(env, task, mode=self.opts.mode, tools=tools)
            obs = await slot.call(ep.reset)
        except EnvironmentFault as e:
            self._append(FaultRecord(task=task.id, env=self.opts.env, attempt=1, repeat=repeat,
                                     message=str(e), n=0, time=now_iso()))  # fmt: skip
            self._append(TaskRecord(task=task.id, env=self.opts.env, attempt=1,
                                    outcome="env_error", repeat=repeat,
                                    reason=f"environment fault at the reset: {e}",
                                    oracle_steps=len(task.steps), time=now_iso()))  # fmt: skip
            await slot.discard()
            self._give_back(slot)
            await self._write_results()
            raise ServeError(
                f"the environment failed at the reset ({e}); the episode is recorded as an "
                "environment error: start the task again"
            ) from None
        except BaseException:
            self._give_back(slot)
            raise
        specs, reach = offered_tools(self.opts.env, self.opts.tools, task)
        sha = await self._save_screen(obs)
        run = _Running(run_id, task, repeat, slot, ep, client, sha, specs, reach)
        self._book.add(run)
        log.info("episode %s: task %s started by %s", run_id, task.id, client.model)
        return self._turn(run, None, note)

    async def _wait_for_free(self, timeout_s: float) -> bool:
        """Whether an environment is free, waiting up to `timeout_s` for one to be given back."""
        deadline = time.monotonic() + timeout_s
        while not self._free:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._freed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._freed.wait(), left)
            if self._closed:
                raise ServeError("the server is stopping")
        return True

    def _give_back(self, slot: ThreadSlot) -> None:
        self._free.append(slot)
        self._freed.set()

    def _turn(
        self,
        run: _Running,
        res: StepResult | None,
        note: str = "",
        rewards: Mapping[str, float] | None = None,
    ) -> Turn:
        ep = run.ep
        assert ep.observation is not None
        return Turn(
            episode=run.id, task=run.task, mode=ep.mode, observation=ep.observation, n=ep.n,
            instruction=None if ep.ended else ep.instruction, tools=run.tools, reach=run.reach,
            result=res, ended=ep.ended, outcome=ep.outcome, reason=ep.reason, note=note,
            rewards=rewards or {},
        )  # fmt: skip

    async def act(
        self,
        episode: str | None,
        action: LiveAction | None,
        client: ClientInfo,
        *,
        raw: str | None = None,
        flags: tuple[str, ...] = (),
    ) -> Turn:
        """One action of `client`'s running episode (None: a no-action step; `flags` the
        reader's). An action the environment cannot execute (off the screen, a tool the task
        is not offered, ...) is the episode's to judge: a scored no-action step."""
        run = self._episode(episode, client)
        async with run.lock:
            self._check_running(run)
            return await self._act(run, action, raw, flags)

    def _check_running(self, run: _Running) -> None:
        """A `ServeError` when `run` ended while its call waited for the one before."""
        if run.ended:
            told = self._book.ended(run.owner, run.id) or f"episode {run.id} has ended"
            raise ServeError(f"{told}; {self.hints.start} to start another")

    async def _act(
        self, run: _Running, action: LiveAction | None, raw: str | None, flags: tuple[str, ...]
    ) -> Turn:
        ep, slot = run.ep, run.slot
        obs = ep.observation
        assert obs is not None
        ts, busy0 = time.perf_counter(), slot.busy_s
        n, k = ep.n + 1, ep.current
        step = run.task.steps[k]
        try:
            intended, intended_to = await slot.call(ep.intended)
            rec = StepRecord(
                task=run.task.id, env=self.opts.env, attempt=1, repeat=run.repeat, n=n,
                target_step=k + 1, instruction=step.instruction, screen=run.screen,
                screen_size=(obs.width, obs.height), url=obs.url,
                intended_box=intended.to_json() if intended is not None else None,
                intended_to=intended_to.to_json() if intended_to is not None else None,
                raw_text=raw, source=self.opts.protocol, flags=list(flags),
                action=action_to_json(action) if action is not None else None,
            )  # fmt: skip
            res = await slot.call(functools.partial(ep.step, action, flags=flags))
        except EnvironmentFault as e:
            await self._fault(run, n, action, e)
            raise ServeError(
                f"the environment failed ({e}); the episode ended as an environment error "
                "(not scored): start the task again"
            ) from None
        if res.executed:
            run.screen = await self._save_screen(res.observation)
        upd = {**res.journal_fields(), "flags": list(dict.fromkeys([*flags, *res.flags])),
               "step_s": round(time.perf_counter() - ts, 4),
               "env_s": round(slot.busy_s - busy0, 4), "time": now_iso()}  # fmt: skip
        self._append(StepRecord.model_validate({**rec.model_dump(), **upd}))
        before, run.standing = run.standing, ep.score
        if res.outcome is not None:
            await self._end(run, res.outcome, res.reason, fired=list(res.fired))
        return self._turn(run, res, rewards=step_rewards(before, run.standing))

    async def wait(self, episode: str | None, seconds: float, client: ClientInfo) -> Turn:
        """The screen after `seconds` (at most `MAX_WAIT_S`); no action of the budget."""
        run = self._episode(episode, client)
        if not 0 <= seconds <= MAX_WAIT_S:
            raise ServeError(f"wait: seconds must be in 0..{MAX_WAIT_S:g}, not {seconds:g}")
        async with run.lock:
            self._check_running(run)
            await asyncio.sleep(seconds)
            try:
                obs = await run.slot.call(run.ep.env.observe)
            except EnvironmentFault as e:
                await self._fault(run, run.ep.n, None, e)
                raise ServeError(f"the environment failed ({e}); the episode ended") from None
            run.ep.observation = obs
            run.screen = await self._save_screen(obs)
            return self._turn(run, None)

    async def _fault(self, run: _Running, n: int, action: LiveAction | None, e: Exception) -> None:
        log.warning("episode %s: environment fault: %s", run.id, e)
        self._append(FaultRecord(
            task=run.task.id, env=self.opts.env, attempt=1, repeat=run.repeat, message=str(e),
            n=n, action=action_to_json(action) if action is not None else None, time=now_iso(),
        ))  # fmt: skip
        run.ended = True
        self._append(TaskRecord(
            task=run.task.id, env=self.opts.env, attempt=1, outcome="env_error",
            repeat=run.repeat, reason=f"environment fault: {str(e).splitlines()[0][:300]}",
            oracle_steps=len(run.task.steps), time=now_iso(),
        ))  # fmt: skip
        self._book.end(run, f"episode {run.id} ended with an environment error (not scored)")
        await run.slot.discard()
        self._give_back(run.slot)
        await self._write_results()

    async def _end(
        self, run: _Running, outcome: str, reason: str, fired: list[str] | None = None
    ) -> None:
        ep = run.ep
        obs = ep.observation
        run.ended = True
        self._append(TaskRecord(
            task=run.task.id, env=self.opts.env, attempt=1, outcome=outcome,  # type: ignore[arg-type]
            repeat=run.repeat, reason=reason, steps_used=ep.n, oracle_steps=len(run.task.steps),
            achieved=sum(ep.achieved), fired=fired or [], final_screen=run.screen,
            final_url=obs.url if obs is not None else None, reset_s=round(ep.reset_s, 4),
            duration_s=round(time.perf_counter() - run.started, 4), time=now_iso(),
            **tools_fields(run.tools, run.reach), **ep.tally(),
        ))  # fmt: skip
        told = (f"episode {run.id} was {reason}" if outcome == "abandoned"
                else f"episode {run.id} has ended ({outcome}: {reason})")  # fmt: skip
        self._book.end(run, told)
        self._give_back(run.slot)
        log.info("episode %s: %s (%s)", run.id, outcome, reason)
        await self._write_results()

    async def _abandon(self, run: _Running, reason: str) -> None:
        """End a running episode as abandoned (the agent left): never a success."""
        if run.ended:
            return
        async with run.lock:
            if not run.ended:
                await self._end(run, "abandoned", f"abandoned: {reason}")

    async def abandon(self, episode: str, reason: str, client: ClientInfo) -> None:
        """End `client`'s running episode `episode` as abandoned (nothing when it has none of
        that id)."""
        run = self._book.running(client.key, episode)
        if run is not None:
            await self._abandon(run, reason)

    async def abandon_client(self, client: ClientInfo, reason: str) -> None:
        """Every running episode of a client that went away ends as abandoned."""
        for run in self._book.of(client.key):
            await self._abandon(run, reason)

    async def abandon_idle(self, timeout_s: float, *, keep: frozenset[str] = frozenset()) -> None:
        """Episodes with no call for `timeout_s` (their client has gone without a word) end
        as abandoned; those of the clients `keep` names are left alone."""
        now = time.monotonic()
        for run in self._book.of():
            if run.owner not in keep and now - run.last_call > timeout_s:
                await self._abandon(run, f"no call for {timeout_s:g} s (the client has gone)")

    async def watch_idle(self, timeout_s: float, *, keep: frozenset[str] = frozenset()) -> None:
        """`abandon_idle(timeout_s)` every `timeout_s` / 4 seconds (at most 5, at least a
        quarter of `MIN_IDLE_TIMEOUT_S`: never a loop polling the clock), until cancelled;
        `timeout_s` 0 means never (it returns at once)."""
        if timeout_s <= 0:
            return
        every = min(5.0, max(timeout_s, MIN_IDLE_TIMEOUT_S) / 4)
        while True:
            await asyncio.sleep(every)
            await self.abandon_idle(timeout_s, keep=keep)

    def state_of(self, episode: str | None, client: ClientInfo) -> Turn:
        """Where a running episode is (no action)."""
        run = self._episode(episode, client)
        return self._turn(run, None)

    async def close(self) -> None:
        """Abandon what still runs, write the results and run.json's final status, stop the
        environments, release the run folder."""
        if self._closed:
            return
        self._closed = True
        self._freed.set()  # a start waiting for an environment hears that the server stops
        try:
            for run in self._book.of():
                await self._abandon(run, "the server stopped before the episode ended")
            if self.info is not None:
                await self._write_results(running=False)
        finally:
            await asyncio.gather(*(s.shutdown() for s in self._slots), return_exceptions=True)
            self._stack.close()
