"""The live fields of a run folder, typed once (`medspot.runfolder.live_schema`): run.json's
live part and the live task / step rows, as the writer writes them and the report reads them;
a folder written before the types existed still reads."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import get_args

import pytest

from medspot.errors import ConfigError
from medspot.live.core.episode import MODES
from medspot.runfolder.live_schema import (
    LIVE_KEYS,
    LIVE_OPTIONAL_KEYS,
    LIVE_TIMING_KEYS,
    LiveMode,
    LiveRunInfo,
    LiveStepRow,
    LiveTaskRow,
    LiveTiming,
)
from medspot.runfolder.reader import live_view, load_run
from medspot.runfolder.runinfo import DatasetInfo, RunInfo

OLD = Path(__file__).parents[1] / "fixtures" / "live_run_before_typed_fields"


@pytest.fixture
def old_run(tmp_path: Path) -> Path:
    return Path(shutil.copytree(OLD, tmp_path / "old"))


def test_a_folder_written_before_the_types_reads(old_run: Path) -> None:
    lr = live_view(load_run(old_run))
    assert lr is not None
    assert lr.info.env == "ohif" and lr.info.kind == "live"
    assert lr.info.mode == "guided"  # no `mode` in it: written before modes
    assert lr.info.env_options == {"headless": True, "quiet_s": 0.3, "viewport": "1280x800"}
    assert isinstance(lr.info.env_options["headless"], bool)
    assert [t.task_id for t in lr.tasks] == ["ohif/measure-length", "ohif/type-name"]
    first = lr.tasks[0]
    assert isinstance(first, LiveTaskRow) and first.live_outcome == "success"
    assert first.recovered and first.steps_used == 3 and first.oracle_steps == 2
    assert all(isinstance(s, LiveStepRow) for s in first.steps)
    drag = first.steps[2]
    assert drag.live_action is not None and drag.live_action["kind"] == "drag"
    assert drag.achieved == [2] and drag.checks["success"] is True
    assert drag.thought is None  # a field added since: its default
    assert lr.tasks[1].live_outcome == "harmful"
    # the timings, added since: none
    assert (first.between_tasks_s, first.reset_s, first.swapped) == (None, None, False)
    assert not any(key in lr.run.overall for key in LIVE_TIMING_KEYS)


def test_a_static_run_is_not_live(old_run: Path) -> None:
    info = RunInfo(model="m", dataset=DatasetInfo(source="/data", apps=["A"]))
    assert LiveRunInfo.of(info) is None
    data = json.loads((old_run / "run.json").read_text())
    del data["kind"]
    (old_run / "run.json").write_text(json.dumps(data))
    assert live_view(load_run(old_run)) is None


def test_run_json_written_and_read_back(tmp_path: Path) -> None:
    info = LiveRunInfo(model="oracle", env="ohif", env_options={"quiet_s": 0.5}, mode="agent")
    (tmp_path / "run.json").write_text(json.dumps(info.model_dump()))
    back = LiveRunInfo.of(RunInfo.load(tmp_path / "run.json"))
    assert back is not None and back == LiveRunInfo.load(tmp_path / "run.json")
    assert back.mode == "agent" and back.env_options == {"quiet_s": 0.5}


def test_env_from_the_dataset_source_when_run_json_lacks_it() -> None:
    info = RunInfo.model_validate(
        {"model": "m", "kind": "live", "dataset": {"source": "live:dicomscope"}}
    )
    live = LiveRunInfo.of(info)
    assert live is not None and live.env == "dicomscope"


def test_bad_live_fields_are_located(old_run: Path) -> None:
    data = json.loads((old_run / "run.json").read_text())
    data["mode"] = "autopilot"
    (old_run / "run.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"run\.json: .*mode"):
        live_view(load_run(old_run))
    data["mode"] = "guided"
    (old_run / "run.json").write_text(json.dumps(data))
    rows = json.loads((old_run / "ohif" / "task_results.json").read_text())
    rows[1]["steps"][0]["achieved"] = "all of them"
    (old_run / "ohif" / "task_results.json").write_text(json.dumps(rows))
    with pytest.raises(ConfigError, match=r"task_results\.json: task ohif/type-name: steps\.0"):
        live_view(load_run(old_run))


def test_a_resume_must_match_env_and_mode() -> None:
    a = LiveRunInfo(model="oracle", env="ohif")
    assert a.mismatches(LiveRunInfo(model="oracle", env="ohif")) == []
    problems = a.mismatches(LiveRunInfo(model="oracle", env="dicomscope", mode="agent"))
    assert problems == [
        "env: run folder has 'ohif', this command asks 'dicomscope'",
        "mode: run folder has 'guided', this command asks 'agent'",
    ]
    assert a.mismatches(RunInfo(model="oracle")) == ["kind: this command asks a static run"]


def test_the_modes_are_the_episodes() -> None:
    assert get_args(LiveMode) == MODES


def test_the_live_metrics_are_in_a_written_run(old_run: Path) -> None:
    run = load_run(old_run)
    for key in LIVE_KEYS:
        if key not in LIVE_OPTIONAL_KEYS:  # written since repeats / infeasible tasks
            assert key in run.overall and key in run.overall["confidence_intervals"]


def test_a_timing_is_a_median_and_a_nearest_rank_p90() -> None:
    assert LiveTiming.of([]) == LiveTiming(median=None, p90=None, n=0)
    assert LiveTiming.of([0.3, 0.1, 0.2]) == LiveTiming(median=0.2, p90=0.3, n=3)
    ten = [float(i) for i in range(1, 11)]
    assert LiveTiming.of(ten) == LiveTiming(median=5.5, p90=9.0, n=10)
