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

from _children import ctrl_c_raises
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


def test_a_ray_address_is_reached_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    from medspot.live.loop.executors import check_ray_address

    pytest.importorskip("ray")
    with socket.socket() as s:  # a port nothing listens on (bound, never listening)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        with pytest.raises(ConfigError, match=rf"--ray-address 127\.0\.0\.1:{port}: no Ray "):
            check_ray_address(f"127.0.0.1:{port}", timeout_s=2)
        out = tmp_path / "run"
        address = f"127.0.0.1:{port}"
        argv = ["live", "run", "--env", ENV, "--model", "oracle", "--out", str(out),
                "--no-progress", "--executor", "ray", "--ray-address", address]  # fmt: skip
        assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"no Ray cluster answers at 127.0.0.1:{port}" in err and "ray start --head" in err
    assert not out.exists()
    with pytest.raises(ConfigError, match="expected HOST:PORT"):
        check_ray_address("somewhere-without-a-port")
    with socket.socket() as s:  # a head that accepts connections passes the probe
        s.bind(("127.0.0.1", 0))
        s.listen()
        check_ray_address(f"127.0.0.1:{s.getsockname()[1]}", timeout_s=2)


def test_joining_a_cluster_is_bounded_and_a_signal_stops_the_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ray's own wait for an address that never answers (in C++, about 14 minutes, deaf to
    Ctrl-C and SIGTERM) runs in a helper thread that this one waits for in short steps."""
    import asyncio
    import signal
    import threading
    import time

    ray = pytest.importorskip("ray")
    from medspot.interrupts import Terminated, sigterm_stops
    from medspot.live.loop.executors import ray_actors

    release = threading.Event()
    monkeypatch.setattr(ray, "init", lambda **kw: release.wait(60))
    ex = ray_actors.RayExecutor(SlotConfig(ENV), address="127.0.0.1:1", cpus_per_env=1.0)
    monkeypatch.setattr(ray_actors, "CONNECT_TIMEOUT_S", 0.5)
    t0 = time.monotonic()
    with pytest.raises(ConfigError, match=r"did not take this driver within 0\.5 s"):
        ex._join({})
    assert time.monotonic() - t0 < 5
    monkeypatch.setattr(ray_actors, "CONNECT_TIMEOUT_S", 60.0)

    async def in_the_runner() -> None:  # the runner opens its executor from its coroutine
        ex._join({})

    def alone() -> None:
        ex._join({})

    def under_asyncio() -> None:
        asyncio.run(in_the_runner())

    for sig, raised in ((signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, Terminated)):
        for wait in (alone, under_asyncio):
            # asyncio.run answers Ctrl-C by cancelling its task: a wait that never awaits
            # would not see it before Ray's own wait ends
            timer = threading.Timer(0.5, os.kill, (os.getpid(), sig))
            t0 = time.monotonic()
            timer.start()
            with ctrl_c_raises(), sigterm_stops(), pytest.raises(raised):
                wait()
            assert time.monotonic() - t0 < 5
    release.set()
