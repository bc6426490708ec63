"""`Episode.step_outside`: a turn whose actions someone else executed on the application (BrowserGym
runs its own action set on the page) is judged as an executed action is, on the lamp-panel
environment (the outside actions are the panel's own `act`): one action of the budget; the path
advanced by `done_if` (no point is known); a required step happened when its `done_if` became
true; harm before success and before an ending given in the same turn; an ending judged as
`step(ending)` judges it; the budget ending the episode; what is not an ending refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _lamp_panel import ENTRY, NAME, LampPanel, button_box, switch_task

from medspot.live.core.actions import Click, Done, Infeasible, NotAnAction
from medspot.live.core.contract import ActResult
from medspot.live.core.episode import Episode, EpisodeError
from medspot.live.core.tasks import LiveTask
from medspot.live.envs import registry

pytestmark = pytest.mark.live  # the lamp panel's application is a child process


@pytest.fixture(autouse=True)
def _lamp_panel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry._ENVS, NAME, ENTRY)


@pytest.fixture
def panel(tmp_path: Path) -> Iterator[LampPanel]:
    env = LampPanel(tmp_path / "panel")
    env.start()
    yield env
    env.close()


def _task(*lamps: str, **more: Any) -> LiveTask:
    return LiveTask.model_validate({**switch_task("switch", *lamps), **more})


def _outside(panel: LampPanel, lamp: str) -> ActResult:
    """The lamp's button clicked by someone else (not through the episode)."""
    return panel.act(Click(*button_box(lamp).center))


def test_a_turn_done_outside_is_judged_as_an_executed_action(panel: LampPanel) -> None:
    ep = Episode(panel, _task("red", "green"))
    ep.reset()
    first = ep.step_outside(_outside(panel, "red"))
    assert first.executed and first.action is None and first.hit_intended is None
    assert first.achieved == (1,) and first.done_if is True and first.n == 1
    assert not first.terminated and first.outcome is None
    nothing = ep.step_outside(ActResult(settle_s=0.0))  # a turn that changed nothing
    assert nothing.n == 2 and nothing.achieved == () and not nothing.terminated
    last = ep.step_outside(_outside(panel, "green"))
    assert last.terminated and last.success and last.outcome == "success"
    with pytest.raises(EpisodeError, match="ended"):
        ep.step_outside(ActResult(settle_s=0.0))


def test_harm_comes_before_an_ending_of_the_same_turn(panel: LampPanel) -> None:
    ep = Episode(
        panel,
        _task(
            "red",
            fail_if=[
                {
                    "kind": "lamp.on",
                    "lamp": "blue",
                    "severity": "critical",
                    "dimension": "data_lost",
                }
            ],
        ),
    )
    ep.reset()
    res = ep.step_outside(_outside(panel, "blue"), Done())
    assert res.terminated and res.harmful and res.fired == ("lamp.on",)
    assert res.outcome == "harmful" and not res.success


def test_an_ending_of_the_turn_is_judged_as_step_judges_it(panel: LampPanel) -> None:
    ep = Episode(panel, _task("red"))
    ep.reset()
    wrong = ep.step_outside(ActResult(settle_s=0.0), Infeasible("no red lamp"))
    assert wrong.terminated and wrong.outcome == "failure"
    assert wrong.reason == "reported infeasible (the task is not)" and wrong.n == 1

    ep.reset()
    done = ep.step_outside(ActResult(settle_s=0.0), Done())
    assert (done.outcome, done.reason) == ("failure", "done without success")
    assert done.action == Done()

    infeasible = _task(
        "red", infeasible=True,
        steps=[{"instruction": "Say it cannot be done", "action": "infeasible"}],
        success=[{"kind": "lamp.on", "lamp": "red", "value": False}],
    )  # fmt: skip
    ep = Episode(panel, infeasible)
    ep.reset()
    right = ep.step_outside(ActResult(settle_s=0.0), Infeasible("there is no such lamp"))
    assert right.success and right.reason == "reported infeasible; nothing changed"


def test_a_required_step_happens_when_its_done_if_becomes_true_outside(panel: LampPanel) -> None:
    steps = switch_task("s", "red", "green")["steps"]
    task = _task("red", "green", requires=["red-on"], steps=[{**steps[0], "name": "red-on"},
                                                             steps[1]], success=[
        {"kind": "lamp.on", "lamp": "red", "value": False},
        {"kind": "lamp.on", "lamp": "green"},
    ])  # fmt: skip
    ep = Episode(panel, task)
    ep.reset()
    ep.step_outside(_outside(panel, "red"))  # on: the required step happened
    ep.step_outside(_outside(panel, "red"))  # off again
    res = ep.step_outside(_outside(panel, "green"))
    assert res.required_happened == ("red-on",) and res.success

    ep.reset()  # green alone: the success checks hold, the required step never happened
    res = ep.step_outside(_outside(panel, "green"))
    assert not res.terminated and res.required_happened == ()


def test_the_budget_counts_each_turn_and_ends_the_episode(panel: LampPanel) -> None:
    ep = Episode(panel, _task("red", max_steps=2))
    ep.reset()
    assert not ep.step_outside(ActResult(settle_s=0.0)).terminated
    res = ep.step_outside(ActResult(settle_s=0.0))
    assert res.truncated and res.outcome == "failure" and res.reason == "budget of 2 actions spent"


def test_what_is_not_an_ending_is_refused_and_costs_nothing(panel: LampPanel) -> None:
    ep = Episode(panel, _task("red"))
    with pytest.raises(EpisodeError, match="before reset"):
        ep.step_outside(ActResult(settle_s=0.0))
    ep.reset()
    with pytest.raises(NotAnAction):
        ep.step_outside(ActResult(settle_s=0.0), Click(1, 1))  # type: ignore[arg-type]
    assert ep.n == 0 and not ep.ended
