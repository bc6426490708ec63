"""A live run folder written by an earlier medspot (`tests/fixtures/live_run_with_journal`: the
`random` baseline on the lamp panel, two tasks, two repeats, environment faults and a task given
up on, written on 2026-12-04 before the run-folder lifecycle was shared with `eval`) still reads,
re-scores from its journal alone to the same results, and a rerun of its command goes on with
it (nothing is left to run: its results are written again, the same). The same results: every
value the folder holds comes back; what newer code adds (a field, a metric) may come with it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from _lamp_panel import ENTRY, NAME

from medspot.cli import main
from medspot.live.envs import registry
from medspot.live.envs.taskfiles import load_task_file
from medspot.live.loop.outcomes import task_results
from medspot.live.loop.results import write_live_results
from medspot.live.loop.steplog import FaultRecord, JournalState, StepRecord, read_live_journal
from medspot.runfolder.layout import (
    LIVE_JOURNAL,
    OVERALL_METRICS,
    TASK_RESULTS,
    RunFolder,
)
from medspot.runfolder.live_schema import LiveRunInfo
from medspot.runfolder.reader import live_view, load_run
from medspot.runfolder.runinfo import RunInfo

WRITTEN = Path(__file__).parents[1] / "fixtures" / "live_run_with_journal"
# the command that wrote it (`--bootstrap 50`), but its --out
COMMAND = ["live", "run", "--env", NAME, "--model", "random", "--seed", "3", "--repeats", "2",
           "--bootstrap", "50", "--no-progress"]  # fmt: skip


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setitem(registry._ENVS, NAME, ENTRY)
    return Path(shutil.copytree(WRITTEN, tmp_path / "run"))


def _json(path: Path) -> object:
    return json.loads(path.read_text())


def _holds(new: object, old: object, where: str = "") -> list[str]:
    """Where `new` differs from `old` in what `old` holds (a key `old` lacks is new: fine)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for k, v in old.items():
            out += _holds(new[k], v, f"{where}/{k}") if k in new else [f"{where}/{k}: missing"]
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        pairs = enumerate(zip(new, old, strict=True))
        return [d for i, (a, b) in pairs for d in _holds(a, b, f"{where}[{i}]")]
    return [] if new == old else [f"{where}: {old!r} -> {new!r}"]


def test_the_folder_and_its_journal_read(run: Path) -> None:
    info = LiveRunInfo.of(RunInfo.load(RunFolder(run).run_json))
    assert info is not None and info.env == NAME and info.repeats == 2
    lines = [x for x in (run / LIVE_JOURNAL).read_bytes().split(b"\n") if x.strip()]
    records = list(read_live_journal(run / LIVE_JOURNAL))
    assert len(records) == len(lines)  # every line reads: nothing skipped
    assert any(isinstance(r, FaultRecord) for r in records)
    steps = [r for r in records if isinstance(r, StepRecord)]
    assert steps and all(r.screen and (run / "screens" / f"{r.screen}.png").exists() for r in steps)
    state = JournalState.from_records(records)
    assert sorted(state.repeats) == [0, 1]
    assert set(state.of(0).given_up) == {"green-blue"}
    live = live_view(load_run(run))
    assert live is not None
    assert len(live.tasks) == 4 and {t.repeat for t in live.tasks} == {0, 1}


def test_it_rescores_from_its_journal_to_the_same_results(run: Path, tmp_path: Path) -> None:
    tasks = list(load_task_file(run / "tasks.json").tasks)
    state = JournalState.from_records(list(read_live_journal(run / LIVE_JOURNAL)))
    results = task_results(tasks, state, NAME, repeats=2)
    out = tmp_path / "rescored"
    write_live_results(out, NAME, results, n_boot=50, seed=3)
    assert _holds(_json(out / NAME / TASK_RESULTS), _json(run / NAME / TASK_RESULTS)) == []
    assert _holds(_json(out / OVERALL_METRICS), _json(run / OVERALL_METRICS)) == []
    # what newer code adds: the safety score (no harm in it: its success) and no progress (its
    # records name no subgoals)
    metrics = json.loads((out / OVERALL_METRICS).read_text())
    assert metrics["safety_score"] == metrics["task_success_rate"]
    assert metrics["num_legacy_harm"] == 0 and "progress" not in metrics


def test_its_command_goes_on_with_it(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    journal = (run / LIVE_JOURNAL).read_bytes()
    before = {p.name: _json(p) for p in (run / NAME).glob("*.json")}
    code = main([*COMMAND, "--tasks-file", str(run / "tasks.json"), "--out", str(run)])
    err = capsys.readouterr().err
    assert code == 4, err  # only the task given up on is left: not run again unless asked
    assert (run / LIVE_JOURNAL).read_bytes() == journal  # nothing asked, nothing run
    assert _holds({p.name: _json(p) for p in (run / NAME).glob("*.json")}, before) == []
    info = _json(run / "run.json")
    assert isinstance(info, dict) and info["status"] == "incomplete" and info["calls"] == 15
