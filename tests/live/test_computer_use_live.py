"""The computer-use APIs end to end on real Orthanc Explorer tasks (a real Orthanc, real
chromium), through `medspot live run --mode agent` and the official clients against the
scripted test server: multi-step tasks with typing completed by each API's own format; a run
killed mid-task (SIGKILL) resumed without asking a journaled turn again; `--max-cost` stopping
a run that then resumes; a pending safety check an error until `--acknowledge-safety-checks`.

The scripts' coordinates are the oracle's on the same screens (a first run of the oracle in
agent mode), written in each API's format: the model's part is scripted, everything else
(client, server protocol, journal, runner, application) is real."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _orthanc_support import CHROMIUM, require_orthanc_stack
from _runner_support import ENV, KillAndResume, kill, processes_mentioning, steps_journaled

from _children import start, stop
from medspot.live.core.actions import Click, LiveAction, TypeText, action_from_json
from medspot.live.loop.envspec import EnvSpec
from medspot.live.loop.request import LiveRequest, run_live
from medspot.live.loop.scheduler import LiveOptions
from medspot.live.loop.steplog import (
    ResumeState,
    StepRecord,
    TaskRecord,
    read_live_journal,
)
from medspot.runfolder.layout import LIVE_JOURNAL
from medspot.testing.cu_script import CuScript, ScriptedComputerUse
from medspot.testing.openai_server import OpenAITestServer

pytestmark = pytest.mark.live
pytest.importorskip("openai")
pytest.importorskip("anthropic")

REPO = Path(__file__).resolve().parents[2]
TASKS = ["filter-patients-garcia", "lookup-doe-joan"]  # click, type, click, click each


@pytest.fixture(scope="module")
def oracle_paths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The oracle's actions per task (agent mode), on the screens the scripted models see (the
    same default seed cache as the command-line runs)."""
    require_orthanc_stack()
    out = tmp_path_factory.mktemp("oracle") / "run"
    req = LiveRequest(
        spec=EnvSpec(
            ENV, task_ids=(*TASKS, "open-study-ct-doe-john"), env_options={"chromium": CHROMIUM}
        ),
        model="oracle",
        out=out,
        n_boot=20,
        loop=LiveOptions(mode="agent"),
    )
    assert run_live(req).metrics["task_success_rate"] == 1.0
    st = ResumeState.from_records(list(read_live_journal(out / LIVE_JOURNAL)))
    paths: dict[str, Any] = {}
    for task in st.finished:
        paths[task] = [action_from_json(s.action) for s in st.trajectory(task) if s.action]
    return paths


def _openai_turns(path: list[LiveAction]) -> list[dict[str, Any]]:
    def act(a: LiveAction) -> dict[str, Any]:
        if isinstance(a, TypeText):
            return {"type": "type", "text": a.text}
        assert isinstance(a, Click)
        return {"type": "click", "button": "left", "x": round(a.x), "y": round(a.y)}

    first, typed, *rest = path  # the field, the text: one batched computer call
    return [
        {"actions": [{"type": "screenshot"}], "reasoning": "Look at the screen first."},
        {"actions": [act(first), act(typed)], "text": "I fill in the field."},
        *({"actions": [act(a)]} for a in rest),
        {"text": "The study is open."},
    ]


def _anthropic_turns(path: list[LiveAction]) -> list[dict[str, Any]]:
    def use(a: LiveAction) -> dict[str, Any]:
        if isinstance(a, TypeText):
            return {"input": {"action": "type", "text": a.text}}
        assert isinstance(a, Click)
        return {"input": {"action": "left_click", "coordinate": [round(a.x), round(a.y)]}}

    first, typed, *rest = path
    return [
        {"text": "I fill in the field.", "tool_uses": [use(first), use(typed)]},
        *({"tool_uses": [use(a)]} for a in rest),
        {"text": "The study is open."},
    ]


def _script(paths: dict[str, Any], api: str, tasks: list[str]) -> CuScript:
    turns = _openai_turns if api == "openai" else _anthropic_turns
    matches = {"filter-patients-garcia": "GARCIA^MARIA", "lookup-doe-joan": "DOE^JOAN",
               "open-study-ct-doe-john": "DOE^JOHN"}  # fmt: skip
    return CuScript.model_validate({"conversations": [
        {"match": matches[t], "turns": turns(paths[t])} for t in tasks]})  # fmt: skip


def _cmd(model: str, url: str, out: Path, tasks: list[str], *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "medspot", "live", "run", "--env", ENV, "--mode", "agent",
        "--model", model, "--base-url", url, "--api-key-env", "MEDSPOT_TEST_KEY",
        "--tasks", ",".join(tasks), "--out", str(out), "--env-option", f"chromium={CHROMIUM}",
        "--no-progress", "--bootstrap", "20", *extra,
    ]  # fmt: skip


# the key --api-key-env names, and the APIs' own variables' keys, which must not travel
NAMED_KEY = "medspot-named-key"
WRONG_KEYS = {"OPENAI_API_KEY": "sk-wrong-openai", "ANTHROPIC_API_KEY": "sk-ant-wrong"}


def _env(workroot: Path | None = None) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), MEDSPOT_TEST_KEY=NAMED_KEY, **WRONG_KEYS)
    return env if workroot is None else {**env, "TMPDIR": str(workroot)}


def _keys_sent(srv: OpenAITestServer) -> set[str]:
    """The key of every request the server received (OpenAI's bearer, Anthropic's header)."""
    return {
        (r.headers.get("authorization") or "").removeprefix("Bearer ")
        or r.headers.get("x-api-key", "")
        for r in srv.requests
    }


@pytest.fixture
def workroot() -> Any:
    # the environments' private folders: a short path (chromium's socket path limit)
    root = Path(tempfile.mkdtemp(prefix="mscu", dir="/tmp"))
    yield root
    kill(processes_mentioning(str(root)))
    shutil.rmtree(root, ignore_errors=True)


def _steps(out: Path) -> list[StepRecord]:
    """Every step line of the journal (an answer and its effect are two lines)."""
    return [r for r in read_live_journal(out / LIVE_JOURNAL) if isinstance(r, StepRecord)]


def _trajectory(out: Path, task: str) -> list[StepRecord]:
    return ResumeState.from_records(list(read_live_journal(out / LIVE_JOURNAL))).trajectory(task)


def _journaled_turns(out: Path) -> set[tuple[int, int]]:
    """(conversation, turn) of every API answer in the journal (its message / response id)."""
    ids = {str(e.get("message_id") or e.get("response_id")) for s in _steps(out)
           if s.call_state and not s.error for e in s.call_state["events"]
           if e.get("e") == "call"}  # fmt: skip
    return {(int(i.split("_")[1]), int(i.split("_")[2])) for i in ids}


def _finals(out: Path) -> dict[str, TaskRecord]:
    return {r.task: r for r in read_live_journal(out / LIVE_JOURNAL) if isinstance(r, TaskRecord)}


def test_openai_computer_use_completes_typing_tasks(
    tmp_path: Path, oracle_paths: dict[str, Any], workroot: Path
) -> None:
    cu = ScriptedComputerUse(_script(oracle_paths, "openai", TASKS))
    out = tmp_path / "run"
    with OpenAITestServer(responder=cu, latency=0.05) as srv:
        cmd = _cmd("openai-computer-use", srv.base_url, out, TASKS)
        done = subprocess.run(cmd, env=_env(workroot), capture_output=True, text=True,
                              timeout=600)  # fmt: skip
        count = srv.request_count
        keys = _keys_sent(srv)
    assert done.returncode == 0, done.stderr[-3000:]
    assert keys == {NAMED_KEY}  # only --api-key-env's variable, never $OPENAI_API_KEY
    assert {t: r.outcome for t, r in _finals(out).items()} == dict.fromkeys(TASKS, "success")
    # per task: the screenshot call and the batch's call in turn 1, then one call per click
    assert count == len(TASKS) * 4
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "complete" and info["mode"] == "agent"
    assert info["adapter"]["tool"] == "computer" and info["cost_usd"] > 0
    assert info["adapter"]["api_key_env"] == "MEDSPOT_TEST_KEY"
    screens = {p.stem for p in (out / "screens").iterdir()}
    assert all(set(e.screenshots) <= screens for e in cu.exchanges)  # the run's own screens
    steps = [s for t in TASKS for s in _trajectory(out, t)]
    typed = [s for s in steps if s.action and s.action["kind"] == "type"]
    assert len(typed) == 2 and all("batched" in s.flags and s.cost_usd is None for s in typed)
    assert any(s.thought == "Look at the screen first.\nI fill in the field." for s in steps)


def test_anthropic_run_killed_mid_task_resumes_without_asking_a_journaled_turn(
    tmp_path: Path, oracle_paths: dict[str, Any], kill_and_resume: Callable[..., KillAndResume]
) -> None:
    cu = ScriptedComputerUse(_script(oracle_paths, "anthropic", TASKS))
    out = tmp_path / "run"
    with OpenAITestServer(responder=cu, latency=0.3) as srv:
        cmd = _cmd("anthropic-computer-use", srv.root_url, out, TASKS)
        run = kill_and_resume(cmd, _env())
        run.kill_when(lambda: steps_journaled(out / LIVE_JOURNAL) >= 5)
        first = srv.request_count
        asked_before = _journaled_turns(out)
        assert asked_before, "the killed run had journaled answers"
        done = run.resume()
        assert done.returncode == 0, done.stderr[-3000:]
        after = [e for e in cu.exchanges if e.request > first]
        keys = _keys_sent(srv)
    assert keys == {NAMED_KEY}  # only --api-key-env's variable, never $ANTHROPIC_API_KEY
    assert {t: r.outcome for t, r in _finals(out).items()} == dict.fromkeys(TASKS, "success")
    assert not {(e.conversation, e.turn) for e in after} & asked_before  # no paid turn re-sent
    assert any(s.replayed for s in _steps(out))
    assert all(e.beta == "computer-use-2025-11-24" for e in cu.exchanges)
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "complete" and info["adapter"]["tool"] == "computer_20251124"
    assert info["adapter"]["api_key_env"] == "MEDSPOT_TEST_KEY"
    assert NAMED_KEY not in (out / "run.json").read_text()


def test_max_cost_stops_and_a_safety_check_waits_for_the_option(
    tmp_path: Path, oracle_paths: dict[str, Any], workroot: Path
) -> None:
    tasks = ["open-study-ct-doe-john"]  # two clicks; the second one awaits a confirmation
    clicks: list[dict[str, Any]] = [
        {"actions": [{"type": "click", "button": "left", "x": round(a.x), "y": round(a.y)}]}
        for a in oracle_paths["open-study-ct-doe-john"]
    ]  # fmt: skip
    clicks[-1]["safety_checks"] = [{"id": "sc_9", "code": "sensitive_domain"}]
    turns = [*clicks, {"text": "done"}]
    cu = ScriptedComputerUse(CuScript.model_validate(
        {"conversations": [{"match": "DOE^JOHN", "turns": turns}]}))  # fmt: skip
    out = tmp_path / "run"
    with OpenAITestServer(responder=cu) as srv:
        cmd = _cmd("openai-computer-use", srv.base_url, out, tasks)
        budget = subprocess.run([*cmd, "--max-cost", "0.000001"], env=_env(workroot),
                                capture_output=True, text=True, timeout=600)  # fmt: skip
        assert budget.returncode == 3, budget.stderr[-2000:]
        assert "--max-cost" in budget.stderr
        assert json.loads((out / "run.json").read_text())["status"] == "budget_reached"
        assert srv.request_count == 1  # the first turn paid, the second never started
        pending = subprocess.run(cmd, env=_env(workroot), capture_output=True, text=True,
                                 timeout=600)  # fmt: skip
        assert pending.returncode == 1, pending.stderr[-2000:]
        errored = [s for s in _steps(out) if s.error]
        assert len(errored) == 1 and "safety_check_pending:sensitive_domain" in errored[0].flags
        assert errored[0].cost_usd and "--acknowledge-safety-checks" in (errored[0].error or "")
        assert _finals(out)["open-study-ct-doe-john"].outcome == "error"
        asked = srv.request_count
        acked = subprocess.run([*cmd, "--acknowledge-safety-checks"], env=_env(workroot),
                               capture_output=True, text=True, timeout=600)  # fmt: skip
        assert acked.returncode == 0, acked.stderr[-2000:]
        assert srv.request_count == asked + 1  # only the safety-check turn was asked again
    assert _finals(out)["open-study-ct-doe-john"].outcome == "success"
    first_turns = [e for e in cu.exchanges if e.turn == 0]
    assert len(first_turns) == 1  # the paid first turn was replayed, never re-sent
    last = [s for s in _steps(out) if not s.error][-1]
    assert "safety_check_acknowledged:sensitive_domain" in last.flags


def test_the_documented_example_script_runs_both_agents(tmp_path: Path, workroot: Path) -> None:
    """docs/live.md's commands: `serve-test --script docs/examples/cu-script.json` (a free port
    instead of 8765), then each agent through `live run` with a placeholder key."""

    doc = (REPO / "docs" / "live.md").read_text()
    assert "--script docs/examples/cu-script.json" in doc
    env = _env(workroot)
    srv = start(
        [sys.executable, "-m", "medspot", "serve-test", "--port", "0", "--script",
         "docs/examples/cu-script.json"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert srv.stdout is not None
        words = srv.stdout.readline().split()
        urls = {"openai-computer-use": words[1], "anthropic-computer-use": words[4]}
        for model, url in urls.items():
            key = "OPENAI_API_KEY" if model.startswith("openai") else "ANTHROPIC_API_KEY"
            out = tmp_path / model
            cmd = [sys.executable, "-m", "medspot", "live", "run", "--env", ENV, "--mode",
                   "agent", "--model", model, "--base-url", url, "--tasks",
                   "open-study-ct-doe-john", "--out", str(out), "--env-option",
                   f"chromium={CHROMIUM}", "--no-progress"]  # fmt: skip
            done = subprocess.run(cmd, env={**env, key: "test"}, capture_output=True,
                                  text=True, timeout=600)  # fmt: skip
            assert done.returncode == 0, done.stderr[-2000:]
            assert "success 100.0%" in done.stdout
    finally:
        stopped = stop(srv)  # Ctrl-C; killed after a bounded wait if it ignored it
        err = stopped.err
    assert not stopped.killed and "4 request(s)" in err, err
