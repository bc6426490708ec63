"""`--executor container` with a real engine (podman here) and the real orthanc-explorer image
(built from this repository once, shared): the oracle through containers as the README runs
it, with the image's id and digest in run.json and the report; nothing left behind after the
run, after SIGTERM, Ctrl-C or SIGKILL of the runner, and after a dead run (the next run's
sweep); a container that dies, hangs or cannot start is an environment fault and a clean retry
on a fresh container."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from _container_support import (
    IMAGE_BUILD_TIMEOUT_S,
    REPO,
    ensure_image,
    owned_by,
    require_engine,
    wait_no_containers,
)
from _orthanc_support import require_orthanc_stack

from medspot.cli import main
from medspot.live.agents.scripted import OracleAgent
from medspot.live.agents.turn import AgentAnswer, AgentTurn
from medspot.live.core import processes
from medspot.live.images.engine import Engine, ImageInfo
from medspot.live.images.names import (
    CONTAINER_ENV_LABEL,
    CONTAINER_OWNER_LABEL,
    CONTAINER_RUN_LABEL,
)
from medspot.live.loop.envspec import EnvSpec, ExecutorSpec
from medspot.live.loop.executors import ContainerOptions
from medspot.live.loop.executors.base import SlotConfig
from medspot.live.loop.executors.container import ContainerExecutor, owner_label
from medspot.live.loop.request import LiveOutcome, LiveRequest, run_live
from medspot.live.loop.scheduler import LiveOptions
from medspot.live.loop.steplog import FaultRecord, TaskRecord
from medspot.live.loop.steplog import read_live_journal as read
from medspot.runfolder.layout import LIVE_JOURNAL

# the first test may build the image (CI: or wait for the build .ci/run started)
pytestmark = [pytest.mark.live, pytest.mark.timeout(IMAGE_BUILD_TIMEOUT_S)]

ENV = "orthanc-explorer"
TWO = ["open-study-ct-doe-john", "open-study-mr-doe-john"]


@pytest.fixture(scope="module")
def engine() -> Engine:
    require_orthanc_stack()
    return require_engine()


@pytest.fixture(scope="module")
def image(engine: Engine) -> ImageInfo:
    return ensure_image(engine, ENV)


def _cli(*args: str, timeout: float = 600) -> tuple[int, str, str, int]:
    """`medspot ARGS` in a process of its own: status, stdout, stderr and its pid."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    proc = subprocess.Popen([sys.executable, "-m", "medspot", *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err, proc.pid


def test_oracle_through_containers_records_the_image_and_leaves_nothing(
    engine: Engine, image: ImageInfo, tmp_path: Path
) -> None:
    out = tmp_path / "R"
    code, stdout, stderr, pid = _cli(
        "live", "run", "--env", ENV, "--executor", "container", "--model", "oracle",
        "--tasks", ",".join(TWO), "--out", str(out), "--no-progress",
    )  # fmt: skip
    assert code == 0, stderr[-3000:]
    assert "success 100.0%" in stdout
    info = json.loads((out / "run.json").read_text())
    assert info["executor"] == "container" and info["status"] == "complete"
    c = info["container"]
    assert c["engine"] == engine.name and c["engine_version"] == engine.version
    img = c["images"][ENV]
    assert img["id"] == image.id and img["digest"] == image.digest and img["pinned"]
    assert img["packages"]["orthanc"] and img["medspot_version"]
    log = (out / "live.log").read_text()
    assert "environment container medspot-env-orthanc-explorer-" in log
    # the run's containers are gone with it
    assert owned_by(engine, pid) == []
    # `medspot report` shows where the environments ran: the engine and the image
    report = tmp_path / "report"
    assert main(["report", str(out), "--out", str(report), "--no-plots"]) == 0
    pages = " ".join(p.read_text(errors="replace") for p in report.rglob("*.html"))
    assert f"executor container ({engine.name} {engine.version})" in pages
    assert image.id in pages and (image.digest or "") in pages


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_runner_leaves_no_container(
    engine: Engine, image: ImageInfo, tmp_path: Path, sig: signal.Signals
) -> None:
    """SIGTERM and Ctrl-C end the run, which removes its containers; after SIGKILL each
    worker sees the hang-up and ends, and its container (--rm) goes with it."""
    out = tmp_path / "R"
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "medspot", "live", "run", "--env", ENV, "--executor",
         "container", "--model", "oracle", "--concurrency", "2", "--out", str(out),
         "--no-progress"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while len([c for c in owned_by(engine, proc.pid) if c.running]) < 2:
            assert proc.poll() is None, "the run ended before its containers ran"
            assert time.monotonic() < deadline, "the run's two containers never ran"
            time.sleep(0.5)
        time.sleep(3)  # into the tasks
        proc.send_signal(sig)
        code = proc.wait(120)
        if sig != signal.SIGKILL:  # the run itself removed them, and says it was stopped
            assert code == 128 + sig, code
            assert owned_by(engine, proc.pid) == []
            assert json.loads((out / "run.json").read_text())["status"] == "interrupted"
        assert wait_no_containers(engine, proc.pid, timeout_s=60) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
        engine.remove_containers([c.id for c in owned_by(engine, proc.pid)])


def test_the_next_run_sweeps_the_containers_of_a_dead_run(
    engine: Engine, image: ImageInfo, tmp_path: Path
) -> None:
    """A container whose owner died before it could remove it (as a runner killed while its
    container starts, before the worker is reached) is removed when the next run opens; one
    whose owner lives is left alone."""
    dead = subprocess.Popen(["sleep", "30"])
    stamp = processes.stamp(dead.pid)
    assert stamp is not None
    dead.kill()
    dead.wait()
    mine, theirs = owner_label(), owner_label().rsplit("/", 2)[0] + f"/{stamp.pid}/{stamp.start}"
    names = {
        "dead": f"medspot-test-dead-{os.getpid()}",
        "alive": f"medspot-test-alive-{os.getpid()}",
    }
    for key, owner in (("dead", theirs), ("alive", mine)):
        started = engine.run("run", "-d", "--rm", "--network", "none", "--name", names[key],
                             "--label", f"{CONTAINER_OWNER_LABEL}={owner}",
                             "--label", f"{CONTAINER_RUN_LABEL}=test", image.id,
                             "sleep", "300")  # fmt: skip
        assert started.returncode == 0, started.stderr
    try:
        executor = ContainerExecutor(SlotConfig(ENV, workroot=tmp_path), ContainerOptions())
        executor.open(1)
        executor.close()
        left = {c.name for c in engine.containers(CONTAINER_RUN_LABEL + "=test")}
        assert names["dead"] not in left and names["alive"] in left
    finally:
        engine.remove_containers(list(names.values()))


class _ContainerBreaker(OracleAgent):
    """The oracle, but after its second answer it breaks the (only) container of this run
    once: `kill` (it dies) or `pause` (it hangs: every call on it times out)."""

    def __init__(self, engine: Engine, how: str) -> None:
        super().__init__()
        self.engine = engine
        self.how = how
        self.calls = 0
        self.broken: str | None = None

    async def answer(self, turn: AgentTurn) -> AgentAnswer:
        self.calls += 1
        ans = await super().answer(turn)  # answered (and journaled) before the container goes
        if self.calls == 2 and self.broken is None:
            (c,) = [c for c in owned_by(self.engine, os.getpid()) if c.running]
            done = self.engine.run(self.how, c.id)
            assert done.returncode == 0, done.stderr
            self.broken = c.name
        return ans


def _run_breaking(tmp_path: Path, engine: Engine, how: str, **kw: Any) -> tuple[LiveOutcome, Any]:
    agent = _ContainerBreaker(engine, how)
    spec = EnvSpec(ENV, task_ids=("open-series-ct-doe-john-axial",),
                   executor=ExecutorSpec("container"), workroot=tmp_path / "w", spares=0,
                   **kw)  # fmt: skip
    req = LiveRequest(spec=spec, model="oracle", out=tmp_path / how, agent=agent, n_boot=0)
    return run_live(req), agent


@pytest.mark.parametrize("how", ["kill", "pause"])
def test_a_container_that_dies_or_hangs_is_an_environment_fault_and_a_clean_retry(
    engine: Engine, image: ImageInfo, tmp_path: Path, how: str
) -> None:
    timeout = {"call_timeout_s": 15.0} if how == "pause" else {}
    out, agent = _run_breaking(tmp_path, engine, how, **timeout)
    assert agent.broken is not None
    assert out.stats.faults == 1 and out.stats.envs_started == 2, out.stats
    recs = list(read(tmp_path / how / LIVE_JOURNAL))
    (fault,) = [r for r in recs if isinstance(r, FaultRecord)]
    expected = "did not return" if how == "pause" else "stopped answering"
    assert fault.attempt == 1 and expected in fault.message, fault.message
    finals = [r for r in recs if isinstance(r, TaskRecord)]
    assert [(r.attempt, r.outcome) for r in finals] == [(2, "success")]
    assert out.metrics["task_success_rate"] == 1.0 and out.info.status == "complete"
    # the broken container (a paused one too) is removed, as is the one that took over
    assert wait_no_containers(engine, os.getpid(), timeout_s=30) == []


def test_a_missing_or_stale_image_is_exit_2_naming_the_command_that_fixes_it(
    engine: Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "R"
    base = ["live", "run", "--env", ENV, "--executor", "container", "--model", "oracle",
            "--out", str(out), "--no-progress"]  # fmt: skip
    assert main([*base, "--container-image", "localhost/medspot-no-such-image:0"]) == 2
    assert "has no image localhost/medspot-no-such-image:0" in capsys.readouterr().err
    # an image medspot built for another medspot (labels only: an empty file system)
    stale = f"localhost/medspot-test-stale:{os.getpid()}"
    (tmp_path / "empty").mkdir()
    tar = subprocess.run(["tar", "-C", str(tmp_path / "empty"), "-c", "."], capture_output=True,
                         check=True).stdout  # fmt: skip
    labels = {"org.medspot.env": ENV, "org.medspot.version": "0.0.1",
              "org.medspot.source": "sha256:old"}  # fmt: skip
    changes = [x for k, v in labels.items() for x in ("--change", f"LABEL {k}={v}")]
    made = engine.run("import", *changes, "-", stale, stdin=tar)
    assert made.returncode == 0, made.stderr
    try:
        assert main([*base, "--container-image", stale]) == 2
        err = capsys.readouterr().err
        assert f"{stale} is stale: it holds medspot 0.0.1" in err
        assert "rebuild it with `medspot live image build --env orthanc-explorer`" in err
        assert not out.exists()  # refused before anything was written
    finally:
        engine.run("rmi", "-f", stale)


def test_a_container_that_cannot_start_is_an_environment_fault_and_leaves_nothing(
    engine: Engine, image: ImageInfo, tmp_path: Path
) -> None:
    """Too little memory for the worker: the container ends before its worker listens; each
    attempt is a fault of its own (no model call made), nothing stays behind."""
    work = Path(tempfile.mkdtemp(prefix="msct", dir="/tmp"))  # short: the socket's path
    spec = EnvSpec(
        ENV,
        task_ids=("open-study-ct-doe-john",),
        workroot=work,
        executor=ExecutorSpec("container", container=ContainerOptions(memory="30m")),
    )
    req = LiveRequest(spec=spec, model="oracle", out=tmp_path / "R", n_boot=0,
                      loop=LiveOptions(env_retries=1))  # fmt: skip
    try:
        out = run_live(req)
        left = [p.name for p in work.iterdir()]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert left == []  # the containers' folders are gone too
    assert out.stats.faults == 2 and out.stats.calls == 0 and out.info.status != "complete"
    faults = [r for r in read(tmp_path / "R" / LIVE_JOURNAL) if isinstance(r, FaultRecord)]
    assert [f.attempt for f in faults] == [1, 2]
    assert all("ended before its worker listened" in f.message for f in faults), faults
    assert owned_by(engine, os.getpid()) == []


def test_gymnasium_runs_its_environment_in_a_container(
    engine: Engine, image: ImageInfo, tmp_path: Path
) -> None:
    """`executor="container"` of the Gymnasium environment: the application in a container of
    the image (owned by this process), an oracle rollout with reward 1, the container gone with
    `close()`, run.json naming the image."""
    gymnasium = pytest.importorskip("gymnasium")
    import medspot.live.gym

    out = tmp_path / "G"
    env = gymnasium.make(medspot.live.gym.env_id(ENV), executor="container", tasks=TWO[:1],
                         out=out, agent="scripted")  # fmt: skip
    try:
        obs, info = env.reset(seed=0)
        assert info["task"] == TWO[0] and obs["screen"].shape == (800, 1280, 3)
        running = owned_by(engine, os.getpid())
        assert [c.labels.get(CONTAINER_ENV_LABEL) for c in running] == [ENV]
        total, terminated = 0.0, False
        while not terminated:
            action = env.unwrapped.oracle_action()
            assert action is not None
            _, reward, terminated, truncated, info = env.step(action)
            total += float(reward)
            assert not truncated
        assert total == 1.0 and info["outcome"] == "success"
    finally:
        env.close()
    assert wait_no_containers(engine, os.getpid()) == []
    run = json.loads((out / "run.json").read_text())
    assert (run["executor"], run["served"], run["status"]) == ("container", "gymnasium",
                                                               "complete")  # fmt: skip
    assert run["container"]["images"][ENV]["id"] == image.id
