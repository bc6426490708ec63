"""Where an environment's reset spends its time: named phases, summed per reset.

    clock = ResetClock()
    with clock.phase("database"):
        ...
    env.reset_phases = clock.done()   # {"database": 0.012, ..., "total": 0.31}

`benchmarks/bench_reset.py` reads `reset_phases` after each reset."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["ResetClock"]


class ResetClock:
    """Seconds per named phase of one reset (a phase entered twice adds up)."""

    def __init__(self) -> None:
        self._t0 = time.perf_counter()
        self.phases: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        t = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] = self.phases.get(name, 0.0) + time.perf_counter() - t

    def done(self) -> dict[str, float]:
        """The phases and the whole reset's time (`total`)."""
        return {**self.phases, "total": time.perf_counter() - self._t0}
