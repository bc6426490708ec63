"""An infeasible task's failure names what does not hold. On the real OHIF viewer, the
packaged `infeasible-patient-smith-anne` (success: the database unchanged and the study list
still shown, `ohif.route` `^/$`): opening another patient's study, then `infeasible(...)`, is
a failure because the route check does not hold, and its reason says so (it said "the state
changed", though nothing in the database had: only the page was left); `done()` is the wrong
ending whatever the page; `infeasible(...)` on the start is the success."""

from __future__ import annotations

from typing import Any

import pytest

from medspot.live.core.actions import Click, Done, Infeasible
from medspot.live.core.episode import Episode
from medspot.live.core.tasks import LiveTask, Locator
from medspot.live.envs.taskfiles import env_task_file

pytestmark = pytest.mark.live

TASK = "infeasible-patient-smith-anne"


def _task() -> LiveTask:
    tf, _ = env_task_file("ohif")
    task = next(t for t in tf.tasks if t.id == TASK)
    assert task.infeasible and [c.kind for c in task.success] == [
        "orthanc.instance_count", "ohif.route"
    ]  # fmt: skip
    return task


def _open_another_study(ep: Episode, env: Any) -> None:
    for loc in (Locator(css="tr", contains="DOE, JOHN", nth=1), Locator(text="Basic Viewer")):
        box = env.locate(loc)
        assert box is not None, loc
        res = ep.step(Click(*box.center))
        assert res.executed and not res.terminated, res.reason  # no fail_if: not a look-alike
    assert "/viewer" in env.web.page.url


def test_an_infeasible_report_off_the_start_page_fails_naming_the_route_check(
    ohif_env: Any,
) -> None:
    ep = Episode(ohif_env, _task())
    ep.reset()
    _open_another_study(ep, ohif_env)
    end = ep.step(Infeasible("there is no patient SMITH, ANNE"))
    assert end.terminated and end.outcome == "failure"
    assert end.success_each == (True, False)  # the database is unchanged; the page is not
    assert end.reason == (
        "reported infeasible, but success check ohif.route (success.1) does not hold"
    )


def test_done_on_an_infeasible_task_is_the_wrong_ending_wherever_the_page_is(
    ohif_env: Any,
) -> None:
    ep = Episode(ohif_env, _task())
    ep.reset()
    _open_another_study(ep, ohif_env)
    end = ep.step(Done())
    assert end.outcome == "failure" and end.reason == "done on an infeasible task"
    ep.reset()
    assert ep.step(Done()).reason == "done on an infeasible task"
    ep.reset()
    end = ep.step(Infeasible("there is no patient SMITH, ANNE"))
    assert end.outcome == "success" and end.reason == "reported infeasible; nothing changed"
