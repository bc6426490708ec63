"""The Gymnasium API without an application: the ids registered for every live environment, the
pyproject entry point, the module-qualified id, the spaces (and that they pickle, as an async
vector env needs), and the errors a caller gets before anything starts."""

from __future__ import annotations

import importlib
import pickle
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

gymnasium = pytest.importorskip("gymnasium")

from gymnasium.error import ResetNeeded  # noqa: E402

from medspot.errors import ConfigError  # noqa: E402
from medspot.live.core.actions import Click, Done  # noqa: E402
from medspot.live.core.tasks import LiveTask  # noqa: E402
from medspot.live.envs.registry import env_names  # noqa: E402
from medspot.live.envs.taskfiles import env_task_file  # noqa: E402
from medspot.live.gym import LiveGymEnv, env_id, register_envs  # noqa: E402
from medspot.live.gym.spaces import ActionSpace, observation_space, screen_size  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
ENV = "orthanc-explorer"


def _python(code: str) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin", "HOME": str(Path.home())}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )


def test_every_live_environment_is_registered_once() -> None:
    ids = register_envs()
    assert ids == [f"medspot/{name}-v1" for name in env_names()]
    assert register_envs() == ids  # idempotent
    for gid in ids:
        spec = gymnasium.spec(gid)
        assert spec.entry_point == "medspot.live.gym.env:LiveGymEnv"
        assert spec.namespace == "medspot" and spec.version == 1
        assert spec.kwargs["env_name"] == gid.removeprefix("medspot/").removesuffix("-v1")


def test_the_pyproject_entry_point_registers_in_its_namespace() -> None:
    """What Gymnasium 0.26-0.29's plugin loader did with the declared entry point, in a fresh
    interpreter: load `module:function`, call it inside the namespace the entry point names.
    (Gymnasium 1.x loads no entry points; an installed wheel is not checked here.)"""
    meta = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    (name, target), *_ = meta["project"]["entry-points"]["gymnasium.envs"].items()
    assert name == "medspot" and target == "medspot.live.gym.registration:register_envs"
    module, attr = target.split(":")
    proc = _python(
        "import importlib, gymnasium\n"
        "from gymnasium.envs.registration import namespace\n"
        f"fn = getattr(importlib.import_module({module!r}), {attr!r})\n"
        f"with namespace({name!r}):\n"
        "    fn()\n"
        "print(sorted(k for k in gymnasium.registry if k.startswith('medspot/')))\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(sorted(env_id(n) for n in env_names()))
    assert callable(getattr(importlib.import_module(module), attr))


def test_the_module_qualified_id_needs_no_import(tmp_path: Path) -> None:
    proc = _python(
        "import gymnasium\n"
        f"e = gymnasium.make('medspot.live.gym:{env_id(ENV)}', workroot={str(tmp_path)!r})\n"
        "print(type(e.unwrapped).__name__, e.observation_space['screen'].shape)\n"
        "e.close()\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["LiveGymEnv", "(800,", "1280,", "3)"]
    assert list(tmp_path.iterdir()) == []  # close() removed the private folder


def test_without_gymnasium_the_error_names_the_extra() -> None:
    proc = _python(
        "import sys\nsys.modules['gymnasium'] = None\n"
        "try:\n    import medspot.live.gym\n"
        "except ImportError as e:\n"
        "    from medspot.errors import MedspotError\n"
        "    print(isinstance(e, MedspotError), e)\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("True ") and "pip install 'medspot[gym]'" in proc.stdout


def test_bad_options_are_config_errors_before_anything_starts(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no_such_option"):
        gymnasium.make(env_id(ENV), workroot=tmp_path, no_such_option=1)
    with pytest.raises(ConfigError, match="unknown task id"):
        gymnasium.make(env_id(ENV), workroot=tmp_path, tasks=["no-such-task"])
    with pytest.raises(ConfigError, match="mode"):
        gymnasium.make(env_id(ENV), workroot=tmp_path, mode="autopilot")
    with pytest.raises(ConfigError, match="executor"):
        gymnasium.make(env_id(ENV), workroot=tmp_path, executor="cloud")
    with pytest.raises(ConfigError, match="--spares"):
        gymnasium.make(env_id(ENV), workroot=tmp_path, spares=-1)
    with pytest.raises(ConfigError, match="agent"):
        gymnasium.make(env_id(ENV), workroot=tmp_path, agent=" ")
    assert list(tmp_path.iterdir()) == []  # no private folder left by a refused one
    env = gymnasium.make(env_id(ENV), workroot=tmp_path)
    try:
        with pytest.raises(ResetNeeded):
            env.step("click(1, 2)")
        with pytest.raises(ConfigError, match="unknown reset option"):
            env.reset(options={"tsk": "x"})
        with pytest.raises(ConfigError, match="unknown task 'x' for"):
            env.reset(options={"task": "x"})
        with pytest.raises(ConfigError, match="did you mean 'open-study-ct-doe-john'"):
            env.reset(options={"task": "open-study-ct-doe-jon"})
        with pytest.raises(ConfigError, match="unknown mode"):
            env.reset(options={"mode": "autopilot"})
        # nothing started: the run (its folder, the application) starts at a good reset
        assert not env.unwrapped.run_folder.exists()
    finally:
        env.close()
    assert list(tmp_path.iterdir()) == []


def test_action_space_takes_texts_and_action_objects() -> None:
    space = ActionSpace((1280, 800), seed=5)
    samples = [space.sample() for _ in range(50)]
    assert all(s in space for s in samples) and len(set(samples)) > 40
    for s in samples:
        x, y = (int(v) for v in s.removeprefix("click(").removesuffix(")").split(", "))
        assert 0 <= x < 1280 and 0 <= y < 800
    assert Click(1, 2) in space and Done() in space and "type('x')" in space
    assert not any(space.contains(x) for x in (3, None, {"kind": "done"}, b"click(1, 2)"))
    assert pickle.loads(pickle.dumps(space)) == space != ActionSpace((800, 600))


def test_observation_space_holds_every_packaged_text_and_pickles() -> None:
    for name in env_names():
        tf, _ = env_task_file(name)
        tasks = list(tf.tasks)
        space = observation_space(tasks, screen_size(tasks, name))
        assert pickle.loads(pickle.dumps(space)) == space
        for t in tasks:
            for text in (t.instruction, *(s.instruction for s in t.steps), ""):
                assert text in space["goal"] and text in space["instruction"], (name, text)
        assert space.contains(space.sample())


def test_tasks_of_several_screen_sizes_are_refused() -> None:
    tf, _ = env_task_file(ENV)
    small = LiveTask.model_validate(
        {**tf.tasks[0].model_dump(), "start": {"viewport": (1024, 768)}}
    )
    with pytest.raises(ConfigError, match="1024x768, 1280x800"):
        screen_size([tf.tasks[0], small], ENV)


def test_the_env_class_is_the_registered_entry_point() -> None:
    assert (
        gymnasium.envs.registration.load_env_creator(gymnasium.spec(env_id(ENV)).entry_point)
        is LiveGymEnv
    )


@pytest.mark.slow
def test_an_installed_wheel_declares_the_entry_point(tmp_path: Path) -> None:
    """A wheel of a private copy, installed into a private folder (never the shared venv): its
    metadata holds the `gymnasium.envs` entry point, which registers the ids when called as
    Gymnasium 0.26-0.29's loader did; Gymnasium 1.x itself needs the import (or the prefix)."""
    pytest.importorskip("setuptools")
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, tree / name)
    shutil.copytree(REPO / "src", tree / "src", ignore=shutil.ignore_patterns("*.egg-info"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    wheel = subprocess.run(
        [*pip, "wheel", ".", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "whl")],
        cwd=tree, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert wheel.returncode == 0, wheel.stderr[-2000:]
    (whl,) = (tmp_path / "whl").glob("medspot-*.whl")
    site = tmp_path / "site"
    inst = subprocess.run(
        [*pip, "install", "--no-deps", "--no-index", "--target", str(site), str(whl)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert inst.returncode == 0, inst.stderr[-2000:]
    code = (
        "import importlib.metadata as md, gymnasium\n"
        "from gymnasium.envs.registration import namespace\n"
        "(ep,) = [e for e in md.entry_points(group='gymnasium.envs') if e.name == 'medspot']\n"
        "import medspot\n"
        f"print(ep.value, medspot.__file__.startswith({str(site)!r}))\n"
        "try:\n"
        "    gymnasium.make('medspot/orthanc-explorer-v1')\n"
        "except gymnasium.error.Error as e:\n"
        "    print('without the import:', type(e).__name__)\n"
        "with namespace(ep.name):\n"
        "    ep.load()()\n"
        "print(sorted(k for k in gymnasium.registry if k.startswith('medspot/')))\n"
    )
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "HOME": str(Path.home())}
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.strip().splitlines()
    assert lines[0] == "medspot.live.gym.registration:register_envs True"
    assert lines[1].startswith("without the import:")  # Gymnasium 1.x loads no plugins
    assert lines[2] == str(sorted(env_id(n) for n in env_names()))
