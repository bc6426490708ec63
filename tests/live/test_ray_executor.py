"""`--executor ray` on a real Ray cluster on this machine (real Orthanc, real chromium in the
actors): the oracle through two actors gives the thread executor's results; an actor killed
mid-task, or one that stops answering, is an environment error and a clean retry; a run
stopped by SIGTERM resumes; actors are placed only on the node that declares the environment's
resource. Every Ray process a test starts is stopped (by process id), nothing is left behind."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _orthanc_support import CHROMIUM, require_orthanc_stack
from _ray_support import (
    REPO,
    env_actors,
    free_port,
    require_ray,
    stop_processes_under,
    two_nodes,
    wait_gone,
)
from _runner_support import ENV, descendants, env_options, live_request, processes_mentioning

from _children import start, stop
from medspot.errors import ConfigError
from medspot.live.agents.scripted import OracleAgent
from medspot.live.agents.turn import AgentAnswer, AgentTurn
from medspot.live.loop.envspec import EnvSpec, ExecutorSpec
from medspot.live.loop.request import LiveOutcome, LiveRequest, run_live
from medspot.live.loop.steplog import FaultRecord, StepRecord, TaskRecord
from medspot.live.loop.steplog import read_live_journal as read
from medspot.runfolder.layout import LIVE_JOURNAL

pytestmark = pytest.mark.live

TASKS = [
    "open-study-ct-doe-john",
    "filter-patients-garcia",
    "viewer-slice5-ct-doe-joan",
    "download-patient-miller",
    "delete-patient-doe-joan",
]


@pytest.fixture(autouse=True)
def _stack() -> None:
    require_orthanc_stack()
    require_ray()


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A short private folder (unix socket paths of Ray and chromium must stay short), for
    Ray's session (RAY_TMPDIR) and the environments; whatever runs from it is stopped."""
    folder = Path(tempfile.mkdtemp(prefix="msry", dir="/tmp"))
    try:
        yield folder
    finally:
        # a cluster stopped at the end of its test may still be exiting (Ray's daemons end
        # a few seconds after `ray stop` returns on a loaded machine): left behind is what
        # still runs after that grace
        deadline = time.monotonic() + 15
        while processes_mentioning(str(folder)) and time.monotonic() < deadline:
            time.sleep(0.5)
        left = stop_processes_under(folder)
        shutil.rmtree(folder, ignore_errors=True)
        assert not left, f"processes left behind: {left}"


@pytest.fixture
def local_ray_tmp(short_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The local cluster a run starts keeps its session in the test's folder."""
    monkeypatch.setenv("RAY_TMPDIR", str(short_tmp / "r"))
    (short_tmp / "r").mkdir()
    return short_tmp


def _run(out: Path, seed_cache: Path, ids: list[str], **kw: Any) -> LiveOutcome:
    req = live_request(env=ENV, model="oracle", out=out, task_ids=tuple(ids),
                       env_options=env_options(seed_cache), n_boot=50, **kw)  # fmt: skip
    return run_live(req)


def _element(e: dict[str, Any] | None) -> tuple[str, str] | None:
    """The element hit, by role and name (its key may hold an id the page made up)."""
    return None if e is None else (e["role"], e["name"])


def _results(run_dir: Path) -> dict[str, Any]:
    """Per task what the run found, without timings, hashes of screens or URLs with ports."""
    rows = json.loads((run_dir / ENV / "task_results.json").read_text())
    out = {}
    for r in rows:
        steps = [
            (s["step_id"], s["outcome"], s["live_action"], _element(s.get("element")),
             s.get("achieved"), s.get("checks"))
            for s in r["steps"]
        ]  # fmt: skip
        out[r["task_id"]] = (r["status"], r["completed"], r["correct_steps"],
                             r["steps_evaluated"], steps)  # fmt: skip
    return out


def test_oracle_through_two_actors_gives_the_thread_executors_results(
    tmp_path: Path, seed_cache: Path, local_ray_tmp: Path
) -> None:
    work = local_ray_tmp / "envs"
    threads = _run(tmp_path / "threads", seed_cache, TASKS, concurrency=2, workroot=work,
                   start_checks=True)  # fmt: skip
    actors = _run(tmp_path / "ray", seed_cache, TASKS, concurrency=2, workroot=work,
                  executor="ray", start_checks=True)  # fmt: skip
    assert threads.metrics["task_success_rate"] == 1.0
    assert _results(tmp_path / "ray") == _results(tmp_path / "threads")
    # the checks read at each task's start (the audit's reading) come back from the actors
    at_start = {
        run: {r.task: r.start_checks for r in read(tmp_path / run / LIVE_JOURNAL)
              if isinstance(r, TaskRecord)}
        for run in ("threads", "ray")
    }  # fmt: skip
    assert at_start["ray"] == at_start["threads"] and len(at_start["ray"]) == len(TASKS)
    assert all(c is not None and c["success_each"] for c in at_start["ray"].values())
    assert actors.metrics["num_tasks"] == len(TASKS) and actors.stats.faults == 0
    assert actors.stats.envs_started == 2  # two actors, each kept for several tasks
    # each actor kept a spare, reset for its next task (and swapped in when it was ready by
    # then: the first one may still be starting), as the threads' slots do
    assert actors.stats.spares_started == 2 and actors.stats.spare_faults == 0, actors.stats
    swapped = {r.task for r in read(tmp_path / "ray" / LIVE_JOURNAL)
               if isinstance(r, TaskRecord) and r.swapped}  # fmt: skip
    assert len(swapped) == actors.stats.swaps
    info = json.loads((tmp_path / "ray" / "run.json").read_text())
    assert info["executor"] == "ray" and info["status"] == "complete"
    assert json.loads((tmp_path / "threads" / "run.json").read_text())["executor"] == "threads"
    assert not processes_mentioning(str(local_ray_tmp))  # the local cluster is stopped
    # the driver (this process) does not ignore SIGCHLD after Ray (the subreaper option sets
    # it): its later children keep their exit statuses
    ignored = int(Path("/proc/self/status").read_text().split("SigIgn:")[1].split()[0], 16)
    assert not ignored & (1 << (signal.SIGCHLD - 1))
    done = subprocess.run(["sh", "-c", "exit 7"], check=False)
    assert done.returncode == 7
    # ... nor is it left a child subreaper (Ray makes it one): orphans of later environments
    # go to init, not to this process's zombies
    flag = ctypes.c_int(-1)
    ctypes.CDLL(None).prctl(37, ctypes.byref(flag), 0, 0, 0)  # PR_GET_CHILD_SUBREAPER
    assert flag.value == 0


class _ActorSignaller(OracleAgent):
    """The oracle, but after its second answer it sends `sig` to the process of the (only)
    environment actor, found through Ray (`ray.get(actor.place.remote()).pid`), once; it
    remembers the actor's pid and the processes below it (Orthanc, chromium)."""

    def __init__(self, sig: int) -> None:
        super().__init__()
        self.sig = sig
        self.calls = 0
        self.pid: int | None = None
        self.below: list[int] = []

    async def answer(self, turn: AgentTurn) -> AgentAnswer:
        import ray

        self.calls += 1
        ans = await super().answer(turn)  # answered (and journaled) before the actor dies
        if self.calls == 2 and self.pid is None:
            (actor,) = env_actors()
            self.pid = ray.get(actor.place.remote()).pid
            assert self.pid is not None and self.pid != os.getpid()
            self.below = descendants(self.pid)
            assert self.below, "the actor's Orthanc and chromium were not found below it"
            os.kill(self.pid, self.sig)
        return ans


def _fault_then_success(out: LiveOutcome, run_dir: Path) -> FaultRecord:
    assert out.stats.faults == 1 and out.stats.envs_started == 2
    recs = list(read(run_dir / LIVE_JOURNAL))
    faults = [r for r in recs if isinstance(r, FaultRecord)]
    assert len(faults) == 1 and faults[0].attempt == 1
    finals = [r for r in recs if isinstance(r, TaskRecord)]
    assert [(r.attempt, r.outcome) for r in finals] == [(2, "success")]
    retry = [r for r in recs if isinstance(r, StepRecord) and r.attempt == 2]
    assert retry[0].n == 1 and retry[0].replayed  # journaled answers replayed, not asked again
    assert out.metrics["task_success_rate"] == 1.0 and out.metrics["num_env_errors"] == 0
    assert out.info.status == "complete"
    return faults[0]


def test_killed_actor_is_an_environment_error_and_a_clean_retry(
    tmp_path: Path, seed_cache: Path, local_ray_tmp: Path
) -> None:
    agent = _ActorSignaller(signal.SIGKILL)
    out = _run(tmp_path / "run", seed_cache, ["delete-patient-doe-joan"], agent=agent,
               workroot=local_ray_tmp / "envs", executor="ray")  # fmt: skip
    assert agent.pid is not None
    fault = _fault_then_success(out, tmp_path / "run")
    assert "actor" in fault.message  # Ray's own word for what happened
    assert agent.calls == 3  # answers 1 and 2 of attempt 1 were journaled; 3 is the last step
    # the killed actor's Orthanc and chromium are gone too (Ray's subreaper)
    assert not wait_gone([agent.pid, *agent.below])
    assert not processes_mentioning(str(local_ray_tmp))


def test_actor_that_stops_answering_is_bounded_by_the_call_timeout(
    tmp_path: Path, seed_cache: Path, local_ray_tmp: Path
) -> None:
    """SIGSTOP: the actor's process is there but never answers; the call times out, the actor
    is killed (its processes with it) and the task retried on a fresh one."""
    agent = _ActorSignaller(signal.SIGSTOP)
    out = _run(tmp_path / "run", seed_cache, ["delete-patient-doe-joan"], agent=agent,
               workroot=local_ray_tmp / "envs", executor="ray", call_timeout_s=30)  # fmt: skip
    fault = _fault_then_success(out, tmp_path / "run")
    assert "did not return in 30 s" in fault.message
    assert agent.pid is not None and not wait_gone([agent.pid, *agent.below])


def _cli(out: Path, folder: Path, ids: list[str]) -> list[str]:
    return [
        sys.executable, "-m", "medspot", "live", "run", "--env", ENV, "--model", "oracle",
        "--executor", "ray", "--concurrency", "2", "--tasks", ",".join(ids), "--out", str(out),
        "--env-option", f"chromium={CHROMIUM}", "--env-option", f"seed_cache={folder / 'seed'}",
        "--no-progress", "--bootstrap", "50",
    ]  # fmt: skip


def test_sigterm_stops_a_ray_run_cleanly_and_the_rerun_resumes(short_tmp: Path) -> None:
    out = short_tmp / "run"
    # the run's Ray session and the environments' folders are under the test's folder
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), TMPDIR=str(short_tmp))
    cmd = _cli(out, short_tmp, TASKS)
    proc = start(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    journal = out / LIVE_JOURNAL
    deadline = time.monotonic() + 400
    while time.monotonic() < deadline and proc.poll() is None:
        n = journal.read_bytes().count(b'"type":"step"') if journal.exists() else 0
        if n >= 3:
            break
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()[1].decode()[-3000:]
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 143, err.decode()[-3000:]  # 128 + SIGTERM
    assert "run the same command again to resume" in err.decode()
    # a clean stop: the environments closed, the local cluster stopped
    assert not wait_gone(processes_mentioning(str(short_tmp)), 60)
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "interrupted" and info["executor"] == "ray"
    before = list(read(journal))
    finished = {r.task for r in before if isinstance(r, TaskRecord)}
    assert len(finished) < len(TASKS)

    again = subprocess.run(cmd, env=env, capture_output=True, timeout=900, check=False)
    assert again.returncode == 0, again.stderr.decode()[-3000:]
    recs = list(read(journal))
    finals = [r for r in recs if isinstance(r, TaskRecord)]
    assert sorted(r.task for r in finals) == sorted(TASKS)  # each task ended once
    assert all(r.outcome == "success" for r in finals)
    resumed = recs[len(before) :]
    assert not {r.task for r in resumed if isinstance(r, StepRecord)} & finished
    assert json.loads((out / "run.json").read_text())["status"] == "complete"


class _PlaceRecorder(OracleAgent):
    """The oracle, noting at every answer on which node each environment actor runs."""

    def __init__(self) -> None:
        super().__init__()
        self.nodes: set[str] = set()

    async def answer(self, turn: AgentTurn) -> AgentAnswer:
        import ray

        for actor in env_actors():
            self.nodes.add(ray.get(actor.place.remote()).node_id)
        return await super().answer(turn)


def test_actors_run_only_on_the_node_that_declares_the_environment(
    tmp_path: Path, seed_cache: Path, short_tmp: Path
) -> None:
    import ray

    from medspot.live.loop.executors.placement import resource_name

    with two_nodes(short_tmp / "c") as nodes:
        assert nodes.worker_resources.get(resource_name(ENV)) == 100
        agent = _PlaceRecorder()
        ids = TASKS[:3]
        out = _run(tmp_path / "run", seed_cache, ids, agent=agent, concurrency=2,
                   workroot=short_tmp / "envs", executor="ray",
                   ray_address=nodes.address)  # fmt: skip
        assert out.metrics["task_success_rate"] == 1.0 and out.stats.envs_started == 2
        ray.init(address=nodes.address)
        try:
            by_resource = {
                n["NodeID"]: n["Resources"].get(resource_name(ENV), 0)
                for n in ray.nodes()  # type: ignore[no-untyped-call]
                if n["Alive"]
            }
        finally:
            ray.shutdown()
        assert len(by_resource) == 2
        (worker,) = [nid for nid, units in by_resource.items() if units]
        assert agent.nodes == {worker}
        # an environment no node declares: a clear error before anything runs
        lone = LiveRequest(
            spec=EnvSpec("ohif", executor=ExecutorSpec(name="ray", ray_address=nodes.address)),
            model="oracle",
            out=tmp_path / "ohif",
        )
        with pytest.raises(ConfigError, match=r"no node of the Ray cluster .* medspot-env-ohif"):
            run_live(lone)


def test_an_address_nothing_listens_on_is_exit_2_at_once(short_tmp: Path) -> None:
    """`--ray-address 127.0.0.1:PORT` with no head there: a medspot message naming the address
    typed, in seconds (Ray itself waited 828 s, deaf to signals), nothing written."""
    port = free_port()
    out = short_tmp / "run"
    cmd = [sys.executable, "-m", "medspot", "live", "run", "--env", ENV, "--model", "oracle",
           "--executor", "ray", "--ray-address", f"127.0.0.1:{port}", "--out", str(out),
           "--no-progress"]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), TMPDIR=str(short_tmp))
    t0 = time.monotonic()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    assert time.monotonic() - t0 < 30
    assert f"--ray-address 127.0.0.1:{port}: no Ray cluster answers" in done.stderr
    assert not out.exists()


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_ends_the_wait_for_a_cluster_within_seconds(
    short_tmp: Path, sig: signal.Signals, status: int
) -> None:
    """A head that accepts connections but never answers as Ray: the run waits in Ray's
    connect; Ctrl-C or SIGTERM ends it within seconds, run.json says "interrupted"."""
    import socket

    out = short_tmp / "run"
    with socket.socket() as head:
        head.bind(("127.0.0.1", 0))
        head.listen()
        address = f"127.0.0.1:{head.getsockname()[1]}"
        cmd = [sys.executable, "-m", "medspot", "live", "run", "--env", ENV, "--model",
               "oracle", "--executor", "ray", "--ray-address", address, "--out", str(out),
               "--no-progress"]  # fmt: skip
        env = dict(os.environ, PYTHONPATH=str(REPO / "src"), TMPDIR=str(short_tmp))
        proc = start(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        log = out / "live.log"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if log.exists() and "live run of oracle" in log.read_text():
                break
            time.sleep(0.1)
        time.sleep(3)  # inside Ray's connect now
        assert proc.poll() is None, proc.communicate()[1].decode()[-3000:]
        t0 = time.monotonic()
        stopped = stop(proc, sig, timeout_s=30)
        took = time.monotonic() - t0
    assert not stopped.killed and stopped.returncode == status, stopped.err.decode()[-3000:]
    assert took < 10, f"{took:.1f} s after the signal"
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "interrupted" and info["executor"] == "ray"
