"""The closed loop on the real orthanc-explorer environment (a real Orthanc, real chromium):
baselines, a scripted recovery, an Orthanc killed mid-task, a served card through the OpenAI
test server, the run folder read by report / leaderboard / compare."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from _orthanc_support import require_orthanc_stack
from _runner_support import ENV, env_options, live_request, processes_mentioning, subset_file

from medspot.live.agents.scripted import OracleAgent
from medspot.live.agents.turn import AgentAnswer, AgentTurn
from medspot.live.loop.request import LiveOutcome, run_live
from medspot.live.loop.steplog import FaultRecord, StepRecord, TaskRecord
from medspot.live.loop.steplog import read_live_journal as read
from medspot.runfolder.layout import LIVE_JOURNAL

pytestmark = pytest.mark.live


@pytest.fixture(autouse=True)
def _stack() -> None:
    require_orthanc_stack()


def _run(tmp: Path, seed_cache: Path, model: str, ids: list[str], **kw: Any) -> LiveOutcome:
    req = live_request(
        env=ENV, model=model, out=tmp / f"run-{model.replace(':', '_')}", task_ids=tuple(ids),
        env_options=env_options(seed_cache), n_boot=200, **kw,
    )  # fmt: skip
    return run_live(req)


def _rows(run_dir: Path) -> dict[str, dict[str, Any]]:
    rows = json.loads((run_dir / ENV / "task_results.json").read_text())
    return {r["task_id"].split("/", 1)[1]: r for r in rows}


def test_random_fails_most(tmp_path: Path, seed_cache: Path) -> None:
    ids = [
        "open-study-ct-doe-john",
        "open-series-mr-doe-john-t2",
        "download-patient-miller",
        "delete-patient-doe-joan",
        "viewer-invert-ct-miller",
        "filter-patients-garcia",
    ]
    f = subset_file(tmp_path / "tasks.json", ids, max_steps=4)
    out = _run(tmp_path, seed_cache, "random", ids, tasks_file=f, seed=3)
    m = out.metrics
    assert m["num_tasks"] == len(ids)
    assert m["task_success_rate"] < 0.5
    assert out.stats.calls >= len(ids)  # random was really asked, on live screens
    rows = _rows(tmp_path / "run-random")
    assert all(r["steps_used"] <= 4 for r in rows.values())
    assert m["intended_hit_rate"] is not None and m["intended_hit_rate"] < 0.5


def test_scripted_wrong_click_then_right_is_a_recovery(tmp_path: Path, seed_cache: Path) -> None:
    task = "open-study-ct-doe-john"
    script = tmp_path / "script.jsonl"
    lines = [
        {"task": task, "n": 1, "action": {"kind": "click", "x": 640, "y": 785}},  # blank area
        {"task": task, "n": 2, "oracle": True},
        {"task": task, "n": 3, "oracle": True},
    ]
    script.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = _run(tmp_path, seed_cache, "replay", [task], options={"replay_file": str(script)})
    m = out.metrics
    assert m["task_success_rate"] == 1.0
    assert m["num_recovered"] == 1 and m["recovery_rate"] == 1.0
    assert m["intended_hit_rate"] == pytest.approx(2 / 3)
    row = _rows(tmp_path / "run-replay")[task]
    assert row["recovered"] is True and row["steps_used"] == 3
    assert [s["outcome"] for s in row["steps"]] == ["miss", "hit", "hit"]
    assert row["steps"][0]["step_id"] == 1 and row["steps"][1]["step_id"] == 1
    # the static protocol would have stopped at the first miss: TCA counts the live success,
    # S1A the first action's miss
    overall = json.loads((tmp_path / "run-replay" / "overall_dataset_metrics.json").read_text())
    assert overall["task_completion_accuracy"] == 1.0 and overall["step1_accuracy"] == 0.0


class KillingOracle(OracleAgent):
    """The oracle, but at its second answer it kills the environment's Orthanc (found by the
    run's private folder), once."""

    def __init__(self, workroot: Path) -> None:
        super().__init__()
        self.workroot = workroot
        self.calls = 0
        self.killed: list[int] = []

    async def answer(self, turn: AgentTurn) -> AgentAnswer:
        self.calls += 1
        if self.calls == 2 and not self.killed:
            import os
            import signal

            pids = [
                p
                for p in processes_mentioning(str(self.workroot))
                if "orthanc" in Path(f"/proc/{p}/cmdline").read_text(errors="replace").lower()
            ]
            assert pids, "the environment's Orthanc was not found"
            for p in pids:
                os.kill(p, signal.SIGKILL)
            self.killed = pids
        return await super().answer(turn)


def test_killed_orthanc_is_an_environment_error_and_a_clean_retry(
    tmp_path: Path, seed_cache: Path
) -> None:
    task = "delete-patient-doe-joan"
    workroot = tmp_path / "envs"
    agent = KillingOracle(workroot)
    out = _run(tmp_path, seed_cache, "oracle", [task], agent=agent, workroot=workroot)
    assert agent.killed
    assert out.stats.faults == 1 and out.stats.envs_started == 2
    recs = list(read(tmp_path / "run-oracle" / LIVE_JOURNAL))
    faults = [r for r in recs if isinstance(r, FaultRecord)]
    assert len(faults) == 1 and faults[0].attempt == 1
    finals = [r for r in recs if isinstance(r, TaskRecord)]
    assert [(r.attempt, r.outcome) for r in finals] == [(2, "success")]
    retry = [r for r in recs if isinstance(r, StepRecord) and r.attempt == 2]
    # the answers journaled before the fault are replayed, not asked again
    assert retry[0].n == 1 and retry[0].replayed
    assert agent.calls == 3  # answers 1 and 2 of attempt 1 were journaled; 3 is the last step
    assert out.metrics["task_success_rate"] == 1.0 and out.metrics["num_env_errors"] == 0
    assert out.info.status == "complete"
    assert not processes_mentioning(str(workroot))  # every process of both envs is gone


def _oracle_plan(tmp: Path, seed_cache: Path, ids: list[str]) -> dict[tuple[str, str], Any]:
    """(task goal, step instruction) -> the oracle's action, from a real oracle run."""
    out = _run(tmp, seed_cache, "oracle", ids)
    assert out.metrics["task_success_rate"] == 1.0
    plan: dict[tuple[str, str], Any] = {}
    trajectories = tmp / "run-oracle" / "trajectories"
    for tid in ids:
        traj = json.loads((trajectories / f"{tid}.json").read_text())
        for s in traj["steps"]:
            plan.setdefault((traj["instruction"], s["instruction"]), s["action"])
    return plan


def _ui_tars_answers(
    plan: dict[tuple[str, str], Any],
    asked: Counter[tuple[str, str, int]],
    sizes: set[tuple[int, int]],
) -> Any:
    """A scripted UI-TARS: the oracle's click, in pixels of the image it was sent."""

    def answer(req: Any) -> str:
        goal = req.text.split("Overall task: ", 1)[1].split("\n", 1)[0]
        step = req.text.split("Current step: ", 1)[1].split("\n", 1)[0]
        asked[(goal, step, req.text.count("\n"))] += 1
        w, h = req.image.size
        sizes.add((w, h))
        a = plan[(goal, step)]
        x, y = a["x"] * w / 1280, a["y"] * h / 800
        return f"Thought: {step}\nAction: click(start_box='({x:.0f},{y:.0f})')"

    return answer


UI_TARS = "ui-tars-1.5-7b"


def test_failed_model_call_is_an_error_and_asked_again_on_resume(
    tmp_path: Path, seed_cache: Path
) -> None:
    from medspot.testing.openai_server import Fault, OpenAITestServer

    ids = ["delete-patient-doe-joan"]  # 3 steps
    plan = _oracle_plan(tmp_path, seed_cache, ids)
    asked: Counter[tuple[str, str, int]] = Counter()
    answer = _ui_tars_answers(plan, asked, set())
    with OpenAITestServer(answer=answer, faults=[Fault("400", at=[2])]) as srv:
        opts = {"backend": "openai", "base_urls": [srv.base_url], "api_key": "test"}
        first = _run(tmp_path, seed_cache, UI_TARS, ids, options=opts)
        assert first.info.status == "incomplete" and first.metrics["num_model_errors"] == 1
        assert first.metrics["num_tasks"] == 0  # an error is not a failure of the model
        journal = tmp_path / f"run-{UI_TARS}" / LIVE_JOURNAL
        steps = [r for r in read(journal) if isinstance(r, StepRecord)]
        failed = [r for r in steps if r.error]
        assert len(failed) == 1 and failed[0].n == 2 and failed[0].action is None
        assert not any(r.executed and r.n == 2 for r in steps)  # nothing was clicked
        second = _run(tmp_path, seed_cache, UI_TARS, ids, options=opts)
        assert srv.request_count == 4  # 1 ok, 1 failed, then steps 2 and 3; step 1 replayed
    assert second.info.status == "complete" and second.metrics["task_success_rate"] == 1.0
    assert second.stats.calls == 2 and second.stats.replayed == 1


def test_served_ui_tars_card_on_live_screens(tmp_path: Path, seed_cache: Path) -> None:
    """The ui-tars-1.5-7b card, served by the OpenAI test server through the real openai
    client: the card's prompt and pre-resize, its native action syntax read in its
    abs_resized convention, executed in the real application."""
    from medspot.testing.openai_server import OpenAITestServer

    ids = ["open-study-ct-doe-john", "delete-patient-doe-joan"]
    plan = _oracle_plan(tmp_path, seed_cache, ids)
    asked: Counter[tuple[str, str, int]] = Counter()
    sizes: set[tuple[int, int]] = set()
    answer = _ui_tars_answers(plan, asked, sizes)

    with OpenAITestServer(answer=answer) as srv:
        out = _run(
            tmp_path, seed_cache, "ui-tars-1.5-7b", ids,
            options={"backend": "openai", "base_urls": [srv.base_url], "api_key": "test"},
        )  # fmt: skip
        n_requests = srv.request_count
    assert out.metrics["task_success_rate"] == 1.0
    assert out.metrics["intended_hit_rate"] == 1.0
    assert sizes == {(1288, 812)}  # smart_resize(1280, 800) for UI-TARS: the card's own prep
    assert n_requests == out.stats.calls == sum(asked.values()) and max(asked.values()) == 1
    recs = [r for r in read(tmp_path / "run-ui-tars-1.5-7b" / LIVE_JOURNAL)]
    steps = [r for r in recs if isinstance(r, StepRecord) and r.executed]
    assert steps and all(r.source == "ui-tars" for r in steps)
    assert all(r.raw_text and r.raw_text.startswith("Thought:") for r in steps)


@pytest.mark.ocr
def test_ocr_baseline_reads_live_screens(tmp_path: Path, seed_cache: Path) -> None:
    """The static `ocr` baseline on live screenshots: whatever word it matched is under the
    element its click hit (its normalised point lands on the live screen where it read it)."""
    pytest.importorskip("rapidocr", reason="pip install 'medspot[ocr]'")
    ids = ["open-study-ct-doe-john"]
    f = subset_file(tmp_path / "tasks.json", ids, max_steps=2)
    out = _run(tmp_path, seed_cache, "ocr", ids, tasks_file=f)
    assert out.stats.calls == 2
    steps = [
        r
        for r in read(tmp_path / "run-ocr" / LIVE_JOURNAL)
        if isinstance(r, StepRecord) and r.executed
    ]
    assert len(steps) == 2
    for s in steps:
        assert s.source == "point" and s.raw_text and " matches " in s.raw_text
        word = s.raw_text.split("'")[1].lower()
        assert s.element is not None and word in s.element["name"].lower()
