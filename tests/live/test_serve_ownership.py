"""One client, one episode: on `medspot live serve` a client reaches its own episodes only, over
the real transports, on the lamp panel (a real small environment with a child process):

- MCP over streamable HTTP with two sessions (the official client): a second session, one whose
  `start_task` the server refuses (another agent) and one the server lets start its own, names
  the first session's episode in every tool that takes one; each call is refused as for an
  unknown episode, nothing of it is executed or journaled, and the owner's episode goes on
  untouched (its journal holds its own actions only);
- OpenEnv over its WebSocket with two sessions: a session reaches only its own episode (a
  second session that names the first's episode id in its reset gets an episode of its own);
- OpenEnv's HTTP routes: the reset answers an unguessable episode id, and a step or state
  without it, with another id, or with a WebSocket session's episode id reaches nothing.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from _lamp_panel import button_box, lamp_command, switch_task, task_file
from _serve_support import kill_leftovers, rows, short_workroot, start_server, stop_server

from medspot.live.loop.steplog import StepRecord, read_live_journal
from medspot.runfolder.layout import LIVE_JOURNAL

pytestmark = pytest.mark.live

ENV = "lamp-panel"


def _tasks(tmp_path: Path) -> Path:
    """`two`: switch on red and green (two clicks: one click leaves the episode running)."""
    return task_file(tmp_path / "tasks.json", [switch_task("two", "red", "green")])


def _serve(tmp_path: Path, *extra: str) -> list[str]:
    return lamp_command("live", "serve", "--env", ENV, "--tasks-file", str(_tasks(tmp_path)),
                        "--out", str(tmp_path / "run"), "--bootstrap", "20", *extra)  # fmt: skip


def _steps(out: Path) -> list[StepRecord]:
    return [r for r in read_live_journal(out / LIVE_JOURNAL) if isinstance(r, StepRecord)]


def _at(lamp: str) -> dict[str, float]:
    x, y = button_box(lamp).center
    return {"x": x, "y": y}


# -- MCP ------------------------------------------------------------------------------------------


async def _mcp_sessions(url: str) -> dict[str, Any]:
    import mcp
    import mcp_types
    from mcp.client.streamable_http import streamable_http_client

    seen: dict[str, Any] = {}

    async def session(name: str) -> Any:
        streams = await stack.enter_async_context(streamable_http_client(url))
        me = mcp_types.Implementation(name=name, version="1")
        s = await stack.enter_async_context(mcp.ClientSession(streams[0], streams[1],
                                                              client_info=me))  # fmt: skip
        await s.initialize()
        return s

    async def call(s: Any, tool: str, args: dict[str, Any]) -> tuple[bool, str]:
        res = await s.call_tool(tool, args)
        return bool(res.is_error), str(res.content[0].text)

    from contextlib import AsyncExitStack

    async with AsyncExitStack() as stack:
        owner, stranger, peer = [await session(n) for n in ("owner", "stranger", "owner")]
        err, text = await call(owner, "start_task", {"task_id": "two"})
        assert not err, text
        episode = json.loads(text)["episode"]
        seen["episode"] = episode
        # another agent: its start is refused (the folder records the owner)
        seen["stranger_start"] = await call(stranger, "start_task", {"task_id": "two"})
        # every tool that takes an episode, named with the owner's
        intrusions: list[tuple[str, dict[str, Any]]] = [
            ("click", _at("red")), ("double_click", _at("red")), ("right_click", _at("red")),
            ("scroll", {**_at("red"), "dy": 1}),
            ("drag", {"x1": _at("red")["x"], "y1": _at("red")["y"], "x2": 5, "y2": 5}),
            ("type", {"text": "x"}), ("key", {"key": "Enter"}), ("wait", {"seconds": 0}),
            ("done", {}), ("infeasible", {"reason": "mine now"}),
        ]  # fmt: skip
        seen["stranger"] = [await call(stranger, t, {**a, "episode": episode})
                            for t, a in intrusions]  # fmt: skip
        # the same agent in another session (it may start episodes of its own): the same
        seen["peer"] = [await call(peer, t, {**a, "episode": episode}) for t, a in intrusions]
        # the owner's episode is untouched: red and green, two actions, a success
        seen["owner_first"] = await call(owner, "click", {**_at("green"), "episode": episode})
        seen["owner_last"] = await call(owner, "click", {**_at("red"), "episode": episode})
    return seen


def test_an_mcp_session_reaches_only_its_own_episode(tmp_path: Path) -> None:
    import anyio

    out = tmp_path / "run"
    with short_workroot() as work:
        proc = None
        try:
            proc, url = start_server(_serve(tmp_path, "--mcp", "--transport", "http",
                                            "--concurrency", "2"), work)  # fmt: skip
            seen = anyio.run(_mcp_sessions, url)
            code, err = stop_server(proc)
            assert code == 143, err
        finally:
            kill_leftovers(proc, work)
    episode = seen["episode"]
    unknown = (f"no running episode {episode!r} (it ended, or was never started); call "
               "start_task(task_id) to start one")  # fmt: skip
    assert seen["stranger_start"][0] and "records the agent 'owner 1'" in seen["stranger_start"][1]
    assert seen["stranger"] == [(True, unknown)] * 10
    assert seen["peer"] == [(True, unknown)] * 10
    first, last = (json.loads(seen[k][1]) for k in ("owner_first", "owner_last"))
    assert first["actions_used"] == 1 and not first["ended"]
    assert last["actions_used"] == 2 and last["outcome"] == "success"
    # the journal: the owner's two clicks, nothing of the others
    steps = _steps(out)
    said = [f"click(x={_at(c)['x']!r}, y={_at(c)['y']!r})" for c in ("green", "red")]
    assert [(s.n, s.raw_text) for s in steps] == [(1, said[0]), (2, said[1])]
    assert {k: r["live_outcome"] for k, r in rows(out, ENV).items()} == {
        "lamp-panel/two": "success"
    }


# -- OpenEnv --------------------------------------------------------------------------------------


async def _websocket_sessions(url: str) -> dict[str, Any]:
    from medspot.live import MedspotAction, MedspotEnvClient

    seen: dict[str, Any] = {}
    red, green = (f"click({button_box(c).center[0]:g}, {button_box(c).center[1]:g})"
                  for c in ("red", "green"))  # fmt: skip
    async with (
        MedspotEnvClient(base_url=url) as owner,
        MedspotEnvClient(base_url=url) as other,
    ):
        first = await owner.reset(task="two", agent="trainer", agent_version="1")
        episode = first.observation.episode_id
        seen["episode"] = episode
        with pytest.raises(RuntimeError) as e:  # no episode of its own yet
            await other.step(MedspotAction(action=red))
        seen["other_no_reset"] = str(e.value)
        # naming the owner's episode in its reset: an episode of its own, of that name
        mine = await other.reset(task="two", agent="trainer", agent_version="1",
                                 episode_id=episode)  # fmt: skip
        seen["other_reset"] = mine.observation
        seen["other_step"] = (await other.step(MedspotAction(action=red))).observation
        seen["owner_state"] = await owner.state()
        seen["owner_first"] = (await owner.step(MedspotAction(action=green))).observation
        seen["owner_last"] = (await owner.step(MedspotAction(action=red))).observation
        # the HTTP routes cannot reach a WebSocket session's episode either
        import httpx

        async with httpx.AsyncClient(base_url=url, timeout=60) as http:
            seen["http_state"] = await http.get("/state", params={"episode_id": episode})
            seen["http_step"] = await http.post(
                "/step", json={"action": {"action": "done()"}, "episode_id": episode}
            )
    return seen


def _http_routes(url: str) -> dict[str, Any]:
    import httpx

    red = f"click({button_box('red').center[0]:g}, {button_box('red').center[1]:g})"
    seen: dict[str, Any] = {}
    with httpx.Client(base_url=url, timeout=60) as http:
        r = http.post("/reset", json={"task": "two", "agent": "trainer", "agent_version": "1"})
        assert r.status_code == 200, r.text
        episode = r.json()["observation"]["episode_id"]
        seen["episode"] = episode
        seen["named"] = http.post("/reset", json={"task": "two", "episode_id": "mine"})
        guessed = episode[:-1] + ("A" if episode[-1] != "A" else "B")
        for name, body in (
            ("no_id", {"action": {"action": red}}),
            ("guessed", {"action": {"action": red}, "episode_id": guessed}),
            ("prefix", {"action": {"action": red}, "episode_id": episode.rsplit("-", 1)[0]}),
        ):
            seen[name] = http.post("/step", json=body)
        seen["state_no_id"] = http.get("/state")
        seen["state_guessed"] = http.get("/state", params={"episode_id": guessed})
        seen["state"] = http.get("/state", params={"episode_id": episode})
        seen["own"] = http.post("/step", json={"action": {"action": red}, "episode_id": episode})
    return seen


def _run_openenv(tmp_path: Path, drive: Any) -> Any:
    with short_workroot() as work:
        proc = None
        try:
            proc, url = start_server(_serve(tmp_path, "--openenv", "--concurrency", "3"), work)
            seen = drive(url)
            code, err = stop_server(proc)
            assert code == 143, err
        finally:
            kill_leftovers(proc, work)
    return seen


def test_an_openenv_websocket_session_reaches_only_its_own_episode(tmp_path: Path) -> None:
    ws = _run_openenv(tmp_path, lambda url: asyncio.run(_websocket_sessions(url)))
    assert "no episode: reset(task=TASK_ID) first" in ws["other_no_reset"]
    assert ws["other_reset"].episode_id == ws["episode"] and ws["other_reset"].actions_used == 0
    assert ws["other_step"].actions_used == 1 and ws["other_step"].executed
    assert ws["owner_state"].step_count == 0  # the other's click was on its own episode
    assert ws["owner_first"].actions_used == 1 and not ws["owner_first"].done
    assert ws["owner_last"].outcome == "success" and ws["owner_last"].actions_used == 2
    for r in (ws["http_state"], ws["http_step"]):  # nor do the HTTP routes reach it
        assert r.status_code == 400 and "no running episode" in r.json()["detail"]
    steps = _steps(tmp_path / "run")  # the owner's two clicks, the other's one
    assert sorted((s.repeat, s.n) for s in steps) == [(0, 1), (0, 2), (1, 1)]


def test_an_openenv_http_episode_is_reached_by_its_unguessable_id_only(tmp_path: Path) -> None:
    http = _run_openenv(tmp_path, _http_routes)
    for name in ("no_id", "state_no_id"):
        assert http[name].status_code == 400, name
        assert "episode_id: required (the id POST /reset answered" in http[name].json()["detail"]
    for name in ("guessed", "prefix", "state_guessed"):
        assert http[name].status_code == 400, name
        detail = http[name].json()["detail"]
        assert detail.startswith("no running episode") and "reset(task=TASK_ID)" in detail
        assert "start_task" not in detail
    assert http["state"].json()["step_count"] == 0  # nothing reached it
    assert http["own"].json()["observation"]["actions_used"] == 1
    # the id is made by the server, unguessable (96 random bits), never the client's
    token = http["episode"].rsplit("-", 1)[1]
    assert http["episode"].startswith("two-") and len(token) >= 16
    assert http["named"].status_code == 400
    assert "the HTTP route names its episodes itself" in http["named"].json()["detail"]
    steps = _steps(tmp_path / "run")  # its own click only
    assert [(s.repeat, s.n) for s in steps] == [(0, 1)]
