"""`medspot live serve` drives its episodes with the runner's own machinery (the one episode
driver, the executors' slots, spares), through the official MCP client:

- the same actions through `live run --model replay` and through an MCP client on the same task
  journal the same step and task records, field for field, but for the times and durations
  and who answered in which words (`source`, `raw_text`); a `wait` between two actions is no
  step and leaves no record (lamp panel: a real small environment with a child process);
- `--spares 1`: once a task has started, the slot's spare is prepared for the next start of
  the same task, which starts with a swap (`swapped` in its task record); a start of another
  task resets the active instance (lamp panel);
- `--executor ray`: the episodes run in a Ray actor of a local cluster the server starts, and
  an agent solves a real Orthanc Explorer task through it; the server leaves no process behind;
- `--executor container`: the same in a container of the orthanc-explorer image, which the
  server removes when it ends; run.json records the image.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _container_support import IMAGE_BUILD_TIMEOUT_S, ensure_image, require_engine
from _lamp_panel import button_box, lamp_command, process_env, switch_task, task_file
from _orthanc_support import require_orthanc_stack
from _ray_support import require_ray, stop_processes_under
from _runner_support import processes_mentioning, processes_of
from _serve_support import (
    journal_records,
    kill_leftovers,
    oracle_actions,
    replayed_run,
    serve_args,
    short_workroot,
)

from medspot.live.core.actions import Click, LiveAction
from medspot.live.loop.steplog import TaskRecord, read_live_journal
from medspot.runfolder.layout import LIVE_JOURNAL

pytestmark = pytest.mark.live
mcp = pytest.importorskip("mcp")
import mcp_types  # noqa: E402

AGENT = mcp_types.Implementation(name="scripted-agent", version="1.0")
LAMP = "lamp-panel"


def _summary(res: Any) -> dict[str, Any]:
    text = str(res.content[0].text)
    assert not res.is_error, text
    return dict(json.loads(text))


async def _session(
    command: list[str], work: Path, script: Callable[[Any], Awaitable[None]]
) -> None:
    params = mcp.StdioServerParameters(command=command[0], args=command[1:],
                                       env=process_env(work))  # fmt: skip
    async with (
        mcp.stdio_client(params) as (read, write),
        mcp.ClientSession(read, write, client_info=AGENT) as s,
    ):
        await s.initialize()
        await script(s)


def _serve(work: Path, command: list[str], script: Callable[[Any], Awaitable[None]]) -> None:
    import anyio

    work.mkdir(parents=True, exist_ok=True)
    try:
        anyio.run(_session, command, work, script)
    finally:
        kill_leftovers(None, work)
    assert not processes_of(work)


def test_a_served_episode_journals_what_a_run_of_the_same_actions_does(tmp_path: Path) -> None:
    tasks = task_file(tmp_path / "tasks.json", [switch_task("two", "red", "green")])
    red, green = (button_box(lamp).center for lamp in ("red", "green"))
    actions: list[LiveAction] = [Click(*red), Click(1280, 10), Click(*green)]  # 2nd: off screen
    with short_workroot() as work:
        replayed_run(tmp_path, work, tasks, "two", actions)

        async def script(s: Any) -> None:
            _summary(await s.call_tool("start_task", {"task_id": "two"}))
            for i, a in enumerate(actions):
                assert isinstance(a, Click)
                seen = _summary(await s.call_tool("click", {"x": a.x, "y": a.y}))
                if i == 0:  # a look at the screen between two actions: no step, no record
                    assert (
                        _summary(await s.call_tool("wait", {"seconds": 0.1}))["actions_used"] == 1
                    )
            assert seen["outcome"] == "success"

        _serve(work, lamp_command("live", "serve", "--env", LAMP, "--mcp", "--tasks-file",
                                  str(tasks), "--out", str(tmp_path / "served"), "--bootstrap",
                                  "20"), script)  # fmt: skip
    run_steps, run_tasks = journal_records(tmp_path / "run")
    served_steps, served_tasks = journal_records(tmp_path / "served")
    assert [s["n"] for s in run_steps] == [1, 2, 3]
    assert run_steps[1]["flags"] == ["not_executable:off_screen"] and not run_steps[1]["executed"]
    assert served_steps == run_steps
    assert served_tasks == run_tasks and run_tasks[0]["outcome"] == "success"


def test_a_spare_is_prepared_for_the_next_start_of_the_same_task(tmp_path: Path) -> None:
    tasks = task_file(tmp_path / "tasks.json", [switch_task("red", "red"),
                                                switch_task("green", "green")])  # fmt: skip
    out = tmp_path / "run"

    async def solve(s: Any, task: str) -> None:
        _summary(await s.call_tool("start_task", {"task_id": task}))
        # time for the spare to start and be reset for this task's next start
        _summary(await s.call_tool("wait", {"seconds": 5}))
        x, y = button_box(task).center
        assert _summary(await s.call_tool("click", {"x": x, "y": y}))["outcome"] == "success"

    async def script(s: Any) -> None:
        for task in ("red", "red", "green", "green"):
            await solve(s, task)

    with short_workroot() as work:
        _serve(work, lamp_command("live", "serve", "--env", LAMP, "--mcp", "--tasks-file",
                                  str(tasks), "--out", str(out), "--bootstrap", "20",
                                  "--spares", "1"), script)  # fmt: skip
    records = read_live_journal(out / LIVE_JOURNAL)
    ends = [(r.task, r.repeat, r.outcome, r.swapped) for r in records if isinstance(r, TaskRecord)]
    assert ends == [("red", 0, "success", False), ("red", 1, "success", True),
                    ("green", 0, "success", False), ("green", 1, "success", True)]  # fmt: skip


@pytest.fixture
def ray_folder(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short private folder for the server's environments and its local Ray cluster's
    session (unix socket paths must stay short); whatever runs from it is stopped after."""
    require_orthanc_stack()
    require_ray()
    with short_workroot() as folder:
        (folder / "r").mkdir()
        monkeypatch.setenv("RAY_TMPDIR", str(folder / "r"))
        try:
            yield folder
        finally:
            left = stop_processes_under(folder)
            assert not left, f"processes left behind: {left}"


def test_an_agent_solves_a_task_served_from_a_ray_actor(tmp_path: Path, ray_folder: Path) -> None:
    task = "open-study-ct-doe-john"
    path = oracle_actions(tmp_path / "oracle", [task])[task]
    out = tmp_path / "run"
    seen: dict[str, Any] = {}

    async def script(s: Any) -> None:
        first = _summary(await s.call_tool("start_task", {"task_id": task}))
        assert first["actions_used"] == 0 and first["screen"] == {"width": 1280, "height": 800}
        for a in path:
            assert isinstance(a, Click)
            seen["last"] = _summary(await s.call_tool("click", {"x": round(a.x), "y": round(a.y)}))

    command = serve_args(out, "--mcp", "--executor", "ray", "--tasks", task)
    _serve(ray_folder / "w", command, script)
    assert seen["last"]["outcome"] == "success" and seen["last"]["ended"]
    info = json.loads((out / "run.json").read_text())
    assert info["executor"] == "ray" and info["status"] == "complete"
    assert info["model"] == "scripted-agent 1.0"
    ends = [r for r in read_live_journal(out / LIVE_JOURNAL) if isinstance(r, TaskRecord)]
    assert [(r.task, r.outcome) for r in ends] == [(task, "success")]
    assert not processes_mentioning(str(ray_folder / "r")), "the server's cluster is left"


@pytest.mark.timeout(IMAGE_BUILD_TIMEOUT_S)  # it may build the image
def test_an_agent_solves_a_task_served_from_a_container(tmp_path: Path) -> None:
    require_orthanc_stack()
    engine = require_engine()
    image = ensure_image(engine, "orthanc-explorer")
    task = "open-study-ct-doe-john"  # clicks on list rows: the image's fonts move them little
    path = oracle_actions(tmp_path / "oracle", [task])[task]
    out = tmp_path / "run"
    seen: dict[str, Any] = {}

    async def script(s: Any) -> None:
        _summary(await s.call_tool("start_task", {"task_id": task}))
        for a in path:
            assert isinstance(a, Click)
            seen["last"] = _summary(await s.call_tool("click", {"x": round(a.x), "y": round(a.y)}))

    command = serve_args(out, "--mcp", "--executor", "container", "--tasks", task)
    _serve(tmp_path / "w", command, script)
    assert seen["last"]["outcome"] == "success" and seen["last"]["ended"]
    info = json.loads((out / "run.json").read_text())
    assert info["executor"] == "container" and info["status"] == "complete"
    assert info["container"]["images"]["orthanc-explorer"]["id"] == image.id
    names = re.findall(r"environment container (medspot-env-\S+)", (out / "live.log").read_text())
    assert names, "the server's log names no container"
    left = {c.name for c in engine.containers("org.medspot.live.env=orthanc-explorer")}
    assert not left & set(names), "the server's container is left"
