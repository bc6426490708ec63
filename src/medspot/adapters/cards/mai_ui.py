"""MAI-UI (Tongyi Lab; 2B, 8B released, 32B reported, on Qwen3-VL): one card, the sizes are its
checkpoints.

Grounding, from Tongyi-MAI/MAI-UI `evaluation/grounding/eval_server.py` (the served evaluation
that produced the published ScreenSpot-Pro numbers; `eval_local.py`'s `models/MAI_UI.py` says
the same): a system message asking for `<grounding_think>` reasoning and `{"coordinate": [x,y]}`
inside `<answer>`, ending with `## Input instruction`; the user message is the instruction and a
newline, then the image; the screenshot is smart-resized (factor 32, 16 x 16 x 4 ..
6,553,600 pixels) and sent as PNG; the coordinate is read on a 0..1000 grid (`/ 1000.0`). The
repository's own `src/mai_grounding_agent.py` divides by 999 instead (`SCALE_FACTOR`): the
difference is 0.1% of the screen; the card follows the evaluation scripts.

Agent mode, from `src/mai_naivigation_agent.py` and `src/prompt.py`: the system prompt
`MAI_MOBILE_SYS_PROMPT` (a `mobile_use` tool, `<thinking>` then `<tool_call>`), the goal alone
in a user message, the model's earlier answers as assistant turns, then the screenshot in a user
message of its own; coordinates on a 0..999 grid (`SCALE_FACTOR = 999`). Read by the live format
"mai-ui" (`medspot.live.agents.formats.mai_ui`).
"""

from __future__ import annotations

import re
from dataclasses import replace

from medspot.adapters.base import Convention, StepRequest
from medspot.adapters.card import ModelCard, ParsedAnswer, PromptSpec, ResizeSpec, StyleSpec
from medspot.adapters.cards.common import native_only_card, style, with_history
from medspot.adapters.cards.harness_agent import agent_style
from medspot.adapters.parsing import anchored_answer

__all__ = [
    "AGENT_SYSTEM",
    "GROUNDING_SYSTEM",
    "MAI_UI_RESIZE",
    "mai_ui",
    "mai_ui_agent",
    "parse_mai_grounding",
]

MAI_UI_RESIZE = ResizeSpec(factor=32, min_pixels=16 * 16 * 4, max_pixels=6553600)

# evaluation/grounding/eval_server.py SYSTEM_PROMPT (the first line ends with a space).
GROUNDING_SYSTEM = """You are a GUI grounding agent. 
## Task
Given a screenshot and the user's grounding instruction. Your task is to accurately locate a UI element based on the user's instructions.
First, you should carefully examine the screenshot and analyze the user's instructions,  translate the user's instruction into a effective reasoning process, and then provide the final coordinate.
## Output Format
Return a json object with a reasoning process in <grounding_think></grounding_think> tags, a [x,y] format coordinate within <answer></answer> XML tags:
<grounding_think>...</grounding_think>
<answer>
{"coordinate": [x,y]}
</answer>
## Input instruction
"""  # noqa: E501, W291

# src/prompt.py MAI_MOBILE_SYS_PROMPT (after its `.strip()`).
AGENT_SYSTEM = """You are a GUI agent. You are given a task and your action history, with screenshots. You need to perform the next action to complete the task.

## Output Format
For each function call, return the thinking process in <thinking> </thinking> tags, and a json object with function name and arguments within <tool_call></tool_call> XML tags:
```
<thinking>
...
</thinking>
<tool_call>
{"name": "mobile_use", "arguments": <args-json-object>}
</tool_call>
```

## Action Space

{"action": "click", "coordinate": [x, y]}
{"action": "long_press", "coordinate": [x, y]}
{"action": "type", "text": ""}
{"action": "swipe", "direction": "up or down or left or right", "coordinate": [x, y]} # "coordinate" is optional. Use the "coordinate" if you want to swipe a specific UI element.
{"action": "open", "text": "app_name"}
{"action": "drag", "start_coordinate": [x1, y1], "end_coordinate": [x2, y2]}
{"action": "system_button", "button": "button_name"} # Options: back, home, menu, enter
{"action": "wait"}
{"action": "terminate", "status": "success or fail"}
{"action": "answer", "text": "xxx"} # Use escape characters \\', \\", and \\n in text part to ensure we can parse the text in normal python string format.


## Note
- Write a small plan and finally summarize your next action (with its target element) in one sentence in <thinking></thinking> part.
- Available Apps: `["Camera","Chrome","Clock","Contacts","Dialer","Files","Settings","Markor","Tasks","Simple Draw Pro","Simple Gallery Pro","Simple SMS Messenger","Audio Recorder","Pro Expense","Broccoli APP","OSMand","VLC","Joplin","Retro Music","OpenTracks","Simple Calendar Pro"]`.
You should use the `open` action to open the app as possible as you can, because it is the fast way to open the app.
- You must follow the Action Space strictly, and return the correct json object within <thinking> </thinking> and <tool_call></tool_call> XML tags."""  # noqa: E501

_ANSWER = re.compile(r"<answer>(.*?)(?:</answer>|$)", re.DOTALL | re.IGNORECASE)

_STATUS = (
    "Prompt texts and parsers tested offline; a tiny random Qwen3-VL runs the hf path on CPU "
    "and the test server the served path. Real weights need a GPU (not run here)."
)


def _answer_span(text: str) -> tuple[int, int] | None:
    found = list(_ANSWER.finditer(text))
    return found[-1].span(1) if found else None


def parse_mai_grounding(
    text: str, sent: tuple[int, int], original: tuple[int, int]
) -> ParsedAnswer:
    """The point inside the last `<answer>` (its reasoning may hold other numbers); without
    one, the first pair of the answer."""
    return anchored_answer(text, Convention.REL1000, sent, original, anchor=_answer_span)


def mai_ui_agent() -> StyleSpec:
    base = PromptSpec(
        user_text="",
        system=AGENT_SYSTEM,
        image_first=False,
        image_turn_alone=True,
        max_new_tokens=2048,  # the agent's runtime_conf max_tokens
    )

    def build(req: StepRequest) -> PromptSpec:
        return replace(base, user_text=req.instruction, earlier=req.history)

    return agent_style(build, Convention.REL999, "mai-ui")


def mai_ui() -> ModelCard:
    def native_text(req: StepRequest) -> str:
        return with_history(req.instruction, req) + "\n"

    base = PromptSpec(
        user_text="",
        system=GROUNDING_SYSTEM,
        image_first=False,
        image_format="png",
        max_new_tokens=256,
        resize=MAI_UI_RESIZE,
    )
    native = style(native_text, base, parse_mai_grounding, Convention.REL1000)
    return native_only_card(
        native,
        name="mai-ui",
        title="MAI-UI (2B / 8B / 32B)",
        family="mai_ui",
        checkpoint="Tongyi-MAI/MAI-UI-8B",
        status=_STATUS,
        packages=("transformers", "qwen-vl-utils"),
        hf_loader="qwen3_vl",
        aliases=("Tongyi-MAI/MAI-UI-2B",),
        notes='<answer>{"coordinate": [x,y]}</answer> on 0..1000 (the evaluation scripts; '
        "the repository's agent code divides by 999).",
        agent=mai_ui_agent(),
    )
