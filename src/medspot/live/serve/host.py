"""Episodes driven from outside: an agent that brings its own loop (an MCP client, an OpenEnv
trainer) starts tasks and sends actions. The host holds the sessions: whose episode is whose,
what a call may reach, and the messages in each front's words; the episodes themselves run
on the runner's machinery (`medspot.live.loop.served`: slots of the run's executor, threads or
Ray, spares, the one episode driver with the client's calls as its action source), journaled
into a run folder exactly as `live run` writes it (`live_journal.jsonl`, screens, task rows,
metrics: `medspot report`, `leaderboard` and `compare` take it like any other live run).

- The run folder goes through the run-folder lifecycle of `live run` and `eval`
  (`medspot.runfolder.lifecycle`: one writer, held for the server's life; the same settings on
  a resumed folder, checked once the first client is known: run.json records the client's name
  and version as the model). The results are written after every episode
  (`loop.request.write_run_results`, over the (task, repeat) the agent ran; run.json says
  "running") and once more when the server stops.
- Each start of a task is the next repeat of that task in the folder (`@N` in the rows when a
  task ran more than once), on a freshly reset environment.
- `concurrency` environments side by side (slots of `--executor threads` or `ray`; spares with
  `--spares N`, each prepared for the next start of the task its slot last started:
  `loop.served`); with one, the calls need not name the episode.
- An episode the agent leaves (a disconnect, a new task started over it, the server stopping)
  ends as `abandoned`: scored, never a success. An environment fault ends it as an environment
  error (not scored); the agent may start the task again.
- Every episode belongs to the caller that started it (`ClientInfo.key`: the front's session,
  `medspot.live.serve.episodes`): a call naming another caller's episode gets the answer an
  unknown episode gets, and nothing is executed or journaled. An episode that ended is
  remembered for its owner: naming it again says how it ended ("was abandoned: no call for
  600 s").
- Whatever action an agent sends is one step of the episode driver (`loop.driver`), through
  `Episode.step`: one it cannot execute (off the screen, a key the driver lacks, a tool the
  task is not offered: `core.executable`) is a scored no-action step (`executed: false`, its
  `not_executable:<why>` flag and reason).
- A call that is no action of a running episode (no task started, an unknown task or episode,
  an episode that has ended) is a `ServeError` with a message for the agent, worded in the
  front's own verbs (`Hints`); nothing is journaled and the host goes on. A start when every
  environment is taken first waits up to `FREE_WAIT_S` for one to be given back (a client that
  closed its session a moment ago, a disconnect still on its way) before it says the
  environments are busy.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from medspot.errors import MedspotError
from medspot.limits import MIN_IDLE_TIMEOUT_S
from medspot.live.core.actions import LiveAction
from medspot.live.core.contract import EnvironmentFault, Observation
from medspot.live.core.episode import Mode, StepResult
from medspot.live.core.rewards import START, EpisodeScore, step_rewards
from medspot.live.core.tasks import LiveTask
from medspot.live.core.tools import ToolReach, ToolSpec
from medspot.live.envs.toolsets import offered_tools
from medspot.live.loop.driver import Shown
from medspot.live.loop.livefolder import LiveRunInfo
from medspot.live.loop.served import (
    FREE_WAIT_S,
    RunStopping,
    ServedEpisode,
    ServedRun,
    ServeOptions,
)
from medspot.live.loop.sources import EpisodeEnded
from medspot.live.serve.episodes import EpisodeBook, new_episode_id
from medspot.spelling import suggestion

__all__ = [
    "FREE_WAIT_S",
    "ClientInfo",
    "EpisodeHost",
    "Hints",
    "ServeError",
    "ServeOptions",
    "Turn",
]

log = logging.getLogger(__name__)

MAX_WAIT_S = 10.0  # the longest `wait` an agent may ask for


class ServeError(MedspotError):
    """A call the host cannot serve (the agent's mistake): its message is for the agent."""


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
    episode: ServedEpisode
    client: ClientInfo
    tools: tuple[ToolSpec, ...]
    reach: ToolReach | None
    last_call: float = field(default_factory=time.monotonic)
    standing: EpisodeScore = START  # where the episode stands for the rewards

    @property
    def owner(self) -> str:
        """The caller key of the client that started it: only that caller reaches it."""
        return self.client.key

    @property
    def task(self) -> LiveTask:
        return self.episode.task


class EpisodeHost:
    """The sessions of one server over its served run. Use from one asyncio loop:
    `await open()`, then `start` / `act` / `wait` / `abandon`, `await close()` at the end."""

    def __init__(self, opts: ServeOptions, hints: Hints | None = None) -> None:
        self.opts = opts
        self.hints = hints or Hints()
        self.run = ServedRun(opts)
        self.tasks = self.run.tasks
        self._by_id = {t.id: t for t in self.tasks}
        self._book: EpisodeBook[_Running] = EpisodeBook()
        self._closed = False

    async def open(self) -> None:
        """Guard and lock the run folder (one writer) for the server's life; the environments'
        slots (a Ray cluster joined or started)."""
        await self.run.open()

    @property
    def info(self) -> LiveRunInfo | None:
        """run.json's contents, once the first client is known."""
        return self.run.info

    def _ensure_folder(self, client: ClientInfo) -> None:
        """run.json for the first client; a later client must be the same agent (one run
        folder holds one agent's episodes: its name and version are run.json's model)."""
        model = self.run.model
        if model is not None and client.model != model:
            raise ServeError(
                f"this server's run folder records the agent {model!r}; "
                f"{client.model!r} cannot add episodes to it: one run folder holds one "
                f"agent's episodes. Connect as {model!r} ({self.hints.agent}), "
                "or start a server with another --out for this agent"
            )
        self.run.agent(client.model, client.name, client.version)

    # -- what an agent may ask ------------------------------------------------------------------

    def task_list(self) -> list[dict[str, Any]]:
        """The tasks offered, as the agent sees them (no oracle path)."""
        out = []
        for t in self.tasks:
            tools, reach = offered_tools(self.opts.env, self.opts.spec.tools, t)
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
        if one_at_a_time or self.run.capacity == 1:
            for old in self._book.of(client.key):
                await self._abandon(old, "a new task was started before it ended")
                note = f"episode {old.id} ({old.task.id}) was abandoned: a new task started"
        try:
            slot = await self.run.acquire(task, FREE_WAIT_S)
        except RunStopping:
            raise ServeError("the server is stopping") from None
        if slot is None:
            if self.run.capacity == 1:
                raise ServeError("the environment is busy with another client's episode")
            raise ServeError(
                f"all {self.run.capacity} environments are busy: end an episode "
                f"({self.hints.end}) before starting another"
            )
        try:
            episode = await self.run.start(task, slot)
        except EnvironmentFault as e:
            raise ServeError(
                f"the environment failed at the reset ({e}); the episode is recorded as an "
                "environment error: start the task again"
            ) from None
        specs, reach = offered_tools(self.opts.env, self.opts.spec.tools, task)
        run_id = episode_id or new_episode_id(task.id, episode.repeat + 1)
        run = _Running(run_id, episode, client, specs, reach)
        self._book.add(run)
        log.info("episode %s: task %s started by %s", run_id, task.id, client.model)
        return self._turn(run, episode.shown, note)

    def _turn(
        self,
        run: _Running,
        shown: Shown,
        note: str = "",
        rewards: Mapping[str, float] | None = None,
    ) -> Turn:
        return Turn(
            episode=run.id, task=run.task, mode=self.opts.mode, observation=shown.observation,
            n=shown.n, instruction=shown.instruction, tools=run.tools, reach=run.reach,
            result=shown.result, ended=shown.ended, outcome=shown.outcome, reason=shown.reason,
            note=note, rewards=rewards or {},
        )  # fmt: skip

    def _ended(self, run: _Running, shown: Shown) -> None:
        """`run` has ended (`shown`): its owner is told how when it names it again."""
        outcome, reason = shown.outcome, shown.reason
        told = (f"episode {run.id} was {reason}" if outcome == "abandoned"
                else f"episode {run.id} has ended ({outcome}: {reason})")  # fmt: skip
        self._book.end(run, told)
        log.info("episode %s: %s (%s)", run.id, outcome, reason)

    def _told_ended(self, run: _Running) -> ServeError:
        """The answer to a call that reached `run` once it had ended."""
        told = self._book.ended(run.owner, run.id) or f"episode {run.id} has ended"
        return ServeError(f"{told}; {self.hints.start} to start another")

    def _failed(self, run: _Running, e: BaseException, what: str) -> ServeError:
        """The answer to a call during which the episode stopped on an error (`e`)."""
        if isinstance(e, EnvironmentFault):
            log.warning("episode %s: environment fault: %s", run.id, e)
            self._book.end(run, f"episode {run.id} ended with an environment error (not scored)")
            return ServeError(f"the environment failed ({e}); {what}")
        self._book.end(run, f"episode {run.id} ended: {e}")
        return ServeError(f"the episode stopped: {e}")

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
        try:
            shown = await run.episode.act(action, raw=raw, flags=flags,
                                          source=self.opts.protocol)  # fmt: skip
        except EpisodeEnded:
            raise self._told_ended(run) from None
        except EnvironmentFault as e:
            raise self._failed(run, e, "the episode ended as an environment error (not "
                               "scored): start the task again") from None  # fmt: skip
        except MedspotError as e:
            raise self._failed(run, e, "") from None
        before, run.standing = run.standing, shown.score
        if shown.ended:
            self._ended(run, shown)
        return self._turn(run, shown, rewards=step_rewards(before, run.standing))

    async def wait(self, episode: str | None, seconds: float, client: ClientInfo) -> Turn:
        """The screen after `seconds` (at most `MAX_WAIT_S`); no action of the budget."""
        run = self._episode(episode, client)
        if not 0 <= seconds <= MAX_WAIT_S:
            raise ServeError(f"wait: seconds must be in 0..{MAX_WAIT_S:g}, not {seconds:g}")
        try:
            shown = await run.episode.look(seconds)
        except EpisodeEnded:
            raise self._told_ended(run) from None
        except EnvironmentFault as e:
            raise self._failed(run, e, "the episode ended") from None
        except MedspotError as e:
            raise self._failed(run, e, "") from None
        return self._turn(run, shown)

    async def _abandon(self, run: _Running, reason: str) -> None:
        """End a running episode as abandoned (the agent left): never a success."""
        shown = await run.episode.leave(reason)
        if shown is not None and shown.ended:
            self._ended(run, shown)

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
        return self._turn(run, run.episode.shown)

    async def close(self) -> None:
        """Abandon what still runs, write the results and run.json's final status, stop the
        environments, release the run folder."""
        if self._closed:
            return
        self._closed = True
        self.run.stop_starts()
        try:
            for run in self._book.of():
                await self._abandon(run, "the server stopped before the episode ended")
        finally:
            await self.run.close()
