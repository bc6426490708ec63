"""Qwen2.5-VL's and Qwen3-VL's agent prompts: the `computer_use` tool of Qwen's own cookbooks
(QwenLM/Qwen2.5-VL and QwenLM/Qwen3-VL, cookbooks/utils/agent_function_call.py `ComputerUse`),
in the system message as their cookbooks/mobile_agent.ipynb build it, and the user query
`The user query: ...` with its `Task progress` of earlier steps. Their answers are read by the
live formats "qwen2.5-computer-use" and "qwen3-computer-use".

- Qwen2.5-VL: the system message is what qwen-agent's `NousFnCallPrompt` renders (printed in
  the Qwen2.5-VL notebook): "You are a helpful assistant." then the tool JSON with
  `name_for_human` and `args_format`; the screen's resolution is the smart-resized image's
  (the notebook passes the resized size), so its coordinates are pixels of the image sent.
- Qwen3-VL: the notebook's hand-written system prompt: the tool JSON (no `name_for_human`), then
  its "Response format" rules (Thought, Action, one tool call); the screen's resolution is
  999x999 and the notebook rescales coordinates by /999, so the grid is 0..999 (OSWorld's
  Qwen3-VL agent says 1000x1000 and also divides by 999). The Qwen3-VL computer_use notebook
  itself could not be read here (not in the stored snapshot); the mobile notebook's prompt is
  used with the ComputerUse tool of the same repository.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from medspot.adapters.base import Convention, StepRequest
from medspot.adapters.card import PromptSpec, ResizeSpec, StyleSpec
from medspot.adapters.cards.common import QWEN_FN_CALL
from medspot.adapters.cards.harness_agent import agent_style
from medspot.adapters.conventions import smart_resize

__all__ = [
    "QWEN3_GRID",
    "qwen3_agent",
    "qwen3_system",
    "qwen25_agent",
    "qwen25_system",
    "user_query",
]

QWEN3_GRID = 999

_DESCRIPTION = """Use a mouse and keyboard to interact with a computer, and take screenshots.
* This is an interface to a desktop GUI. You do not have access to a terminal or applications menu. You must click on desktop icons to start applications.
* Some applications may take time to start or process actions, so you may need to wait and take successive screenshots to see the results of your actions. E.g. if you click on Firefox and a window doesn't open, try wait and taking another screenshot.
* The screen's resolution is {width}x{height}.
* Whenever you intend to move the cursor to click on an element like an icon, you should consult a screenshot to determine the coordinates of the element before moving the cursor.
* If you tried clicking on a program or link but it failed to load, even after waiting, try adjusting your cursor position so that the tip of the cursor visually falls on the element that you want to click.
* Make sure to click any buttons, links, icons, etc with the cursor tip in the center of the element. Don't click boxes on their edges{unless}."""  # noqa: E501

_ACTIONS_25 = """The action to perform. The available actions are:
* `key`: Performs key down presses on the arguments passed in order, then performs key releases in reverse order.
* `type`: Type a string of text on the keyboard.
* `mouse_move`: Move the cursor to a specified (x, y) pixel coordinate on the screen.
* `left_click`: Click the left mouse button.
* `left_click_drag`: Click and drag the cursor to a specified (x, y) pixel coordinate on the screen.
* `right_click`: Click the right mouse button.
* `middle_click`: Click the middle mouse button.
* `double_click`: Double-click the left mouse button.
* `scroll`: Performs a scroll of the mouse scroll wheel.
* `wait`: Wait specified seconds for the change to happen.
* `terminate`: Terminate the current task and report its completion status."""  # noqa: E501

_ACTIONS_3 = """The action to perform. The available actions are:
* `key`: Performs key down presses on the arguments passed in order, then performs key releases in reverse order.
* `type`: Type a string of text on the keyboard.
* `mouse_move`: Move the cursor to a specified (x, y) pixel coordinate on the screen.
* `left_click`: Click the left mouse button at a specified (x, y) pixel coordinate on the screen.
* `left_click_drag`: Click and drag the cursor to a specified (x, y) pixel coordinate on the screen.
* `right_click`: Click the right mouse button at a specified (x, y) pixel coordinate on the screen.
* `middle_click`: Click the middle mouse button at a specified (x, y) pixel coordinate on the screen.
* `double_click`: Double-click the left mouse button at a specified (x, y) pixel coordinate on the screen.
* `triple_click`: Triple-click the left mouse button at a specified (x, y) pixel coordinate on the screen (simulated as double-click since it's the closest action).
* `scroll`: Performs a scroll of the mouse scroll wheel.
* `hscroll`: Performs a horizontal scroll (mapped to regular scroll).
* `wait`: Wait specified seconds for the change to happen.
* `terminate`: Terminate the current task and report its completion status.
* `answer`: Answer a question."""  # noqa: E501

_ENUM_25 = [
    "key", "type", "mouse_move", "left_click", "left_click_drag", "right_click", "middle_click",
    "double_click", "scroll", "wait", "terminate",
]  # fmt: skip
_ENUM_3 = [
    "key", "type", "mouse_move", "left_click", "left_click_drag", "right_click", "middle_click",
    "double_click", "triple_click", "scroll", "hscroll", "wait", "terminate", "answer",
]  # fmt: skip

_COORDINATE = (
    "(x, y): The x (pixels from the left edge) and y (pixels from the top edge) coordinates to "
    "move the mouse to."
)

_RESPONSE_FORMAT_3 = """

# Response format

Response format for every step:
1) Thought: one concise sentence explaining the next move (no multi-step reasoning).
2) Action: a short imperative describing what to do in the UI.
3) A single <tool_call>...</tool_call> block containing only the JSON: {"name": <function-name>, "arguments": <args-json-object>}.

Rules:
- Output exactly in the order: Thought, Action, <tool_call>.
- Be brief: one sentence for Thought, one for Action.
- Do not output anything else outside those three parts.
- If finishing, use action=terminate in the tool call."""  # noqa: E501


def _parameters(actions: str, enum: list[str], qwen3: bool) -> dict[str, Any]:
    text_needed = "`action=type` and `action=answer`" if qwen3 else "`action=type`"
    coordinate = (
        _COORDINATE
        if qwen3
        else (f"{_COORDINATE} Required only by `action=mouse_move` and `action=left_click_drag`.")
    )
    pixels = (
        "Required only by `action=scroll` and `action=hscroll`."
        if qwen3
        else ("Required only by `action=scroll`.")
    )
    return {
        "properties": {
            "action": {"description": actions, "enum": enum, "type": "string"},
            "keys": {"description": "Required only by `action=key`.", "type": "array"},
            "text": {"description": f"Required only by {text_needed}.", "type": "string"},
            "coordinate": {"description": coordinate, "type": "array"},
            "pixels": {
                "description": "The amount of scrolling to perform. Positive values scroll up, "
                f"negative values scroll down. {pixels}",
                "type": "number",
            },
            "time": {
                "description": "The seconds to wait. Required only by `action=wait`.",
                "type": "number",
            },
            "status": {
                "description": "The status of the task. Required only by `action=terminate`.",
                "type": "string",
                "enum": ["success", "failure"],
            },
        },
        "required": ["action"],
        "type": "object",
    }


def qwen25_system(width: int, height: int) -> str:
    """The Qwen2.5-VL system message for a screen of `width` x `height` (the resized image)."""
    desc = _DESCRIPTION.replace("{width}", str(width)).replace("{height}", str(height))
    fn = {
        "name_for_human": "computer_use",
        "name": "computer_use",
        "description": desc.replace("{unless}", " unless asked"),
        "parameters": _parameters(_ACTIONS_25, _ENUM_25, qwen3=False),
        "args_format": "Format the arguments as a JSON object.",
    }
    tool = json.dumps({"type": "function", "function": fn}, ensure_ascii=False)
    return "You are a helpful assistant.\n\n" + QWEN_FN_CALL.format(tool=tool)


def qwen3_system() -> str:
    """The Qwen3-VL system prompt (its 0..999 grid as the screen)."""
    desc = _DESCRIPTION.replace("{width}", str(QWEN3_GRID)).replace("{height}", str(QWEN3_GRID))
    fn = {
        "name": "computer_use",
        "description": desc.replace("{unless}", ""),
        "parameters": _parameters(_ACTIONS_3, _ENUM_3, qwen3=True),
    }
    tool = json.dumps({"type": "function", "function": fn}, ensure_ascii=False)
    return "\n\n" + QWEN_FN_CALL.format(tool=tool) + _RESPONSE_FORMAT_3


def user_query(req: StepRequest, *, qwen3: bool) -> str:
    """The cookbooks' user query: the goal and `Step k: <memory>; ` per earlier step."""
    steps = "".join(f"Step {i}: {h}; " for i, h in enumerate(req.history, 1))
    if qwen3:
        return (
            f"The user query: {req.instruction}.\nTask progress (You have done the following "
            f"operation on the current device): {steps}.\n"
        )
    return (
        f"The user query: {req.instruction}\nTask progress (You have done the following "
        f"operation on the current device): {steps}"
    )


def qwen25_agent(resize: ResizeSpec) -> StyleSpec:
    """Pixels of the smart-resized image (the resolution written into the system message)."""
    base = PromptSpec(user_text="", image_first=False, max_new_tokens=2048, resize=resize)

    def build(req: StepRequest) -> PromptSpec:
        w, h = smart_resize(req.image_size[0], req.image_size[1], resize)
        return replace(base, system=qwen25_system(w, h), user_text=user_query(req, qwen3=False))

    return agent_style(build, Convention.ABS_RESIZED, "qwen2.5-computer-use")


def qwen3_agent() -> StyleSpec:
    base = PromptSpec(user_text="", image_first=False, max_new_tokens=2048, system=qwen3_system())

    def build(req: StepRequest) -> PromptSpec:
        return replace(base, user_text=user_query(req, qwen3=True))

    return agent_style(build, Convention.REL999, "qwen3-computer-use")
