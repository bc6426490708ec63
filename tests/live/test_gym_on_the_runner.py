"""The Gymnasium environment drives its episodes with the runner's own machinery (the one
episode driver, the executors' slots, spares), on the lamp panel (a real small environment
with a child process):

- the same actions through `live run --model replay` and through `LiveGymEnv(out=...)` journal
  the same step and task records, field for field, but for the times and who answered in which
  words; `medspot report` reads the Gymnasium run folder like any other;
- `spares=1`: once a task has started, a spare is prepared for the next reset of the same task,
  which starts with a swap; a reset of another task, or in another mode, resets the active one;
- a crash of the application is an `EnvironmentFault` journaled as an environment error, the
  next reset a fresh application; a reset before the end journals the episode `abandoned`;
- without `out`, the run folder is private and gone with `close()`, no process left.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from _lamp_panel import ENTRY, NAME, button_box, switch_task, task_file
from _runner_support import processes_mentioning
from _serve_support import journal_records, replayed_run, short_workroot

from medspot.cli import main
from medspot.errors import ConfigError
from medspot.live.core.actions import Click, LiveAction
from medspot.live.core.contract import EnvironmentFault
from medspot.live.envs import registry
from medspot.live.loop.steplog import TaskRecord, read_live_journal
from medspot.runfolder.layout import LIVE_JOURNAL

pytestmark = pytest.mark.live
gymnasium = pytest.importorskip("gymnasium")

from medspot.live.gym.env import LiveGymEnv  # noqa: E402


@pytest.fixture(autouse=True)
def _lamp(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lamp panel registered for this module's tests only."""
    monkeypatch.setitem(registry._ENVS, NAME, ENTRY)


def _click(lamp: str) -> Click:
    return Click(*button_box(lamp).center)


def _ends(out: Path) -> list[tuple[str, int, str, bool]]:
    return [(r.task, r.repeat, r.outcome, r.swapped) for r in read_live_journal(out / LIVE_JOURNAL)
            if isinstance(r, TaskRecord)]  # fmt: skip


def test_a_gym_episode_journals_what_a_run_of_the_same_actions_does(tmp_path: Path) -> None:
    tasks = task_file(tmp_path / "tasks.json", [switch_task("two", "red", "green")])
    actions: list[LiveAction] = [_click("red"), Click(1280, 10), _click("green")]  # 2nd: off
    with short_workroot() as work:
        replayed_run(tmp_path, work, tasks, "two", actions)
        env = LiveGymEnv(NAME, tasks_file=tasks, mode="agent", out=tmp_path / "gym",
                         agent="my-policy", workroot=work)  # fmt: skip
        try:
            env.reset(options={"task": "two"})
            for a in actions:
                _, reward, terminated, truncated, info = env.step(a)
            assert (reward, terminated, truncated) == (1.0, True, False)
            assert info["outcome"] == "success" and info["action_source"] == "object"
            # the Gymnasium environment's mode is its run folder's: another is refused
            with pytest.raises(ConfigError, match="holds agent-mode episodes"):
                env.reset(options={"task": "two", "mode": "guided"})
        finally:
            env.close()
        assert not processes_mentioning(str(work))
    run_steps, run_tasks = journal_records(tmp_path / "run")
    gym_steps, gym_tasks = journal_records(tmp_path / "gym")
    assert [s["n"] for s in run_steps] == [1, 2, 3]
    assert run_steps[1]["flags"] == ["not_executable:off_screen"] and not run_steps[1]["executed"]
    assert gym_steps == run_steps
    assert gym_tasks == run_tasks and run_tasks[0]["outcome"] == "success"
    info = json.loads((tmp_path / "gym" / "run.json").read_text())
    assert (info["model"], info["served"], info["executor"]) == ("my-policy", "gymnasium",
                                                                "threads")  # fmt: skip
    assert info["status"] == "complete" and info["mode"] == "agent"
    metrics = json.loads((tmp_path / "gym" / "overall_dataset_metrics.json").read_text())
    assert metrics["task_success_rate"] == 1.0
    assert main(["report", str(tmp_path / "gym"), "--out", str(tmp_path / "site")]) == 0
    assert "my-policy" in (tmp_path / "site" / "index.html").read_text()


def test_a_spare_is_prepared_for_the_next_reset_of_the_same_task(tmp_path: Path) -> None:
    tasks = task_file(tmp_path / "tasks.json", [switch_task("red", "red"),
                                                switch_task("green", "green")])  # fmt: skip
    out = tmp_path / "run"
    with short_workroot() as work:
        env = LiveGymEnv(NAME, tasks_file=tasks, spares=1, out=out, workroot=work)
        try:
            for task in ("red", "red", "green", "green"):
                env.reset(options={"task": task})
                time.sleep(3)  # time for the spare to start and be reset for the next one
                obs, _, terminated, _, info = env.step(_click(task))
                assert terminated, task
                # guided: the instruction of the step it ended on, as the observation says
                assert obs["instruction"] == info["instruction"] == f"Click the {task} button"
        finally:
            env.close()
        assert not processes_mentioning(str(work))
    assert _ends(out) == [
        ("red", 0, "success", False),
        ("red", 1, "success", True),
        ("green", 0, "success", False),
        ("green", 1, "success", True),
    ]


def test_faults_and_early_resets_are_journaled_and_the_private_folder_goes(
    tmp_path: Path,
) -> None:
    tasks = task_file(tmp_path / "tasks.json", [switch_task("red", "red", "green")])
    with short_workroot() as work:
        env = LiveGymEnv(NAME, tasks_file=tasks, workroot=work)
        try:
            env.reset(options={"task": "red"})
            folder = env.run_folder
            assert folder.is_relative_to(work) and processes_mentioning(str(work))
            box = env.locate({"text": "green"})
            assert box == button_box("green") and env.locate({"text": "nowhere"}) is None
            env.step(_click("red"))
            env.reset(options={"task": "red", "mode": "agent"})  # before the end; another mode
            with pytest.raises(EnvironmentFault, match="crash pressed"):
                env.step(_click("crash"))
            with pytest.raises(gymnasium.error.ResetNeeded):
                env.step(_click("red"))
            with pytest.raises(gymnasium.error.ResetNeeded):  # no episode to look into
                env.locate({"text": "red"})
            with pytest.raises(gymnasium.error.ResetNeeded):
                env.oracle_action()
            _, info = env.reset(options={"task": "red"})  # a fresh application
            assert info["n"] == 0 and info["achieved_total"] == 0
            _, _, terminated, _, info = env.step(_click("red"))
            assert not terminated and info["achieved_total"] == 1 and info["step"] == 2
            assert info["instruction"] == "Click the green button"
            records: list[Any] = list(read_live_journal(folder / LIVE_JOURNAL))
        finally:
            env.close()
        assert not folder.exists() and list(work.iterdir()) == []
        assert not processes_mentioning(str(work))
    ends = [(r.repeat, r.outcome) for r in records if isinstance(r, TaskRecord)]
    assert ends == [(0, "abandoned"), (1, "env_error")]
