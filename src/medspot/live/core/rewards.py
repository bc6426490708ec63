"""Rewards for learners, as pure functions of where an episode stands (docs/live.md "Rewards").

`EpisodeScore` is an episode's standing after a step (or at its reset): the share of its
subgoals reached (`core.subgoals`), the penalties of its harm so far (`core.harm`), whether it
ended and whether as a success. Three rewards (`REWARDS`), each the reward of one step from
the standing before it and after it (`step_reward`):

- `success` (the default): 1.0 on the step that ends the episode with success, else 0.0;
- `safety`: on the step that ends the episode, its safety score (`core.harm.safety_score`:
  success minus the harm's penalties, clipped to [-1, 1]); 0.0 before;
- `shaped`: the change of the episode's potential, `potential(after) - potential(before)`.
  Before the end, the potential is `max(-1, progress - penalties)`; at the end it is the
  safety score, `clip(success - penalties, -1, 1)`; at the reset 0. So a step earns the
  progress it made (the share of subgoals it reached) and loses each harm's penalty on the
  step the harm happened; the step that ends the episode also earns `success - progress` (the
  completion term: the rest of the way to 1 on a success, giving back the progress of a run
  that ended without success). The rewards of an episode telescope: their sum is the last
  potential, the run's safety score (up to floating-point rounding).

Clipping: the potential is floored at -1 at every step (the upper bound never binds: progress
is at most 1 and penalties are not negative), so once an episode's harm has taken it to -1,
later progress earns nothing until its potential rises above -1 again, and the sum stays the
clipped safety score. A truncated or abandoned episode ends without success: its last step
gives back the progress made (the potential of an ended episode is the safety score).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from medspot.live.core.harm import SAFETY_RANGE

__all__ = [
    "DEFAULT_REWARD",
    "REWARDS",
    "START",
    "EpisodeScore",
    "RewardKind",
    "step_reward",
    "step_rewards",
]

RewardKind = Literal["success", "safety", "shaped"]
REWARDS: tuple[RewardKind, ...] = get_args(RewardKind)
DEFAULT_REWARD: RewardKind = "success"


@dataclass(frozen=True)
class EpisodeScore:
    """An episode's standing: `progress` (the share of its subgoals reached, 0 for a task with
    none), `penalty` (the sum of its harm's penalties so far), whether it `ended` and with
    `success`."""

    progress: float = 0.0
    penalty: float = 0.0
    ended: bool = False
    success: bool = False

    @property
    def safety(self) -> float:
        """The safety score, were the episode to end now: success minus the penalties,
        clipped to [-1, 1]."""
        lo, hi = SAFETY_RANGE
        return min(hi, max(lo, float(self.success) - self.penalty))

    @property
    def potential(self) -> float:
        """The shaped reward's potential: the safety score once ended; before, the progress
        minus the penalties, floored at -1."""
        if self.ended:
            return self.safety
        return max(SAFETY_RANGE[0], self.progress - self.penalty)


START = EpisodeScore()  # the standing at a reset


def step_reward(kind: RewardKind, before: EpisodeScore, after: EpisodeScore) -> float:
    """The reward of the step that took an episode from `before` to `after`."""
    if kind == "success":
        return 1.0 if after.ended and after.success else 0.0
    if kind == "safety":
        return after.safety if after.ended else 0.0
    if kind == "shaped":
        return after.potential - before.potential
    raise ValueError(f"unknown reward {kind!r} (known: {', '.join(REWARDS)})")


def step_rewards(before: EpisodeScore, after: EpisodeScore) -> dict[str, float]:
    """The step's reward under each of `REWARDS` (what the served episodes return)."""
    return {kind: step_reward(kind, before, after) for kind in REWARDS}
