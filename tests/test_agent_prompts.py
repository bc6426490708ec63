"""The cards' agent prompts (live agent mode), each from its model's own source; the requests
they make over the OpenAI backend, against the test server through the real openai client."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from medspot.adapters.base import AdapterContext, Convention, Prediction, StepRequest
from medspot.adapters.card import PromptStyle, prompt_record
from medspot.adapters.cards import CARDS, get_card, make_generic_card
from medspot.adapters.cards.harness_agent import HARNESS_AGENT_TEMPLATE
from medspot.adapters.conventions import QWEN_DEFAULT_RESIZE, UI_TARS_RESIZE, smart_resize
from medspot.errors import ConfigError
from medspot.testing.openai_server import OpenAITestServer

GOAL = "Look up the studies of patient DOE^JOAN by name and open the result"
W, H = 1280, 800

# card -> the live format its agent prompt is read by
AGENT_FORMATS = {
    "ui-tars-1.5-7b": "ui-tars",
    "ui-tars-7b-sft": "ui-tars",
    "aguvis-7b-720p": "aguvis",
    "qwen2.5-vl-7b": "qwen2.5-computer-use",
    "qwen3-vl-8b": "qwen3-computer-use",
    "cogagent-9b": "cogagent",
    "gpt-4o-mini": "text",
    "gpt-5": "text",
    "gemma-3-27b": "text",
    "llama-3.2-11b-vision": "text",
    "mistral-small-3.1-24b": "text",
    "ministral-3-8b": "text",
    "deepseek-vl2": "text",
    "deepseek-vl2-small": "text",
    "deepseek-vl2-tiny": "text",
    "mai-ui": "mai-ui",
    "gui-owl-1.5": "gui-owl-computer-use",
}


def _req(tmp_path: Path | None = None, history: tuple[str, ...] = ()) -> StepRequest:
    path = Path("s.png")
    if tmp_path is not None:
        path = tmp_path / "s.png"
        Image.new("RGB", (W, H), (40, 40, 40)).save(path)
    return StepRequest(
        step_uid="orthanc-explorer/lookup-doe-joan/3",
        task_uid="orthanc-explorer/lookup-doe-joan",
        image_rel="s.png",
        image_path=path,
        image_size=(W, H),
        instruction=GOAL,
        history=history,
    )


def test_which_cards_have_an_agent_prompt() -> None:
    have = {name: c.agent.action_format for name, c in CARDS.items() if c.agent is not None}
    assert have == AGENT_FORMATS
    from medspot.live.agents.formats import FORMATS

    assert set(have.values()) <= set(FORMATS)
    for name in set(CARDS) - set(AGENT_FORMATS):  # the grounding models
        with pytest.raises(ConfigError, match="--grounder"):
            CARDS[name].style(PromptStyle.AGENT)


def test_agent_styles_read_no_point_and_never_re_ask() -> None:
    for name in AGENT_FORMATS:
        agent = CARDS[name].style(PromptStyle.AGENT)
        spec = agent.build(_req())
        assert spec.retries_on_no_point == 0, name
        assert agent.parse("click(start_box='(1,2)')", (W, H), (W, H)).point is None


def test_ui_tars_15_is_bytedances_computer_use_template() -> None:
    spec = get_card("ui-tars-1.5-7b").style(PromptStyle.AGENT).build(_req())
    text = spec.user_text
    assert text.startswith(
        "You are a GUI agent. You are given a task and your action history, with screenshots. "
        "You need to perform the next action to complete the task.\n\n## Output Format\n```\n"
        "Thought: ...\nAction: ...\n```\n\n## Action Space\n\n"
        "click(start_box='<|box_start|>(x1,y1)<|box_end|>')\n"
    )
    assert "finished(content='xxx') # Use escape characters \\', \\\", and \\n in content" in text
    assert "call_user()" not in text  # 1.5's template has no call_user
    assert "- Use English in `Thought` part." in text
    assert text.endswith(f"## User Instruction\n{GOAL}\n")
    assert spec.resize == UI_TARS_RESIZE and not spec.image_first


def test_ui_tars_v1_template_offers_call_user() -> None:
    text = get_card("ui-tars-7b-sft").style(PromptStyle.AGENT).build(_req()).user_text
    assert "call_user() # Submit the task and call the user when the task is unsolvable" in text
    assert "type(content='') #If you want to submit your input, use \"\\n\" at the end" in text
    assert get_card("ui-tars-7b-sft").style(PromptStyle.AGENT).convention is Convention.REL1000


def _tool_json(system: str) -> dict[str, Any]:
    m = re.search(r"<tools>\n(.*)\n</tools>", system, re.DOTALL)
    assert m is not None
    tool: dict[str, Any] = json.loads(m.group(1))
    return tool


def test_qwen25_computer_use_system_and_query() -> None:
    style = get_card("qwen2.5-vl-7b").style(PromptStyle.AGENT)
    assert style.convention is Convention.ABS_RESIZED
    step1 = '{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [1, 2]}}'
    spec = style.build(_req(history=(step1,)))
    assert spec.system is not None and spec.system.startswith("You are a helpful assistant.\n\n")
    fn = _tool_json(spec.system)["function"]
    assert fn["name"] == fn["name_for_human"] == "computer_use"
    assert fn["args_format"] == "Format the arguments as a JSON object."
    w, h = smart_resize(W, H, QWEN_DEFAULT_RESIZE)  # the image sent: its pixels are the units
    assert f"The screen's resolution is {w}x{h}." in fn["description"]
    assert spec.resize == QWEN_DEFAULT_RESIZE
    enum = fn["parameters"]["properties"]["action"]["enum"]
    assert "left_click_drag" in enum and "terminate" in enum and "answer" not in enum
    assert fn["parameters"]["properties"]["status"]["enum"] == ["success", "failure"]
    assert spec.system.endswith(
        '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
    )
    assert spec.user_text == (
        f"The user query: {GOAL}\nTask progress (You have done the following operation on the "
        f"current device): Step 1: {step1}; "
    )
    assert not spec.image_first


def test_qwen3_computer_use_grid_and_response_format() -> None:
    style = get_card("qwen3-vl-8b").style(PromptStyle.AGENT)
    assert style.convention is Convention.REL999
    spec = style.build(_req(history=("I clicked the Lookup tab.",)))
    assert spec.system is not None and spec.system.startswith("\n\n# Tools\n")
    fn = _tool_json(spec.system)["function"]
    assert "name_for_human" not in fn
    assert "The screen's resolution is 999x999." in fn["description"]
    assert "answer" in fn["parameters"]["properties"]["action"]["enum"]
    assert "Output exactly in the order: Thought, Action, <tool_call>." in spec.system
    assert spec.user_text == (
        f"The user query: {GOAL}.\nTask progress (You have done the following operation on the "
        "current device): Step 1: I clicked the Lookup tab.; .\n"
    )


def test_cogagent_agent_query_is_cli_demos_with_its_own_history() -> None:
    mem = "CLICK(box=[[289,279,507,304]], element_info='Patient Name')\tClick the name box."
    text = get_card("cogagent-9b").style(PromptStyle.AGENT).build(_req(history=(mem,))).user_text
    assert text == (
        f"Task: {GOAL}\nHistory steps: \n0. {mem}\n(Platform: WIN)\n"
        "(Answer in Action-Operation-Sensitive format.)"
    )


def test_aguvis_self_plan_prompt() -> None:
    spec = (
        get_card("aguvis-7b-720p")
        .style(PromptStyle.AGENT)
        .build(_req(history=("Click on the Patient Name field.", "Type DOE^JOAN.")))
    )
    assert spec.system == (
        "You are a GUI agent. You are given a task and a screenshot of the screen. You need to "
        "perform a series of pyautogui actions to complete the task."
    )
    assert spec.user_text == (
        "Please generate the next move according to the ui screenshot, instruction and previous "
        f"actions.\n\nInstruction: {GOAL}\n\nPrevious actions:\nStep 1: Click on the Patient "
        "Name field.\nStep 2: Type DOE^JOAN.\n"
    )
    assert spec.generation_prompt == "<|im_start|>assistant<|recipient|>"
    assert spec.stop == ("<|diff_marker|>",)
    first = get_card("aguvis-7b-720p").style(PromptStyle.AGENT).build(_req())
    assert first.user_text.endswith("Previous actions:\nNone\n")


def test_harness_agent_prompt_for_the_general_models() -> None:
    for name, fmt in AGENT_FORMATS.items():
        if fmt != "text":
            continue
        style = get_card(name).style(PromptStyle.AGENT)
        assert style.convention is Convention.REL1000, name
        text = style.build(_req()).user_text
        assert text.startswith("You are operating clinical imaging software"), name
        assert f"Your task:\n{GOAL}\n" in text and "You have not acted yet." in text
        assert 'infeasible("reason")' in text and "from 0 (left or top edge) to 1000" in text
    gpt5 = get_card("gpt-5").style(PromptStyle.AGENT).build(_req())
    assert gpt5.api == "responses" and gpt5.reasoning_effort == "low"
    spec = (
        get_card("gemma-3-27b")
        .style(PromptStyle.AGENT)
        .build(_req(history=("Thought: open the form.\nAction: click(512, 48)",)))
    )
    assert (
        "Your earlier steps (oldest first):\n1. Thought: open the form.\n   Action: click(512, 48)"
        in (spec.user_text)
    )
    generic = make_generic_card("my-vlm", Convention.ABS_SENT)
    assert generic.agent is not None and generic.agent.convention is Convention.ABS_SENT
    text = generic.agent.build(_req()).user_text
    assert f"integer pixels of this {W}x{H} screenshot" in text
    assert HARNESS_AGENT_TEMPLATE.split("{goal}")[0] in text


def test_prompt_record_holds_the_earlier_answers() -> None:
    spec = (
        get_card("ui-tars-1.5-7b")
        .style(PromptStyle.AGENT)
        .build(_req(history=("Thought: a\nAction: click(start_box='(1,2)')",)))
    )
    assert spec.earlier == ("Thought: a\nAction: click(start_box='(1,2)')",)
    assert "[earlier answer 1] Thought: a" in prompt_record(spec)


# ---- over the OpenAI backend ------------------------------------------------------------------


def _ask(name: str, url: str, req: StepRequest, **options: Any) -> Prediction:
    from medspot.adapters.factory import build_adapter

    opts = {"backend": "openai", "base_urls": [url], "prompt_style": "agent", **options}
    adapter = build_adapter(get_card(name), AdapterContext.with_options(opts))

    async def main() -> Prediction:
        try:
            return await adapter.predict(req)
        finally:
            await adapter.aclose()

    return asyncio.run(main())


def test_ui_tars_earlier_answers_go_as_assistant_turns(tmp_path: Path) -> None:
    """OSWorld's UI-TARS agent layout: the template alone, the model's earlier answers as
    assistant turns, the screenshot last (here without the earlier screenshots)."""
    earlier = (
        "Thought: click the field\nAction: click(start_box='<|box_start|>(412,233)<|box_end|>')",
        "Thought: type\nAction: type(content='DOE^JOAN')",
    )
    with OpenAITestServer(answer="Thought: go\nAction: click(start_box='(640,420)')") as srv:
        pred = _ask("ui-tars-1.5-7b", srv.base_url, _req(tmp_path, earlier))
        (seen,) = srv.requests
    roles = [m["role"] for m in seen.body["messages"]]
    assert roles == ["user", "assistant", "assistant", "user"]
    first, *_, last = seen.body["messages"]
    assert [p["type"] for p in first["content"]] == ["text"]
    assert [p["type"] for p in last["content"]] == ["image_url"]
    assert seen.assistant == earlier
    assert seen.image is not None and seen.image.size == smart_resize(W, H, UI_TARS_RESIZE)
    assert pred.point is None  # the live format reader reads the answer
    assert pred.raw_text == "Thought: go\nAction: click(start_box='(640,420)')"


def test_qwen25_agent_request_states_the_size_it_sends(tmp_path: Path) -> None:
    with OpenAITestServer(answer="<tool_call>\n{}\n</tool_call>") as srv:
        _ask("qwen2.5-vl-7b", srv.base_url, _req(tmp_path))
        (seen,) = srv.requests
    assert seen.image is not None and seen.system is not None
    w, h = seen.image.size
    assert (w, h) == smart_resize(W, H, QWEN_DEFAULT_RESIZE)
    assert f"The screen's resolution is {w}x{h}." in seen.system
    assert [p["type"] for p in seen.body["messages"][1]["content"]] == ["text", "image_url"]


def test_aguvis_self_plan_prefix_over_vllm(tmp_path: Path) -> None:
    with OpenAITestServer(answer="os\npyautogui.click(x=0.1, y=0.2)") as srv:
        pred = _ask("aguvis-7b-720p", srv.base_url, _req(tmp_path))
        (seen,) = srv.requests
    assert seen.body["messages"][-1] == {"role": "assistant", "content": "<|recipient|>"}
    assert seen.body["continue_final_message"] is True
    assert seen.body["stop"] == ["<|diff_marker|>"]
    assert "generation_prompt_approximated" in pred.flags


def test_mai_ui_agent_prompt_is_the_repositorys_mobile_prompt() -> None:
    style = get_card("mai-ui").style(PromptStyle.AGENT)
    assert style.convention is Convention.REL999  # SCALE_FACTOR = 999
    earlier = ('<thinking>\nOpen the form.\n</thinking>\n<tool_call>\n{"name":"mobile_use",'
               '"arguments":{"action":"click","coordinate":[321,287]}}\n</tool_call>',)  # fmt: skip
    spec = style.build(_req(history=earlier))
    assert spec.system is not None and spec.system.startswith(
        "You are a GUI agent. You are given a task and your action history, with screenshots."
    )
    assert '{"action": "system_button", "button": "button_name"} # Options: back, home, menu, ' \
        "enter" in spec.system  # fmt: skip
    assert spec.system.endswith(
        "return the correct json object within <thinking> </thinking> and <tool_call></tool_call>"
        " XML tags."
    )
    assert spec.user_text == GOAL and spec.earlier == earlier
    assert spec.image_turn_alone and not spec.image_first


def test_mai_ui_agent_request_layout(tmp_path: Path) -> None:
    """MAIUINaivigationAgent._build_messages: system, the goal alone, earlier answers as
    assistant turns, the screenshot in a user message of its own (also on the first step)."""
    answer = '<thinking>\ngo\n</thinking>\n<tool_call>\n{"name": "mobile_use", "arguments": ' \
        '{"action": "wait"}}\n</tool_call>'  # fmt: skip
    with OpenAITestServer(answer=answer) as srv:
        _ask("mai-ui", srv.base_url, _req(tmp_path))
        _ask("mai-ui", srv.base_url, _req(tmp_path, ("<thinking>\na\n</thinking>",)))
        first, second = srv.requests
    assert [m["role"] for m in first.body["messages"]] == ["system", "user", "user"]
    assert [m["role"] for m in second.body["messages"]] == [
        "system", "user", "assistant", "user"]  # fmt: skip
    for seen in (first, second):
        user_text, *_, image = seen.body["messages"][1:]
        assert [p["type"] for p in user_text["content"]] == ["text"]
        assert [p["type"] for p in image["content"]] == ["image_url"]
        assert seen.text == GOAL


def test_gui_owl_agent_prompt_is_mobile_agent_v35s_computer_prompt() -> None:
    style = get_card("gui-owl-1.5").style(PromptStyle.AGENT)
    assert style.convention is Convention.REL1000  # the harness divides by 1000
    spec = style.build(_req(history=("Click the Lookup tab.",)))
    assert spec.system is not None
    fn = _tool_json(spec.system)["function"]
    assert fn["name"] == "computer_use"
    assert "The screen's resolution is 1000x1000." in fn["description"]
    assert "interact" in fn["parameters"]["properties"]["action"]["enum"]
    assert spec.system.endswith(
        "- Do not output anything else outside those two parts.\n"
        "- If finishing, use action=terminate in the tool call."
    )
    assert spec.user_text == (
        "Please generate the next move according to the UI screenshot, instruction and previous "
        f"actions.\n\nInstruction: {GOAL}\n\nPrevious actions:\nStep 1: Click the Lookup tab."
    )
    first = style.build(_req()).user_text
    assert first.endswith("Previous actions:\nNone") and not spec.image_first
