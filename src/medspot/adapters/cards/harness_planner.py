"""The harness's planner prompt (live `--planner MODEL --grounder CARD`): the planner is told
the goal and its own earlier steps and names the element it wants to act on in words; a
grounding card then finds that element with its own prompt. The harness's choice (no model has
a planner format of its own here), asked of any card through its native request settings
(image preparation, API, detail) with this text in place of its prompt. Its answers are read
by `medspot.live.agents.formats.planner`.
"""

from __future__ import annotations

from dataclasses import replace

from medspot.adapters.base import Convention, StepRequest
from medspot.adapters.card import PromptSpec, StyleSpec
from medspot.adapters.cards.harness_agent import AGENT_MAX_TOKENS, agent_style

__all__ = ["EARLIER_STEPS", "PLANNER_TEMPLATE", "planner_style", "planner_text"]

EARLIER_STEPS = "Your earlier steps (oldest first):"  # the heading of the planner's history

PLANNER_TEMPLATE = """You are operating clinical imaging software through its screen, \
like a careful human user. Your task:
{goal}

{history}
The screenshot shows the application now. Decide the single next action. Name the element you \
act on in words: another model will find it on the screen from your words alone, so describe \
it so that it cannot be mistaken: its visible text or label, its kind (button, field, list row, \
tab, icon, image) and where it is.

Actions:
click(element="...")
double_click(element="...")
right_click(element="...")
drag(start="...", end="...")    press on the first element or spot, release on the second
scroll(element="...", dy)       the mouse wheel over the element, dy notches: > 0 down, < 0 up
type("text")                    type into the focused field (click the field first)
key("Enter")                    press a key or a chord, such as key("ctrl+a")
done()                          the task is complete
infeasible("reason")            the task cannot be done in this application (say why); change \
nothing

Answer in exactly this form:
Thought: <your reasoning, briefly>
Action: <one action>"""


def planner_text(req: StepRequest) -> str:
    """The prompt: `req.instruction` is the goal, `req.history` the earlier steps' memories."""
    if req.history:
        steps = "\n".join(
            f"{i}. " + entry.replace("\n", "\n   ") for i, entry in enumerate(req.history, 1)
        )
        history = f"{EARLIER_STEPS}\n{steps}\n"
    else:
        history = "You have not acted yet.\n"
    return PLANNER_TEMPLATE.replace("{goal}", req.instruction).replace("{history}", history)


def planner_style(native: StyleSpec) -> StyleSpec:
    """The planner prompt on a card's native request settings (its own prompt text, system
    message, prefills and stop strings left out)."""

    def build(req: StepRequest) -> PromptSpec:
        spec = native.build(req)
        return replace(
            spec,
            user_text=planner_text(req),
            system=None,
            assistant_prefill=None,
            generation_prompt=None,
            stop=(),
            keep_special_tokens=False,
            earlier=(),
            max_new_tokens=max(spec.max_new_tokens, AGENT_MAX_TOKENS),
            retries_on_no_point=0,
        )

    return agent_style(build, Convention.NORMALISED, "planner")
