"""The Gymnasium API on the real orthanc-explorer environment (a real Orthanc, real chromium):
Gymnasium's own `check_env` passes, an oracle rollout through `gymnasium.make` (action texts)
ends with reward 1 and `terminated`, an unreadable text is a flagged no-action step, `close()`
ends every process, an async vector pair (two subprocesses) steps both, and the application
may run in a Ray actor (`executor="ray"`)."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _orthanc_support import CHROMIUM, require_orthanc_stack
from _ray_support import require_ray, stop_processes_under
from _runner_support import ENV, processes_mentioning

pytestmark = pytest.mark.live

gymnasium = pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402

from medspot.live.core.actions import describe_action  # noqa: E402
from medspot.live.gym import NO_ACTION, LiveGymEnv, env_id  # noqa: E402

GYM_ID = env_id(ENV)
TASKS = ["open-study-ct-doe-john", "open-series-mr-doe-john-t2", "filter-patients-garcia"]


@pytest.fixture(autouse=True)
def _stack() -> None:
    require_orthanc_stack()


@pytest.fixture
def workroot() -> Iterator[Path]:
    """A short private parent folder (chromium's singleton socket path must stay short), so
    that the processes the environment started can be found by it."""
    root = Path(tempfile.mkdtemp(prefix="msgym", dir="/tmp"))
    yield root
    assert not processes_mentioning(str(root)), "a process outlived close()"
    root.rmdir()  # close() removed the private folders inside


def _kwargs(seed_cache: Path, workroot: Path) -> dict[str, Any]:
    return {"chromium": CHROMIUM, "seed_cache": seed_cache, "workroot": workroot}


def _same_screen(a: Any, b: Any) -> bool:
    """The same screen up to rendering noise: at most 2 levels off, in under 0.1% of pixels."""
    diff = np.abs(a.astype(np.int16) - b.astype(np.int16)).max(axis=2)
    return bool(diff.max() <= 2 and (diff > 0).mean() < 0.001)


def test_check_env_passes_on_a_real_environment(seed_cache: Path, workroot: Path) -> None:
    env = gymnasium.make(GYM_ID, tasks=TASKS, **_kwargs(seed_cache, workroot))
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            check_env(env.unwrapped)  # also makes (and closes) two more through its spec
        assert not [str(w.message) for w in seen if "gymnasium" in w.filename], seen
        # what check_env skips for a nondeterministic env, with rendering noise allowed: a
        # seed picks the same task and start screen, the same action does the same thing
        env.action_space.seed(123)
        action = env.action_space.sample()
        runs = []
        for _ in range(2):
            obs0, info0 = env.reset(seed=123)
            obs1, info1 = env.reset()
            step = env.step(action)
            runs.append((obs0, info0, obs1, info1, step))
        (a0, ai0, a1, ai1, sa), (b0, bi0, b1, bi1, sb) = runs
        assert ai0 == bi0 and ai1 == bi1
        assert _same_screen(a0["screen"], b0["screen"]) and _same_screen(a1["screen"], b1["screen"])
        assert a0["goal"] == b0["goal"] and a0["instruction"] == b0["instruction"]
        assert _same_screen(sa[0]["screen"], sb[0]["screen"])
        assert sa[1:] == sb[1:]  # reward, terminated, truncated, info
    finally:
        env.close()


def test_oracle_rollout_through_make_gets_reward_1(seed_cache: Path, workroot: Path) -> None:
    env = gymnasium.make(GYM_ID, **_kwargs(seed_cache, workroot))
    live = env.unwrapped
    assert isinstance(live, LiveGymEnv)
    obs, info = env.reset(seed=0, options={"task": "open-study-ct-doe-john"})
    assert obs["screen"].shape == (800, 1280, 3) and obs["screen"].dtype == np.uint8
    assert obs["goal"] == info["goal"] and obs["instruction"] == info["instruction"]
    assert info["task"] == "open-study-ct-doe-john" and info["step"] == 1
    assert obs in env.observation_space
    private = {p for p in workroot.iterdir()}  # the application's, and the run folder's
    assert len(private) == 2 and processes_mentioning(str(workroot))

    obs, reward, terminated, truncated, info = env.step("I am not sure what to do")
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["executed"] is False and NO_ACTION in info["flags"] and info["n"] == 1
    assert "action" not in info and info["action_text"] == "no action"

    rewards: list[float] = []
    while not (terminated or truncated):
        action = live.oracle_action()
        assert action is not None
        text = describe_action(action)  # the documented text form, read back by the parser
        obs, reward, terminated, truncated, info = env.step(text)
        rewards.append(float(reward))
        assert info["executed"] and info["hit_intended"] is True
        assert info["action_source"] == "text" and info["achieved"]
    assert terminated and not truncated and rewards[-1] == 1.0 and sum(rewards) == 1.0
    assert info["success"] is True and info["harmful"] is False and info["fired"] == []
    assert info["outcome"] == "success" and info["achieved_total"] == info["oracle_steps"]
    assert live.last_result is not None and live.last_result.settle_s is not None
    frame = live.render()
    assert frame is None  # render_mode None
    with pytest.raises(gymnasium.error.ResetNeeded):
        env.step("done()")  # the episode ended
    # agent mode: the goal only; the text form's infeasible(...) ends a feasible task as a failure
    obs, info = env.reset(options={"task": "open-study-ct-doe-john", "mode": "agent"})
    assert obs["instruction"] == "" and "instruction" not in info and info["mode"] == "agent"
    obs, reward, terminated, truncated, info = env.step('infeasible("no such study")')
    assert (reward, terminated, truncated) == (0.0, True, False)
    assert info["action"] == {"kind": "infeasible", "reason": "no such study"}
    assert info["outcome"] == "failure" and info["executed"] is False
    env.close()
    assert not any(p.exists() for p in private)  # the private folder is gone
    env.close()  # idempotent


def test_async_vector_pair_steps_both(seed_cache: Path, workroot: Path) -> None:
    envs = gymnasium.make_vec(
        GYM_ID, num_envs=2, vectorization_mode="async", tasks=TASKS[:1],
        **_kwargs(seed_cache, workroot),
    )  # fmt: skip
    try:
        obs, info = envs.reset(seed=3)
        assert obs["screen"].shape == (2, 800, 1280, 3)
        assert list(info["task"]) == [TASKS[0], TASKS[0]]
        # two applications, each in its own private folder, and two run folders (the one the
        # vector env's dummy made to read the spaces is gone)
        assert len(list(workroot.iterdir())) == 4 and processes_mentioning(str(workroot))
        obs, reward, terminated, truncated, info = envs.step(("no action here", "click(5, 795)"))
        assert list(info["n"]) == [1, 1]
        assert list(info["executed"]) == [False, True]
        # a key with no value is absent, and the vector env's mask says so
        assert list(info["_action"]) == [False, True] and info["action"]["kind"][1] == "click"
        assert list(info["flags"][0]) == [NO_ACTION]
        assert list(reward) == [0.0, 0.0] and not terminated.any() and not truncated.any()
    finally:
        envs.close()


def test_an_oracle_rollout_through_a_ray_actor(
    seed_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`executor="ray"`: the application runs in a Ray actor of a local cluster the
    environment starts (the episode driven as `live run` drives it), reward 1 for the oracle,
    and `close()` stops the cluster and the application."""
    require_ray()
    folder = Path(tempfile.mkdtemp(prefix="msgr", dir="/tmp"))  # short: unix socket paths
    (folder / "r").mkdir()
    monkeypatch.setenv("RAY_TMPDIR", str(folder / "r"))
    out = folder / "run"
    try:
        env = LiveGymEnv(ENV, executor="ray", tasks=TASKS[:1], out=out, workroot=folder / "w",
                         chromium=CHROMIUM, seed_cache=seed_cache)  # fmt: skip
        try:
            _, info = env.reset(seed=0)
            # Ray was started off the main thread (the run's own loop): its SIGCHLD, ignored,
            # would make every later child's exit status 0 (and break Xvfb's start)
            assert subprocess.run(["false"]).returncode == 1
            total, terminated = 0.0, False
            while not terminated:
                _, reward, terminated, truncated, info = env.step(env.oracle_action())
                total += float(reward)
                assert not truncated
            assert total == 1.0 and info["outcome"] == "success"
        finally:
            env.close()
        run = json.loads((out / "run.json").read_text())
        assert (run["executor"], run["served"]) == ("ray", "gymnasium")
        assert not processes_mentioning(str(folder)), "the cluster or the application is left"
    finally:
        stop_processes_under(folder)
        shutil.rmtree(folder, ignore_errors=True)
