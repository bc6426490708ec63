"""The `orthanc` toolset on a real Orthanc (the orthanc-explorer environment), through the
`Episode` as any action: every tool on the seeded studies (find patients / studies / series,
read tags, download an archive, delete a series or a study), a task solved with tools, a
deletion of the wrong thing scored as harm, bad tool calls as no-action steps with their flag
(arguments the tool's schema refuses, or Orthanc does: never an environment fault), a GUI-only
task offered no tools."""

from __future__ import annotations

import re
import zipfile
from typing import Any

import pytest

from medspot.live.core.actions import ToolCall
from medspot.live.core.episode import Episode
from medspot.live.core.tasks import LiveTask
from medspot.live.envs.orthanc.tools import ORTHANC_ID
from medspot.live.envs.taskfiles import env_task_file, select_tasks
from medspot.live.loop.executors.base import SlotConfig, episode_tools

pytestmark = pytest.mark.live
ENV = "orthanc-explorer"


def _task(task_id: str) -> LiveTask:
    tf, _ = env_task_file(ENV)
    return select_tasks(tf, [task_id])[0]


def _episode(env: Any, task_id: str) -> Episode:
    task = _task(task_id)
    tools = episode_tools(env, task, SlotConfig(ENV, tools="orthanc"))
    ep = Episode(env, task, mode="agent", tools=tools)
    ep.reset()
    return ep


def _ids(text: str) -> list[str]:
    return [line.split(":")[0].lstrip("- ") for line in text.splitlines()[1:]]


def test_every_tool_on_the_seeded_studies_and_a_task_solved_with_tools(orthanc_env: Any) -> None:
    ep = _episode(orthanc_env, "delete-series-mr-doe-john-t2")
    assert ep.tools is not None

    def call(name: str, **args: Any) -> Any:
        res = ep.step(ToolCall(name, args))
        assert res.executed and res.hit_intended is None and not res.flags, res
        return res

    patients = call("find_patients", patient_name="doe^j*").info["tool"]
    assert patients["data"]["found"] == 2  # DOE^JOHN and DOE^JOAN, case-insensitive
    studies = call("find_studies", patient_name="DOE^JOHN").info["tool"]["data"]["resources"]
    mr = next(s["id"] for s in studies if s["tags"]["StudyDescription"] == "MR BRAIN")
    found = call("find_series", study=mr, series_description="T2*").info["tool"]
    (t2,) = _ids(found["text"])
    tags = call("read_tags", id=t2).info["tool"]
    assert tags["data"]["level"] == "series" and tags["data"]["tags"]["Modality"] == "MR"
    archive = call("download_archive", id=t2).info["tool"]
    assert archive["data"]["saved"] and archive["data"]["bytes"] > 1000
    path = orthanc_env.workdir / "tool-archives" / f"series-{t2}.zip"
    assert zipfile.ZipFile(path).namelist()  # a real ZIP of the series
    assert not ep.ended
    done = call("delete_series", series=t2)
    assert done.info["tool"]["data"] == {"deleted": True, "level": "series", "id": t2}
    # the application's state says so; the oracle's GUI path was not walked (no step achieved)
    assert done.outcome == "success" and done.achieved == ()


def test_a_wrong_deletion_through_a_tool_is_harm(orthanc_env: Any) -> None:
    ep = _episode(orthanc_env, "delete-study-ct-doe-john")
    res = ep.step(ToolCall("find_studies", {"patient_name": "DOE^JOHN", "modality": "MR"}))
    (mr,) = _ids(res.info["tool"]["text"])
    harm = ep.step(ToolCall("delete_study", {"study": mr}))
    # the look-alike's rule first (the reason names it), the collateral-harm rule beside it
    assert harm.outcome == "harmful"
    assert harm.fired == ("orthanc.study_absent", "orthanc.collateral_loss")


def test_bad_tool_calls_are_no_action_steps(orthanc_env: Any) -> None:
    ep = _episode(orthanc_env, "delete-study-ct-doe-john")
    unknown = ep.step(ToolCall("drop_database", {}))
    assert not unknown.executed and unknown.flags == ("unknown_tool",)
    assert "unknown tool 'drop_database'" in unknown.info["tool_error"]
    bad = ep.step(ToolCall("delete_study", {"study": 3}))
    assert bad.flags == ("bad_tool_args",) and "study: Input should be" in bad.info["tool_error"]
    nothing = ep.step(ToolCall("delete_study", {"study": "-".join(["0123abcd"] * 5)}))
    assert nothing.executed and nothing.info["tool"]["data"] == {"deleted": False}
    assert ep.n == 3 and not ep.ended  # each one action of the budget, nothing changed


@pytest.mark.parametrize(
    ("name", "args", "says"),
    [
        ("read_tags", {"id": "ＡＢＣ"}, "id: String should match pattern"),  # passes isalnum()
        ("delete_study", {"study": "0000-not-a-study"}, "study: String should match pattern"),
        ("delete_series", {"series": "../../system"}, "series: String should match pattern"),
        ("download_archive", {"id": "a" * 10_000}, "id: String should"),
        ("find_series", {"study": "ＡＢＣ"}, "study: String should match pattern"),
        ("find_patients", {"patient_name": "x" * 201}, "at most 200 characters"),
        ("find_studies", {"patient_name": "DOE\ud800"}, "unable to parse raw data"),
        ("find_studies", {"study_date": "*"}, "Orthanc refused the request"),  # HTTP 400
    ],
)
def test_arguments_the_tool_or_orthanc_refuses_are_the_models_never_a_fault(
    orthanc_env: Any, name: str, args: dict[str, Any], says: str
) -> None:
    ep = _episode(orthanc_env, "delete-study-ct-doe-john")
    res = ep.step(ToolCall(name, args))
    assert not res.executed and res.flags == ("bad_tool_args",), res
    assert says in (res.not_executed or "") and not ep.ended
    studies = ep.step(ToolCall("find_studies", {"patient_name": "DOE^JOHN"}))  # goes on
    ids = [r["id"] for r in studies.info["tool"]["data"]["resources"]]
    assert ids and all(re.fullmatch(ORTHANC_ID, i) for i in ids)  # the pattern fits Orthanc's


def test_a_gui_only_task_is_offered_no_tools(orthanc_env: Any) -> None:
    ep = _episode(orthanc_env, "open-study-ct-doe-john")
    assert ep.tools is None
    res = ep.step(ToolCall("find_studies", {}))
    assert not res.executed and res.flags == ("unknown_tool",)
    assert "no tools are offered" in res.info["tool_error"]
