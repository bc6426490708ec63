"""`Episode` used the wrong way gets a clear error and spends nothing: a step with something that
is not an action (a text, a number, a dict), the oracle or a step before `reset()`, a task of
another environment, a step after the environment failed in the episode; an action the
environment cannot execute is a scored no-action step, never an `EnvironmentFault`. On the
lamp-panel environment (a real small environment with a child process) and, for the task of
another environment, the real environments' objects (nothing started)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _lamp_panel import ENTRY, NAME, LampPanel, button_box, switch_task

from medspot.errors import DataError
from medspot.live.core.actions import Click, Done, Key, NotAnAction
from medspot.live.core.contract import EnvironmentFault
from medspot.live.core.episode import Episode, EpisodeError
from medspot.live.core.tasks import LiveTask
from medspot.live.envs import registry
from medspot.live.envs.registry import create_environment
from medspot.live.envs.taskfiles import env_task_file

pytestmark = pytest.mark.live  # its tests start the lamp panel's application


@pytest.fixture(autouse=True)
def _lamp_panel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry._ENVS, NAME, ENTRY)


@pytest.fixture
def panel(tmp_path: Path) -> Iterator[LampPanel]:
    env = LampPanel(tmp_path / "panel")
    env.start()
    yield env
    env.close()


def _task(*lamps: str) -> LiveTask:
    return LiveTask.model_validate(switch_task("switch", *lamps))


@pytest.mark.parametrize("thing", ["click(640, 251)", 42, {"kind": "click", "x": 1, "y": 2}])
def test_a_step_with_something_that_is_not_an_action_is_refused(
    panel: LampPanel, thing: Any
) -> None:
    ep = Episode(panel, _task("red"))
    ep.reset()
    with pytest.raises(NotAnAction, match="takes a live action") as err:
        ep.step(thing)
    assert isinstance(err.value, TypeError)
    assert ep.n == 0 and not ep.ended  # nothing spent
    red = button_box("red")
    res = ep.step(Click(*red.center))  # and the episode goes on
    assert res.executed and res.n == 1 and res.outcome == "success"


def test_the_oracle_and_a_step_before_reset_are_errors(panel: LampPanel) -> None:
    ep = Episode(panel, _task("red"))
    for call in (ep.oracle_action, ep.intended, lambda: ep.step(Done())):
        with pytest.raises(EpisodeError, match="before reset"):
            call()
    ep.reset()
    assert ep.oracle_action() == Click(*button_box("red").center)


def test_unexecutable_actions_are_scored_no_action_steps(panel: LampPanel) -> None:
    ep = Episode(panel, _task("red", "green"))  # a budget of 6 actions
    ep.reset()
    results = [ep.step(a) for a in (Click(math.nan, math.nan), Click(-3, 9000),
                                    Key("NoSuchKeyXYZ"), Click("10", "20"))]  # type: ignore[arg-type]  # fmt: skip
    flags = [r.flags for r in results]
    assert flags == [("not_executable:not_a_number",), ("not_executable:off_screen",),
                     ("not_executable:unknown_key",), ("not_executable:not_a_number",)]  # fmt: skip
    assert all(not r.executed and r.not_executed and r.hit_intended is None for r in results)
    assert "NoSuchKeyXYZ" in (results[2].not_executed or "")
    assert [r.n for r in results] == [1, 2, 3, 4] and panel.on["red"] is False
    ep.step(Click(*button_box("red").center))
    ep.step(Click(*button_box("green").center))
    assert ep.outcome == "success"  # the task went on and was scored


def test_after_a_fault_the_episode_asks_for_a_reset(panel: LampPanel) -> None:
    ep = Episode(panel, _task("red"))
    ep.reset()
    with pytest.raises(EnvironmentFault):
        ep.step(Click(*button_box("crash").center))  # the panel's application dies
    for call in (lambda: ep.step(Done()), ep.oracle_action):
        with pytest.raises(EpisodeError, match=r"failed in this episode .*EnvironmentFault"):
            call()
    panel.start()  # a fresh application: the episode is usable again after a reset
    ep.reset()
    assert ep.step(Done()).outcome == "failure"


def test_a_task_of_another_environment_is_refused(tmp_path: Path) -> None:
    ohif_task = env_task_file("ohif")[0].tasks[0]
    orthanc_task = env_task_file("orthanc-explorer")[0].tasks[0]
    explorer = create_environment("orthanc-explorer", workdir=tmp_path / "oe")
    dicomscope = create_environment("dicomscope", workdir=tmp_path / "ds")
    try:
        with pytest.raises(DataError, match=rf"task {ohif_task.id} cannot run in orthanc-explorer"):
            Episode(explorer, ohif_task)
        with pytest.raises(DataError, match="cannot run in dicomscope"):
            Episode(dicomscope, orthanc_task)
        Episode(explorer, orthanc_task)  # its own task
    finally:
        explorer.close()
        dicomscope.close()
