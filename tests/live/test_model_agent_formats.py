"""`ModelAgent` with a card's agent prompt (no application): the real openai client against the
test server. Several actions of one answer run one per turn without asking again (and go on
from the journaled call state after a resume); the model's own history is its earlier answers'
memories; a malformed answer is a no-action, never the card's point; the noop baseline; which
prompt style a live run asks."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from medspot.adapters.conventions import QWEN_DEFAULT_RESIZE, smart_resize
from medspot.errors import ConfigError
from medspot.live.agents.factory import create_agent, live_prompt_style
from medspot.live.agents.model import ModelAgent
from medspot.live.agents.turn import QUEUED, AgentAnswer, AgentTurn, LiveAgent, PastTurn
from medspot.live.core.actions import Click, Done, Key, TypeText
from medspot.live.core.contract import Observation
from medspot.live.core.tasks import LiveTask
from medspot.testing.openai_server import OpenAITestServer, SeenRequest

W, H = 1280, 800
TASK = LiveTask.model_validate({
    "id": "lookup-doe-joan", "instruction": "Look up the studies of patient DOE^JOAN by name",
    "steps": [{"instruction": "Click the 'Patient Name' field", "target": {"css": "#name"}},
              {"instruction": "Type DOE^JOAN", "action": "type", "text": "DOE^JOAN"}],
    "success": [{"kind": "web.url_matches", "pattern": "#study"}],
})  # fmt: skip
SENT = smart_resize(W, H, QWEN_DEFAULT_RESIZE)


def tool(**arguments: object) -> str:
    return (
        f"<tool_call>\n{json.dumps({'name': 'computer_use', 'arguments': arguments})}\n</tool_call>"
    )


def _turn(tmp: Path, n: int, previous: tuple[PastTurn, ...] = (), mode: Any = "agent") -> AgentTurn:
    path = tmp / f"s{n}.png"
    Image.new("RGB", (W, H), (30, 30, 30)).save(path)

    async def oracle() -> None:
        return None

    return AgentTurn(
        env="orthanc-explorer", task=TASK, step_index=0, n=n,
        observation=Observation(path.read_bytes(), W, H), screen_path=path, screen_rel=path.name,
        history=("click(10, 20)",) * len(previous), oracle=oracle, mode=mode, previous=previous,
    )  # fmt: skip


def _agent(model: str, url: str, style: str = "agent") -> LiveAgent:
    opts = {"backend": "openai", "base_urls": [url], "api_key": "test"}
    return create_agent(model, options=opts, prompt_style=style)


def _play(agent: LiveAgent, tmp: Path, turns: int) -> list[AgentAnswer]:
    """Ask `turns` turns in a row, each seeing the earlier ones (as the runner builds them)."""

    async def main() -> list[AgentAnswer]:
        answers: list[AgentAnswer] = []
        previous: list[PastTurn] = []
        try:
            for n in range(1, turns + 1):
                turn = _turn(tmp, n, tuple(previous))
                ans = await agent.answer(turn)
                answers.append(ans)
                previous.append(PastTurn(n, turn.screen_path, turn.screen_rel, ans))
        finally:
            await agent.aclose()
        return answers

    return asyncio.run(main())


def test_several_tool_calls_run_one_per_turn_without_asking_again(tmp_path: Path) -> None:
    script = [
        tool(action="left_click", coordinate=[412, 233]),
        tool(action="type", text="DOE^JOAN") + "\n" + tool(action="key", keys=["Return"]),
        tool(action="terminate", status="success"),
    ]
    seen: list[SeenRequest] = []

    def answer(req: SeenRequest) -> str:
        seen.append(req)
        return script[len(seen) - 1]

    with OpenAITestServer(answer=answer) as srv:
        answers = _play(_agent("qwen2.5-vl-7b", srv.base_url), tmp_path, 4)
    assert len(seen) == 3  # the Return key came from the second answer: no request of its own
    a1, a2, a3, a4 = answers
    assert isinstance(a1.action, Click)
    assert a1.action.x == pytest.approx(412 * W / SENT[0]) and a1.source == "qwen2.5-computer-use"
    assert a2.action == TypeText("DOE^JOAN") and "several_actions" in a2.flags
    assert a2.call_state == {"pending": [{"kind": "key", "key": "Enter"}], "answer_n": 2}
    assert a3.action == Key("Enter") and QUEUED in a3.flags and a3.raw_text is None
    assert a3.source == "qwen2.5-computer-use:queued" and a3.call_state is None
    assert a4.action == Done()
    # the model's own history: the cookbook's `Step k: <tool call>; `, queued turns not repeated
    progress = seen[2].text.split("current device): ", 1)[1]
    assert progress.count("Step ") == 2
    assert progress.startswith('Step 1: {"name": "computer_use", "arguments": {"action": "left')
    assert "DOE^JOAN" in progress and "oracle" not in seen[2].text
    assert "Click the 'Patient Name' field" not in seen[0].text + (seen[0].system or "")


def test_a_resumed_turn_goes_on_from_the_journaled_call_state(tmp_path: Path) -> None:
    """After a resume the runner hands the agent its journaled answers as `previous`: the
    pending action is taken from there, no model call is made."""
    journaled = AgentAnswer(
        raw_text=tool(action="type", text="DOE^JOAN") + tool(action="key", keys=["Return"]),
        action=TypeText("DOE^JOAN"),
        call_state={"pending": [{"kind": "key", "key": "Enter"}], "answer_n": 1},
    )
    with OpenAITestServer(answer=tool(action="terminate", status="success")) as srv:
        agent = _agent("qwen2.5-vl-7b", srv.base_url)
        prev = (PastTurn(1, tmp_path / "s1.png", "s1.png", journaled),)
        ans = asyncio.run(agent.answer(_turn(tmp_path, 2, prev)))
        assert srv.request_count == 0
    assert ans.action == Key("Enter") and QUEUED in ans.flags


def test_malformed_answer_is_a_no_action_never_the_cards_point(tmp_path: Path) -> None:
    with OpenAITestServer(answer="I would click the Patient Name field at (412, 233).") as srv:
        (ans,) = _play(_agent("ui-tars-1.5-7b", srv.base_url), tmp_path, 1)
    assert ans.action is None and "malformed_answer" in ans.flags and ans.point is None
    with OpenAITestServer(answer="Action: click(start_box='(644,406)')") as srv:
        (guided,) = _play(_agent("ui-tars-1.5-7b", srv.base_url, style="native"), tmp_path, 1)
    assert isinstance(guided.action, Click)  # the grounding path still reads its click


def test_ui_tars_thought_is_kept_and_earlier_answers_come_back(tmp_path: Path) -> None:
    script = [
        "Thought: The lookup form is open. Click the name field.\n"
        "Action: click(start_box='(412,233)')",
        "Thought: Type the name.\nAction: type(content='DOE^JOAN')",
    ]
    seen: list[SeenRequest] = []

    def answer(req: SeenRequest) -> str:
        seen.append(req)
        return script[len(seen) - 1]

    with OpenAITestServer(answer=answer) as srv:
        agent = _agent("ui-tars-1.5-7b", srv.base_url)
        assert isinstance(agent, ModelAgent) and agent.describe()["action_format"] == "ui-tars"
        a1, a2 = _play(agent, tmp_path, 2)
    assert a1.thought == "The lookup form is open. Click the name field."
    assert seen[0].assistant == ()
    assert seen[1].assistant == (
        "Thought: The lookup form is open. Click the name field.\n"
        "Action: click(start_box='<|box_start|>(412,233)<|box_end|>')",
    )
    assert a2.action == TypeText("DOE^JOAN")


def test_noop_answers_done_at_once(tmp_path: Path) -> None:
    agent = create_agent("noop")
    ans = asyncio.run(agent.answer(_turn(tmp_path, 1)))
    assert ans.action == Done() and ans.raw_text == "done()"
    assert agent.describe()["kind"] == "baseline"


def test_live_prompt_style() -> None:
    assert live_prompt_style("ui-tars-1.5-7b", "guided") == "native"
    assert live_prompt_style("ui-tars-1.5-7b", "agent") == "agent"
    assert live_prompt_style("openai:my-vlm", "agent") == "agent"
    assert live_prompt_style("ui-tars-1.5-7b", "agent", "native") == "native"  # asked for
    for baseline in ("oracle", "noop", "random", "replay"):
        assert live_prompt_style(baseline, "agent") == "native"
    with pytest.raises(ConfigError, match=r"no agent prompt.*--grounder"):
        live_prompt_style("seeclick", "agent")
    with pytest.raises(ConfigError, match="baseline"):
        create_agent("random", prompt_style="agent")
