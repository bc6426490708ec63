"""A live run whose episodes are started and driven from outside (`medspot live serve`): the
run folder, the environments' slots and the episodes of a served agent, on the runner's own
machinery. `medspot.live.serve` holds the sessions, ownership and protocols above it.

- Environments: `concurrency` slots made by the run's executor (`executors.create_executor`:
  threads of this process, or Ray actors, ...), as `live run` makes them; a start takes a free
  slot, waiting a moment (`FREE_WAIT_S`) for one being given back.
- Episodes: each start is the next repeat of its task in the folder, driven by
  `driver.EpisodeDriver` with the client's calls as its action source
  (`sources.ClientActions`): the same steps, records and run folder as `live run`.
- Spares (`--spares N`): the next task is the agent's choice, so a slot's spare is prepared,
  once a task has started on it, for the next start of the SAME task (RL trainers and sweeps
  start a task again and again); a start prefers a free slot whose spare is prepared for its
  task (then it starts with a swap), and a start of another task resets the slot's active
  instance, as without spares. One spare is used whatever N (each would be prepared for the
  same next start). Without `--spares`, a served run keeps none (each start is a reset).
- Faults: an environment fault ends the episode as an environment error (journaled with where
  it happened; the slot's environment thrown away): a served agent's actions are not replayed
  on a fresh environment, the agent starts the task again. An episode the agent leaves ends as
  `abandoned` (scored, never a success).
- Results: after every episode (run.json "running") and once more when the run closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from medspot.errors import ConfigError, MedspotError
from medspot.limits import MAX_BOOTSTRAP, MAX_CONCURRENCY, check_seed, check_whole
from medspot.live.core.actions import LiveAction
from medspot.live.core.contract import EnvironmentFault, PixelBox
from medspot.live.core.episode import MODES, Mode
from medspot.live.core.rewards import DEFAULT_REWARD, REWARDS, RewardKind
from medspot.live.core.tasks import LiveTask, Locator
from medspot.live.loop.driver import EpisodeDriver, Place, Shown, first_line
from medspot.live.loop.envspec import EnvSpec
from medspot.live.loop.executors import create_executor
from medspot.live.loop.executors.base import EnvSlot, Executor
from medspot.live.loop.livefolder import (
    Journal,
    LiveRunInfo,
    RunFolder,
    RunLife,
    journal_state,
    live_run_folder,
    now_iso,
    open_journal,
)
from medspot.live.loop.outcomes import TaskResult
from medspot.live.loop.request import new_run_info, write_run_results
from medspot.live.loop.sources import ClientActions, EpisodeEnded
from medspot.live.loop.steplog import JournalState, LiveRecord, TaskRecord

__all__ = [
    "FREE_WAIT_S",
    "SERVED_REPEAT_KEY",
    "RunStopping",
    "ServeOptions",
    "ServedEpisode",
    "ServedRun",
]

log = logging.getLogger(__name__)

# how long a start waits for an environment that is ending (a client that has just left: its
# disconnect reaches the server a moment after the client goes on) before it says "busy"
FREE_WAIT_S = 5.0
# the repeat part of the key a served slot's spare is prepared for ((task id, this)): a
# task's next start, whichever repeat that start turns out to be
SERVED_REPEAT_KEY = 0


@dataclass(frozen=True, kw_only=True)
class ServeOptions:
    """A server's run: its environment (`spec`: the tasks offered, the toolset, the executor,
    spares: none unless the spec asks for some, ...; checked when made) and what serving adds.

        ServeOptions(spec=EnvSpec("orthanc-explorer"), out=Path("runs/served"))
    """

    spec: EnvSpec
    out: Path
    mode: Mode = "agent"  # agent: the goal only; guided: also the current step's instruction
    concurrency: int = 1  # environments side by side (episodes at once)
    n_boot: int = 2000
    seed: int = 0
    protocol: str = "mcp"  # how agents come in: "mcp" or "openenv" (run.json `served`)
    # the reward each step pays (`core.rewards`: success, safety, shaped); every kind's is
    # also sent beside it
    reward: RewardKind = DEFAULT_REWARD

    @property
    def env(self) -> str:
        return self.spec.env


class RunStopping(MedspotError):
    """A start while the served run closes."""


class ServedEpisode:
    """One served episode: its task and repeat, the client's calls (`act`, `look`, `leave`)
    and what it shows now (`shown`)."""

    def __init__(self, task: LiveTask, repeat: int, slot: EnvSlot, mode: Mode) -> None:
        self.task = task
        self.repeat = repeat
        self.slot = slot
        self.mode: Mode = mode
        self.actions = ClientActions()
        self.driving: asyncio.Task[None] | None = None

    @property
    def shown(self) -> Shown:
        assert self.actions.last is not None, "started first"
        return self.actions.last

    @property
    def ended(self) -> bool:
        return self.actions.closed

    async def act(
        self, action: LiveAction | None, *, raw: str | None, flags: tuple[str, ...], source: str
    ) -> Shown:
        """One step (None: a no-action step); what the episode shows after it. An
        `EnvironmentFault` ended the episode as an environment error; `EpisodeEnded`: it had
        ended before this call was taken (nothing executed)."""
        return await self.actions.submit(action, raw=raw, flags=flags, source=source)

    async def oracle_action(self) -> LiveAction | None:
        """The action of the task's own path for the current step on the current screen
        (None: its target is not on the screen); `EpisodeEnded` once the episode ended."""
        turn = await self.actions.asked()
        return await turn.oracle()

    async def locate(self, locator: Locator) -> PixelBox | None:
        """Where the element `locator` names is on the current screen (None: not there), no
        action taken; `EpisodeEnded` once the episode ended."""
        turn = await self.actions.asked()
        assert turn.locate is not None, "the driver's turns locate"
        return await turn.locate(locator)

    async def look(self, seconds: float) -> Shown:
        """The screen after `seconds`, no action taken."""
        return await self.actions.look(seconds)

    async def leave(self, reason: str) -> Shown | None:
        """End the episode as abandoned once the call before is done: what it shows then (None
        when it had ended otherwise)."""
        try:
            return await self.actions.leave(reason)
        except EpisodeEnded:
            return None


class ServedRun:
    """The run folder, slots and episodes of one server. Use from one asyncio loop: `await
    open()`, `agent(...)` for the first client, then `acquire` + `start`, `await close()`."""

    def __init__(self, opts: ServeOptions) -> None:
        if opts.mode not in MODES:
            raise ConfigError(f"unknown mode {opts.mode!r} (known: {', '.join(MODES)})")
        if opts.reward not in REWARDS:
            raise ConfigError(f"unknown reward {opts.reward!r} (known: {', '.join(REWARDS)})")
        check_whole("--concurrency", opts.concurrency, 1, MAX_CONCURRENCY)
        check_whole("--bootstrap", opts.n_boot, 0, MAX_BOOTSTRAP)
        check_seed(opts.seed)
        self.opts = opts
        spec = self.spec = opts.spec
        self.tasks = list(spec.tasks)
        # no spare unless asked: the next task is the agent's choice (module docstring)
        self.cfg = spec.slot_config(spares=0 if spec.spares is None else None)
        ex = spec.executor
        self._executor: Executor = create_executor(ex.name, self.cfg, **ex.options())
        self.slots: list[EnvSlot] = []
        self._free: list[EnvSlot] = []
        self._freed = asyncio.Event()  # set when an environment is given back
        self._prepared: dict[int, str] = {}  # slot -> the task its spare is prepared for
        self._repeats: dict[str, int] = {}  # task -> episodes of it so far (its next repeat)
        self._stack = contextlib.ExitStack()
        self._folder: RunFolder | None = None
        self._life: RunLife | None = None
        self._journal: Journal | None = None
        self._writing = asyncio.Lock()
        self._driving: set[asyncio.Task[None]] = set()  # the episodes being driven
        self.driver: EpisodeDriver | None = None
        self.info: LiveRunInfo | None = None
        self.state = JournalState()
        self.closed = False  # no start from now on
        self._done = False

    # -- the run folder and the environments ----------------------------------------------------

    async def open(self) -> None:
        """Guard and lock the run folder (one writer) for the server's life; make the slots."""
        self._folder = folder = self._stack.enter_context(live_run_folder(self.opts.out))
        n = self._executor.open(self.opts.concurrency)
        self.slots = [self._executor.slot(i, lambda: None) for i in range(n)]
        self._free = list(self.slots)
        self.driver = EpisodeDriver(
            env=self.spec.env, folder=folder, record=self._append, mode=self.opts.mode,
            history="none", seed=self.opts.seed, tools=self.spec.tools,
            on_started=self._started,
        )  # fmt: skip

    @property
    def capacity(self) -> int:
        """The environments side by side (the cluster may hold fewer than asked)."""
        return len(self.slots) or self.opts.concurrency

    @property
    def model(self) -> str | None:
        """The agent whose episodes the folder holds (run.json's model), once one is known."""
        return self.info.model if self.info is not None else None

    def agent(self, model: str, name: str, version: str) -> None:
        """run.json for the first client (`model`: its name and version), the folder's journal
        read back (a resumed folder: the next repeat of each task)."""
        if self.info is not None:
            return
        proto = self.opts.protocol
        spec = self.spec
        info = new_run_info(
            env=spec.env, out=self.opts.out, fingerprint=spec.fingerprint,
            env_options=spec.env_options, model=model,
            adapter={"kind": f"{proto}-client", "name": name, "version": version,
                     "protocol": proto},
            prompt_style=f"{proto}-client", history="client", seed=self.opts.seed,
            mode=self.opts.mode, tools=spec.tools, served=proto, executor=spec.executor.name,
            container=spec.container_run,
        )  # fmt: skip
        assert self._folder is not None, "open() first"
        self._life = RunLife(self._folder, info)
        self._life.start(ignore=("repeats",))
        self.state = journal_state(self._folder)
        for repeat, st in self.state.repeats.items():
            for task_id in {*st.last, *st.steps}:
                self._repeats[task_id] = max(self._repeats.get(task_id, 0), repeat + 1)
        info.repeats = max(self._repeats.values(), default=1)
        self.info = info
        self._journal = self._stack.enter_context(open_journal(self._folder))

    def _append(self, rec: LiveRecord) -> None:
        assert self._journal is not None
        self._journal.append(rec)
        self.state.add(rec)

    def _ran(self, r: TaskResult) -> bool:
        return r.record is not None

    async def write_results(self, running: bool = True) -> None:
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

        async with self._writing:
            await asyncio.to_thread(write)

    # -- starting an episode ------------------------------------------------------------------

    async def acquire(self, task: LiveTask, timeout_s: float = FREE_WAIT_S) -> EnvSlot | None:
        """A free slot for a start of `task` (one whose spare is prepared for it first),
        waiting up to `timeout_s` for one to be given back; None: every one is taken."""
        deadline = time.monotonic() + timeout_s
        while True:
            if self.closed:
                raise RunStopping("the server is stopping")
            if self._free:
                break
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self._freed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._freed.wait(), left)
        slot = next((s for s in self._free if self._prepared.get(s.index) == task.id),
                    self._free[0])  # fmt: skip
        self._free.remove(slot)
        return slot

    def _give_back(self, slot: EnvSlot) -> None:
        self._free.append(slot)
        self._freed.set()

    async def start(self, task: LiveTask, slot: EnvSlot, mode: Mode | None = None) -> ServedEpisode:
        """The next repeat of `task` on `slot` (from `acquire`), driven until it ends, in the
        run's mode or `mode`; returns once its first screen is there (`ServedEpisode.shown`).
        A fault of the reset ended it as an environment error (the `EnvironmentFault` is
        raised)."""
        mode = mode or self.opts.mode
        if mode not in MODES:
            raise ConfigError(f"unknown mode {mode!r} (known: {', '.join(MODES)})")
        repeat = self._repeats.get(task.id, 0)
        self._repeats[task.id] = repeat + 1
        ep = ServedEpisode(task, repeat, slot, mode)
        ep.driving = driving = asyncio.create_task(self._drive(ep))
        self._driving.add(driving)
        driving.add_done_callback(self._driving.discard)
        try:
            await ep.actions.started
        except EnvironmentFault:
            raise
        except BaseException:  # the start was cancelled (the client went): nothing recorded
            ep.driving.cancel()
            raise
        return ep

    async def _started(self, slot: EnvSlot, task: LiveTask) -> None:
        """A task started on `slot`: its spare (where it keeps one) is prepared for the next
        start of the same task (in the run's mode: one in another mode starts without it)."""
        if slot.spare_depth == 0:
            return
        await slot.prepare([(task, (task.id, SERVED_REPEAT_KEY))], self.opts.mode)
        self._prepared[slot.index] = task.id

    async def _drive(self, ep: ServedEpisode) -> None:
        """One served episode, driven until it ends: an environment fault ends it as an
        environment error (not retried: the agent starts the task again)."""
        assert self.driver is not None
        task, slot, place = ep.task, ep.slot, Place(replayed=False)
        error: BaseException | None = None
        # a spare is prepared in the run's mode: an episode in another mode is a reset
        key = (task.id, SERVED_REPEAT_KEY) if ep.mode == self.opts.mode else None
        try:
            await self.driver.attempt(slot, task, ep.repeat, 1, ep.actions, place, key=key,
                                      mode=ep.mode)  # fmt: skip
        except EnvironmentFault as e:
            error = e
            log.warning("task %s: environment fault: %s", task.id, e)
            self._append(place.fault(task.id, self.spec.env, 1, str(e), ep.repeat))
            reason = (f"environment fault at the reset: {e}" if place.n == 0
                      else f"environment fault: {first_line(str(e))}")  # fmt: skip
            self._append(TaskRecord(task=task.id, env=self.spec.env, attempt=1,
                                    outcome="env_error", repeat=ep.repeat, reason=reason,
                                    oracle_steps=len(task.steps), time=now_iso()))  # fmt: skip
            self._prepared.pop(slot.index, None)
            await slot.discard()
        except asyncio.CancelledError:
            error = EpisodeEnded()
        except Exception as e:  # not the environment's (a task's data, a bug): said as it is
            error = e
            log.warning("task %s: the episode stopped: %s", task.id, e)
        finally:
            self._give_back(slot)
            try:
                await asyncio.shield(self.write_results())
            finally:
                ep.actions.finish(error)

    # -- the end ----------------------------------------------------------------------------

    def stop_starts(self) -> None:
        """No start from now on (the run is closing); a start waiting for an environment
        hears it at once."""
        self.closed = True
        self._freed.set()

    async def close(self) -> None:
        """Write the results and run.json's final status, stop the environments, release the
        run folder (the caller has ended the running episodes first)."""
        if self._done:
            return
        self._done = True
        self.stop_starts()
        # an episode still starting (its start not answered yet) is stopped: nothing of it is
        # recorded; the running ones were ended by the caller
        for driving in list(self._driving):
            driving.cancel()
        await asyncio.gather(*self._driving, return_exceptions=True)
        try:
            if self.info is not None:
                await self.write_results(running=False)
        finally:
            try:
                await asyncio.gather(*(s.shutdown() for s in self.slots), return_exceptions=True)
                self._executor.close()
            finally:
                self._stack.close()
