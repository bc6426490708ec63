"""Partial credit: a task's subgoals and how far a run got (docs/live.md "Partial credit").

A task's subgoals, in this order:

- each step of the oracle's path (but an ending `infeasible` step, which is the task's ending,
  not a milestone), named by its `name` or `step K` (1-based): reached once the `Episode`
  achieved it (its `done_if` held, or the action hit its target, in the path's order); a
  step the task `requires` is reached once it HAPPENED (its `done_if` became true);
- each of the task's `checkpoints` (`medspot.live.core.tasks.Checkpoint`), by its name:
  reached once its check became true during the episode, in any order.

A subgoal, once reached, stays reached. Per run: `progress`, the share of the subgoals reached
at the end (None for a task with none), and `first_failed_subgoal`, the first one in this
order not reached (None when all were). An agent that ends at once (`done()`) reaches none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from medspot.live.core.tasks import LiveTask

__all__ = ["Subgoal", "SubgoalSource", "first_failed", "progress", "subgoals_of"]

SubgoalSource = Literal["step", "required", "checkpoint"]


@dataclass(frozen=True)
class Subgoal:
    """One subgoal: its name, where it comes from, and its 0-based index there (the path's
    step, or the checkpoint)."""

    name: str
    source: SubgoalSource
    index: int


def subgoals_of(task: LiveTask) -> tuple[Subgoal, ...]:
    """The task's subgoals in order: the path's steps (an ending `infeasible` step left out),
    then its checkpoints."""
    out: list[Subgoal] = []
    for k, s in enumerate(task.steps):
        if s.action == "infeasible":
            continue
        source: SubgoalSource = "required" if s.name in task.requires else "step"
        out.append(Subgoal(s.name or f"step {k + 1}", source, k))
    out += [Subgoal(c.name, "checkpoint", j) for j, c in enumerate(task.checkpoints)]
    return tuple(out)


def progress(reached: Sequence[bool]) -> float | None:
    """The share of the subgoals reached (None: a task with no subgoal)."""
    return sum(map(bool, reached)) / len(reached) if reached else None


def first_failed(names: Sequence[str], reached: Sequence[bool]) -> tuple[int, str] | None:
    """The first subgoal not reached: its 1-based position and name (None: all reached)."""
    for i, (name, ok) in enumerate(zip(names, reached, strict=True)):
        if not ok:
            return i + 1, name
    return None
