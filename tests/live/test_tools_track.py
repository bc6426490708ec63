"""The tools track (`medspot live run --tools orthanc`) on real Orthanc Explorer tasks: the
computer-use agents, through each official client (openai, anthropic) against the scripted test
server, solve a task with a tool call (the Orthanc API's find and delete, beside the computer
tool) and one without (a GUI-only task, clicked); what the tools returned is sent back to the
model; the run's task rows, tool invocation rate and report show the tools beside a GUI-only
run of the same tasks.

The script's clicks are the oracle's on the same screens and the study's Orthanc ID is the one
the oracle's run opened (the seeded studies are the same in every run): the model's part is
scripted, everything else (clients, protocols, runner, episode, tools, application) is real."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _orthanc_support import CHROMIUM, require_orthanc_stack
from _runner_support import ENV
from _serve_support import kill_leftovers, medspot, rows, short_workroot

from medspot.live.core.actions import Click, LiveAction, action_from_json
from medspot.live.loop.envspec import EnvSpec
from medspot.live.loop.request import LiveRequest, run_live
from medspot.live.loop.scheduler import LiveOptions
from medspot.live.loop.steplog import ResumeState, read_live_journal
from medspot.runfolder.layout import LIVE_JOURNAL
from medspot.testing.cu_script import CuScript, ScriptedComputerUse
from medspot.testing.openai_server import OpenAITestServer

pytestmark = pytest.mark.live
pytest.importorskip("openai")
pytest.importorskip("anthropic")

REPO = Path(__file__).resolve().parents[2]
OPEN, DELETE = "open-study-ct-doe-john", "delete-study-ct-doe-john"


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The oracle's clicks on OPEN, the CT-DOE-JOHN study's Orthanc ID (the study page it
    opened), and its run folder: the same tasks without tools."""
    require_orthanc_stack()
    out = tmp_path_factory.mktemp("oracle") / "gui-only"
    req = LiveRequest(
        spec=EnvSpec(ENV, task_ids=(OPEN, DELETE), env_options={"chromium": CHROMIUM}),
        model="oracle",
        out=out,
        n_boot=20,
        loop=LiveOptions(mode="agent"),
    )
    assert run_live(req).metrics["task_success_rate"] == 1.0
    st = ResumeState.from_records(list(read_live_journal(out / LIVE_JOURNAL)))
    clicks: list[LiveAction] = [action_from_json(s.action) for s in st.trajectory(OPEN) if s.action]
    url = st.finished[OPEN].final_url or ""
    assert "uuid=" in url
    return {"clicks": clicks, "study": url.split("uuid=")[1].split("&")[0], "run": out}


def _script(oracle: dict[str, Any]) -> CuScript:
    clicks = oracle["clicks"]
    assert all(isinstance(c, Click) for c in clicks)

    def click_turn(c: Click) -> dict[str, Any]:
        x, y = round(c.x), round(c.y)
        use = {"input": {"action": "left_click", "coordinate": [x, y]}}
        return {"actions": [{"type": "click", "button": "left", "x": x, "y": y}],
                "tool_uses": [use]}  # fmt: skip

    def tool_turn(name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {"text": f"I call {name}.", "function_calls": [{"name": name, "arguments": args}],
                "tool_uses": [{"name": name, "input": args}]}  # fmt: skip

    return CuScript.model_validate({"conversations": [
        {"match": "Open the CT CHEST study", "turns": [
            *(click_turn(c) for c in clicks), {"text": "The study is open."}]},
        {"match": "Delete the CT CHEST study", "turns": [
            tool_turn("find_studies", {"patient_name": "DOE^JOHN", "modality": "CT"}),
            tool_turn("delete_study", {"study": oracle["study"]}),
            {"text": "The CT CHEST study of DOE^JOHN is deleted."}]},
    ]})  # fmt: skip


@pytest.mark.parametrize("model", ["openai-computer-use", "anthropic-computer-use"])
def test_computer_use_agents_solve_one_task_with_tools_and_one_without(
    model: str, oracle: dict[str, Any], tmp_path: Path
) -> None:
    cu = ScriptedComputerUse(_script(oracle))
    out = tmp_path / "tools"
    with OpenAITestServer(responder=cu, latency=0.05) as srv, short_workroot() as work:
        url = srv.base_url if model.startswith("openai") else srv.root_url
        cmd = [sys.executable, "-m", "medspot", "live", "run", "--env", ENV, "--mode", "agent",
               "--model", model, "--base-url", url, "--api-key-env", "MEDSPOT_TEST_KEY",
               "--tasks", f"{OPEN},{DELETE}", "--out", str(out), "--tools", "orthanc",
               "--env-option", f"chromium={CHROMIUM}", "--no-progress",
               "--bootstrap", "20"]  # fmt: skip
        env = dict(os.environ, PYTHONPATH=str(REPO / "src"), MEDSPOT_TEST_KEY="test",
                   TMPDIR=str(work))  # fmt: skip
        try:
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        finally:
            kill_leftovers(None, work)
    assert done.returncode == 0, done.stderr[-3000:]
    got = rows(out)
    opened, deleted = got[f"{ENV}/{OPEN}"], got[f"{ENV}/{DELETE}"]
    assert (opened["live_outcome"], deleted["live_outcome"]) == ("success", "success")
    assert opened["tools_offered"] == [] and opened["tool_calls"] == 0
    assert opened["gui_only"] == "its success is read in the GUI: web.url_matches"
    assert "delete_study" in deleted["tools_offered"] and deleted["tool_calls"] == 2
    # the deletion ends the task: its success checks hold after it (no done() needed)
    assert [s["live_action"]["kind"] for s in deleted["steps"]] == ["tool", "tool"]
    # the find's answer went back to the model (the deletion ended the task: nothing more was
    # asked), and only the tool-reachable task offered tools
    sent = [o for e in cu.exchanges for o in e.tool_outputs]
    assert any("1 studies found" in o and oracle["study"] in o for o in sent), sent
    traj = json.loads((out / "trajectories" / f"{DELETE}.json").read_text())
    assert traj["steps"][-1]["tool_result"]["text"] == f"deleted studies {oracle['study']}"
    offered = {e.conversation: set(e.tools_offered) for e in cu.exchanges}
    assert offered[0] == set() and {"find_studies", "delete_study"} <= offered[1]
    metrics = json.loads((out / "overall_dataset_metrics.json").read_text())
    assert metrics["tool_invocation_rate"] == 1.0 and metrics["num_tool_calls"] == 2
    assert metrics["by_tools"]["tools offered"]["num_success"] == 1
    assert metrics["by_tools"]["gui-only"]["num_success"] == 1
    info = json.loads((out / "run.json").read_text())
    assert info["tools"] == "orthanc"
    # the report: the run with tools beside the same tasks without
    report = tmp_path / "report"
    rep = medspot("report", str(oracle["run"]), str(out), "--out", str(report))
    assert rep.returncode == 0, rep.stderr
    page = (report / "index.html").read_text(encoding="utf-8")
    assert "tool invocation rate" in page
    assert "none (GUI only)" in page and ">orthanc<" in page


def test_tool_arguments_the_model_wrote_badly_are_scored_no_action_steps(tmp_path: Path) -> None:
    """`read_tags` of a full-width ID (it passed `str.isalnum()`, then the HTTP client could not
    encode it: exit 4 after three environments), and every tool that takes an ID, a find
    Orthanc refuses (HTTP 400 for a study date of `*`: it was an environment fault too), an
    ID of no resource: scored steps of one environment, the run complete (exit 0), no
    environment error."""
    require_orthanc_stack()
    fullwidth = "ＡＢＣ"
    absent = "-".join(["0123abcd"] * 5)  # an Orthanc ID no resource has
    calls = [("read_tags", {"id": fullwidth}), ("delete_study", {"study": fullwidth}),
             ("delete_series", {"series": "../../system"}),
             ("download_archive", {"id": "Ａ" * 44}),
             ("find_studies", {"study_date": "*"}),  # Orthanc answers HTTP 400
             ("read_tags", {"id": absent})]  # fmt: skip
    replay = tmp_path / "answers.jsonl"
    replay.write_text("".join(
        json.dumps({"task": DELETE, "action": {"kind": "tool", "name": n, "args": a}}) + "\n"
        for n, a in calls
    ), encoding="utf-8")  # fmt: skip
    out = tmp_path / "run"
    with short_workroot() as work:
        cmd = [sys.executable, "-m", "medspot", "live", "run", "--env", ENV, "--model", "replay",
               "--replay-file", str(replay), "--tasks", DELETE, "--out", str(out), "--tools",
               "orthanc", "--env-option", f"chromium={CHROMIUM}", "--no-progress",
               "--bootstrap", "20"]  # fmt: skip
        env = dict(os.environ, PYTHONPATH=str(REPO / "src"), TMPDIR=str(work))
        try:
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        finally:
            kill_leftovers(None, work)
    assert done.returncode == 0, done.stderr[-3000:]
    records = list(read_live_journal(out / LIVE_JOURNAL))
    assert not [r for r in records if r.type == "fault"]  # one environment, never a fault
    row = rows(out)[f"{ENV}/{DELETE}"]
    assert row["status"] == "scored" and row["live_outcome"] == "failure"
    steps = row["steps"]
    assert [s["live_action"]["name"] for s in steps[:6]] == [n for n, _ in calls]
    for s in steps[:5]:  # each refused before or by Orthanc: the model's, with the reason
        assert s["not_executed"] and s["outcome"] == "miss", s
    assert "id: String should match pattern" in steps[0]["not_executed"]
    assert "Orthanc refused the request" in steps[4]["not_executed"]
    assert "HTTP 400" in steps[4]["not_executed"]
    assert steps[5]["tool_result"]["data"] == {"found": 0}  # a well-formed ID of nothing
    flags = [s.flags for s in ResumeState.from_records(records).trajectory(DELETE)[:5]]
    assert all("bad_tool_args" in f for f in flags), flags
    metrics = json.loads((out / "overall_dataset_metrics.json").read_text())
    assert metrics["num_env_errors"] == 0 and metrics["num_tasks"] == 1
