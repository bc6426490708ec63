"""No answer ends a run for good: an agent answer that cannot be turned into an action (here, an
`ActionFormatError` from the agent) is a journaled no-action turn with the flag
`unreadable_action` and the run goes on to the next task; a journaled action that does not read
back is replayed as no action, so a resume scores the task instead of failing the same way
again; `run.json` counts the calls paid, also when the run stops on a bug. On the lamp-panel
environment (a real small environment with a real child process)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from _lamp_panel import ENTRY, NAME, switch_task, task_file

from medspot.live.agents.scripted import OracleAgent
from medspot.live.agents.turn import AgentAnswer, AgentTurn
from medspot.live.core.actions import action_from_json
from medspot.live.envs import registry
from medspot.live.loop.envspec import EnvSpec
from medspot.live.loop.request import LiveRequest, run_live
from medspot.live.loop.steplog import StepRecord, TaskRecord, read_live_journal
from medspot.runfolder.layout import LIVE_JOURNAL

pytestmark = pytest.mark.live  # its runs start the lamp panel's application


@pytest.fixture(autouse=True)
def _lamp_panel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry._ENVS, NAME, ENTRY)


class GarblingOracle(OracleAgent):
    """The oracle, but its answer to the turns named in `garble` cannot be read as an action;
    with `crash_at`, the agent fails on that answer (a bug)."""

    def __init__(self, garble: set[tuple[str, int]], crash_at: int | None = None) -> None:
        super().__init__()
        self.garble = garble
        self.crash_at = crash_at
        self.asked = 0

    async def answer(self, turn: AgentTurn) -> AgentAnswer:
        self.asked += 1
        if self.asked == self.crash_at:
            raise RuntimeError("an agent bug")
        if (turn.task.id, turn.n) in self.garble:
            action_from_json({"kind": "click", "x": float("inf"), "y": 1.0})  # raises
        return await super().answer(turn)


def _request(tmp_path: Path, agent: Any, out: Path) -> LiveRequest:
    tasks = task_file(tmp_path / "tasks.json",
                      [switch_task("red", "red"), switch_task("green", "green")])  # fmt: skip
    return LiveRequest(
        spec=EnvSpec(NAME, tasks_file=tasks, workroot=tmp_path / "envs"),
        model="oracle",
        out=out,
        agent=agent,
        n_boot=20,
    )


def _steps(out: Path) -> dict[tuple[str, int], StepRecord]:
    return {(r.task, r.n): r for r in read_live_journal(out / LIVE_JOURNAL)
            if isinstance(r, StepRecord)}  # fmt: skip


def test_an_answer_that_cannot_become_an_action_is_a_no_action_turn(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    out = tmp_path / "run"
    agent = GarblingOracle({("red", 1)})
    with caplog.at_level(logging.WARNING):
        outcome = run_live(_request(tmp_path, agent, out))
    assert outcome.metrics["num_tasks"] == 2 and outcome.metrics["task_success_rate"] == 1.0
    steps = _steps(out)
    garbled = steps[("red", 1)]
    assert garbled.action is None and not garbled.executed
    assert "unreadable_action" in garbled.flags and "finite number" in (garbled.not_executed or "")
    assert steps[("red", 2)].executed  # the task went on: the next turn clicked
    assert "task red, turn 1" in caplog.text  # the message names the task and the turn
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "complete" and info["calls"] == 3  # every answer was a call


def test_a_journaled_action_that_does_not_read_back_is_replayed_as_no_action(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    run_live(_request(tmp_path, OracleAgent(), out))
    # the journal of a version that let a non-finite point through: red's click unreadable,
    # and red's result not journaled yet (the run stopped there)
    lines = (out / LIVE_JOURNAL).read_text().splitlines()
    kept = []
    for line in lines:
        d = json.loads(line)
        if d["task"] == "red" and d["type"] == "task":
            continue
        if d["task"] == "red" and d["type"] == "step" and d["n"] == 1:
            d["action"] = {"kind": "click", "x": None, "y": 550.0}
        kept.append(json.dumps(d))
    (out / LIVE_JOURNAL).write_text("\n".join(kept) + "\n")
    agent = OracleAgent()
    outcome = run_live(_request(tmp_path, agent, out))  # resumes red, replaying its answer
    assert outcome.metrics["num_tasks"] == 2 and outcome.stats.replayed == 1
    red = [r for r in read_live_journal(out / LIVE_JOURNAL) if r.task == "red"]
    replayed = [r for r in red if isinstance(r, StepRecord) and r.replayed]
    assert len(replayed) == 1 and replayed[0].action is None
    assert "unreadable_action" in replayed[0].flags and not replayed[0].executed
    ends = [r for r in red if isinstance(r, TaskRecord)]
    assert ends[-1].outcome == "success"  # scored: the oracle's next answer clicked red


def test_run_json_counts_the_calls_paid_before_a_run_failed(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with pytest.raises(RuntimeError, match="an agent bug"):
        run_live(_request(tmp_path, GarblingOracle(set(), crash_at=2), out))
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "failed" and info["calls"] == 1  # red's first answer was paid
