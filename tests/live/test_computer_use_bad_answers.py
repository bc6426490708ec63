"""The computer-use agents on answers that go wrong, through the official `openai` and
`anthropic` clients against the local test server: a point that is no finite point of the
screen (`"x": 1e308`, infinite once scaled) is a no-action turn with its reason, never a run
that stops, and no pydantic warning; a reply that is not the API's shape (`"output": "zzz"`, a
`content` that is no list of blocks) is a failed call, retried, never the model saying it is
done; an action the application could not execute is told to the model in the next request;
a journal whose item does not read back is an unsupported item."""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path
from typing import Any

import pytest
from _computer_use_support import drive, script, turn

from medspot.adapters.options import AdapterOptions
from medspot.errors import ModelCallError
from medspot.live.agents.computer_use.actions import CuItem
from medspot.live.agents.computer_use.agent import ComputerUseAgent
from medspot.live.agents.factory import create_agent
from medspot.live.agents.turn import PastTurn
from medspot.live.core.actions import Done, Key
from medspot.testing.cu_script import ScriptedComputerUse
from medspot.testing.openai_server import OpenAITestServer

pytest.importorskip("openai")
pytest.importorskip("anthropic")

OPENAI = "openai-computer-use"
ANTHROPIC = "anthropic-computer-use"


def _agent(name: str, srv: OpenAITestServer, retries: int = 2) -> ComputerUseAgent:
    url = srv.base_url if name == OPENAI else srv.root_url
    options = AdapterOptions.from_mapping({"base_urls": [url], "api_key": "test"})
    agent = create_agent(name, options=options, mode="agent", max_retries=retries)
    assert isinstance(agent, ComputerUseAgent)
    agent.retry = type(agent.retry)(retries, 0.01, 0.05)  # quick backoff in tests
    return agent


def _run(agent: ComputerUseAgent, folder: Path) -> list[PastTurn]:
    async def go() -> list[PastTurn]:
        try:
            return await drive(agent, folder)
        finally:
            await agent.aclose()

    return asyncio.run(go())


HUGE: dict[str, list[dict[str, Any]]] = {
    OPENAI: [
        {"actions": [{"type": "click", "button": "left", "x": 1e308, "y": 5}]},
        {"actions": [{"type": "drag", "path": [{"x": 1, "y": 1}, {"x": 1e308, "y": 2}]}]},
        {"text": "The study is open."},
    ],
    ANTHROPIC: [
        {"tool_uses": [{"input": {"action": "left_click", "coordinate": [1e308, 5]}}]},
        {"tool_uses": [{"input": {"action": "left_click_drag", "start_coordinate": [1e308, 1],
                                  "coordinate": [5, 5]}}]},
        {"text": "The study is open."},
    ],
}  # fmt: skip


@pytest.mark.parametrize("name", [OPENAI, ANTHROPIC])
def test_a_point_off_every_screen_is_a_no_action_turn(name: str, tmp_path: Path) -> None:
    cu = ScriptedComputerUse(script(HUGE[name]))
    with OpenAITestServer(responder=cu) as srv, warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        past = _run(_agent(name, srv), tmp_path)
        requests = list(srv.requests)
    assert [p.answer.action for p in past] == [None, None, Done()]  # the task went on
    for p in past[:2]:
        assert "unsupported_action" in p.answer.flags
        (item,) = [i for e in (p.answer.call_state or {})["events"] if e["e"] == "call"
                   for i in e["items"]]  # fmt: skip
        assert item["kind"] == "unsupported" and "no finite point" in item["note"]
    assert not [str(w.message) for w in seen if "serializ" in str(w.message).lower()]
    # the model is told what was not executed, in the next request
    nxt = str(requests[1].body)
    assert "Not executed (this harness cannot do it)" in nxt and "no finite point" in nxt


BAD_REPLIES: list[tuple[str, dict[str, Any], str]] = [
    (OPENAI, {"id": "resp_1", "object": "response", "output": "zzz"}, "'output' is str"),
    (OPENAI, {"id": "resp_1", "object": "response"}, "'output' is missing"),
    (OPENAI, {"id": "resp_1", "output": [{"type": "computer_call", "call_id": "c1",
                                          "actions": ["click"]}]}, "actions are not objects"),
    (OPENAI, {"output": []}, "response id"),
    (ANTHROPIC, {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                 "content": "zzz", "stop_reason": "end_turn"}, "'content' is str"),
    (ANTHROPIC, {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                 "content": [{"type": "text", "text": "done"}]}, "'stop_reason' is missing"),
    (ANTHROPIC, {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                 "content": [{"type": "tool_use", "id": "t", "name": "computer",
                              "input": "left_click"}], "stop_reason": "tool_use"},
     "without its id, name or input"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "body", "why"), BAD_REPLIES, ids=[f"{n}-{w}" for n, _, w in BAD_REPLIES]
)
def test_a_reply_not_of_the_apis_shape_is_a_failed_call(
    name: str, body: dict[str, Any], why: str, tmp_path: Path
) -> None:
    with OpenAITestServer(responder=lambda _req: body) as srv:
        with pytest.raises(
            ModelCallError, match=rf"not a (Responses|Messages) API response.*{why}"
        ):
            _run(_agent(name, srv, retries=2), tmp_path)
        assert srv.request_count == 3  # retried like any bad body, then an error: never done()


TOLD: dict[str, list[dict[str, Any]]] = {
    OPENAI: [{"actions": [{"type": "keypress", "keys": ["NoSuchKeyXYZ"]}]}, {"text": "done"}],
    ANTHROPIC: [{"tool_uses": [{"input": {"action": "key", "text": "NoSuchKeyXYZ"}}]},
                {"text": "done"}],
}  # fmt: skip


@pytest.mark.parametrize("name", [OPENAI, ANTHROPIC])
def test_the_model_is_told_what_the_application_could_not_execute(
    name: str, tmp_path: Path
) -> None:
    why = "the key 'NoSuchKeyXYZ' is not in the key table of Playwright"
    cu = ScriptedComputerUse(script(TOLD[name]))
    with OpenAITestServer(responder=cu) as srv:
        agent = _agent(name, srv)

        async def go() -> list[PastTurn]:
            try:
                first = turn(tmp_path, 1, [])
                ans = await agent.answer(first)
                assert ans.action == Key("NoSuchKeyXYZ")
                # the runner's episode refused it: the past turn says why
                past = [PastTurn(1, first.screen_path, first.screen_rel, ans, why)]
                second = turn(tmp_path, 2, past)
                return [*past, PastTurn(2, second.screen_path, second.screen_rel,
                                        await agent.answer(second))]  # fmt: skip
            finally:
                await agent.aclose()

        past = asyncio.run(go())
        sent = srv.requests[1].body
    assert past[1].answer.action == Done()
    first_event = (past[1].answer.call_state or {})["events"][0]
    assert first_event["e"] == "result" and first_event["not_executed"] == why
    if name == OPENAI:
        notes = [c["text"] for m in sent["input"] if m.get("role") == "user"
                 for c in m["content"]]  # fmt: skip
        assert notes == [f"Not executed (the application cannot do it): {why}"]
    else:
        (result,) = [b for b in sent["messages"][-1]["content"] if b["type"] == "tool_result"]
        assert result["is_error"] is True
        assert result["content"][0]["text"] == f"Not executed (the application cannot do it): {why}"


def test_a_journaled_item_that_does_not_read_back_is_unsupported() -> None:
    item = CuItem.from_json({"id": "c#0", "name": "click", "kind": "act", "cursor": [None, 1],
                             "action": {"kind": "click", "x": None, "y": 5.0}})  # fmt: skip
    assert item.kind == "unsupported" and item.action is None and item.cursor is None
    assert "does not read" in item.note
