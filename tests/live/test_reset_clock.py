"""`ResetClock`: the phases of one reset, a phase entered twice adding up, and the total."""

from __future__ import annotations

import time

import pytest

from medspot.live.envs.reset_clock import ResetClock


def test_phases_add_up_and_the_total_covers_them() -> None:
    clock = ResetClock()
    with clock.phase("database"):
        time.sleep(0.02)
    with clock.phase("page"):
        time.sleep(0.01)
    with clock.phase("database"):
        time.sleep(0.02)
    out = clock.done()
    assert set(out) == {"database", "page", "total"}
    assert out["database"] >= 0.04 and out["page"] >= 0.01
    assert out["total"] >= out["database"] + out["page"]


def test_a_phase_that_raises_is_still_counted() -> None:
    clock = ResetClock()
    with pytest.raises(RuntimeError), clock.phase("load"):
        time.sleep(0.01)
        raise RuntimeError("the page did not load")
    assert clock.done()["load"] >= 0.01
