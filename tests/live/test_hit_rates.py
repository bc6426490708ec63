"""The intended-element hit rate is over every executed action, as docs/live.md and the report
define it: an action taken off the oracle's path (its intended element no longer on the screen)
is an executed action that is no hit, never left out. The figure over the on-path actions alone
is kept as `on_path_hit_rate`. An action the environment could not execute is no executed
action, but a miss (as a turn with no readable answer). Built journals, written by the live
writer and read by the report; a folder written before the on-path rate still reads, its
figure marked as the on-path one it is."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from medspot.atomic_write import atomic_write_json
from medspot.live.core.tasks import LiveTask
from medspot.live.loop.outcomes import live_metrics, task_results
from medspot.live.loop.results import PROTOCOL, write_live_results
from medspot.live.loop.steplog import LiveRecord, ResumeState, StepRecord, TaskRecord
from medspot.report.build import build_report
from medspot.runfolder.layout import RUN_JSON, screen_rel
from medspot.runfolder.live_schema import HIT_RATE, LIVE_KEYS, ON_PATH_HIT_RATE, LiveRunInfo
from medspot.runfolder.runinfo import DatasetInfo

ENV = "orthanc-explorer"
OLD = Path(__file__).parents[1] / "fixtures" / "live_run_before_typed_fields"
CLICK = {"kind": "click", "x": 600.0, "y": 400.0, "button": "left", "double": False}


def _task(tid: str) -> LiveTask:
    return LiveTask.model_validate({
        "id": tid, "instruction": f"goal of {tid}", "max_steps": 20,
        "steps": [{"instruction": "Open it", "target": {"text": "CT"}}],
        "success": [{"kind": "web.url_matches", "pattern": "#study"}],
    })  # fmt: skip


def _wander(tid: str, hits: int, misses: int, off_path: int, sha: str = "") -> list[LiveRecord]:
    """A task's trajectory: `hits` actions on the intended element, `misses` beside it (it was
    on the screen), `off_path` actions on screens where it was not (hit unknown: None), then
    an action the environment could not execute, then done()."""
    judged = [True] * hits + [False] * misses + [None] * off_path
    recs: list[LiveRecord] = []
    for n, hit in enumerate(judged, 1):
        recs.append(StepRecord(task=tid, env=ENV, attempt=1, n=n, action=CLICK, executed=True,
                               hit_intended=hit, screen=sha, screen_size=(1280, 800)))  # fmt: skip
    n = len(judged)
    recs.append(StepRecord(task=tid, env=ENV, attempt=1, n=n + 1, screen=sha,
                           screen_size=(1280, 800), action={"kind": "key", "key": "NoSuchKey"},
                           flags=["not_executable:unknown_key"],
                           not_executed="the key 'NoSuchKey' is not in the key table"))  # fmt: skip
    recs.append(StepRecord(task=tid, env=ENV, attempt=1, n=n + 2, action={"kind": "done"},
                           screen=sha, screen_size=(1280, 800)))  # fmt: skip
    recs.append(TaskRecord(task=tid, env=ENV, attempt=1, outcome="failure",
                           reason="done without success", steps_used=n + 2, oracle_steps=1,
                           final_screen=sha))  # fmt: skip
    return recs


def _results(sha: str = "") -> list[Any]:
    # 23 executed actions: 8 hits, 9 misses on the path, 6 off it (17 judged on the path)
    recs = [*_wander("a", 5, 4, 2, sha), *_wander("b", 3, 5, 4, sha)]
    return task_results([_task("a"), _task("b")], ResumeState.from_records(recs), ENV)


def test_the_hit_rate_counts_every_executed_action() -> None:
    m = live_metrics(_results(), n_boot=50)
    assert m["num_actions_executed"] == 23 and m["num_intended_hits"] == 8
    assert m["num_actions_on_path"] == 17
    assert m[HIT_RATE] == pytest.approx(8 / 23)  # not 8/17 = 47.1%
    assert m[ON_PATH_HIT_RATE] == pytest.approx(8 / 17)
    lo, hi = m["live_confidence_intervals"][HIT_RATE]
    assert lo <= 8 / 23 <= hi and m["live_confidence_intervals"][ON_PATH_HIT_RATE] is not None
    assert m["by_env"][ENV][HIT_RATE] == pytest.approx(8 / 23)
    # the action that could not be executed is no executed action, but a miss of its task
    assert m["num_missed"] == 2 and ON_PATH_HIT_RATE in LIVE_KEYS


def _png() -> tuple[str, bytes]:
    import hashlib

    buf = io.BytesIO()
    Image.new("RGB", (1280, 800), (30, 40, 50)).save(buf, "PNG")
    return hashlib.sha256(buf.getvalue()).hexdigest(), buf.getvalue()


def test_the_report_shows_both_hit_rates_and_marks_an_old_folders(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="pip install 'medspot[report]'")
    run = tmp_path / "run"
    sha, data = _png()
    (run / "screens").mkdir(parents=True)
    (run / screen_rel(sha)).write_bytes(data)
    write_live_results(run, ENV, _results(sha), n_boot=50)
    info = LiveRunInfo(model="wanderer", protocol=PROTOCOL, adapter={"name": "wanderer"},
                       dataset=DatasetInfo(source=f"live:{ENV}", root=str(run.resolve()),
                                           apps=[ENV]), status="complete", env=ENV)  # fmt: skip
    atomic_write_json(run / RUN_JSON, info.model_dump())
    metrics = json.loads((run / "overall_dataset_metrics.json").read_text())
    assert metrics[HIT_RATE] == pytest.approx(8 / 23)
    rows = json.loads((run / ENV / "task_results.json").read_text())
    refused = [s for r in rows for s in r["steps"] if s.get("not_executed")]
    assert len(refused) == 2 and all(s["outcome"] == "miss" for s in refused)
    old = Path(shutil.copytree(OLD, tmp_path / "old"))
    site = tmp_path / "site"
    build_report([run, old], site, data=run, n_boot=50, plots=False)
    index = (site / "index.html").read_text()
    section = index[index.index('id="live-metrics"') : index.index('id="metrics"')]
    hits = re.search(r">intended-element hits</th>(.*?)</tr>", section)
    on_path = re.search(r">intended-element hits on the path</th>(.*?)</tr>", section)
    assert hits is not None and on_path is not None
    assert "<td>34.8 " in hits.group(1) and "<td>47.1 " in on_path.group(1)
    # the old folder's figure is its on-path rate: said so, and it has no on-path row value
    assert hits.group(1).count("on-path actions only") == 1
    assert on_path.group(1).endswith("<td>-</td>")
    film = (site / "live-1.html").read_text()  # the frame says why nothing was executed
    assert "not executed: the key &#x27;NoSuchKey&#x27; is not in the key table" in film
