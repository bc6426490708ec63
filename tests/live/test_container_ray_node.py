"""A Ray worker node started from an environment image: a head on this machine declares no
environment, a container of the orthanc-explorer image joins it on 127.0.0.1 with the
resources `medspot live doctor --ray-resources` prints inside the image, and a live run with
`--executor ray --ray-address` runs the oracle in actors that can only land in the container
(and do: they run there, by their host name). Everything started is stopped by id."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _container_support import IMAGE_BUILD_TIMEOUT_S, ensure_image, require_engine
from _orthanc_support import require_orthanc_stack
from _ray_support import _ray_start, free_port, ray_bin, require_ray, stop_processes_under

from medspot.live.images.engine import Engine, ImageInfo
from medspot.live.loop.envspec import EnvSpec, ExecutorSpec
from medspot.live.loop.request import LiveRequest, run_live

pytestmark = [pytest.mark.live, pytest.mark.timeout(IMAGE_BUILD_TIMEOUT_S)]  # it may build

ENV = "orthanc-explorer"
TASKS = ("open-study-ct-doe-john", "open-series-ct-doe-john-axial")
NODE_HOSTNAME = "medspot-ray-node"
JOIN_TIMEOUT_S = 180.0


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="msrc", dir="/tmp"))
    try:
        yield folder
    finally:
        stop_processes_under(folder, timeout_s=5.0)  # the head: then SIGKILL what is left
        shutil.rmtree(folder, ignore_errors=True)


def _node_argv(image: ImageInfo, address: str, name: str, token: Path) -> list[str]:
    """The worker node's container, as docs/live/running.md shows it (with the test's token)."""
    join = (
        f"ray start --address={address} --node-ip-address=127.0.0.1 --num-cpus=2 "
        "--object-store-memory=200000000 --disable-usage-stats "
        '--resources="$(medspot live doctor --ray-resources)" --block'
    )
    return ["run", "-d", "--rm", "--name", name, "--hostname", NODE_HOSTNAME,
            "--network", "host", "--shm-size", "1g",
            "-e", "RAY_AUTH_MODE=token", "-e", "RAY_DEFAULT_PYTHON_VERSION_MATCH_LEVEL=minor",
            "-v", f"{token}:/home/medspot/.ray/auth_token:ro",
            image.id, "sh", "-c", join]  # fmt: skip


def _wait_joined(engine: Engine, name: str) -> str:
    """The node's log once `ray start` says the node runs (it failed: the log)."""
    deadline = time.monotonic() + JOIN_TIMEOUT_S
    while True:
        logs = engine.run("logs", name)
        text = (logs.stdout + logs.stderr).decode(errors="replace")
        if "Ray runtime started" in text:
            return text
        assert logs.returncode == 0, f"the node's container ended:\n{text[-3000:]}"
        assert time.monotonic() < deadline, f"the node did not join:\n{text[-3000:]}"
        time.sleep(1)


def test_a_worker_node_from_the_image_runs_the_actors_of_a_live_run(
    short_tmp: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    require_orthanc_stack()
    require_ray()
    engine = require_engine()
    image = ensure_image(engine, ENV)
    env = dict(os.environ, TMPDIR=str(short_tmp), RAY_AUTH_MODE="token")
    subprocess.run([ray_bin(), "get-auth-token", "--generate"], env=env, capture_output=True,
                   timeout=120, check=True)  # fmt: skip
    token = short_tmp / "auth_token"  # the node's user (not root) reads a copy of it
    shutil.copy(Path.home() / ".ray" / "auth_token", token)
    token.chmod(0o644)
    port = free_port()
    address = f"127.0.0.1:{port}"
    name = f"medspot-test-ray-node-{os.getpid()}"
    _ray_start(["--head", f"--port={port}", "--include-dashboard=false", "--num-cpus=1",
                "--resources={}", "--node-ip-address=127.0.0.1", "--disable-usage-stats"],
               env)  # fmt: skip
    try:
        started = engine.run(*_node_argv(image, address, name, token))
        assert started.returncode == 0, started.stderr
        log = _wait_joined(engine, name)
        assert (
            "medspot-env-orthanc-explorer"
            in engine.run(
                "exec", name, "medspot", "live", "doctor", "--ray-resources"
            ).stdout.decode()
        ), log
        monkeypatch.setenv("TMPDIR", str(short_tmp))
        out = short_tmp / "run"
        caplog.set_level(logging.INFO, logger="medspot.live.loop.executors.ray_actors")
        spec = EnvSpec(ENV, task_ids=TASKS, executor=ExecutorSpec("ray", ray_address=address))
        res = run_live(LiveRequest(spec=spec, model="oracle", out=out, n_boot=0))
        assert res.metrics["task_success_rate"] == 1.0 and res.stats.faults == 0
        assert json.loads((out / "run.json").read_text())["executor"] == "ray"
        placed = [r.getMessage() for r in caplog.records
                  if "environment actor" in r.getMessage()]  # fmt: skip
        assert placed and all(f"({NODE_HOSTNAME}, pid" in line for line in placed), placed
    finally:
        engine.remove_containers([name])
