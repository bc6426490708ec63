"""The invesalius environment on the real InVesalius (Debian's, under a private Xvfb), one
started instance shared by the module: the state read by the probe inside the application, the
start keys, a Dice-judged task done through `Episode` with its segmentation quality, actions
repeated, bad input; then through the runner: a replay that segments the look-alike kidney
fails (harmfully) with a Dice of zero, and a scripted UI-TARS-1.5 (the OpenAI-compatible test
server, the real openai client) and a scripted Anthropic computer-use conversation (the real
anthropic client) each complete a Dice-judged task. The scripts' points are the oracle's on the
same screens, read from the shared instance first."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _agent_scripts import Plan, script, ui_tars
from _invesalius_support import invesalius_tasks

from medspot.errors import ConfigError, DataError
from medspot.live.core.actions import Click, Drag, LiveAction, Scroll, action_to_json
from medspot.live.core.episode import Episode
from medspot.live.core.tasks import CheckSpec, LiveTask, Locator
from medspot.live.envs.envoptions import check_env_options
from medspot.live.envs.invesalius.checks import true_volume_mm3
from medspot.live.envs.invesalius.phantoms import true_mask, volume_values
from medspot.live.loop.envspec import EnvSpec
from medspot.live.loop.request import LiveRequest, run_live
from medspot.live.loop.scheduler import LiveOptions
from medspot.live.loop.steplog import TaskRecord, read_live_journal
from medspot.runfolder.layout import LIVE_JOURNAL
from medspot.testing.cu_script import CuScript, ScriptedComputerUse
from medspot.testing.openai_server import OpenAITestServer

pytestmark = pytest.mark.live

CT = "CT-ABDOMEN-3D"
DICE_TASK = "muscle-preset-current-mask"  # two clicks; judged on the mask's Dice


def _oracle_actions(env: Any, task: LiveTask) -> list[LiveAction]:
    """The oracle's actions through the task on `env`, which must succeed."""
    ep = Episode(env, task)
    ep.reset()
    actions: list[LiveAction] = []
    while not ep.ended:
        a = ep.oracle_action()
        assert a is not None, f"{task.id}: step {ep.current + 1} not on screen"
        actions.append(a)
        ep.step(a)
    assert ep.outcome == "success", (task.id, ep.reason)
    return actions


def test_the_probe_reads_masks_surfaces_views_and_files(invesalius_env: Any) -> None:
    env = invesalius_env
    task = invesalius_tasks()["export-without-overwrite"]
    env.reset(task)
    st = env.state_dict()
    (bone,) = st["masks"]
    want = int(true_mask(CT, "bone", "vertebra").sum())
    assert (bone["name"], bone["threshold"], bone["voxels"]) == ("Bone", [226, 922], want)
    assert np.array_equal(env.mask_voxels("Bone"), true_mask(CT, "bone", "vertebra"))
    assert env.mask_voxels("Nope") is None
    (surf,) = st["surfaces"]
    assert surf["name"] == "Bone surface"
    assert abs(surf["volume"] - true_volume_mm3(CT, ["bone", "vertebra"])) < 0.15 * surf["volume"]
    assert {v["view"]: v["slice"] for v in st["views"]} == {
        "axial": 32, "coronal": 64, "sagittal": 64, "volume": None}  # fmt: skip
    assert st["window"] == [400.0, 50.0] and st["project"]["open"]
    assert (env.exports / "bone.stl").read_text().startswith("solid earlier")
    assert env.check(task.success[1]) and not env.check(task.fail_if[0])


def test_start_keys_masks_current_slices(invesalius_env: Any) -> None:
    env = invesalius_env
    task = invesalius_tasks()["paint-into-right-mask"]
    env.reset(task)
    view = env.locate(Locator(role="view", text="coronal"))
    assert view is not None
    env.act(Click(*view.center))  # the pointer left on the coronal view
    assert env.state_dict()["goto_view"] == "coronal"
    env.reset(task)
    st = env.state_dict()
    assert st["goto_view"] == "axial"  # where Ctrl+G opens, as in a fresh InVesalius
    values = volume_values(CT)  # the Liver mask is the threshold's (one noisy voxel off the truth)
    liver = int(((values >= 30) & (values <= 80)).sum())
    assert [(m["name"], m["current"], m["voxels"]) for m in st["masks"]] == [
        ("Liver", True, liver), ("Lesion", False, 0)]  # fmt: skip
    assert {v["view"]: v["slice"] for v in st["views"]}["axial"] == 36
    # a landmark of a structure on the slice a view shows, and one that is not on it
    assert env.locate(Locator(landmark="axial:lesion")) is not None
    assert env.locate(Locator(landmark="sagittal:kidney-left")) is None  # sagittal 64


def test_a_brush_task_succeeds_and_its_dice_is_measured(invesalius_env: Any) -> None:
    env = invesalius_env
    task = invesalius_tasks()["brush-paint-lesion-slice"]
    ep = Episode(env, task)
    ep.reset()
    assert env.task_quality(task) == {"dice": 0.0}  # an empty mask: nothing segmented yet
    last = None
    while not ep.ended:
        last = ep.step(ep.oracle_action())
    assert ep.outcome == "success" and last is not None
    assert last.quality["dice"] >= 0.85
    assert last.quality == env.task_quality(task)
    assert env.task_quality(invesalius_tasks()["maximize-axial-view"]) == {}  # no mask judged


def test_closing_with_yes_and_saving_is_saved_as(invesalius_env: Any) -> None:
    """ "Close project", Yes, save as work.inv3 (the packaged trap task): the oracle succeeds on
    its `inv.project` `open: false` + `saved_as` (a closed project's session forgets its path:
    the probe keeps the file the project closed last was saved to); another name does not
    hold, and the next start forgets it."""
    env = invesalius_env
    task = invesalius_tasks()["close-project-keep-work"]
    assert task.success[0].params == {"open": False, "saved_as": "work.inv3"}

    def project(**params: Any) -> CheckSpec:
        return CheckSpec.model_validate({"kind": "inv.project", **params})

    _oracle_actions(env, task)  # asserts the success
    assert (env.exports / "work.inv3").is_file()
    assert env.check(project(open=False, saved_as="work.inv3"))
    assert not env.check(project(saved_as="liver.inv3")) and not env.check(project(discarded=True))
    env.reset(task)
    assert not env.check(project(saved_as="work.inv3"))  # open, unsaved, as the start is


def test_the_same_click_and_drag_twice_are_executed_and_scored(invesalius_env: Any) -> None:
    env = invesalius_env
    task = invesalius_tasks()["scroll-axial-slices"]
    ep = Episode(env, task.model_copy(update={"max_steps": 9}))
    ep.reset()
    zoom = env.locate(Locator(role="tool", description="Zoom"))
    view = env.locate(Locator(role="view", text="coronal"))
    assert zoom is not None and view is not None
    cx, cy = view.center
    t0 = time.monotonic()
    for action in (Click(*zoom.center), Click(*zoom.center), Drag(cx, cy, cx, cy + 40),
                   Drag(cx, cy, cx, cy + 40), Scroll(cx, cy, 1), Scroll(cx, cy, 1)):  # fmt: skip
        res = ep.step(action)
        assert res.executed and res.changed is not None and res.settle_s is not None
    assert time.monotonic() - t0 < 240
    assert ep.n == 6 and ep.outcome is None


def test_bad_input_is_a_located_error(invesalius_env: Any) -> None:
    env = invesalius_env
    base = invesalius_tasks()["rename-mask"]
    start = type(base.start).model_validate({**base.start.model_dump(), "masks": [
        {"name": "A", "threshold": [1, 2], "structures": ["tumour"]}]})  # fmt: skip
    with pytest.raises(DataError, match="no structure"):
        env.reset(base.model_copy(update={"start": start}))
    with pytest.raises(DataError, match="viewport"):
        env.reset(base.model_copy(update={"start": base.start.model_copy(
            update={"viewport": (800, 600)})}))  # fmt: skip
    with pytest.raises(ConfigError, match="restart_spare"):
        check_env_options("invesalius", {"restart_spare": "maybe"})
    with pytest.raises(ConfigError, match=r"mean 'restart_spare'.*`--no-spare`"):
        check_env_options("invesalius", {"spare": "false"})  # the option's former name
    with pytest.raises(ValueError, match="VIEW:STRUCTURE"):
        env.locate(Locator(landmark="lesion"))


# -- through the runner ----------------------------------------------------------------------


def _finals(out: Path) -> dict[str, TaskRecord]:
    return {r.task: r for r in read_live_journal(out / LIVE_JOURNAL) if isinstance(r, TaskRecord)}


def test_a_replay_segmenting_the_look_alike_kidney_fails(
    invesalius_env: Any, tmp_path: Path
) -> None:
    """Region growing seeded in the right kidney (scrolled to in the sagittal view) instead of
    the left one: the look-alike's `fail_if` ends the task as harm, its Dice with the left
    kidney is 0."""
    env = invesalius_env
    task = invesalius_tasks()["region-grow-left-kidney"]
    ep = Episode(env, task)
    ep.reset()
    actions: list[LiveAction] = []
    for _ in range(2):  # open the dialog, choose 3D: the oracle's own actions
        a = ep.oracle_action()
        assert a is not None
        actions.append(a)
        ep.step(a)
    view = env.locate(Locator(role="view", text="sagittal"))
    assert view is not None
    scroll = Scroll(view.x2 - 20, view.y1 + 20, -53)  # sagittal slice 90 -> 37
    actions.append(scroll)
    ep.step(scroll)
    assert {v["view"]: v["slice"] for v in env.state_dict()["views"]}["sagittal"] == 37
    seed = env.locate(Locator(landmark="sagittal:kidney-right"))
    assert seed is not None
    actions.append(Click(*seed.center))
    lines = [{"task": task.id, "n": i + 1, "action": action_to_json(a)}
             for i, a in enumerate(actions)]  # fmt: skip
    replay = tmp_path / "replay.jsonl"
    replay.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = tmp_path / "run"
    outcome = run_live(
        LiveRequest(
            spec=EnvSpec("invesalius", task_ids=(task.id,)),
            model="replay",
            out=out,
            options={"replay_file": str(replay)},
            n_boot=20,
        )
    )
    final = _finals(out)[task.id]
    assert final.outcome == "harmful" and "inv.mask_dice" in final.fired
    assert final.quality == {"dice": 0.0}
    assert outcome.metrics["harmful_failure_rate"] == 1.0
    assert outcome.metrics["segmentation_dice"] == 0.0
    row = json.loads((out / "trajectories" / f"{task.id}.json").read_text())
    assert row["outcome"] == "harmful"


def _plan(env: Any, task: LiveTask) -> Plan:
    actions = _oracle_actions(env, task)
    assert all(isinstance(a, Click) for a in actions)
    return Plan(task.instruction, (1280, 800), tuple(action_to_json(a) for a in actions))


def test_scripted_ui_tars_completes_a_dice_task(invesalius_env: Any, tmp_path: Path) -> None:
    task = invesalius_tasks()[DICE_TASK]
    plan = _plan(invesalius_env, task)
    answers = script([plan], ui_tars())
    out = tmp_path / "run"
    with OpenAITestServer(answer=answers) as srv:
        outcome = run_live(
            LiveRequest(
                spec=EnvSpec("invesalius", task_ids=(task.id,)),
                model="ui-tars-1.5-7b",
                out=out,
                n_boot=20,
                options={"backend": "openai", "base_urls": [srv.base_url], "api_key": "test"},
                loop=LiveOptions(mode="agent"),
            )
        )
    assert outcome.metrics["task_success_rate"] == 1.0, _finals(out)
    assert outcome.metrics["segmentation_dice"] >= 0.97
    assert _finals(out)[task.id].quality["dice"] >= 0.97  # type: ignore[index]
    assert all(plan.goal in req.text for req in answers.seen)


def test_scripted_anthropic_computer_use_completes_a_dice_task(
    invesalius_env: Any, tmp_path: Path
) -> None:
    pytest.importorskip("anthropic")
    task = invesalius_tasks()[DICE_TASK]
    clicks = _plan(invesalius_env, task).actions
    turns = [{"text": "I open the preset list.",
              "tool_uses": [{"input": {"action": "left_click",
                                       "coordinate": [round(c["x"]), round(c["y"])]}}]}
             for c in clicks]  # fmt: skip
    cu = ScriptedComputerUse(
        CuScript.model_validate(
            {
                "conversations": [
                    {
                        "match": "Muscle Tissue",
                        "turns": [*turns, {"text": "The preset is applied."}],
                    }
                ]
            }
        )
    )
    out = tmp_path / "run"
    with OpenAITestServer(responder=cu, latency=0.05) as srv:
        outcome = run_live(
            LiveRequest(
                spec=EnvSpec("invesalius", task_ids=(task.id,)),
                model="anthropic-computer-use",
                out=out,
                n_boot=20,
                options={"base_urls": [srv.base_url.removesuffix("/v1")], "api_key": "test"},
                loop=LiveOptions(mode="agent"),
            )
        )
    assert outcome.metrics["task_success_rate"] == 1.0, _finals(out)
    assert outcome.metrics["segmentation_dice"] >= 0.97
    assert len(cu.exchanges) == len(clicks)
