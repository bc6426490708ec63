"""The harness's agent prompt for models without a GUI action format of their own (GPT-4o-mini,
GPT-5 over chat / Responses, Gemma 3, Llama 3.2 Vision, Mistral, DeepSeek-VL2, `openai:NAME`):
the task's goal, the model's own earlier steps, and the documented text action form
(docs/live/agents.md "Action format") in the card's coordinate convention. This is the harness's
choice, not any model's; its answers are read by the live format "text"
(`medspot.live.agents.formats.textform`).

Also the pieces every agent style shares: `agent_style` (a StyleSpec whose prompt takes the
model's earlier answers from `StepRequest.history`, as the live agent puts them there) and
`no_point` (agent answers are read by the live reader, not by a point parser).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from medspot.adapters.base import Convention, StepRequest
from medspot.adapters.card import ParsedAnswer, PromptSpec, StyleSpec
from medspot.errors import ConfigError

__all__ = [
    "AGENT_MAX_TOKENS",
    "HARNESS_AGENT_TEMPLATE",
    "agent_style",
    "harness_agent_style",
    "harness_agent_text",
    "no_point",
]

AGENT_MAX_TOKENS = 1024  # a thought and an action (OSWorld's UI-TARS agent asks 1000)

HARNESS_AGENT_TEMPLATE = """You are operating clinical imaging software through its screen, \
like a careful human user. Your task:
{goal}

{history}
The screenshot shows the application now. Decide the single next action.

Actions ({units}):
click(x, y)
double_click(x, y)
right_click(x, y)
drag(x1, y1, x2, y2)    press at (x1, y1), move, release at (x2, y2)
scroll(x, y, dy)        the mouse wheel at (x, y), dy notches: > 0 down, < 0 up
type("text")            type into the focused field (click the field first)
key("Enter")            press a key or a chord, such as key("ctrl+a")
done()                  the task is complete
infeasible("reason")    the task cannot be done in this application (say why); change nothing

Answer in exactly this form:
Thought: <your reasoning, briefly>
Action: <one action>"""

_UNITS = {
    Convention.REL1000: "x and y are integers from 0 (left or top edge) to 1000 (right or bottom "
    "edge) of the screenshot",
    Convention.REL1: "x and y are decimals from 0 (left or top edge) to 1 (right or bottom edge) "
    "of the screenshot",
    Convention.ABS_SENT: "x and y are integer pixels of this {width}x{height} screenshot, (0, 0) "
    "being its top-left corner",
}


def no_point(text: str, sent: tuple[int, int], original: tuple[int, int]) -> ParsedAnswer:
    """The parser of agent styles: no point (the live format reader reads the answer)."""
    return ParsedAnswer(None)


def harness_agent_text(req: StepRequest, convention: Convention = Convention.REL1000) -> str:
    """The prompt: `req.instruction` is the goal, `req.history` the earlier steps' memories."""
    if convention not in _UNITS:
        raise ConfigError(f"the harness agent prompt has no wording for convention {convention}")
    w, h = req.image_size
    units = _UNITS[convention].replace("{width}", str(w)).replace("{height}", str(h))
    if req.history:
        steps = "\n".join(
            f"{i}. " + entry.replace("\n", "\n   ") for i, entry in enumerate(req.history, 1)
        )
        history = f"Your earlier steps (oldest first):\n{steps}\n"
    else:
        history = "You have not acted yet.\n"
    return (
        HARNESS_AGENT_TEMPLATE.replace("{goal}", req.instruction)
        .replace("{history}", history)
        .replace("{units}", units)
    )


def agent_style(
    build: Callable[[StepRequest], PromptSpec], convention: Convention, action_format: str
) -> StyleSpec:
    """An agent StyleSpec: its prompt builder, its convention, the live reader's name."""
    return StyleSpec(
        build=build, parse=no_point, convention=convention, action_format=action_format
    )


def harness_agent_style(base: PromptSpec, convention: Convention = Convention.REL1000) -> StyleSpec:
    """The harness agent prompt on `base` (the card's native request settings), read as the
    text form; never a re-ask (an ending holds no point)."""
    spec = replace(
        base,
        user_text="",
        max_new_tokens=max(base.max_new_tokens, AGENT_MAX_TOKENS),
        retries_on_no_point=0,
    )

    def build(req: StepRequest) -> PromptSpec:
        return replace(spec, user_text=harness_agent_text(req, convention))

    return agent_style(build, convention, "text")
