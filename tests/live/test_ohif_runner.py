"""`medspot live run --env ohif` through the pipeline (the real runner, its own environment,
in its own module: Playwright's sync API must not share a thread with the runner's loop)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_ohif_env import require_ohif_stack

pytestmark = pytest.mark.live


def test_the_runner_drives_ohif(tmp_path: Path, seed_cache: Path) -> None:
    """`medspot live run --env ohif` (the pipeline): the oracle through three tasks, drags
    journaled, the run folder's metrics."""
    require_ohif_stack()
    from _runner_support import env_options

    from medspot.live.loop.envspec import EnvSpec
    from medspot.live.loop.request import LiveRequest, run_live
    from medspot.live.loop.steplog import StepRecord, read_live_journal
    from medspot.runfolder.layout import LIVE_JOURNAL

    ids = ("measure-ab-ct-doe-john", "preset-lung-ct-doe-john", "open-ct-doe-joan")
    req = LiveRequest(
        spec=EnvSpec("ohif", task_ids=ids, env_options=env_options(seed_cache)),
        model="oracle",
        out=tmp_path / "run",
        n_boot=100,
    )
    out = run_live(req)
    assert out.metrics["num_tasks"] == 3
    assert out.metrics["task_success_rate"] == 1.0
    steps = [
        r for r in read_live_journal(tmp_path / "run" / LIVE_JOURNAL)
        if isinstance(r, StepRecord) and r.executed
    ]  # fmt: skip
    drags = [r for r in steps if r.action and r.action["kind"] == "drag"]
    assert len(drags) == 1 and drags[0].task == "measure-ab-ct-doe-john"
