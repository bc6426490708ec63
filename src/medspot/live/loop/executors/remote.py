"""What the slots share whose environment runs in another process (`--executor ray`: a Ray
actor; `--executor container`: a worker in a container): an `env_actor.EnvironmentHost` there,
reached by one round trip a call (`RemoteSlot.remote`), and the runner's stand-in for its
`Episode` (`RemoteEpisode`). The host answers every call with its episode's counters and its
spares' (`EpisodeState`), which the slot keeps; a new host (after a fault) starts its counts
afresh, so the slot adds those of the hosts before it. No Ray, no engine here.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from medspot.live.core.actions import LiveAction
from medspot.live.core.contract import Observation, PixelBox
from medspot.live.core.episode import Boxes, Mode, StepResult, oracle_step_action
from medspot.live.core.tasks import LiveTask, Locator
from medspot.live.loop.executors.base import CallSlot, EpisodeCalls, SpareCounts, reset_episode
from medspot.live.loop.executors.env_actor import EpisodeState
from medspot.live.loop.executors.seats import Key, Upcoming

__all__ = ["RemoteEpisode", "RemoteSlot"]


class RemoteEpisode:
    """The runner's stand-in for the `Episode` inside a remote host: the same calls and
    counters. `reset` and `step` are one round trip each (run in the slot's thread) and bring
    back the next screen's target boxes (`StepResult.next_intended`), so that `intended` and
    `oracle_action` (the task's own path, `oracle_step_action`, as `Episode.oracle_action`)
    mostly need none. `host` holds the host's methods as the slot's `remote` takes them."""

    def __init__(
        self, slot: RemoteSlot, host: Any, task: LiveTask, mode: Mode, key: Key | None = None
    ) -> None:
        self._slot = slot
        self._actor = host
        self.task = task
        self._mode: Mode = mode
        self._key = key
        self._state = EpisodeState(0, 0, (False,) * len(task.steps), 0.0, 0.0)
        self._intended: Boxes | None = None
        self.round_trips = 0
        self.inside_total_s = 0.0  # time spent inside the host, all round trips

    @property
    def mode(self) -> Mode:
        return self._mode

    @property
    def n(self) -> int:
        return self._state.n

    @property
    def current(self) -> int:
        return self._state.current

    @property
    def achieved(self) -> Sequence[bool]:
        return self._state.achieved

    @property
    def reset_s(self) -> float:
        return self._state.reset_s

    def _answer(self, method: Any, *args: Any) -> Any:
        out, self._state = self._slot.remote(method, *args)
        self._slot.state = self._state
        self.round_trips += 1
        self.inside_total_s += self._state.inside_s
        return out

    @property
    def located(self) -> Boxes | None:
        return self._intended

    def reset(self) -> Observation:
        obs: Observation
        obs, self._intended = self._answer(self._actor.reset, self.task, self._mode, self._key)
        return obs

    def start_checks(self) -> dict[str, list[bool]]:
        out: dict[str, list[bool]] = self._answer(self._actor.start_checks)
        return out

    def intended(self) -> Boxes:
        if self._intended is None:
            self._intended = self._answer(self._actor.intended)
        assert self._intended is not None
        return self._intended

    def oracle_action(self) -> LiveAction | None:
        return oracle_step_action(self.task.steps[self.current], *self.intended())

    def locate(self, locator: Locator) -> PixelBox | None:
        box: PixelBox | None = self._answer(self._actor.locate, locator)
        return box

    def step(self, action: LiveAction | None, *, flags: tuple[str, ...] = ()) -> StepResult:
        res: StepResult = self._answer(self._actor.step, action, flags)
        self._intended = res.next_intended
        return res

    def look(self) -> Observation:
        obs: Observation
        obs, self._intended = self._answer(self._actor.look)
        return obs


class RemoteSlot(CallSlot):
    """A slot whose `EnvironmentHost` runs elsewhere; a fresh host after a fault. A subclass
    makes the host (`ensure`, returning the handle whose attributes are its methods), makes one
    round trip (`remote`) and throws a host away (`discard`, calling `forget_host` first)."""

    state: EpisodeState | None = None  # the host's last answer (its spares' counts)
    _spares_before: SpareCounts = SpareCounts()  # the spare counts of this slot's earlier hosts

    @abstractmethod
    def remote(self, method: Any, *args: Any) -> Any:
        """One call of the host's `method` and its answer, in the slot's thread."""

    @abstractmethod
    async def ensure(self) -> Any:
        """The host's handle, the host made and started when there is none."""

    def host_handle(self) -> Any:
        """The current host's handle, or None when there is none."""
        return None

    async def episode(self, task: LiveTask, mode: Mode, key: Key | None = None) -> RemoteEpisode:
        """The host swaps in the spare prepared for `key` (if it keeps one) when the episode is
        reset: one round trip either way."""
        return RemoteEpisode(self, await self.ensure(), task, mode, key)

    async def reset(self, ep: EpisodeCalls) -> tuple[Observation, Boxes | None]:
        return await self.call(reset_episode, ep)

    @property
    def swapped(self) -> bool:
        return self.state is not None and self.state.swapped

    @property
    def spare_depth(self) -> int:
        return self.state.spare_depth if self.state is not None else 0

    async def prepare(self, upcoming: Upcoming, mode: Mode) -> None:
        host = self.host_handle()
        if host is not None:
            self.state = await self.call(self.remote, host.prepare, list(upcoming), mode)

    def spare_counts(self) -> SpareCounts:
        now = self.state.spares if self.state is not None else SpareCounts()
        b = self._spares_before
        return SpareCounts(b.started + now.started, b.swaps + now.swaps, b.faults + now.faults)

    def forget_host(self) -> None:
        """Keep the counts of the host being thrown away (before a new one starts)."""
        self._spares_before, self.state = self.spare_counts(), None
