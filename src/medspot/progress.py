"""The one progress event of every long run (`medspot eval`, `medspot live run`, `live export`),
drawn by the command line's progress bar (`commands._common.progress_bar`)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ProgressEvent"]


@dataclass(frozen=True)
class ProgressEvent:
    done: int  # model calls completed in this run
    total: int  # current estimate of the calls this run makes (0: not known ahead)
    errors: int
    cost_usd: float
    # a measure that does not shrink: tasks finished of the tasks to run (steps with
    # --all-steps, where every step is asked), for a progress bar
    units_done: int = 0
    units_total: int = 0
    unit: str = "task"
