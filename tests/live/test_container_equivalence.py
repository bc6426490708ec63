"""The oracle's outcomes through containers equal those through threads: each run at
concurrency 2, each task compared step by step (outcome, the action's kind, the element hit,
the steps achieved, the checks), the checks read at each task's start too (the audit's
reading). Not the pixels the oracle clicked: the image holds only its family's fonts, the
machine may hold more, and a page set in another font puts the same element a few pixels
elsewhere.

By default (the suite, CI) a few orthanc-explorer tasks chosen to cover its kinds of action
and ending (`FEW`): only the orthanc-explorer image is built. With
`MEDSPOT_CONTAINER_EQUIVALENCE=all`, every packaged task of orthanc-explorer and of a desktop
environment (DICOMscope, whose image it then builds): 13 minutes here, run by hand
(docs/live/running.md "Containers")."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from _container_support import IMAGE_BUILD_TIMEOUT_S, ensure_image, require_engine

from medspot.live.envs.taskfiles import env_task_file
from medspot.live.loop.envspec import EnvSpec, ExecutorSpec
from medspot.live.loop.request import LiveRequest, run_live
from medspot.live.loop.scheduler import LiveOptions
from medspot.live.loop.steplog import TaskRecord
from medspot.live.loop.steplog import read_live_journal as read
from medspot.runfolder.layout import LIVE_JOURNAL

pytestmark = [pytest.mark.live, pytest.mark.slow, pytest.mark.timeout(IMAGE_BUILD_TIMEOUT_S)]

ALL = os.environ.get("MEDSPOT_CONTAINER_EQUIVALENCE") == "all"
# orthanc-explorer's kinds: a click through the lists, typing, scrolling in the viewer, a
# deletion (the database changes), an infeasible task, a trap (a near-miss patient)
FEW = ("open-series-ct-doe-john-axial", "filter-patients-garcia", "viewer-slice5-ct-doe-joan",
       "delete-study-ct-doe-john", "infeasible-patient-smith-anne",
       "trap-lookup-smith-ann-not-anna")  # fmt: skip


def _element(e: dict[str, Any] | None) -> tuple[str, str] | None:
    return None if e is None else (e["role"], e["name"])


_WHERE = frozenset({"x", "y", "x1", "y1", "x2", "y2"})


def _action(a: dict[str, Any] | None) -> dict[str, Any] | None:
    """An action without where it was made (its kind, button, keys, text, scroll amount)."""
    return None if a is None else {k: v for k, v in a.items() if k not in _WHERE}


def _results(run_dir: Path, env: str) -> dict[str, Any]:
    """Per task what the run found, without timings, screens' hashes or URLs with ports."""
    rows = json.loads((run_dir / env / "task_results.json").read_text())
    out: dict[str, Any] = {}
    for r in rows:
        steps = [
            (s["step_id"], s["outcome"], _action(s["live_action"]), _element(s.get("element")),
             s.get("achieved"), s.get("checks"))
            for s in r["steps"]
        ]  # fmt: skip
        out[r["task_id"]] = (r["status"], r["completed"], r["correct_steps"],
                             r["steps_evaluated"], r.get("live_outcome"), r.get("ending"),
                             steps)  # fmt: skip
    return out


def _at_start(run_dir: Path) -> dict[str, Any]:
    return {r.task: r.start_checks for r in read(run_dir / LIVE_JOURNAL)
            if isinstance(r, TaskRecord)}  # fmt: skip


def _require(env: str) -> None:
    if env == "dicomscope":
        from _desktop_support import require_dicomscope

        require_dicomscope()
    else:
        from _orthanc_support import require_orthanc_stack

        require_orthanc_stack()


@pytest.mark.parametrize("env", ["orthanc-explorer", "dicomscope"])
def test_the_oracle_gives_the_same_outcomes_through_containers_and_threads(
    env: str, tmp_path: Path
) -> None:
    if env != "orthanc-explorer" and not ALL:
        pytest.skip("a desktop environment's image: MEDSPOT_CONTAINER_EQUIVALENCE=all")
    _require(env)
    ensure_image(require_engine(), env)
    tf, _ = env_task_file(env)
    ids = tuple(t.id for t in tf.tasks) if ALL else FEW  # every packaged task, or a few
    runs = {}
    for executor in ("threads", "container"):
        spec = EnvSpec(env, task_ids=ids, executor=ExecutorSpec(executor),
                       workroot=tmp_path / "w")  # fmt: skip
        req = LiveRequest(spec=spec, model="oracle", out=tmp_path / executor, n_boot=0,
                          loop=LiveOptions(concurrency=2, start_checks=True))  # fmt: skip
        runs[executor] = run_live(req)
    threads, containers = runs["threads"], runs["container"]
    assert threads.info.status == "complete" and containers.info.status == "complete"
    assert containers.stats.faults == 0, containers.stats
    a, b = _results(tmp_path / "threads", env), _results(tmp_path / "container", env)
    assert len(a) == len(ids)
    differ = sorted(t for t in a if a[t] != b.get(t))
    assert differ == [], (
        f"{len(differ)} tasks differ, e.g. {differ[0]}: {a[differ[0]]} / {b.get(differ[0])}"
    )
    assert _at_start(tmp_path / "container") == _at_start(tmp_path / "threads")
    assert containers.info.container is not None and env in containers.info.container.images
