"""A spare that dies while it waits, on the real orthanc-explorer (its Orthanc killed), with a
second spare ready beside it: its death is a fault of the spare, not of the task it was
prepared for (that task starts on the slot's own instance, reset), and the next task still
takes the second spare, swapped in. (`tests/live/test_spares.py` holds the same on a small
test application; this is the real one's process killed.)"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from _orthanc_support import CHROMIUM, require_orthanc_stack
from _runner_support import kill, processes_mentioning

from medspot.live.envs.registry import create_environment
from medspot.live.envs.taskfiles import load_task_file
from medspot.live.loop.executors.seats import SlotSeats

pytestmark = pytest.mark.live

TASKS = Path(__file__).parents[2] / "src/medspot/live/envs/orthanc_explorer/tasks"
ENV = "orthanc-explorer"


def _ended(pid: int) -> bool:
    """Whether our child `pid` has ended, as its parent's wait will see it (not reaping it).
    Neither its command line (empty while it exits) nor a zombie state in /proc tells: a
    many-threaded process's leader shows as a zombie while its other threads still exit, and
    until they have, a wait does not see it end."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # reaped already, or not ours: gone once /proc has no trace
        return not Path(f"/proc/{pid}").exists()


def test_a_spare_killed_while_a_second_is_ready(tmp_path: Path, seed_cache: Path) -> None:
    require_orthanc_stack()
    tasks = {t.id: t for t in load_task_file(TASKS / "orthanc_explorer.json").tasks}
    a, b, c = (tasks[i] for i in ("open-study-ct-doe-john", "open-study-mr-doe-john",
                                  "open-series-ct-doe-john-axial"))  # fmt: skip
    n = iter(range(100))
    seats = SlotSeats(
        "spare-fault", lambda wd: create_environment(ENV, workdir=wd, chromium=CHROMIUM,
                                                     seed_cache=seed_cache),
        lambda: tmp_path / f"i{next(n)}", env_name=ENV, spares=2, timeout_s=300,
    )  # fmt: skip
    try:
        first = seats.begin(a, "guided", (a.id, 0))
        assert not first.swapped and seats.depth == 2
        seats.prepare([(b, (b.id, 0)), (c, (c.id, 0))], "guided")
        assert seats.wait_prepared(300), "the two spares did not get ready"
        (for_b,) = [sp for sp in seats.spares if sp.prep is not None and sp.prep.key[0] == b.id]
        doomed = for_b.seat.workdir
        assert doomed is not None
        pids = processes_mentioning(str(doomed))  # its Orthanc
        assert pids
        kill(pids)
        deadline = time.monotonic() + 30
        while not all(map(_ended, pids)) and time.monotonic() < deadline:
            time.sleep(0.05)  # dead while it waits (not as it is swapped in)

        began = seats.begin(b, "guided", (b.id, 0))  # no exception: not the task's fault
        assert not began.swapped
        assert began.episode.env is first.episode.env
        assert (seats.spare_faults, seats.swaps) == (1, 0)
        assert began.observation.png  # b's start, on the slot's own instance

        then = seats.begin(c, "guided", (c.id, 0))
        assert then.swapped and (seats.spare_faults, seats.swaps) == (1, 1)
    finally:
        seats.close()
    assert not processes_mentioning(str(tmp_path))
