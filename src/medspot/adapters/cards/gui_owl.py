"""GUI-Owl-1.5 (Tongyi Lab / X-PLUG; 2B, 4B, 8B, 32B, Instruct and Thinking, on Qwen3-VL): one
card, the sizes and variants are its checkpoints (a Thinking checkpoint's `<think>` block is
stripped by the parser).

Grounding, from X-PLUG/MobileAgent `Mobile-Agent-v3.5/grounding_and_kb/
eval_grounding_benchmarks.py` (the published grounding evaluation): a system message offering a
`computer_use` tool restricted to `mouse_move` and `left_click` on a 1000x1000 screen
(`only_two_action_system_prompt`), the user message the image then the instruction, the image
smart-resized with factor 32 between 1 and 9800 tokens of 32 x 32 pixels (`update_image_size_`).
The answer is a `<tool_call>` with `"coordinate": [x, y]` on 0..1000 (the evaluation divides by
1000; the README: "GUI-Owl 1.5 outputs relative coordinates (0-1000) by default"); the point of
the last tool call is read, as the evaluation reads the last coordinate pair.

Agent mode, from `Mobile-Agent-v3.5/computer_use/utils.py` (`SYSTEM_PROMPT`, `build_messages`):
the desktop `computer_use` tool on a 1000x1000 screen with its response format (`Action:` then
one `<tool_call>`), and the user message "Please generate the next move ..." with the goal and
`Step k: <action>` lines of the earlier steps, then the screenshot. Its harness also sends the
last four steps' screenshots and answers as turns; here every earlier step is summarised in
"Previous actions" (the screenshots of earlier steps are not sent). Read by the live format
"gui-owl-computer-use" (`medspot.live.agents.formats.gui_owl`).
"""

from __future__ import annotations

import re
from dataclasses import replace

from medspot.adapters.base import Convention, StepRequest
from medspot.adapters.card import ModelCard, ParsedAnswer, PromptSpec, ResizeSpec, StyleSpec
from medspot.adapters.cards.common import QWEN_FN_CALL, native_only_card, style, with_history
from medspot.adapters.cards.harness_agent import agent_style
from medspot.adapters.parsing import anchored_answer

__all__ = [
    "AGENT_SYSTEM",
    "GROUNDING_SYSTEM",
    "GUI_OWL_RESIZE",
    "agent_user_text",
    "gui_owl_15",
    "gui_owl_agent",
    "parse_gui_owl",
]

GUI_OWL_RESIZE = ResizeSpec(factor=32, min_pixels=32 * 32, max_pixels=9800 * 32 * 32)

# grounding_and_kb/eval_grounding_benchmarks.py `only_two_action_system_prompt`, verbatim: its tool
# in the function-calling section of the Qwen template (`QWEN_FN_CALL`).
GROUNDING_SYSTEM = (
    QWEN_FN_CALL.format(
        tool='{"type": "function", "function": {"name": "computer_use", "description": "Use a '
        "mouse to interact with a computer.\n"
        "* The screen's resolution is 1000x1000.\n"
        "* Make sure to click any buttons, links, icons, etc with the cursor tip in the center "
        "of the element. Don't click boxes on their edges unless asked.\n"
        "* don't use any other computer use tool like type, key, scroll, left_click_drag "
        "and so on.\n"
        "* you can only use the left_click and mouse_move action to interact with the computer. "
        "if you can't find the element, you should terminate the task and report the failure.\", "
        '"parameters": {"properties": {"action": {"description": "The action to perform. '
        "The available actions are:\n"
        "* `mouse_move`: Move the cursor to a specified (x, y) pixel coordinate on the screen.\n"
        "* `left_click`: Click the left mouse button with coordinate (x, y) pixel coordinate "
        'on the screen.", "enum": ["mouse_move", "left_click"], "type": "string"}, "coordinate": '
        '{"description": "(x, y): The x (pixels from the left edge) and y (pixels from the '
        "top edge) coordinates to move the mouse to. Required only by `action=mouse_move` "
        'and `action=left_click`.", "type": "array"}}, "required": ["action"], "type": "object"}}}'
    )
    + "\n"
)

# computer_use/utils.py `SYSTEM_PROMPT`, verbatim: its tool in `QWEN_FN_CALL`, then its
# response format.
AGENT_SYSTEM = QWEN_FN_CALL.format(
    tool='{"type": "function", "function": {"name": "computer_use", "description": "Use a '
    "mouse and keyboard to interact with a computer, and take screenshots.\\n* This is "
    "an interface to a desktop GUI. You do not have access to a terminal or applications "
    "menu. You must click on desktop icons to start applications.\\n* Some applications "
    "may take time to start or process actions, so you may need to wait and take successive "
    "screenshots to see the results of your actions. E.g. if you click on Firefox and "
    "a window doesn't open, try wait and taking another screenshot.\\n* The screen's resolution "
    "is 1000x1000.\\n* Make sure to click any buttons, links, icons, etc with the cursor "
    "tip in the center of the element. Don't click boxes on their edges unless asked.\", "
    '"parameters": {"properties": {"action": {"description": "The action to perform. '
    "The available actions are:\\n* `key`: Performs key down presses on the arguments "
    "passed in order, then performs key releases in reverse order.\\n* `type`: Type a "
    "string of text on the keyboard.\\n* `mouse_move`: Move the cursor to a specified "
    "(x, y) pixel coordinate on the screen.\\n* `left_click`: Click the left mouse button "
    "at a specified (x, y) pixel coordinate on the screen.\\n* `left_click_drag`: Click "
    "and drag the cursor to a specified (x, y) pixel coordinate on the screen.\\n* `right_click`: "
    "Click the right mouse button at a specified (x, y) pixel coordinate on the screen.\\n* "
    "`middle_click`: Click the middle mouse button at a specified (x, y) pixel coordinate "
    "on the screen.\\n* `double_click`: Double-click the left mouse button at a specified "
    "(x, y) pixel coordinate on the screen.\\n* `triple_click`: Triple-click the left "
    "mouse button at a specified (x, y) pixel coordinate on the screen.\\n* `scroll`: "
    "Performs a scroll of the mouse scroll wheel.\\n* `hscroll`: Performs a horizontal "
    "scroll.\\n* `wait`: Wait specified seconds for the change to happen.\\n* `terminate`: "
    "Terminate the current task and report its completion status.\\n* `answer`: Answer "
    'a question.\\n* `interact`: Resolve the blocking window by interacting with the user.", '
    '"enum": ["key", "type", "mouse_move", "left_click", "left_click_drag", "right_click", '
    '"middle_click", "double_click", "triple_click", "scroll", "hscroll", "wait", "terminate", '
    '"answer", "interact"], "type": "string"}, "keys": {"description": "Required only '
    'by `action=key`.", "type": "array"}, "text": {"description": "Required only by `action=type`, '
    '`action=answer` and `action=interact`.", "type": "string"}, "coordinate": {"description": '
    '"(x, y): The x (pixels from the left edge) and y (pixels from the top edge) coordinates '
    'to move the mouse to. Required only by `action=mouse_move` and `action=left_click_drag`.", '
    '"type": "array"}, "pixels": {"description": "The amount of scrolling to perform. '
    "Positive values scroll up, negative values scroll down. Required only by `action=scroll` "
    'and `action=hscroll`.", "type": "number"}, "time": {"description": "The seconds '
    'to wait. Required only by `action=wait`.", "type": "number"}, "status": {"description": '
    '"The status of the task. Required only by `action=terminate`.", "type": "string", '
    '"enum": ["success", "failure"]}}, "required": ["action"], "type": "object"}}}'
) + (
    "\n"
    "\n"
    "# Response format\n"
    "\n"
    "Response format for every step:\n"
    "1) Action: a short imperative describing what to do in the UI.\n"
    '2) A single <tool_call>...</tool_call> block containing only the JSON: {"name": '
    '<function-name>, "arguments": <args-json-object>}.\n'
    "\n"
    "Rules:\n"
    "- Output exactly in the order: Action, <tool_call>.\n"
    "- Be brief: one for Action.\n"
    "- Do not output anything else outside those two parts.\n"
    "- If finishing, use action=terminate in the tool call."
)

_TOOL_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)

_STATUS = (
    "Prompt texts and parsers tested offline; a tiny random Qwen3-VL runs the hf path on CPU "
    "and the test server the served path. Real weights need a GPU (not run here)."
)


def _last_tool_call(text: str) -> tuple[int, int] | None:
    found = list(_TOOL_CALL.finditer(text))
    return found[-1].span(1) if found else None


def parse_gui_owl(text: str, sent: tuple[int, int], original: tuple[int, int]) -> ParsedAnswer:
    """The coordinate of the last `<tool_call>` (a `mouse_move` then a `left_click` is the
    click); without a tool call, the first pair of the answer."""
    return anchored_answer(text, Convention.REL1000, sent, original, anchor=_last_tool_call)


def agent_user_text(req: StepRequest) -> str:
    """`build_messages`' instruction prompt: the goal and the earlier steps (`Step k: ...`, the
    live agent's memories of them: each answer's `Action:` text), or `None`."""
    previous = "\n".join(f"Step {i}: {h}" for i, h in enumerate(req.history, 1)) or "None"
    return (
        "Please generate the next move according to the UI screenshot, instruction and "
        f"previous actions.\n\nInstruction: {req.instruction}\n\nPrevious actions:\n{previous}"
    )


def gui_owl_agent() -> StyleSpec:
    base = PromptSpec(
        user_text="", system=AGENT_SYSTEM, image_first=False, max_new_tokens=2048,
        resize=GUI_OWL_RESIZE,
    )  # fmt: skip

    def build(req: StepRequest) -> PromptSpec:
        return replace(base, user_text=agent_user_text(req))

    return agent_style(build, Convention.REL1000, "gui-owl-computer-use")


def gui_owl_15() -> ModelCard:
    def native_text(req: StepRequest) -> str:
        return with_history(req.instruction, req)

    base = PromptSpec(
        user_text="", system=GROUNDING_SYSTEM, max_new_tokens=2048, resize=GUI_OWL_RESIZE
    )
    native = style(native_text, base, parse_gui_owl, Convention.REL1000)
    return native_only_card(
        native,
        name="gui-owl-1.5",
        title="GUI-Owl-1.5 (2B / 4B / 8B / 32B, Instruct and Thinking)",
        family="gui_owl_1_5",
        checkpoint="mPLUG/GUI-Owl-1.5-8B-Instruct",
        status=_STATUS,
        packages=("transformers", "qwen-vl-utils"),
        hf_loader="qwen3_vl",
        aliases=(
            "mPLUG/GUI-Owl-1.5-2B-Instruct",
            "mPLUG/GUI-Owl-1.5-4B-Instruct",
            "mPLUG/GUI-Owl-1.5-8B-Think",
            "mPLUG/GUI-Owl-1.5-32B-Instruct",
            "mPLUG/GUI-Owl-1.5-32B-Think",
        ),
        notes="<tool_call> computer_use left_click with coordinate [x, y] on 0..1000.",
        agent=gui_owl_agent(),
    )
