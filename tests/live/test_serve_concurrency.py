"""`medspot live serve --mcp --concurrency 2` on the lamp-panel environment (a real small
environment with a child process; `_lamp_panel`), through the official client over HTTP: two
episodes at once (guided mode: the step's instruction is told), each call naming its episode
(a call without one is a tool error); an environment that dies mid-episode ends that episode
as an environment error (not scored), says so, and the task starts again on a fresh
environment while the other episode goes on; all environments busy is a clear error; SIGTERM
leaves nothing behind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _lamp_panel import button_box, lamp_command, switch_task, task_file
from _runner_support import processes_of
from _serve_support import kill_leftovers, rows, short_workroot, start_server, stop_server

pytestmark = pytest.mark.live
mcp = pytest.importorskip("mcp")
import mcp_types  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

AGENT = mcp_types.Implementation(name="two-handed-agent", version="1")


def _click(lamp: str, episode: str) -> tuple[str, dict[str, Any]]:
    x, y = button_box(lamp).center
    return "click", {"x": x, "y": y, "episode": episode}


async def _scenario(url: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    async with (
        streamable_http_client(url) as streams,
        mcp.ClientSession(streams[0], streams[1], client_info=AGENT) as s,
    ):
        await s.initialize()

        async def call(name: str, args: dict[str, Any]) -> tuple[bool, str]:
            res = await s.call_tool(name, args)
            return bool(res.is_error), str(res.content[0].text)

        err, first = await call("start_task", {"task_id": "red"})
        assert not err, first
        seen["guided"] = json.loads(first).get("instruction")
        err, second = await call("start_task", {"task_id": "green"})
        assert not err, second
        red, green = json.loads(first)["episode"], json.loads(second)["episode"]
        seen["busy"] = await call("start_task", {"task_id": "red"})
        seen["unnamed"] = await call("click", {"x": 1, "y": 1})
        seen["crash"] = await call(*_click("crash", green))
        seen["red"] = await call(*_click("red", red))
        seen["gone"] = await call(*_click("green", green))
        err, again = await call("start_task", {"task_id": "green"})
        assert not err, again
        seen["green"] = await call(*_click("green", json.loads(again)["episode"]))
    return seen


def test_two_episodes_at_once_and_a_dead_environment(tmp_path: Path) -> None:
    import anyio

    tasks = task_file(tmp_path / "tasks.json", [switch_task("red", "red"),
                                                switch_task("green", "green")])  # fmt: skip
    out = tmp_path / "run"
    with short_workroot() as work:
        proc = None
        try:
            proc, url = start_server(lamp_command(
                "live", "serve", "--env", "lamp-panel", "--mcp", "--transport", "http",
                "--concurrency", "2", "--mode", "guided", "--tasks-file", str(tasks),
                "--out", str(out),
                "--bootstrap", "20"), work)  # fmt: skip
            seen = anyio.run(_scenario, url)
            code, err = stop_server(proc)
            assert code == 143, err
            assert not processes_of(work)
        finally:
            kill_leftovers(proc, work)
    assert seen["guided"] == "Click the red button"  # guided: the current step's instruction
    assert seen["busy"] == (True, seen["busy"][1])
    assert "all 2 environments are busy" in seen["busy"][1]
    assert seen["unnamed"] == (True, "click: episode: required (several episodes may run at once)")
    assert seen["crash"][0] and "the environment failed" in seen["crash"][1]
    assert "start the task again" in seen["crash"][1]
    assert json.loads(seen["red"][1])["outcome"] == "success"
    assert seen["gone"][0]
    assert seen["gone"][1].endswith("ended with an environment error (not scored); call "
                                    "start_task(task_id) to start another")  # fmt: skip
    assert json.loads(seen["green"][1])["outcome"] == "success"
    got = {k: r["live_outcome"] for k, r in rows(out, "lamp-panel").items()}
    assert got == {"lamp-panel/red@1": "success", "lamp-panel/green@1": "env_error",
                   "lamp-panel/green@2": "success"}  # fmt: skip
    info = json.loads((out / "run.json").read_text())
    assert info["model"] == "two-handed-agent 1" and info["status"] == "incomplete"


async def _one_session(url: str, name: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    me = mcp_types.Implementation(name=name, version="1")
    out: list[Any] = []
    async with (
        streamable_http_client(url) as streams,
        mcp.ClientSession(streams[0], streams[1], client_info=me) as s,
    ):
        await s.initialize()
        for name_, args in calls:
            if name_ == "sleep":
                import anyio

                await anyio.sleep(args["s"])
                continue
            res = await s.call_tool(name_, args)
            out.append((bool(res.is_error), str(res.content[0].text)))
    return out


def test_a_silent_client_is_abandoned_and_a_folder_keeps_its_agent(tmp_path: Path) -> None:
    """`--idle-timeout`: an episode with no call for that long is abandoned, and its client is
    told so when it comes back; `wait` answers the screen without using the budget; a server
    started again on the folder goes on with the same agent (the next repeat) and refuses
    another, saying what to do."""
    import anyio

    tasks = task_file(tmp_path / "tasks.json", [switch_task("red", "red")])
    out = tmp_path / "run"
    x, y = button_box("red").center
    Calls = list[tuple[str, dict[str, Any]]]
    waits: Calls = [("start_task", {"task_id": "red"}), ("wait", {"seconds": 0.2}),
                    ("sleep", {"s": 4}), ("click", {"x": x, "y": y})]  # fmt: skip
    solves: Calls = [("start_task", {"task_id": "red"}), ("click", {"x": x, "y": y})]
    starts: Calls = [("start_task", {"task_id": "red"})]
    args = ["live", "serve", "--env", "lamp-panel", "--mcp", "--transport", "http",
            "--tasks-file", str(tasks), "--out", str(out), "--bootstrap", "20"]  # fmt: skip
    with short_workroot() as work:
        proc = None
        try:
            proc, url = start_server(lamp_command(*args, "--idle-timeout", "1"), work)
            first = anyio.run(_one_session, url, "agent-a", waits)
            assert stop_server(proc)[0] == 143
            proc, url = start_server(lamp_command(*args), work)
            second = anyio.run(_one_session, url, "agent-a", solves)
            other = anyio.run(_one_session, url, "agent-b", starts)
            assert stop_server(proc)[0] == 143
        finally:
            kill_leftovers(proc, work)
    waited = json.loads(first[1][1])
    assert not first[1][0] and waited["actions_used"] == 0 and not waited["ended"]
    # the client comes back to its abandoned episode: it is told so
    assert first[2] == (
        True,
        f"episode {waited['episode']} was abandoned: no call for 1 s (the "
        "client has gone); call start_task(task_id) to start another",
    )
    assert json.loads(second[1][1])["outcome"] == "success"
    assert other[0][0] and "records the agent 'agent-a 1'" in other[0][1]
    assert "one run folder holds one agent's episodes. Connect as 'agent-a 1'" in other[0][1]
    got = {k: (r["live_outcome"], r["live_reason"]) for k, r in rows(out, "lamp-panel").items()}
    assert got == {
        "lamp-panel/red@1": ("abandoned", "abandoned: no call for 1 s (the client has gone)"),
        "lamp-panel/red@2": ("success", "success checks hold"),
    }
