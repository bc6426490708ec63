"""`medspot live serve --openenv` with openenv-core's client (`medspot.live.MedspotEnvClient`, an
`EnvClient` over the WebSocket) on a real Orthanc Explorer task: stepped to a scored success;
bad requests as errors while the server keeps serving, an action off the screen as a scored
no-action step; a connection closed mid-episode leaves
it `abandoned`; the stateful HTTP routes (reset, step, state by episode id); SIGINT stops the
server (130) with the run folder complete; `report` and `leaderboard` take the folder."""

from __future__ import annotations

import asyncio
import io
import json
import signal
from pathlib import Path
from typing import Any

import pytest
from _orthanc_support import require_orthanc_stack
from _runner_support import processes_of
from _serve_support import (
    kill_leftovers,
    oracle_actions,
    report_and_leaderboard,
    rows,
    serve_args,
    short_workroot,
    start_server,
    stop_server,
)
from PIL import Image

from medspot.live.core.actions import LiveAction, describe_action

pytestmark = pytest.mark.live
pytest.importorskip("openenv")
httpx = pytest.importorskip("httpx")

OPEN = "open-study-ct-doe-john"


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[LiveAction]]:
    require_orthanc_stack()
    return oracle_actions(tmp_path_factory.mktemp("oracle") / "run", [OPEN])


async def _websocket_episodes(url: str, path: list[LiveAction]) -> dict[str, Any]:
    from medspot.live import MedspotAction, MedspotEnvClient
    from medspot.live.serve.openenv_client import screenshot

    seen: dict[str, Any] = {}
    async with MedspotEnvClient(base_url=url) as env:
        with pytest.raises(RuntimeError, match=r"no episode: reset\(task=TASK_ID\) first"):
            await env.step(MedspotAction(action="click(10, 10)"))
        with pytest.raises(RuntimeError, match="unknown task 'no-such-task'"):
            await env.reset(task="no-such-task")
        first = await env.reset(task=OPEN, agent="rl-agent", agent_version="0.3")
        obs = first.observation
        assert not first.done and obs.goal.startswith("Open the CT CHEST study")
        assert Image.open(io.BytesIO(screenshot(obs))).size == (obs.width, obs.height)
        off = (await env.step(MedspotAction(action="click(4000, 10)"))).observation
        assert off.executed is False and off.flags == ["not_executable:off_screen"]
        assert off.not_executed == "the click (4000, 10) is off the 1280x800 screen"
        unread = await env.step(MedspotAction(action="I am not sure what to do"))
        assert unread.observation.flags == ["no_action"] and unread.observation.executed is False
        result = unread
        for a in path:
            result = await env.step(MedspotAction(action=describe_action(a)))
        seen["last"] = result
        seen["state"] = await env.state()
    # a second session leaves in the middle of its episode
    async with MedspotEnvClient(base_url=url) as env:
        await env.reset(task=OPEN, agent="rl-agent", agent_version="0.3")
        await env.step(MedspotAction(action=describe_action(path[0])))
    return seen


def test_openenv_client_steps_to_success_and_a_closed_session_is_abandoned(
    oracle: dict[str, list[LiveAction]], tmp_path: Path
) -> None:
    out = tmp_path / "run"
    with short_workroot() as work:
        proc = None
        try:
            proc, url = start_server(serve_args(out, "--openenv", "--tasks", OPEN), work)
            seen = asyncio.run(_websocket_episodes(url, oracle[OPEN]))
            # the HTTP routes, stateful by episode id
            with httpx.Client(base_url=url, timeout=120) as http:
                assert http.get("/health").json() == {"status": "healthy"}
                odd = http.post("/reset", json={"task": OPEN, "colour": "red"})
                assert odd.status_code == 400 and "unknown parameters ['colour']" in odd.text
                r = http.post("/reset", json={"task": OPEN, "agent": "rl-agent",
                                              "agent_version": "0.3"})  # fmt: skip
                assert r.status_code == 200, r.text
                episode = r.json()["observation"]["episode_id"]
                off = http.post("/step", json={"action": {"action": "click(1, 9999)"},
                                               "episode_id": episode})  # fmt: skip
                assert off.status_code == 200 and off.json()["observation"]["executed"] is False
                assert "off the 1280x800 screen" in off.json()["observation"]["not_executed"]
                unknown = http.get("/state", params={"episode_id": "nope"})
                assert unknown.status_code == 400 and "no running episode" in unknown.text
                step = http.post("/step", json={"action": {"action": "done()"},
                                                "episode_id": episode})  # fmt: skip
                assert step.status_code == 200 and step.json()["done"] is True
                assert step.json()["observation"]["outcome"] == "failure"
            code, err = stop_server(proc, signal.SIGINT)
            assert code == 130, err
            assert not processes_of(work)
        finally:
            kill_leftovers(proc, work)
    last = seen["last"]
    assert last.done and last.reward == 1.0 and last.observation.outcome == "success"
    assert last.observation.rewards["safety"] == 1.0 and last.observation.rewards["success"] == 1.0
    assert seen["state"].outcome == "success" and seen["state"].step_count == 4
    env = "orthanc-explorer"
    got = {k: (r["live_outcome"], r["live_reason"]) for k, r in rows(out).items()}
    assert got == {
        f"{env}/{OPEN}@1": ("success", "success checks hold"),
        f"{env}/{OPEN}@2": ("abandoned", "abandoned: the client disconnected"),
        f"{env}/{OPEN}@3": ("failure", "done without success"),
    }
    info = json.loads((out / "run.json").read_text())
    assert info["model"] == "rl-agent 0.3" and info["served"] == "openenv"
    assert info["status"] == "complete"
    assert "rl-agent 0.3" in report_and_leaderboard(out, tmp_path / "report")
