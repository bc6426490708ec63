"""Pipelined starts: a slot keeps a spare instance of its environment, reset for the next task
while the current one runs, and swaps it in when the task ends; the wait between two tasks
(`between_tasks_s`) is then a swap, not a reset. On the lamp panel (a real small environment
with a child process per instance, `SparePlan` declared): which instance runs which task, that
a spare's faults are never a task's, that retries, repeats and steals run every task once, and
that nothing is left behind. The real environments' spares are compared with fresh ones in
`test_resets.py` and killed with the run in `test_killed_run_leaves_nothing.py`."""

from __future__ import annotations

import logging
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _lamp_panel import ENTRY, NAME, LampPanel, switch_task, task_file
from _runner_support import live_request, processes_mentioning

from medspot.cli import main
from medspot.errors import ConfigError, DataError
from medspot.live.core.contract import Environment, EnvironmentFault, SparePlan, spare_plan
from medspot.live.core.episode import Episode, Mode
from medspot.live.core.tasks import LiveTask
from medspot.live.envs import registry
from medspot.live.envs.taskfiles import load_task_file
from medspot.live.loop.executors.seats import MAX_SPARE_FAULTS, SlotSeats
from medspot.live.loop.request import LiveOutcome, run_live
from medspot.live.loop.steplog import FaultRecord, TaskRecord, read_live_journal
from medspot.runfolder.layout import LIVE_JOURNAL
from medspot.runfolder.live_schema import BETWEEN_TASKS, RESET
from medspot.runfolder.reader import live_view, load_run

pytestmark = pytest.mark.live

RESET_S = 0.4  # each panel reset takes this long: a swap must take far less


@pytest.fixture(autouse=True)
def _lamp_panel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry._ENVS, NAME, ENTRY)


@pytest.fixture()
def two_spares(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lamp panel keeps two spares per slot (`SparePlan.count`)."""
    monkeypatch.setattr(LampPanel, "spare", SparePlan(default=True, memory_mb=15, count=2))


def _ahead(t: dict[str, LiveTask], *ids: str) -> list[tuple[LiveTask, tuple[str, int]]]:
    """A slot's next tasks (first repeat), as `SlotSeats.prepare` takes them."""
    return [(t[i], (i, 0)) for i in ids]


def _tasks(tmp_path: Path, n: int = 4, *, extra: list[dict[str, Any]] | None = None) -> Path:
    lamps = ("red", "green", "blue")
    tasks = [switch_task(f"t{i}", lamps[i % 3]) for i in range(n)]
    return task_file(tmp_path / "tasks.json", [*tasks, *(extra or [])])


def _run(
    tmp_path: Path, tasks: Path, name: str = "run", **kw: Any
) -> tuple[LiveOutcome, list[TaskRecord], list[FaultRecord]]:
    options = {"reset_delay_s": RESET_S, "step_delay_s": 0.3, **kw.pop("env_options", {})}
    out = tmp_path / name
    res = run_live(live_request(
        env=NAME, model="oracle", out=out, tasks_file=tasks, n_boot=0, env_options=options,
        workroot=tmp_path / "w", **kw,
    ))  # fmt: skip
    recs = list(read_live_journal(out / LIVE_JOURNAL))
    ends = [r for r in recs if isinstance(r, TaskRecord)]
    faults = [r for r in recs if isinstance(r, FaultRecord)]
    return res, ends, faults


def test_the_panel_declares_a_spare_and_a_plain_object_none() -> None:
    assert spare_plan(LampPanel(Path("/nonexistent"))) == SparePlan(default=True, memory_mb=15)
    assert spare_plan(object()) is None
    with pytest.raises(ValueError, match="count must be 1 or more"):
        SparePlan(default=True, memory_mb=15, count=0)


def test_every_task_after_the_first_starts_on_a_swapped_in_spare(tmp_path: Path) -> None:
    res, ends, faults = _run(tmp_path, _tasks(tmp_path))
    assert not faults and [r.outcome for r in ends] == ["success"] * 4
    assert [r.swapped for r in ends] == [False, True, True, True]
    assert ends[0].between_tasks_s is None  # the slot's first task
    # the reset ran in the background: the wait between two tasks is a swap
    assert all(r.reset_s is not None and r.reset_s >= RESET_S for r in ends)
    assert all(r.between_tasks_s is not None and r.between_tasks_s < RESET_S for r in ends[1:])
    st = res.stats
    assert (st.envs_started, st.spares_started, st.swaps, st.spare_faults) == (1, 1, 3, 0)
    assert not processes_mentioning(str(tmp_path / "w"))  # both instances closed
    # the timings in the metrics and the task rows (`LIVE_TIMING_KEYS`)
    wait, reset = res.metrics[BETWEEN_TASKS], res.metrics[RESET]
    assert wait["n"] == 3 and wait["median"] < RESET_S <= reset["median"] and reset["n"] == 4
    lr = live_view(load_run(tmp_path / "run"))
    assert lr is not None
    assert [(t.swapped, t.between_tasks_s) for t in lr.tasks] == [
        (r.swapped, r.between_tasks_s) for r in ends
    ]
    assert all(t.reset_s is not None for t in lr.tasks)


def test_two_spares_each_start_a_later_task(tmp_path: Path, two_spares: None) -> None:
    res, ends, faults = _run(tmp_path, _tasks(tmp_path, 5))
    assert not faults and [r.outcome for r in ends] == ["success"] * 5
    assert [r.swapped for r in ends] == [False, True, True, True, True]
    assert all(r.between_tasks_s is not None and r.between_tasks_s < RESET_S for r in ends[1:])
    st = res.stats
    assert (st.envs_started, st.spares_started, st.swaps, st.spare_faults) == (1, 2, 4, 0)
    assert not processes_mentioning(str(tmp_path / "w"))


def test_two_slots_with_two_spares_each_run_every_task_once(
    tmp_path: Path, two_spares: None
) -> None:
    """Each slot claims two tasks ahead; a slot that finds the queue empty takes the other's
    last claim (its spare prepared it for nothing)."""
    res, ends, faults = _run(tmp_path, _tasks(tmp_path, 5), concurrency=2, repeats=2)
    assert not faults
    assert sorted((r.task, r.repeat) for r in ends) == sorted(
        (f"t{i}", k) for i in range(5) for k in range(2)
    )
    assert all(r.outcome == "success" and r.attempt == 1 for r in ends)
    assert res.stats.envs_started == 2 and res.stats.swaps >= 4
    assert not processes_mentioning(str(tmp_path / "w"))


def test_the_runs_count_of_spares_overrides_the_environments(
    tmp_path: Path, two_spares: None
) -> None:
    """`--spares 1` where the environment keeps two: one spare, prepared for the next task."""
    res, ends, faults = _run(tmp_path, _tasks(tmp_path, 4), spares=1)
    assert not faults and [r.outcome for r in ends] == ["success"] * 4
    assert [r.swapped for r in ends] == [False, True, True, True]
    assert (res.stats.envs_started, res.stats.spares_started, res.stats.swaps) == (1, 1, 3)


def test_three_spares_where_the_environment_keeps_one(tmp_path: Path) -> None:
    """`--spares 3`: three spares, each prepared for one of the next three tasks."""
    res, ends, faults = _run(tmp_path, _tasks(tmp_path, 6), spares=3)
    assert not faults and [r.outcome for r in ends] == ["success"] * 6
    assert [r.swapped for r in ends] == [False] + [True] * 5
    assert all(r.between_tasks_s is not None and r.between_tasks_s < RESET_S for r in ends[1:])
    assert (res.stats.envs_started, res.stats.spares_started, res.stats.swaps) == (1, 3, 5)
    assert not processes_mentioning(str(tmp_path / "w"))


def test_the_command_line_takes_a_count_of_spares_and_reports_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out, work = tmp_path / "run", tmp_path / "w"
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))  # the instances' private folders
    code = main(["live", "run", "--env", NAME, "--model", "oracle", "--tasks-file",
                 str(_tasks(tmp_path, 4)), "--out", str(out), "--spares", "2",
                 "--env-option", "reset_delay_s=0.3", "--env-option",
                 f"start_log={tmp_path / 'starts.log'}"])  # fmt: skip
    got = capsys.readouterr()
    assert code == 0, got.err
    assert "(1 environments started; 2 spares started, 3 tasks began on one swapped in, 0 " \
        "spare faults)" in got.out, got.out  # fmt: skip
    assert "2 spare instance(s) kept" in (out / "live.log").read_text()
    starts = (tmp_path / "starts.log").read_text().splitlines()
    assert len(starts) == 3 and all(Path(f).parent == work for f in starts)
    assert not list(work.iterdir())  # the three instances' folders, all removed
    assert not processes_mentioning(str(work))


def test_spares_asked_of_an_environment_without_a_plan_are_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(LampPanel, "spare", None)  # it declares no SparePlan
    with caplog.at_level(logging.INFO, logger="medspot.live.loop.executors.seats"):
        res, ends, _ = _run(tmp_path, _tasks(tmp_path, 3), spares=2)
    assert [r.outcome for r in ends] == ["success"] * 3 and not any(r.swapped for r in ends)
    assert (res.stats.spares_started, res.stats.swaps) == (0, 0)
    assert f"{NAME} keeps no spare instance: it declares no SparePlan" in caplog.text


def test_no_spare_resets_between_tasks(tmp_path: Path) -> None:
    res, ends, _ = _run(tmp_path, _tasks(tmp_path, 3), spares=0)
    assert [r.outcome for r in ends] == ["success"] * 3 and not any(r.swapped for r in ends)
    assert all(r.between_tasks_s is not None and r.between_tasks_s >= RESET_S for r in ends[1:])
    assert (res.stats.spares_started, res.stats.swaps) == (0, 0)


def test_two_slots_run_every_task_and_repeat_once(tmp_path: Path) -> None:
    res, ends, faults = _run(tmp_path, _tasks(tmp_path, 5), concurrency=2, repeats=2)
    assert not faults
    assert sorted((r.task, r.repeat) for r in ends) == sorted(
        (f"t{i}", k) for i in range(5) for k in range(2)
    )
    assert all(r.outcome == "success" and r.attempt == 1 for r in ends)
    assert res.stats.envs_started == 2 and res.stats.swaps >= 5
    assert not processes_mentioning(str(tmp_path / "w"))


def test_a_spare_that_cannot_start_is_no_fault_of_a_task(tmp_path: Path) -> None:
    log = tmp_path / "starts.log"
    # the slot's first instance starts; every later start (the spares) is refused
    res, ends, faults = _run(
        tmp_path, _tasks(tmp_path, 6), env_options={"start_log": log, "starts_allowed": 1}
    )
    assert not faults, "a spare's fault was journaled as a task's"
    assert [(r.outcome, r.attempt, r.swapped) for r in ends] == [("success", 1, False)] * 6
    # spares are tried again for later tasks, up to MAX_SPARE_FAULTS in a row
    assert res.stats.spare_faults == MAX_SPARE_FAULTS == res.stats.spares_started
    assert res.stats.faults == 0 and res.metrics["num_env_errors"] == 0
    assert not processes_mentioning(str(tmp_path / "w"))


def test_a_task_fault_retries_on_the_warm_spare(tmp_path: Path) -> None:
    crash = switch_task("crash-then-red", "crash", "red")
    tasks = _tasks(tmp_path, 2, extra=[crash, switch_task("last", "blue")])
    order = ("t0", "crash-then-red", "t1", "last")
    res, ends, faults = _run(tmp_path, tasks, task_ids=order, env_retries=1)
    # the crash task faults on each attempt; its retry takes the started spare (no start)
    assert [(f.task, f.attempt) for f in faults] == [("crash-then-red", 1), ("crash-then-red", 2)]
    by_task = {r.task: r for r in ends}
    assert by_task["crash-then-red"].outcome == "env_error"
    assert by_task["t1"].outcome == by_task["last"].outcome == "success"
    assert by_task["t0"].outcome == "success"
    # one instance started for the slot; each retry took the other, started, instance, and
    # a spare was started again in the background for each one the faults threw away
    assert (res.stats.envs_started, res.stats.spares_started) == (1, 1 + len(faults))
    assert not processes_mentioning(str(tmp_path / "w"))


def test_a_data_error_met_by_the_spare_is_the_tasks_own(tmp_path: Path) -> None:
    broken = {**switch_task("bad-start", "red")}
    broken["start"] = {"prepare": [{"instruction": "x", "target": {"text": "violet"}}]}
    tasks = _tasks(tmp_path, 1, extra=[broken])
    with pytest.raises(DataError, match=r"start\.prepare\.0\.target"):
        _run(tmp_path, tasks, task_ids=("t0", "bad-start"))
    assert not processes_mentioning(str(tmp_path / "w"))


def test_a_resumed_run_keeps_spares_for_what_is_left(tmp_path: Path) -> None:
    tasks = _tasks(tmp_path, 4)
    _, first, _ = _run(tmp_path, tasks, task_ids=("t0", "t1"))
    res, ends, _ = _run(tmp_path, tasks)
    assert [(r.task, r.swapped) for r in ends] == [
        ("t0", False), ("t1", True), ("t2", False), ("t3", True),
    ]  # fmt: skip
    assert ends[:2] == first and res.stats.swaps == 1


# -- the seats themselves ------------------------------------------------------------------------


def _pair(
    tmp_path: Path,
    episode: Callable[[Environment, LiveTask, Mode], Episode] | None = None,
    **options: Any,
) -> SlotSeats:
    n = iter(range(100))
    return SlotSeats(
        "t",
        lambda wd: LampPanel(wd, **options),
        lambda: tmp_path / f"i{next(n)}",
        env_name=NAME,
        timeout_s=30,
        episode=episode,
    )


def _lamp_tasks(tmp_path: Path, n: int = 3) -> dict[str, LiveTask]:
    return {t.id: t for t in load_task_file(_tasks(tmp_path, n)).tasks}


def test_the_instances_take_turns_each_on_its_own_thread(tmp_path: Path) -> None:
    t = _lamp_tasks(tmp_path)
    pair = _pair(tmp_path)
    try:
        first = pair.begin(t["t0"], "guided", ("t0", 0))
        a = first.episode.env
        assert not first.swapped and pair.keeps_spare
        pair.prepare([(t["t1"], ("t1", 0))], "guided")
        assert pair.wait_prepared(30)
        second = pair.begin(t["t1"], "guided", ("t1", 0))
        b = second.episode.env
        assert second.swapped and b is not a and second.episode.observation is not None
        pair.prepare([(t["t2"], ("t2", 0))], "guided")  # the instance that ran t0, reset for t2
        assert pair.wait_prepared(30)
        third = pair.begin(t["t2"], "guided", ("t2", 0))
        assert third.swapped and third.episode.env is a
        assert isinstance(a, LampPanel) and isinstance(b, LampPanel)
        assert (a.resets, b.resets) == (["t0", "t2"], ["t1"])
        seats = (pair.active, pair.spares[0].seat)
        names = {seat.pool.submit(threading.current_thread).result().name for seat in seats}
        assert len(names) == 2
    finally:
        pair.close()
    assert not processes_mentioning(str(tmp_path))


def test_two_spares_are_prepared_for_the_next_two_tasks_and_take_turns(
    tmp_path: Path, two_spares: None
) -> None:
    t = _lamp_tasks(tmp_path, 5)

    pair = _pair(tmp_path, reset_delay_s=0.2)
    try:
        a = pair.begin(t["t0"], "guided", ("t0", 0)).episode.env
        assert pair.depth == 2 and len(pair.spares) == 2
        pair.prepare(_ahead(t, "t1", "t2"), "guided")
        assert pair.wait_prepared(30)
        second = pair.begin(t["t1"], "guided", ("t1", 0))
        b = second.episode.env
        assert second.swapped and b is not a
        pair.prepare(_ahead(t, "t2", "t3"), "guided")  # t2 is ready; t3 goes to the idle instance
        third = pair.begin(t["t2"], "guided", ("t2", 0))
        c = third.episode.env
        assert third.swapped and c not in (a, b)
        pair.prepare(_ahead(t, "t3", "t4"), "guided")
        assert pair.wait_prepared(30)
        assert pair.begin(t["t3"], "guided", ("t3", 0)).episode.env is a
        assert pair.begin(t["t4"], "guided", ("t4", 0)).episode.env is b
        assert isinstance(a, LampPanel) and isinstance(b, LampPanel) and isinstance(c, LampPanel)
        assert (a.resets, b.resets, c.resets) == (["t0", "t3"], ["t1", "t4"], ["t2"])
        assert (pair.spares_started, pair.swaps, pair.spare_faults) == (2, 4, 0)
    finally:
        pair.close()
    assert not processes_mentioning(str(tmp_path))


def test_a_spare_prepared_for_a_task_no_longer_ahead_is_prepared_again(
    tmp_path: Path, two_spares: None
) -> None:
    """(Another slot took that task over.)"""
    t = _lamp_tasks(tmp_path, 4)
    pair = _pair(tmp_path)
    try:
        pair.begin(t["t0"], "guided", ("t0", 0))
        pair.prepare(_ahead(t, "t1", "t2"), "guided")
        assert pair.wait_prepared(30)
        pair.prepare(_ahead(t, "t1", "t3"), "guided")
        assert pair.wait_prepared(30)
        assert pair.begin(t["t1"], "guided", ("t1", 0)).swapped
        last = pair.begin(t["t3"], "guided", ("t3", 0))
        assert last.swapped and isinstance(last.episode.env, LampPanel)
        assert last.episode.env.resets == ["t2", "t3"]
        assert (pair.spares_started, pair.swaps) == (2, 2)
    finally:
        pair.close()
    assert not processes_mentioning(str(tmp_path))


def test_a_spare_still_starting_leaves_the_task_to_the_active_instance(tmp_path: Path) -> None:
    t = _lamp_tasks(tmp_path)
    pair = _pair(tmp_path)
    gate = threading.Event()
    try:
        pair.begin(t["t0"], "guided", ("t0", 0))
        pair.spares[0].seat.pool.submit(gate.wait, 30)  # the spare's thread is busy (a slow start)
        pair.prepare([(t["t1"], ("t1", 0))], "guided")
        began = pair.begin(t["t1"], "guided", ("t1", 0))
        assert not began.swapped  # its reset had not begun: the active instance was reset
        gate.set()
        pair.prepare([(t["t2"], ("t2", 0))], "guided")
        assert pair.wait_prepared(30)
        assert pair.begin(t["t2"], "guided", ("t2", 0)).swapped  # the spare, started, took t2
    finally:
        gate.set()
        pair.close()


def test_a_spare_that_dies_while_it_waits_is_replaced(tmp_path: Path) -> None:
    t = _lamp_tasks(tmp_path)
    pair = _pair(tmp_path)
    try:
        pair.begin(t["t0"], "guided", ("t0", 0))
        pair.prepare([(t["t1"], ("t1", 0))], "guided")
        assert pair.wait_prepared(30)
        spare = pair.spares[0].seat.env
        assert isinstance(spare, LampPanel) and spare.app is not None
        spare.app.kill()
        spare.app.wait()
        began = pair.begin(t["t1"], "guided", ("t1", 0))
        assert not began.swapped and pair.spare_faults == 1
        pair.prepare([(t["t2"], ("t2", 0))], "guided")
        assert pair.wait_prepared(30)
        assert pair.begin(t["t2"], "guided", ("t2", 0)).swapped  # a new spare
    finally:
        pair.close()
    assert not processes_mentioning(str(tmp_path))


def test_a_failed_active_start_is_a_fault_and_nothing_is_left(tmp_path: Path) -> None:
    log = tmp_path / "starts.log"
    log.write_text("x\n")  # one start already counted: the next is refused
    pair = _pair(tmp_path, start_log=log, starts_allowed=1)
    t = _lamp_tasks(tmp_path)
    try:
        with pytest.raises(EnvironmentFault, match="refused"):
            pair.begin(t["t0"], "guided", ("t0", 0))
    finally:
        pair.discard()
        pair.close()
    assert not processes_mentioning(str(tmp_path))


def test_a_spare_whose_start_never_ran_is_a_spare_fault(tmp_path: Path) -> None:
    t = _lamp_tasks(tmp_path)
    pair = _pair(tmp_path)
    gate = threading.Event()
    try:
        pair.begin(t["t0"], "guided", ("t0", 0))
        pair.spares[0].seat.pool.submit(gate.wait, 30)  # the spare's thread is busy
        pair.prepare([(t["t1"], ("t1", 0))], "guided")  # its start and reset wait behind it
        pair.spares[0].seat.abandon_thread()  # both cancelled before they ran
        gate.set()
        pair.prepare([(t["t2"], ("t2", 0))], "guided")
        assert pair.spare_faults == 1
        assert pair.wait_prepared(30)
        began = pair.begin(t["t2"], "guided", ("t2", 0))
        assert began.swapped and pair.spares_started == 2
    finally:
        gate.set()
        pair.close()
    assert not processes_mentioning(str(tmp_path))


def test_the_spares_episode_is_made_as_the_slots_own(tmp_path: Path) -> None:
    t = _lamp_tasks(tmp_path)
    made: list[tuple[str, Environment]] = []

    def episode(env: Environment, task: LiveTask, mode: Mode) -> Episode:
        made.append((task.id, env))
        if task.id == "t2":
            raise ConfigError("no such toolset")  # a run's setting: never the spare's fault
        return Episode(env, task, mode=mode)

    pair = _pair(tmp_path, episode)
    try:
        first = pair.begin(t["t0"], "guided", ("t0", 0))
        pair.prepare([(t["t1"], ("t1", 0))], "guided")
        assert pair.wait_prepared(30)
        second = pair.begin(t["t1"], "guided", ("t1", 0))
        assert second.swapped
        assert made == [("t0", first.episode.env), ("t1", second.episode.env)]
        pair.prepare([(t["t2"], ("t2", 0))], "guided")
        assert not pair.wait_prepared(30)
        with pytest.raises(ConfigError, match="toolset"):
            pair.begin(t["t2"], "guided", ("t2", 0))
        assert pair.spare_faults == 0
    finally:
        pair.close()
    assert not processes_mentioning(str(tmp_path))


def test_closing_the_slot_waits_for_a_spare_thrown_away(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A spare thrown away closes in the background; the slot's close waits for it, so that
    nothing of the slot runs once it returns (here its close takes a while)."""
    closed = LampPanel.close
    slow: list[Path] = []  # the spare's folder: only its close takes a while

    def slow_close(self: LampPanel) -> None:
        if self.workdir in slow:
            time.sleep(1.0)
        closed(self)

    monkeypatch.setattr(LampPanel, "close", slow_close)
    t = _lamp_tasks(tmp_path)

    def episode(env: Environment, task: LiveTask, mode: Mode) -> Episode:
        if task.id == "t1" and env is not pair.active.env:
            raise EnvironmentFault("the spare's reset failed")
        return Episode(env, task, mode=mode)

    pair = _pair(tmp_path, episode)
    try:
        pair.begin(t["t0"], "guided", ("t0", 0))
        pair.prepare(_ahead(t, "t1"), "guided")
        assert not pair.wait_prepared(30)
        spare = pair.spares[0].seat.workdir
        assert spare is not None
        slow.append(spare)
        spare_folder = str(spare)
        began = pair.begin(t["t1"], "guided", ("t1", 0))  # the spare is thrown away
        assert not began.swapped and pair.spare_faults == 1
        assert processes_mentioning(spare_folder), "the thrown-away spare closed at once"
    finally:
        pair.close()
    assert not processes_mentioning(str(tmp_path))
