"""The executors of live runs without an application: what crosses to a Ray actor pickles,
executor options are checked before anything runs (exit 2, named), a missing Ray names its
extra, `live doctor --ray-resources` prints the node's resources. (Runs on a real cluster:
tests/live/test_ray_executor.py; what a killed actor leaves is swept by `core.processes`.)"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from medspot.cli import main
from medspot.errors import ConfigError, DataError, Location
from medspot.live.core.actions import Click, Done, Drag, Infeasible, Key, Scroll, TypeText
from medspot.live.core.contract import ElementInfo, EnvironmentFault, Observation, PixelBox
from medspot.live.core.episode import StepResult
from medspot.live.envs.taskfiles import env_task_file
from medspot.live.loop.executors import check_executor_options, create_executor
from medspot.live.loop.executors.base import SlotConfig
from medspot.live.loop.executors.env_actor import ActorPlace, EpisodeState
from medspot.live.loop.executors.placement import ENV_RESOURCE_UNITS, resource_name

REPO = Path(__file__).resolve().parents[2]
ENV = "orthanc-explorer"


def _roundtrip(x: object) -> object:
    return pickle.loads(pickle.dumps(x))


def test_what_crosses_to_an_actor_pickles() -> None:
    obs = Observation(b"\x89PNG...", 1280, 800, url="http://127.0.0.1:1/app#x", title="t")
    box = PixelBox(1.0, 2.0, 30.0, 40.0)
    res = StepResult(
        n=2, observation=obs, action=Click(3, 4), executed=True, flags=("x",), target_step=1,
        intended_box=box, intended_to=None, element=ElementInfo("a > b", "a", "OK", box),
        hit_intended=True, achieved=(1,), done_if=True, required_happened=("s",),
        fired=(), success=False, harmful=False, terminated=False, truncated=False,
        outcome=None, reason="", settle_s=0.5, changed=True, env_s=0.7, info={"k": 1},
    )  # fmt: skip
    assert _roundtrip(res) == res and _roundtrip(res).checks == res.checks  # type: ignore[attr-defined]
    actions = [Click(1, 2, double=True), Drag(1, 2, 3, 4), Scroll(1, 2, -3), TypeText("a"),
               Key("Enter"), Done(), Infeasible("no")]  # fmt: skip
    assert [_roundtrip(a) for a in actions] == actions
    state = EpisodeState(3, 1, (True, False), 0.25, 0.01)
    assert _roundtrip(state) == state
    place = ActorPlace(123, "node", "host", "0.1.0")
    assert _roundtrip(place) == place
    tf, _ = env_task_file(ENV)
    assert _roundtrip(list(tf.tasks)) == list(tf.tasks)
    cfg = SlotConfig(ENV, {"chromium": "/usr/bin/chromium", "seed_cache": Path("/x")}, 9.0,
                     Path("/tmp/w"))  # fmt: skip
    assert _roundtrip(cfg) == cfg
    fault = _roundtrip(EnvironmentFault("orthanc-explorer: gone"))
    assert isinstance(fault, EnvironmentFault) and str(fault) == "orthanc-explorer: gone"
    data = _roundtrip(DataError("bad", Location("f.json", task=1)))
    assert isinstance(data, DataError) and "f.json" in str(data)


def test_executor_options_are_checked_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ConfigError, match="unknown executor 'dask'"):
        check_executor_options("dask")
    with pytest.raises(ConfigError, match="--ray-address needs --executor ray"):
        create_executor("threads", SlotConfig(ENV), ray_address="auto")
    with pytest.raises(ConfigError, match="--ray-cpus-per-env needs --executor ray"):
        check_executor_options("threads", ray_cpus_per_env=0.5)
    check_executor_options("threads")
    out = tmp_path / "run"
    base = ["live", "run", "--env", ENV, "--model", "oracle", "--out", str(out), "--no-progress"]
    assert main([*base, "--ray-address", "auto"]) == 2
    assert "--ray-address needs --executor ray" in capsys.readouterr().err
    assert not out.exists()  # refused before the run folder was made
    with pytest.raises(SystemExit) as e:
        main([*base, "--executor", "ray", "--ray-cpus-per-env", "-1"])
    assert e.value.code == 2 and "'-1' must be 0 or more" in capsys.readouterr().err


def test_without_ray_the_error_names_the_extra(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['ray'] = None\n"  # as if Ray were not installed
        "from medspot.cli import main\n"
        f"sys.exit(main(['live', 'run', '--env', '{ENV}', '--model', 'oracle', '--executor',"
        f" 'ray', '--out', {str(tmp_path / 'run')!r}, '--no-progress']))"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120, check=False)  # fmt: skip
    assert p.returncode == 2, p.stderr
    assert "pip install 'medspot[ray]'" in p.stderr and "Traceback" not in p.stderr


def test_doctor_prints_the_ray_resources_of_this_node(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from medspot.live.envs import registry

    entry = registry.env_entry(ENV)
    ready = registry.EnvEntry("ready-env", entry.factory, "test", entry.check_kinds,
                              entry.locator_keys, python_modules=())  # fmt: skip
    missing = registry.EnvEntry("missing-env", entry.factory, "test", entry.check_kinds,
                                entry.locator_keys, system_packages=("medspot-no-such-package",),
                                python_modules=())  # fmt: skip
    monkeypatch.setitem(registry._ENVS, "ready-env", ready)
    monkeypatch.setitem(registry._ENVS, "missing-env", missing)
    assert main(["live", "doctor", "--env", "ready-env", "--ray-resources"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out) == {"medspot-env-ready-env": ENV_RESOURCE_UNITS}
    assert main(["live", "doctor", "--env", "missing-env", "--ray-resources"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out) == {}
    assert "missing-env: not declared" in cap.err and "medspot-no-such-package" in cap.err
    assert main(["live", "doctor", "--ray-resources"]) == 0  # every environment: one JSON line
    cap = capsys.readouterr()
    declared = json.loads(cap.out)
    assert resource_name("ready-env") in declared and resource_name("missing-env") not in declared
    assert all(
        k.startswith("medspot-env-") and v == ENV_RESOURCE_UNITS for k, v in declared.items()
    )
    assert len(cap.out.strip().splitlines()) == 1
