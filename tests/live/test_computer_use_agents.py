"""The computer-use agents through the official `openai` and `anthropic` clients against the
local test server (scripted conversations in each API's own format): what is sent (the
screenshot as the computer call's output / the tool_result, the chaining, the tool and beta
header, the acknowledged safety checks), what is read (batches executed one turn each,
observation-only calls answered at once, endings), cost, retries, resuming from the journaled
turns without asking them again."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from _computer_use_support import GOAL, drive, script, sha, turn

from _children import start, stop
from medspot.adapters.options import AdapterOptions
from medspot.errors import ConfigError, ModelCallError
from medspot.live.agents.computer_use.agent import ComputerUseAgent
from medspot.live.agents.factory import create_agent
from medspot.live.agents.turn import AnsweredCallError, PastTurn
from medspot.live.core.actions import Click, Done, Drag, Infeasible, Key, Scroll, TypeText
from medspot.testing.cu_script import ScriptedComputerUse
from medspot.testing.openai_server import Fault, OpenAITestServer

pytest.importorskip("openai")
pytest.importorskip("anthropic")


def _agent(name: str, srv: OpenAITestServer, **opts: Any) -> ComputerUseAgent:
    url = srv.base_url if name == "openai-computer-use" else srv.root_url
    options = AdapterOptions.from_mapping({"base_urls": [url], "api_key": "test", **opts})
    agent = create_agent(name, options=options, mode="agent", max_retries=3)
    assert isinstance(agent, ComputerUseAgent)
    agent.retry = type(agent.retry)(3, 0.01, 0.05)  # quick backoff in tests
    return agent


def _run(agent: ComputerUseAgent, folder: Path, **kw: Any) -> list[PastTurn]:
    async def go() -> list[PastTurn]:
        try:
            return await drive(agent, folder, **kw)
        finally:
            await agent.aclose()

    return asyncio.run(go())


OPENAI_TURNS: list[dict[str, Any]] = [
    {"reasoning": "The filter box is at the top.",
     "actions": [{"type": "click", "button": "left", "x": 640, "y": 120},
                 {"type": "type", "text": "GARCIA"}]},
    {"actions": [{"type": "screenshot"}]},
    {"actions": [{"type": "keypress", "keys": ["ENTER"]}]},
    {"actions": [{"type": "drag", "path": [{"x": 10, "y": 20}, {"x": 50, "y": 60},
                                           {"x": 90, "y": 100}]},
                 {"type": "scroll", "x": 300, "y": 400, "scroll_x": 0, "scroll_y": 300}]},
    {"text": "The MR KNEE study of GARCIA^MARIA is open."},
]  # fmt: skip


def test_openai_conversation_is_chained_with_the_screenshot_as_the_call_output(
    tmp_path: Path,
) -> None:
    cu = ScriptedComputerUse(script(OPENAI_TURNS))
    with OpenAITestServer(responder=cu) as srv:
        past = _run(_agent("openai-computer-use", srv), tmp_path)
        count = srv.request_count
    actions = [p.answer.action for p in past]
    assert actions == [
        Click(640, 120), TypeText("GARCIA"), Key("Enter"), Drag(10, 20, 90, 100),
        Scroll(300, 400, 3), Done(),
    ]  # fmt: skip
    # a batch's second action and the observe-only turn asked nothing extra; the screenshot
    # action was answered inside turn 3, which made two calls
    assert count == 5
    ex = cu.exchanges
    assert [(e.turn, e.previous_response_id is None) for e in ex] == [
        (0, True), (1, False), (2, False), (3, False), (4, False)]  # fmt: skip
    for e in ex[1:]:  # each request chains the response before it
        assert e.previous_response_id == f"resp_0_{e.turn - 1}_{e.request - 1}"
    screens = [sha(p.screen_path.read_bytes()) for p in past]
    # the first request carries the goal's screen; the others the screen of the turn that
    # asked: after the whole batch (turn 3), again turn 3's for the screenshot action, ...
    assert ex[0].screenshots == (screens[0],)
    assert [e.screenshots for e in ex[1:]] == [(screens[2],), (screens[2],), (screens[3],),
                                              (screens[5],)]  # fmt: skip
    assert ex[0].tool == {"type": "computer"} and ex[0].truncation == "auto"
    first = past[0].answer
    assert first.thought == "The filter box is at the top."
    assert first.input_tokens == 1000 + len(GOAL.split()) and first.output_tokens == 100
    assert first.cost_usd == pytest.approx((1000 + len(GOAL.split())) * 2.5e-6 + 100 * 15e-6)
    assert past[1].answer.cost_usd is None and "batched" in past[1].answer.flags
    assert past[2].answer.input_tokens == 2000  # two calls in one turn
    assert "note:path of 3 points dragged from its first to its last" in past[3].answer.flags


def test_openai_preview_tool_names_the_display_and_the_environment(tmp_path: Path) -> None:
    cu = ScriptedComputerUse(script([
        {"action": {"type": "double_click", "x": 5, "y": 6}}, {"text": "done"}]))  # fmt: skip
    with OpenAITestServer(responder=cu) as srv:
        past = _run(_agent("openai-computer-use", srv, api_model="computer-use-preview"),
                    tmp_path)  # fmt: skip
    assert [p.answer.action for p in past] == [Click(5, 6, double=True), Done()]
    assert cu.exchanges[0].tool == {
        "type": "computer_use_preview", "display_width": 1280, "display_height": 800,
        "environment": "browser"}  # fmt: skip
    assert past[0].answer.cost_usd is not None  # computer-use-preview is in the price table


SAFETY: list[dict[str, Any]] = [
    {"actions": [{"type": "click", "button": "left", "x": 100, "y": 200}],
     "safety_checks": [{"id": "sc_1", "code": "irrelevant_domain"}]},
    {"text": "done"},
]  # fmt: skip


def test_a_pending_safety_check_is_an_error_unless_acknowledged(tmp_path: Path) -> None:
    cu = ScriptedComputerUse(script(SAFETY))
    with OpenAITestServer(responder=cu) as srv:
        agent = _agent("openai-computer-use", srv)

        async def first() -> None:
            try:
                await agent.answer(turn(tmp_path, 1, []))
            finally:
                await agent.aclose()

        with pytest.raises(AnsweredCallError) as err:
            asyncio.run(first())
        ans = err.value.answer
        assert "--acknowledge-safety-checks" in str(err.value) and ans.action is None
        assert "safety_check_pending:irrelevant_domain" in ans.flags
        assert ans.cost_usd is not None and ans.cost_usd > 0  # it was paid: journaled with it
        assert ans.call_state is not None
        call = ans.call_state["events"][-1]
        assert call["calls"][0]["pending_safety_checks"][0]["id"] == "sc_1"
        assert call["calls"][0]["acknowledged"] is False
        # the same conversation with the option: acknowledged in the call's output
        past = _run(_agent("openai-computer-use", srv, acknowledge_safety_checks=True), tmp_path)
    assert [p.answer.action for p in past] == [Click(100, 200), Done()]
    assert "safety_check_acknowledged:irrelevant_domain" in past[0].answer.flags
    assert cu.exchanges[-1].acknowledged == ("sc_1",)


def test_the_server_refuses_an_unacknowledged_check_like_the_api(tmp_path: Path) -> None:
    """The scripted server is strict: a client that drops the acknowledgement is refused."""
    import openai

    cu = ScriptedComputerUse(script(SAFETY))

    async def main(url: str) -> None:
        client = openai.AsyncOpenAI(base_url=url, api_key="test", max_retries=0)
        first = await client.responses.create(
            model="gpt-5.4", tools=[{"type": "computer"}], input=GOAL
        )
        call = next(o for o in first.output if o.type == "computer_call")
        with pytest.raises(openai.BadRequestError, match="not acknowledged"):
            await client.responses.create(
                model="gpt-5.4", tools=[{"type": "computer"}], previous_response_id=first.id,
                input=[{"type": "computer_call_output", "call_id": call.call_id,
                        "output": {"type": "computer_screenshot", "image_url": "data:,"}}],
            )  # fmt: skip
        await client.close()

    with OpenAITestServer(responder=cu) as srv:
        asyncio.run(main(srv.base_url))


ANTHROPIC_TURNS: list[dict[str, Any]] = [
    {"text": "I click the filter box and type the name.",
     "tool_uses": [{"input": {"action": "left_click", "coordinate": [640, 120]}},
                   {"input": {"action": "type", "text": "GARCIA"}}]},
    {"tool_uses": [{"input": {"action": "screenshot"}}]},
    {"tool_uses": [{"input": {"action": "key", "text": "Return"}}]},
    {"tool_uses": [{"input": {"action": "triple_click", "coordinate": [1, 2]}}]},
    {"tool_uses": [{"input": {"action": "mouse_move", "coordinate": [700, 300]}},
                   {"input": {"action": "left_click"}},
                   {"input": {"action": "scroll", "coordinate": [10, 20],
                              "scroll_direction": "up", "scroll_amount": 2}}]},
    {"text": "INFEASIBLE: there is no MR KNEE study of GARCIA^MARIA"},
]  # fmt: skip


def test_anthropic_conversation_is_rebuilt_every_turn_with_tool_results(tmp_path: Path) -> None:
    cu = ScriptedComputerUse(script(ANTHROPIC_TURNS))
    with OpenAITestServer(responder=cu) as srv:
        past = _run(_agent("anthropic-computer-use", srv), tmp_path)
        requests = list(srv.requests)
    assert [p.answer.action for p in past] == [
        Click(640, 120), TypeText("GARCIA"), Key("Enter"), None, Click(700, 300),
        Scroll(10, 20, -2), Infeasible("there is no MR KNEE study of GARCIA^MARIA"),
    ]  # fmt: skip
    assert "unsupported_action" in past[3].answer.flags  # triple_click: a no-action turn
    ex = cu.exchanges
    assert [e.turn for e in ex] == [0, 1, 2, 3, 4, 5]
    assert all(e.beta == "computer-use-2025-11-24" for e in ex)
    assert ex[0].tool == {"type": "computer_20251124", "name": "computer",
                          "display_width_px": 1280, "display_height_px": 800}  # fmt: skip
    screens = [sha(p.screen_path.read_bytes()) for p in past]
    # the screenshot after the batch (turn 3's screen), the same for the screenshot action,
    # after the key (turn 4), after the unsupported one (turn 5), after the scroll (turn 7)
    assert [e.screenshots for e in ex[1:]] == [(screens[2],), (screens[2],), (screens[3],),
                                              (screens[4],), (screens[6],)]  # fmt: skip
    last = requests[-1].body["messages"]
    assert len(last) == 11 and last[0]["content"][0]["text"] == GOAL  # the whole conversation
    results = [b for b in last[8]["content"] if b["type"] == "tool_result"]
    assert results[0]["is_error"] and "triple_click" in results[0]["content"][0]["text"]
    assert [b["type"] for b in last[10]["content"]] == ["tool_result"] * 3
    assert past[0].answer.thought == "I click the filter box and type the name."
    assert past[0].answer.cost_usd == pytest.approx(
        (1000 + len(GOAL.split())) * 3e-6 + 100 * 15e-6)  # fmt: skip


def test_anthropic_resume_rebuilds_the_conversation_without_asking_again(tmp_path: Path) -> None:
    """A new agent (a resumed run) given the journaled turns asks only the next turn."""
    cu = ScriptedComputerUse(script(ANTHROPIC_TURNS))
    with OpenAITestServer(responder=cu) as srv:
        full = _run(_agent("anthropic-computer-use", srv), tmp_path)
        before = srv.request_count
        # the first three turns replayed: the fresh agent continues at turn 4
        resumed = _run(_agent("anthropic-computer-use", srv), tmp_path, previous=full[:3])
        assert srv.request_count - before == 3  # turns 4, 5 and 7 call; 6 is 5's batch
        requests = list(srv.requests)
    assert [p.answer.action for p in resumed] == [p.answer.action for p in full]
    assert requests[-1].body["messages"] == requests[before - 1].body["messages"]


def test_anthropic_toolset_has_no_beta_and_names_members(tmp_path: Path) -> None:
    cu = ScriptedComputerUse(script([
        {"tool_uses": [{"input": {"action": "left_click_drag", "start_coordinate": [1, 2],
                                  "coordinate": [30, 40]}}]},
        {"text": "done"}]))  # fmt: skip
    with OpenAITestServer(responder=cu) as srv:
        past = _run(_agent("anthropic-computer-use", srv,
                           computer_tool="computer_toolset_20260801"), tmp_path)  # fmt: skip
        sent = srv.requests[0].body["tools"][0]
    assert [p.answer.action for p in past] == [Drag(1, 2, 30, 40), Done()]
    assert cu.exchanges[0].beta is None
    assert sent["type"] == "computer_toolset_20260801"
    assert sent["configs"]["triple_click"] == {"enabled": False}


def test_an_older_model_gets_the_older_tool_and_beta(tmp_path: Path) -> None:
    cu = ScriptedComputerUse(script([{"text": "done"}]))
    with OpenAITestServer(responder=cu) as srv:
        _run(_agent("anthropic-computer-use", srv, api_model="claude-sonnet-4-5-20250929"),
             tmp_path)  # fmt: skip
    assert cu.exchanges[0].beta == "computer-use-2025-01-24"
    assert cu.exchanges[0].tool["type"] == "computer_20250124"


def test_a_large_screen_is_scaled_and_the_coordinates_mapped_back(tmp_path: Path) -> None:
    cu = ScriptedComputerUse(script([
        {"tool_uses": [{"input": {"action": "left_click", "coordinate": [600, 400]}}]},
        {"text": "done"}]))  # fmt: skip
    with OpenAITestServer(responder=cu) as srv:
        past = _run(_agent("anthropic-computer-use", srv), tmp_path, size=(2560, 1600))
        img = srv.requests[0].images[0]
    tool = cu.exchanges[0].tool
    w, h = tool["display_width_px"], tool["display_height_px"]
    assert w * h <= 1_150_000 and img.size == (w, h)
    action = past[0].answer.action
    assert isinstance(action, Click)
    assert action.x == pytest.approx(600 * 2560 / w) and action.y == pytest.approx(400 * 1600 / h)


def test_transient_errors_are_retried_and_final_ones_are_errors(tmp_path: Path) -> None:
    cu = ScriptedComputerUse(script([{"actions": [{"type": "type", "text": "x"}]},
                                     {"text": "done"}]))  # fmt: skip
    faults = [Fault("429", at=[1], retry_after="0"), Fault("500", at=[3])]
    with OpenAITestServer(responder=cu, faults=faults) as srv:
        past = _run(_agent("openai-computer-use", srv), tmp_path)
    assert [p.answer.action for p in past] == [TypeText("x"), Done()]
    assert past[0].answer.retries == 1 and past[1].answer.retries == 1
    with OpenAITestServer(responder=cu, faults=[Fault("401", at=[1])]) as srv:
        agent = _agent("anthropic-computer-use", srv)
        with pytest.raises(ModelCallError, match="HTTP 401"):
            _run(agent, tmp_path)
        assert srv.request_count == 1  # a bad key is not retried


def test_computer_use_agents_need_agent_mode_and_their_own_options() -> None:
    with pytest.raises(ConfigError, match="--mode agent"):
        create_agent("openai-computer-use", options={"api_key": "k"}, mode="guided")
    with pytest.raises(ConfigError, match="--computer-tool"):
        create_agent("oracle", options={"computer_tool": "computer"})
    with pytest.raises(ConfigError, match="not an OpenAI computer tool"):
        create_agent("openai-computer-use", options={"api_key": "k", "computer_tool": "x"},
                     mode="agent")  # fmt: skip
    with pytest.raises(ConfigError, match="not an Anthropic"):
        create_agent("anthropic-computer-use", options={"api_key": "k",
                     "computer_tool": "computer"}, mode="agent")  # fmt: skip


def test_serve_test_plays_a_script_for_both_clients(tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    import anthropic
    import openai

    f = tmp_path / "script.json"
    both = {"text": "clicking", "actions": [{"type": "click", "button": "left", "x": 1, "y": 2}],
            "tool_uses": [{"input": {"action": "left_click", "coordinate": [1, 2]}}]}  # fmt: skip
    f.write_text(json.dumps({"conversations": [{"match": "GARCIA^MARIA", "turns": [both]}]}))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    cmd = [sys.executable, "-m", "medspot", "serve-test", "--script", str(f)]
    srv = start(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)  # fmt: skip
    try:
        assert srv.stdout is not None
        words = srv.stdout.readline().split()
        oai, root = words[1], words[4]

        async def main() -> tuple[Any, Any]:
            o = openai.AsyncOpenAI(base_url=oai, api_key="t")
            a = anthropic.AsyncAnthropic(base_url=root, api_key="t")
            r1 = await o.responses.create(model="gpt-5.4", tools=[{"type": "computer"}],
                                          input=GOAL)  # fmt: skip
            r2 = await a.beta.messages.create(
                model="claude-sonnet-4-6", max_tokens=100, betas=["computer-use-2025-11-24"],
                messages=[{"role": "user", "content": GOAL}],
                tools=[{"type": "computer_20251124", "name": "computer",
                        "display_width_px": 1280, "display_height_px": 800}],
            )  # fmt: skip
            await o.close()
            await a.close()
            return r1, r2

        r1, r2 = asyncio.run(main())
        assert [o.type for o in r1.output] == ["message", "computer_call"]
        assert r2.stop_reason == "tool_use" and r2.content[1].input["coordinate"] == [1, 2]
    finally:
        stopped = stop(srv)  # Ctrl-C; killed after a bounded wait if it ignored it
        err = stopped.err
    assert not stopped.killed and srv.returncode == 0 and "2 request(s)" in err, err


@pytest.mark.parametrize(
    ("script_text", "extra", "says"),
    [
        (
            '{"format_version": 99, "conversations": [{"match": "x", "turns": [{"text": "t"}]}]}',
            (),
            "field 'format_version': Value error, format 99 is not one this medspot reads (1)",
        ),
        (
            '{"format_version": 1, "conversations": []}',
            (),
            "field 'conversations': List should have at least 1 item",
        ),
        (
            '{"conversations": [{"match": "x", "turns": []}]}',
            (),
            "field 'conversations.0.turns': List should have at least 1 item",
        ),
        (
            '{"conversations": [{"match": "x", "turns": [{"text": "t"}]}]}',
            ("--answer", "hi"),
            "--answer and --script go apart",
        ),
    ],
)
def test_serve_test_refuses_a_script_it_cannot_play(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], script_text: str,
    extra: tuple[str, ...], says: str,
) -> None:  # fmt: skip
    from medspot.cli import main

    f = tmp_path / "script.json"
    f.write_text(script_text)
    assert main(["serve-test", "--script", str(f), *extra]) == 2  # before it serves
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
