"""A model's action the application cannot execute is the model's, in every environment: sent
through `medspot live run` (a replay agent whose answers are each kind of unexecutable action,
the first the key `NoSuchKeyXYZ` Playwright has no name for) and through Gymnasium, it is a
scored no-action step (one action of the budget, flagged `not_executable:<why>`), the task ends
as a failure and the run exits 0 with no environment error; before, the runner counted it an
environment fault, retried it on fresh environments and left the task out of the scores.

Gymnasium after a failed reset (`reset(options={"task": "nope"})`, caught) resets and steps
normally, and refuses what is not an action without spending it. On orthanc-explorer a real
browser crash under a step is an `EnvironmentFault` (not a failure on the dead page) and the
episode then asks for a reset, through Gymnasium (whose next reset starts a fresh
application) and under the library's `Episode`."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _orthanc_support import CHROMIUM, require_orthanc_stack
from _runner_support import kill, processes_mentioning

from medspot.errors import ConfigError
from medspot.live.core import processes
from medspot.live.core.actions import (
    Click,
    Done,
    Drag,
    NotAnAction,
    Scroll,
    TypeText,
)
from medspot.live.core.contract import EnvironmentFault
from medspot.live.core.episode import Episode, EpisodeError
from medspot.live.envs.registry import close_and_remove, create_in_private_folder
from medspot.live.envs.taskfiles import env_task_file
from medspot.live.loop.steplog import StepRecord, TaskRecord, read_live_journal
from medspot.runfolder.layout import LIVE_JOURNAL

pytestmark = pytest.mark.live
gymnasium = pytest.importorskip("gymnasium")

REPO = Path(__file__).resolve().parents[2]

# the replay file's answers (the text form) and the reason each is refused
ANSWERS = [
    ('key("NoSuchKeyXYZ")', "unknown_key"),  # the case of the report: Playwright's "Unknown key"
    ("click(-5, 3000)", "off_screen"),
    ("drag(10, 10, 5000, 10)", "off_screen"),
    ("scroll(640, 400, 0)", "scroll_amount"),
    ('type("a\u0000b")', "untypable_text"),
    ('key("ctrl+NoSuchKey")', "unknown_key"),
]


def _require_ohif() -> None:
    from test_ohif_env import require_ohif_stack

    require_ohif_stack()


def _require_dicomscope() -> None:
    from _desktop_support import require_dicomscope

    require_dicomscope()


def _require_invesalius() -> None:
    from _invesalius_support import require_invesalius

    require_invesalius()


# env -> (a task with a budget of 6 actions, what it needs, whether it runs chromium)
ENVS: dict[str, tuple[str, Callable[[], None], bool]] = {
    "orthanc-explorer": ("open-study-ct-doe-john", require_orthanc_stack, True),
    "ohif": ("open-ct-doe-john", _require_ohif, True),
    "dicomscope": ("show-garcia-knee-images", _require_dicomscope, False),
    "invesalius": ("muscle-preset-current-mask", _require_invesalius, False),
}
SEEDED = ("orthanc-explorer", "ohif", "dicomscope")  # seeded from the DICOM seed cache


@pytest.fixture
def workroot() -> Iterator[Path]:
    """A short private parent of the environments' folders (chromium's socket path limit), so
    that what they started can be found and nothing outlives the test."""
    root = Path(tempfile.mkdtemp(prefix="msunx", dir="/tmp"))
    yield root
    left = processes_mentioning(str(root))
    kill(left)
    shutil.rmtree(root, ignore_errors=True)
    assert not left, "a process outlived its environment"


def _options(env: str, seed_cache: Path) -> dict[str, Any]:
    opts: dict[str, Any] = {"seed_cache": seed_cache} if env in SEEDED else {}
    if ENVS[env][2]:
        opts["chromium"] = CHROMIUM
    return opts


@pytest.mark.parametrize("env", list(ENVS))
def test_unexecutable_answers_are_scored_no_action_steps_in_a_run(
    env: str, tmp_path: Path, seed_cache: Path, workroot: Path
) -> None:
    task, require, _ = ENVS[env]
    require()
    replay = tmp_path / "answers.jsonl"
    replay.write_text("".join(
        json.dumps({"task": task, "n": n, "raw_text": text}) + "\n"
        for n, (text, _) in enumerate(ANSWERS, 1)))  # fmt: skip
    out = tmp_path / "run"
    opts = [w for k, v in _options(env, seed_cache).items() for w in ("--env-option", f"{k}={v}")]
    cmd = [sys.executable, "-m", "medspot", "live", "run", "--env", env, "--mode", "agent",
           "--model", "replay", "--replay-file", str(replay), "--tasks", task, "--out",
           str(out), "--no-progress", "--bootstrap", "20", *opts]  # fmt: skip
    done = subprocess.run(cmd, env=dict(os.environ, PYTHONPATH=str(REPO / "src"),
                                        TMPDIR=str(workroot)),
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    metrics = json.loads((out / "overall_dataset_metrics.json").read_text())
    assert metrics["num_env_errors"] == 0 and metrics["num_tasks"] == 1
    assert metrics["task_success_rate"] == 0.0 and metrics["endings"] == {"budget": 1}
    records = list(read_live_journal(out / LIVE_JOURNAL))
    assert not [r for r in records if r.type == "fault"]  # never an environment fault
    (end,) = [r for r in records if isinstance(r, TaskRecord)]
    assert end.outcome == "failure" and end.reason == "budget of 6 actions spent"
    steps = {r.n: r for r in records if isinstance(r, StepRecord)}  # each n's last line
    assert sorted(steps) == list(range(1, len(ANSWERS) + 1))
    for n, (_, why) in enumerate(ANSWERS, 1):
        s = steps[n]
        assert not s.executed and f"not_executable:{why}" in s.flags, (n, s.flags)
        assert s.not_executed and s.hit_intended is None
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "complete" and info["errors"] == 0


@pytest.mark.parametrize("env", list(ENVS))
def test_gymnasium_scores_unexecutable_actions_and_survives_a_failed_reset(
    env: str, seed_cache: Path, workroot: Path
) -> None:
    import medspot.live.gym  # noqa: F401  (registers the ids)

    task, require, _ = ENVS[env]
    require()
    gym = gymnasium.make(f"medspot/{env}-v1", tasks=[task], workroot=workroot,
                         **_options(env, seed_cache))  # fmt: skip
    try:
        with pytest.raises(ConfigError, match="unknown task 'nope'"):
            gym.reset(options={"task": "nope"})
        with pytest.raises(gymnasium.error.ResetNeeded):
            gym.step("done()")  # no episode after a failed reset
        obs, info = gym.reset(options={"task": task})
        assert info["n"] == 0 and obs["screen"].shape == (800, 1280, 3)
        steps: list[tuple[Any, str]] = [
            (Click(math.nan, math.nan), "not_a_number"),
            ('key("NoSuchKeyXYZ")', "unknown_key"),
            (Drag(10, 10, 5000, 10), "off_screen"),
            (Scroll(640, 400, 0), "scroll_amount"),
            (TypeText("a\x00b"), "untypable_text"),
            (Click(-1, -1), "off_screen"),
        ]
        for k, (action, why) in enumerate(steps, 1):
            for thing in (42, {"kind": "done"}):  # not actions (a text is read): nothing spent
                with pytest.raises(NotAnAction):
                    gym.step(thing)
            obs, reward, terminated, truncated, info = gym.step(action)
            assert f"not_executable:{why}" in info["flags"] and info["executed"] is False
            assert info["n"] == k and reward == 0.0 and info["not_executed"]
        assert truncated and not terminated and info["outcome"] == "failure"
        # the environment is as usable as before: a reset and the oracle's action execute
        gym.reset(options={"task": task})
        live = gym.unwrapped
        action = live.oracle_action()
        assert action is not None
        obs, reward, terminated, truncated, info = gym.step(action)
        assert info["executed"] is True and "flags" in info and not info["flags"]
        if env == "orthanc-explorer":
            _episode_after_a_browser_crash(live, workroot, task)
    finally:
        gym.close()
    if env == "orthanc-explorer":
        _library_episode_after_a_browser_crash(workroot, _options(env, seed_cache), task)


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text()
    except OSError:
        return ""


def _episode_after_a_browser_crash(live: Any, workroot: Path, task: str) -> None:
    """The browser dies under a step: an `EnvironmentFault` (it used to read the dead page:
    AttributeError); the episode has ended (a step asks for a reset), and the next reset
    starts a fresh application whose actions execute."""
    live.reset(options={"task": task})
    action = live.oracle_action()
    # the environment's processes carry the marker of its private folder, under `workroot`
    browsers = [s.pid for s in processes.marked(workroot) if "chrom" in _comm(s.pid)]
    assert browsers, "the environment's chromium is not found"
    kill(browsers)  # the chromium this test's environment started
    with pytest.raises(EnvironmentFault):
        live.step(action)
    with pytest.raises(gymnasium.error.ResetNeeded):
        live.step(Done())
    live.reset(options={"task": task})
    _, _, _, _, info = live.step(live.oracle_action())
    assert info["executed"] is True


def _library_episode_after_a_browser_crash(
    workroot: Path, options: dict[str, Any], task_id: str
) -> None:
    """The same crash under the library's `Episode` on an environment of its own: the step is
    an `EnvironmentFault`, and the episode then asks for a reset (it used to read the dead
    page: AttributeError)."""
    explorer, workdir = create_in_private_folder("orthanc-explorer", workroot, "msep-", options)
    try:
        explorer.start()
        task = next(t for t in env_task_file("orthanc-explorer")[0].tasks if t.id == task_id)
        ep = Episode(explorer, task)
        ep.reset()
        action = ep.oracle_action()
        for stamp in explorer.web._browser_pids:  # type: ignore[attr-defined]
            os.killpg(stamp.pid, signal.SIGKILL)
        with pytest.raises(EnvironmentFault):
            ep.step(action)
        with pytest.raises(EpisodeError, match="failed in this episode"):
            ep.step(Done())
    finally:
        close_and_remove(explorer, workdir)
