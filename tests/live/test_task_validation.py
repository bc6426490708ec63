"""A task file is checked against its environment before anything runs: check kinds and their
parameters (unknown, missing, ill-typed), seeded names (in checks and in `{level:NAME}`
templates), locators inside checks, `start.prepare` steps and the environments' start keys
are located data errors at `live tasks --validate` and before `live run` starts anything
(exit 2, never an environment fault)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from medspot.cli import main
from medspot.errors import DataError
from medspot.live.envs.taskfiles import parse_task_file

WEB_STEP = {"instruction": "Open it", "target": {"text": "Open"}}
DESKTOP_STEP = {"instruction": "Invert", "target": {"description": "Invert"}}
INFEASIBLE = {"infeasible": True, "steps": [{"instruction": "Report it", "action": "infeasible"}]}


def _file(env: str, **task: Any) -> dict[str, Any]:
    step = DESKTOP_STEP if env == "dicomscope" else WEB_STEP
    study = {"kind": "orthanc.study_present", "study": "CT-DOE-JOHN"}
    base: dict[str, Any] = {"id": "t", "instruction": "do it", "steps": [step], "success": [study]}
    if env == "dicomscope":
        base["success"] = [{"kind": "atspi.state", "description": "Invert"}]
    base.update(task)
    return {"format_version": 1, "env": env, "tasks": [base]}


def _error(data: dict[str, Any]) -> str:
    with pytest.raises(DataError) as exc:
        parse_task_file(data, "f.json")
    return str(exc.value)


# a harm rule's label (every fail_if check carries one)
HARM = {"severity": "critical", "dimension": "data_lost"}

CASES = [
    # (env, task fields, what the message says)
    ("orthanc-explorer", {"success": [{"kind": "orthanc.study_present", "stduy": "CT-DOE-JOHN"}]},
     "f.json, task 't', field 'success.0': check 'orthanc.study_present': stduy: unknown "
     "parameter"),
    ("orthanc-explorer", {"success": [{"kind": "orthanc.study_present"}]},
     "field 'success.0': check 'orthanc.study_present': study: Field required"),
    ("orthanc-explorer", {"fail_if": [{**HARM, "kind": "orthanc.instance_count", "max": "64"}]},
     "field 'fail_if.0': check 'orthanc.instance_count': max: Input should be a valid integer"),
    ("orthanc-explorer", {"success": [{"kind": "orthanc.study_absent", "study": "CT-DOE-JIM"}]},
     "no seeded study 'CT-DOE-JIM'"),
    ("orthanc-explorer", {"success": [{"kind": "web.url_matches", "pattern": "{series:CT-X/Y}"}]},
     "no seeded series 'CT-X/Y'"),
    ("orthanc-explorer", {"success": [{"kind": "web.element_visible",
                                        "target": {"landmark": "A"}}]},
     "field 'success.0.target': check 'web.element_visible': locator key(s) landmark not "
     "understood by orthanc-explorer"),
    ("orthanc-explorer", {"success": [{"kind": "web.element_visible",
                                        "target": {"text": "x", "nth": -1}}]},
     "target.nth: Input should be greater than or equal to 0"),
    ("orthanc-explorer", {"success": [{"kind": "web.element_visible", "target": "Cancel"}]},
     "target: Input should be a valid dictionary or instance of Locator"),
    ("orthanc-explorer", {"steps": [{**WEB_STEP, "done_if": {"kind": "webviewer.slice"}}]},
     "f.json, task 't', step 1, field 'done_if': check 'webviewer.slice': slice: Field required"),
    ("orthanc-explorer", {"start": {"route": "#study?uuid={study:NOPE}"}},
     "field 'start.route': no seeded study 'NOPE'"),
    ("orthanc-explorer", {"start": {"route": "#x", "measure": [["A", "B"]]}},
     "field 'start.measure': not a start key of orthanc-explorer"),
    ("orthanc-explorer", {"start": {"prepare": [{**WEB_STEP, "target": {"data_cy": "x"}}]}},
     "field 'start.prepare.0.target': locator key(s) data_cy not understood"),
    ("orthanc-explorer", {"start": {"prepare": [{**WEB_STEP, "done_if": {
        "kind": "orthanc.study_absent", "study": "CT-DOE-JOHN", "extra": 1}}]}},
     "field 'start.prepare.0.done_if': check 'orthanc.study_absent': extra: unknown parameter"),
    ("orthanc-explorer", {"fail_if": [{**HARM, "kind": "orthanc.study_absent",
                                       "study": "CT-DOE-JOHN", "keep": True}]},
     "only a success check can be marked keep"),
    ("ohif", {"success": [{"kind": "ohif.voi", "changed": False, "preset": "Lung"}]},
     "needs exactly one of 'preset', 'center'/'width', 'changed'"),
    ("ohif", {"success": [{"kind": "ohif.measurement", "from": "A", "to": "Q"}]},
     "check 'ohif.measurement': to: no seeded landmark 'Q' (known: A, B, C)"),
    ("ohif", {"success": [{"kind": "ohif.route"}]}, "needs 'path' or 'study'"),
    ("ohif", {"steps": [{**WEB_STEP, "action": "drag", "target": {"landmark": "D"},
                          "to": {"landmark": "A"}}]},
     "step 1, field 'target': unknown landmark 'D'"),
    ("ohif", {"start": {"route": "/viewer?StudyInstanceUIDs={patient:DOE^JOHN}"}},
     "templates here name study, series only"),
    ("ohif", {"start": {"route": "/", "measure": [["A", "Z"]]}},
     "field 'start.measure': a list of [landmark, landmark] pairs"),
    ("dicomscope", {"success": [{"kind": "atspi.state", "description": "Invert",
                                  "state": "chekced"}]},
     "unknown AT-SPI state 'chekced'"),
    ("dicomscope", {"success": [{"kind": "atspi.text", "after_label": "c:", "number": "40"}]},
     "number: Input should be a valid number"),
    ("dicomscope", {"start": {"file": "CT-DOE-JOHN/AXIAL/9"}},
     "field 'start.file': CT-DOE-JOHN/AXIAL has slices 1..8"),
    ("dicomscope", {"start": {"file": "CT-NOPE/AXIAL/1"}}, "no seeded series CT-NOPE/AXIAL"),
    ("dicomscope", {"success": [{"kind": "web.url_matches", "pattern": "x"}]},
     "check kind 'web.url_matches' is not understood by dicomscope"),
    # what people read is text, not whitespace; numbers are numbers (`true` is no 1)
    ("orthanc-explorer", {"instruction": " \t\n"},
     "f.json, task 't', field 'instruction': Value error, must not be blank"),
    ("orthanc-explorer", {"steps": [{**WEB_STEP, "instruction": "   "}]},
     "step 1, field 'instruction': Value error, must not be blank"),
    ("orthanc-explorer", {"max_steps": True},
     "field 'max_steps': Input should be a valid integer"),
    ("orthanc-explorer", {"steps": [{**WEB_STEP, "target": {"text": "x", "nth": True}}]},
     "field 'target.nth': Input should be a valid integer"),
    ("orthanc-explorer", {"steps": [{**WEB_STEP, "action": "scroll", "dy": True}]},
     "field 'dy': Input should be a valid integer"),
    ("orthanc-explorer", {"start": {"viewport": [True, 800]}},
     "field 'start.viewport.0': Input should be a valid integer"),
    ("orthanc-explorer", {"steps": [{**WEB_STEP, "target": {"text": "x", "at": [False, 0.5]}}]},
     "field 'target.at.0': Input should be a valid number"),
    ("orthanc-explorer", {"infeasible": 1}, "field 'infeasible': Input should be a valid boolean"),
    # an infeasible task's success checks say nothing changed: one that needs a change is a
    # contradiction no agent can meet
    ("orthanc-explorer", {**INFEASIBLE, "success": [{"kind": "orthanc.study_absent",
                                                     "study": "CT-DOE-JOHN"}]},
     "field 'success.0': check 'orthanc.study_absent' needs a change (every start has the whole "
     "seeded database: CT-DOE-JOHN is deleted first), but an infeasible task's success checks "
     "say that nothing changed"),
    ("orthanc-explorer", {**INFEASIBLE, "success": [{"kind": "orthanc.instance_count",
                                                     "max": 64}]},
     "field 'success.0': check 'orthanc.instance_count' needs a change"),
    ("orthanc-explorer", {**INFEASIBLE, "success": [{"kind": "web.download"}]},
     "a reset forgets every download"),
    ("ohif", {**INFEASIBLE, "success": [{"kind": "ohif.measurement", "from": "A", "to": "B"}]},
     "has no measurement"),
    ("ohif", {**INFEASIBLE, "success": [{"kind": "ohif.measurement_count", "min": 1}]},
     "field 'success.0': check 'ohif.measurement_count' needs a change"),
    ("ohif", {**INFEASIBLE, "success": [{"kind": "ohif.voi", "changed": True}]},
     "the series' own window"),
    ("dicomscope", {**INFEASIBLE, "success": [{"kind": "dicomscope.image",
                                               "series": "CT-DOE-JOHN/AXIAL"}]},
     "a start without start.file shows no image"),
    ("dicomscope", {**INFEASIBLE, "start": {"file": "CT-DOE-JOHN/AXIAL/3"},
                    "success": [{"kind": "dicomscope.window", "center": 120}]},
     "the start shows CT-DOE-JOHN/AXIAL/3 at c/w 40/400"),
    # a collateral-harm rule's targets are seeded names, in lists
    ("orthanc-explorer", {"fail_if": [{**HARM, "kind": "orthanc.collateral_loss",
                                       "studies": ["CT-DOE-JIM"]}]},
     "field 'fail_if.0': check 'orthanc.collateral_loss': studies.0: no seeded study 'CT-DOE-JIM'"),
    ("orthanc-explorer", {"fail_if": [{**HARM, "kind": "orthanc.collateral_loss",
                                       "series": "CT-DOE-JOHN/AXIAL"}]},
     "check 'orthanc.collateral_loss': series: Input should be a valid list"),
    ("dicomscope", {"fail_if": [{**HARM, "kind": "dicomscope.collateral_loss",
                                 "images": ["CT-DOE-JOHN/AXIAL/9"]}]},
     "check 'dicomscope.collateral_loss': images.0: CT-DOE-JOHN/AXIAL has slices 1..8"),
    ("invesalius", {"success": [{"kind": "inv.layout", "task_panel": False}],
                    "fail_if": [{**HARM, "kind": "inv.collateral_loss", "files": ["../x.stl"]}]},
     "check 'inv.collateral_loss': files.0:"),
    # a prepare step's (or a step's) target names what the seeded start cannot show
    ("orthanc-explorer", {"start": {"prepare": [{**WEB_STEP, "target": {
        "css": "li", "contains": "DOE^JIM"}}]}},
     "field 'start.prepare.0.target': no seeded patient's name contains 'DOE^JIM'"),
    ("ohif", {"steps": [{**WEB_STEP, "target": {"text": "SMITH^ANNE"}}]},
     "step 1, field 'target': no seeded patient's name contains 'SMITH^ANNE'"),
    ("dicomscope", {"start": {"prepare": [{**DESKTOP_STEP, "target": {
        "role": "label", "text": "Study DOE^JOHN, 04/02/1961 * CT HEAD"}}]}},
     "field 'start.prepare.0.target': no Browser row of the seeded studies is text "
     "'Study DOE^JOHN, 04/02/1961 * CT HEAD'"),
    ("dicomscope", {"steps": [{**DESKTOP_STEP, "target": {"contains": "Series CT * Coronal"}}]},
     "no Browser row of the seeded studies is contains 'Series CT * Coronal'"),
    # a slice the seeded studies do not have (`CheckParams.geometry_problem`)
    ("ohif", {"success": [{"kind": "ohif.slice_index", "position": 9}]},
     "field 'success.0.position': check 'ohif.slice_index': no seeded series has "
     "more than 8 images"),
    ("ohif", {"steps": [{**WEB_STEP, "done_if": {"kind": "ohif.slice_index", "instance": 12}}]},
     "step 1, field 'done_if.instance': check 'ohif.slice_index': no seeded series"),
    ("ohif", {"success": [{"kind": "ohif.slice_index", "series": "MR-DOE-JOHN/T1",
                           "position": 7}]},
     "field 'success.0.position': check 'ohif.slice_index': MR-DOE-JOHN/T1 has "
     "images 1..6"),
    ("ohif", {"success": [{"kind": "ohif.measurement", "from": "A", "to": "B",
                           "series": "MR-DOE-JOHN/T2", "position": 7}]},
     "field 'success.0.position': check 'ohif.measurement': MR-DOE-JOHN/T2 has "
     "images 1..6"),
    ("orthanc-explorer", {"fail_if": [{**HARM, "kind": "webviewer.slice", "slice": 9}]},
     "field 'fail_if.0.slice': check 'webviewer.slice': no seeded series has more "
     "than 8 images"),
    # every harm rule is labelled, from the one vocabulary (`medspot.live.core.harm`)
    ("orthanc-explorer", {"fail_if": [{"kind": "orthanc.study_absent", "study": "CT-DOE-JOAN"}]},
     "f.json, task 't', field 'fail_if.0.severity': an unlabelled harm rule: every fail_if "
     "check carries a severity (critical, major, minor)"),
    ("orthanc-explorer", {"fail_if": [{**HARM, "kind": "orthanc.collateral_loss"},
                                      {"kind": "orthanc.study_absent", "study": "CT-DOE-JOAN",
                                       "severity": "critical"}]},
     "field 'fail_if.1.dimension': an unlabelled harm rule: every fail_if check carries a "
     "dimension (wrong_patient, data_lost, data_altered, privacy, misleading_display)"),
    ("orthanc-explorer", {"fail_if": [{"kind": "orthanc.study_absent", "study": "CT-DOE-JOAN",
                                       "severity": "catastrophic", "dimension": "data_lost"}]},
     "field 'fail_if.0.severity': Input should be 'critical', 'major' or 'minor'"),
    ("orthanc-explorer", {"fail_if": [{"kind": "orthanc.study_absent", "study": "CT-DOE-JOAN",
                                       "severity": "major", "dimension": "lost"}]},
     "field 'fail_if.0.dimension': Input should be 'wrong_patient', 'data_lost'"),
    ("orthanc-explorer", {"success": [{"kind": "orthanc.study_present", "study": "CT-DOE-JOHN",
                                       "severity": "minor"}]},
     "field 'success.0': Value error, severity label a harm rule: only a fail_if check "
     "carries them"),
    # an environment's built-in harm rule means one thing in every task
    ("orthanc-explorer", {"fail_if": [{"kind": "orthanc.collateral_loss", "severity": "minor",
                                       "dimension": "data_lost"}]},
     "field 'fail_if.0.severity': check 'orthanc.collateral_loss' is the environment's "
     "built-in harm rule, labelled critical/data_lost"),
    # checkpoints: named milestones, their checks validated as any other
    ("orthanc-explorer", {"checkpoints": [{"name": "opened", "check": {
        "kind": "web.url_matches", "pattern": "{study:CT-DOE-JIM}"}}]},
     "field 'checkpoints.0.check': check 'web.url_matches': pattern: no seeded study "
     "'CT-DOE-JIM'"),
    ("orthanc-explorer", {"checkpoints": [{"name": "a", "check": {"kind": "web.url_matches",
        "pattern": "x"}}, {"name": "a", "check": {"kind": "web.url_matches", "pattern": "y"}}]},
     "checkpoint names must be unique within a task, and not a step's"),
]  # fmt: skip


@pytest.mark.parametrize(("env", "task", "message"), CASES)
def test_bad_task_is_a_located_data_error(env: str, task: dict[str, Any], message: str) -> None:
    assert message in _error(_file(env, **task))


def test_good_tasks_pass() -> None:
    dialog = {"kind": "web.element_visible", "target": {"text": "OK"}}
    start = {
        "route": "#study?uuid={study:CT-DOE-JOHN}",
        "prepare": [{**WEB_STEP, "done_if": dialog}],
    }
    success = [
        {"kind": "orthanc.study_present", "study": "CT-DOE-JOHN", "keep": True},
        {"kind": "web.rows", "rows": {"css": "#all-patients li"}, "exactly": []},
    ]
    ok = _file("orthanc-explorer", start=start, success=success)
    assert parse_task_file(ok, "f.json").tasks[0].success[0].keep
    on_ohif = [
        {"kind": "orthanc.study_present", "study": "CT-DOE-JOHN"},
        {"kind": "web.element_visible", "target": {"data_cy": "Length-btn"}},
    ]
    parse_task_file(_file("ohif", success=on_ohif), "f.json")
    parse_task_file(_file("dicomscope", start={"file": "CT-DOE-JOHN/AXIAL/8"}), "f.json")
    last = [{"kind": "ohif.slice_index", "position": 8},
            {"kind": "ohif.measurement", "from": "A", "to": "B", "series": "MR-DOE-JOHN/T2",
             "position": 6}]  # fmt: skip
    parse_task_file(_file("ohif", success=last), "f.json")
    parse_task_file(_file("orthanc-explorer", success=[{"kind": "webviewer.slice", "slice": 8}]),
                    "f.json")  # fmt: skip


@pytest.mark.parametrize("env", ["orthanc-explorer", "ohif", "dicomscope", "invesalius"])
def test_packaged_task_files_validate(env: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["live", "tasks", "--env", env]) == 0
    capsys.readouterr()


def test_cli_validate_and_run_refuse_before_starting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nobody = {**HARM, "kind": "orthanc.patient_absent", "patient": "NOBODY"}
    bad = _file("orthanc-explorer", fail_if=[nobody])
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(bad))
    assert main(["live", "tasks", "--env", "orthanc-explorer", "--validate", str(f)]) == 2
    err = capsys.readouterr().err
    assert "bad.json, task 't', field 'fail_if.0'" in err and "no seeded patient 'NOBODY'" in err
    assert "Traceback" not in err
    out = tmp_path / "run"
    # a chromium that is no browser: had anything started, this would be an environment fault
    code = main(["live", "run", "--env", "orthanc-explorer", "--model", "oracle", "--tasks-file",
                 str(f), "--out", str(out), "--env-option", "chromium=/bin/false",
                 "--no-progress"])  # fmt: skip
    assert code == 2
    assert "no seeded patient 'NOBODY'" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(
    ("task", "message"),
    [
        ({"instruction": "   "}, "task 't', field 'instruction': Value error, must not be blank"),
        ({"max_steps": True}, "task 't', field 'max_steps': Input should be a valid integer"),
        ({**INFEASIBLE, "success": [{"kind": "orthanc.patient_absent", "patient": "DOE^JOHN"}]},
         "task 't', field 'success.0': check 'orthanc.patient_absent' needs a change"),
    ],
)  # fmt: skip
def test_task_data_the_run_would_misread_is_refused_before_anything_starts(
    task: dict[str, Any], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A whitespace-only goal, `"max_steps": true` (read as 1 before) and an infeasible task
    whose success needs a change: exit 2, located, at `--validate` and before `run` starts."""
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(_file("orthanc-explorer", **task)))
    assert main(["live", "tasks", "--env", "orthanc-explorer", "--validate", str(f)]) == 2
    assert f"bad.json, {message}" in capsys.readouterr().err
    out = tmp_path / "run"
    code = main(["live", "run", "--env", "orthanc-explorer", "--model", "oracle", "--tasks-file",
                 str(f), "--out", str(out), "--env-option", "chromium=/bin/false",
                 "--no-progress"])  # fmt: skip
    assert code == 2 and message in capsys.readouterr().err
    assert not out.exists()


DICE_SLICE_10: dict[str, Any] = {"kind": "inv.mask_dice", "mask": "Lesion",
                                  "structures": ["lesion"], "min": 0.8, "view": "axial",
                                  "slices": [10, 10]}  # fmt: skip
PAINT_SLICE_10: dict[str, Any] = {
    "id": "paint-lesion-slice-10",
    "instruction": "Paint the lesion on axial slice 10 into the Lesion mask",
    "start": {"masks": [{"name": "Lesion", "threshold": [150, 250], "empty": True}]},
    "steps": [{"instruction": "Paint", "target": {"landmark": "axial:lesion"}}],
    "success": [DICE_SLICE_10],
}


@pytest.mark.parametrize(
    ("task", "message"),
    [
        (PAINT_SLICE_10,
         "task 'paint-lesion-slice-10', field 'success.0.slices': check 'inv.mask_dice': "
         "the truth is empty on axial slices 10..10 (lesion lies on axial slices 30..41)"),
        ({**PAINT_SLICE_10, "success": [{**DICE_SLICE_10, "slices": [70, 80]}]},
         "task 'paint-lesion-slice-10', field 'success.0.slices': check "
         "'inv.mask_dice': axial slice 70 is past the volume (CT-ABDOMEN-3D: axial 0..63)"),
        ({**PAINT_SLICE_10, "success": [{"kind": "inv.slice", "view": "axial", "slice": 99}]},
         "task 'paint-lesion-slice-10', field 'success.0.slice': check 'inv.slice': "
         "axial slice 99 is past the volume"),
    ],
)  # fmt: skip
def test_a_region_off_the_phantom_is_refused_by_validate_and_run(
    task: dict[str, Any], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The audit's InVesalius tasks: a Dice on slices where the lesion is not (a no-op passed it
    with 1.0), slices past the 64 of the volume, `inv.slice` 99: exit 2 at `--validate` and
    before `run` starts InVesalius."""
    f = tmp_path / "inv.json"
    f.write_text(json.dumps({"format_version": 1, "env": "invesalius", "tasks": [task]}))
    assert main(["live", "tasks", "--env", "invesalius", "--validate", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"inv.json, {message}" in err and "Traceback" not in err
    out = tmp_path / "run"
    code = main(["live", "run", "--env", "invesalius", "--model", "oracle", "--tasks-file",
                 str(f), "--out", str(out), "--no-progress"])  # fmt: skip
    assert code == 2 and message in capsys.readouterr().err
    assert not out.exists()


def test_format_version_is_a_number_not_a_boolean() -> None:
    data = _file("orthanc-explorer")
    data["format_version"] = True
    assert "field 'format_version': Input should be a valid integer" in _error(data)


def _second_task_file(env: str, **bad: Any) -> dict[str, Any]:
    """A file of three good tasks but the second (id `second-task`), which has `bad`."""
    tasks = [_file(env, id=f"task-{k}")["tasks"][0] for k in range(3)]
    tasks[1] = {**tasks[1], "id": "second-task", **bad}
    return {"format_version": 1, "env": env, "tasks": tasks}


@pytest.mark.parametrize(
    ("env", "bad", "where"),
    [
        # the schema (pydantic), a check's parameters, a locator's keys, the environment's own
        # rule (its task_check hook) and an infeasible task's success
        ("orthanc-explorer", {"instruction": " "}, "field 'instruction'"),
        ("orthanc-explorer", {"steps": [{**WEB_STEP, "action": "drag"}]}, "step 1"),
        ("orthanc-explorer", {"success": [{"kind": "orthanc.study_present", "stduy": "X"}]},
         "field 'success.0'"),
        ("orthanc-explorer", {"steps": [{**WEB_STEP, "target": {"data_cy": "x"}}]},
         "step 1, field 'target'"),
        ("ohif", {"steps": [{**WEB_STEP, "action": "drag", "target": {"landmark": "D"},
                             "to": {"landmark": "A"}}]}, "step 1, field 'target'"),
        ("orthanc-explorer", {**INFEASIBLE, "success": [{"kind": "orthanc.patient_absent",
                                                          "patient": "DOE^JOHN"}]},
         "field 'success.0'"),
        ("dicomscope", {"start": {"file": "CT-DOE-JOHN/AXIAL/9"}}, "field 'start.file'"),
    ],
)  # fmt: skip
def test_validate_names_the_task_by_its_id(
    env: str, bad: dict[str, Any], where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`live tasks --validate` names the task by its id (not its position in the file), with
    the file and the field."""
    f = tmp_path / "tasks.json"
    f.write_text(json.dumps(_second_task_file(env, **bad)))
    assert main(["live", "tasks", "--env", env, "--validate", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"tasks.json, task 'second-task', {where}" in err, err
    assert "task 1," not in err


def test_a_task_without_a_readable_id_is_named_by_its_position() -> None:
    data = _second_task_file("orthanc-explorer")
    del data["tasks"][1]["id"]
    assert "f.json, task 1, field 'id': Field required" in _error(data)
    data["tasks"][1]["id"] = 7
    assert "f.json, task 1, field 'id': Input should be a valid string" in _error(data)
    data["tasks"][1]["id"] = "Not An Id " * 20  # named as written, cut short
    message = _error(data)
    assert "f.json, task 'Not An Id Not An Id" in message and "...', field 'id'" in message


def test_a_duplicate_id_names_both_places() -> None:
    data = _second_task_file("orthanc-explorer")
    data["tasks"][2]["id"] = "task-0"
    assert (
        "f.json, task 'task-0', field 'id': duplicate task id 'task-0' (tasks 0 and 2 of the "
        "file, 0-based)" in _error(data)
    )


def test_an_unlabelled_harm_rule_is_refused_with_its_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`live tasks --validate` (as `live run`, `export`, `audit`) refuses a fail_if check
    without its severity, naming the file, the task and the field; exit 2."""
    rule = {"kind": "orthanc.study_absent", "study": "CT-DOE-JOAN", "dimension": "wrong_patient"}
    f = tmp_path / "unlabelled.json"
    f.write_text(json.dumps(_file("orthanc-explorer", fail_if=[rule])))
    assert main(["live", "tasks", "--env", "orthanc-explorer", "--validate", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"{f}, task 't', field 'fail_if.0.severity': an unlabelled harm rule" in err
    assert "Traceback" not in err
