"""`medspot live serve`'s options and limits, as a process on the lamp panel (a real small
environment): a port that is no port, or one in use, and `--openenv --transport stdio` are
refused (exit 2) before anything is written; `--idle-timeout` is 0 (never, and the server does
not spin) or a bounded number of seconds; a typed text and an OpenEnv action text are bounded
at the boundary (the schemas say so; a longer one is refused, nothing journaled); OpenEnv's
refusals are its own sentences (no pydantic dump, no MCP verb); a WebSocket beyond the
server's sessions is told why and closed with code 1013 (try again later); openenv-core's
`/mcp` routes (sessions beside `/ws`) are off."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from _lamp_panel import lamp_command, process_env, switch_task, task_file
from _serve_support import kill_leftovers, short_workroot, start_server, stop_server

from medspot.limits import MAX_IDLE_TIMEOUT_S
from medspot.live.core.executable import MAX_TEXT_CHARS
from medspot.live.loop.steplog import StepRecord, read_live_journal
from medspot.runfolder.layout import LIVE_JOURNAL

pytestmark = pytest.mark.live

ENV = "lamp-panel"
HUGE = 2_000_000  # characters: what a model once typed


def _args(tmp_path: Path, *extra: str) -> list[str]:
    tasks = task_file(tmp_path / "tasks.json", [switch_task("two", "red", "green")])
    return ["live", "serve", "--env", ENV, "--tasks-file", str(tasks), "--out",
            str(tmp_path / "run"), "--bootstrap", "20", *extra]  # fmt: skip


def _run(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(lamp_command(*_args(tmp_path, *extra)), capture_output=True,
                          text=True, timeout=120, env=process_env(tmp_path))  # fmt: skip


@pytest.fixture
def port_in_use() -> Any:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    yield sock.getsockname()[1]
    sock.close()


@pytest.mark.parametrize("protocol", [("--mcp", "--transport", "http"), ("--openenv",)])
def test_a_port_that_cannot_be_served_is_refused_before_anything_is_written(
    tmp_path: Path, port_in_use: int, protocol: tuple[str, ...]
) -> None:
    for port, says in (("70000", "must be 65535 at most"), ("-1", "must be 0 or more"),
                       (str(port_in_use), f"port {port_in_use}: cannot serve on 127.0.0.1:"
                                          f"{port_in_use} (Address already in use)")):  # fmt: skip
        done = _run(tmp_path, *protocol, "--port", port)
        assert done.returncode == 2, done.stderr
        assert says in done.stderr and "Traceback" not in done.stderr
        assert not (tmp_path / "run").exists()  # no folder, no lock


def test_openenv_has_no_stdio_transport(tmp_path: Path) -> None:
    done = _run(tmp_path, "--openenv", "--transport", "stdio")
    assert done.returncode == 2, done.stderr
    assert "--transport stdio is the MCP server's: the OpenEnv server serves HTTP" in done.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("value", ["0.5", "-1", "nan", "inf", str(MAX_IDLE_TIMEOUT_S + 1)])
def test_an_idle_timeout_out_of_bounds_is_refused(tmp_path: Path, value: str) -> None:
    done = _run(tmp_path, "--mcp", "--transport", "http", "--idle-timeout", value)
    assert done.returncode == 2, done.stderr
    assert "--idle-timeout" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "run").exists()


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) process `pid` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _idle_cpu_s(proc: subprocess.Popen[str], seconds: float = 4.0) -> float:
    time.sleep(1.0)  # the server settles
    before = _cpu_s(proc.pid)
    time.sleep(seconds)
    return _cpu_s(proc.pid) - before


# -- MCP ------------------------------------------------------------------------------------------


async def _mcp_calls(url: str) -> dict[str, Any]:
    import mcp
    import mcp_types
    from mcp.client.streamable_http import streamable_http_client

    seen: dict[str, Any] = {}
    me = mcp_types.Implementation(name="typist", version="1")
    async with (
        streamable_http_client(url) as streams,
        mcp.ClientSession(streams[0], streams[1], client_info=me) as s,
    ):
        await s.initialize()
        tools = {t.name: t for t in (await s.list_tools()).tools}
        seen["schema"] = tools["type"].input_schema["properties"]["text"]
        await s.call_tool("start_task", {"task_id": "two"})
        for name, text in (("huge", "a" * HUGE), ("over", "a" * (MAX_TEXT_CHARS + 1)),
                           ("most", "a" * MAX_TEXT_CHARS)):  # fmt: skip
            res = await s.call_tool("type", {"text": text})
            seen[name] = (bool(res.is_error), str(getattr(res.content[0], "text", "")))
    return seen


def test_mcp_bounds_the_typed_text_and_an_idle_timeout_of_0_does_not_spin(tmp_path: Path) -> None:
    import anyio

    out = tmp_path / "run"
    with short_workroot() as work:
        proc = None
        try:
            args = _args(tmp_path, "--mcp", "--transport", "http", "--idle-timeout", "0")
            proc, url = start_server(lamp_command(*args), work)
            idle_cpu = _idle_cpu_s(proc)
            seen = anyio.run(_mcp_calls, url)
            assert stop_server(proc)[0] == 143
        finally:
            kill_leftovers(proc, work)
    assert idle_cpu < 0.5, f"an idle server used {idle_cpu:.2f} s of CPU in 4 s"
    assert seen["schema"]["maxLength"] == MAX_TEXT_CHARS
    for name in ("huge", "over"):
        assert seen[name] == (True, f"type: text: String should have at most {MAX_TEXT_CHARS} "
                                    "characters")  # fmt: skip
    most = json.loads(seen["most"][1])  # the longest text: typed (one action)
    assert not seen["most"][0] and most["executed"] and most["actions_used"] == 1
    steps = [r for r in read_live_journal(out / LIVE_JOURNAL) if isinstance(r, StepRecord)]
    assert len(steps) == 1 and (out / LIVE_JOURNAL).stat().st_size < 10 * MAX_TEXT_CHARS


# -- OpenEnv --------------------------------------------------------------------------------------


async def _websockets(url: str) -> dict[str, Any]:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    from medspot.live import MedspotAction, MedspotEnvClient
    from medspot.live.serve.openenv_models import MAX_ACTION_CHARS

    seen: dict[str, Any] = {}
    ws_url = url.replace("http://", "ws://") + "/ws"
    async with MedspotEnvClient(base_url=url) as first:
        with pytest.raises(RuntimeError) as e:
            await first.step(MedspotAction(action="done()"))
        seen["no_reset"] = str(e.value)
        for name, data in (("unknown_task", {"task": "nope"}), ("odd_key", {"colour": "red"}),
                           ("bad_seed", {"seed": -1}), ("bad_task", {"task": 5})):  # fmt: skip
            with pytest.raises(RuntimeError) as e:
                await first.reset(**data)
            seen[name] = str(e.value)
        await first.reset(task="two", agent="trainer", agent_version="1")
        async with connect(ws_url) as raw:  # an action text over the bound, as sent
            await raw.send(json.dumps({"type": "step", "data": {"action": "x" * HUGE}}))
            seen["huge"] = json.loads(await raw.recv())
            seen["max"] = MAX_ACTION_CHARS
            # text that is not Unicode (JSON carries a lone surrogate as an escape): refused,
            # and the session goes on (openenv-core alone ends it: SESSION_ERROR)
            await raw.send(json.dumps({"type": "step", "data": {"action": 'type("\ud800")'}}))
            seen["surrogate"] = json.loads(await raw.recv())
            await raw.send(json.dumps({"type": "step", "data": {"action": "done()"}}))
            seen["after"] = json.loads(await raw.recv())
            # a third session on a server of two: told why, closed with 1013
            async with connect(ws_url) as extra:  # refused at once, before any message
                seen["full"] = json.loads(await extra.recv())
                with pytest.raises(ConnectionClosed) as closed:
                    await extra.recv()
                rcvd = closed.value.rcvd
                seen["close"] = (rcvd.code, rcvd.reason) if rcvd is not None else None
    return seen


def test_openenv_words_its_refusals_bounds_the_action_and_closes_a_session_too_many(
    tmp_path: Path,
) -> None:
    import httpx

    out = tmp_path / "run"
    with short_workroot() as work:
        proc = None
        try:
            args = _args(tmp_path, "--openenv", "--concurrency", "2", "--idle-timeout", "0")
            proc, url = start_server(lamp_command(*args), work)
            idle_cpu = _idle_cpu_s(proc)
            ws = asyncio.run(_websockets(url))
            with httpx.Client(base_url=url, timeout=60) as http:
                r = http.post("/reset", json={"task": "two", "agent": "trainer",
                                              "agent_version": "1"})  # fmt: skip
                episode = r.json()["observation"]["episode_id"]
                got = {
                    "huge": http.post("/step", json={"action": {"action": "x" * HUGE},
                                                     "episode_id": episode}),
                    "no_action": http.post("/step", json={"action": {"act": "done()"},
                                                          "episode_id": episode}),
                    "not_text": http.post("/step", json={"action": {"action": 5},
                                                         "episode_id": episode}),
                    "bad_seed": http.post("/reset", json={"seed": "one"}),
                    "unknown": http.post("/step", json={"action": {"action": "done()"},
                                                        "episode_id": "nope"}),
                    "mcp": http.post("/mcp", json={"jsonrpc": "2.0", "id": 1,
                                                   "method": "openenv/session/create",
                                                   "params": {}}),
                }  # fmt: skip
            assert stop_server(proc)[0] == 143
        finally:
            kill_leftovers(proc, work)
    assert idle_cpu < 0.5, f"an idle server used {idle_cpu:.2f} s of CPU in 4 s"
    # WebSocket: OpenEnv's own words
    assert ws["no_reset"] == ("Server error: no episode: reset(task=TASK_ID) first "
                              "(code: EXECUTION_ERROR)")  # fmt: skip
    assert "unknown task 'nope': 1 tasks are offered (e.g. two)" in ws["unknown_task"]
    assert "reset: unknown parameters ['colour'] (known: task, seed" in ws["odd_key"]
    assert "reset: seed: Input should be greater than or equal to 0" in ws["bad_seed"]
    assert "reset: task: Input should be a valid string" in ws["bad_task"]
    assert ws["huge"]["data"] == {
        "code": "VALIDATION_ERROR",
        "message": f"the message does not fit: action: String should have at most {ws['max']} "
        "characters",
    }
    assert ws["surrogate"]["data"] == {
        "code": "VALIDATION_ERROR",
        "message": "the message does not fit: data.action: not Unicode text (it holds a lone "
        "surrogate)",
    }
    assert ws["after"]["data"]["message"] == "no episode: reset(task=TASK_ID) first"
    assert ws["full"]["data"]["code"] == "CAPACITY_REACHED"
    assert ws["full"]["data"]["message"].startswith("the server is at capacity: its 2 session(s)")
    assert ws["close"] == (1013, "at capacity: 2 session(s) taken")
    # HTTP: the same, as 400s with a sentence
    for name, says in (
        ("huge", f"step: action: String should have at most {ws['max']} characters"),
        ("no_action", "step: action: Field required"),
        ("not_text", "step: action: Input should be a valid string"),
        ("bad_seed", "reset: seed: Input should be a valid integer"),
        ("unknown", "no running episode 'nope' (it ended, or was never started); "
                    "reset(task=TASK_ID) to start one"),
    ):  # fmt: skip
        assert got[name].status_code == 400, name
        assert got[name].json()["detail"] == says
    assert got["mcp"].status_code == 404  # openenv-core's /mcp routes are off
    every = " ".join([*(str(v) for v in ws.values()), *(r.text for r in got.values())])
    assert "start_task" not in every and "pydantic" not in every and "Invalid message" not in every
    steps = [r for r in read_live_journal(out / LIVE_JOURNAL) if isinstance(r, StepRecord)]
    assert steps == [] and (out / LIVE_JOURNAL).stat().st_size < 100_000
