"""What the test server answers when the docs' commands ask a served model: a stand-in for
the model the request names (`SeenRequest.model`, the card's checkpoint), in that model's own
answer syntax and coordinate convention.

A request about one of `medspot check-model`'s screens (its instruction names the button) is
answered with the button's centre, as a model that reads its screen right would; any other
request with a fixed point, so that runs are complete and scored (as misses, mostly). The
grounding models added after the paper answer in their own syntax (`grounder_answer`); models
not listed answer in the text form `(x, y)` on 0..1000.

A request made with the harness planner prompt (`live run --planner MODEL`, whatever the model)
is answered as a planner: the first turn names an element in words, a later one (its earlier
steps are in the prompt) ends with `done()`.
"""

from __future__ import annotations

import json

from medspot.adapters.cards.harness_planner import EARLIER_STEPS, PLANNER_TEMPLATE
from medspot.commands.check_model_fit import SCREENS, CheckScreen
from medspot.testing.openai_server import SeenRequest

__all__ = ["answer", "grounder_answer"]

_DEFAULT_POINT = (0.5, 0.5)  # normalised, for requests that are not check-model's
# what only the planner prompt holds (the harness agent prompt opens with the same words)
_PLANNER_MARK = 'click(element="...")'
assert _PLANNER_MARK in PLANNER_TEMPLATE


def _screen(req: SeenRequest) -> CheckScreen | None:
    return next((s for s in SCREENS if s.instruction in req.text), None)


def grounder_answer(model: str, x: float, y: float, sent: tuple[int, int]) -> str | None:
    """The answer of a grounding model added after the paper (Holo2, UI-Venus-1.5, MAI-UI,
    GTA1 of July and of October, GUI-Owl-1.5) clicking the normalised point (x, y), in its own
    syntax and frame (`sent`: the size of the image it was sent); None for other models."""
    name = model.lower()
    gx, gy = round(x * 1000), round(y * 1000)
    if "holo2" in name:  # JSON on 0..1000 (H Company's localization prompt)
        return json.dumps({"x": gx, "y": gy})
    if "ui-venus" in name:  # [x,y] on 0..1000
        return f"[{gx},{gy}]"
    if "mai-ui" in name:  # reasoning, then the coordinate inside <answer>, on 0..1000
        return (
            "<grounding_think>The instruction names one control; it is the highlighted one."
            f'</grounding_think>\n<answer>\n{{"coordinate": [{gx},{gy}]}}\n</answer>'
        )
    if "gta1" in name:  # pixels of the smart-resized image it was sent
        px, py = round(x * sent[0]), round(y * sent[1])
        if "2507" in name or "hellokkme" in name:  # the July release: (x,y)
            return f"({px},{py})"
        # the October release on OpenCUA: OpenCUA's pyautogui call in a python block
        return f"```python\npyautogui.click(x={px}, y={py})\n```"
    if "gui-owl" in name:  # a computer_use left_click on the 1000x1000 screen
        call = {
            "name": "computer_use",
            "arguments": {"action": "left_click", "coordinate": [gx, gy]},
        }
        return f"<tool_call>\n{json.dumps(call)}\n</tool_call>"
    return None


def answer(req: SeenRequest) -> str:
    """The answer of the model `req.model` to `req`."""
    if _PLANNER_MARK in req.text:
        if EARLIER_STEPS in req.text:
            return "Thought: that was the step the task needed.\nAction: done()"
        return (
            "Thought: the first row of the list is what the task is about.\n"
            'Action: click(element="the first row of the list")'
        )
    screen = _screen(req)
    x, y = (screen.target.x, screen.target.y) if screen else _DEFAULT_POINT
    sent = req.image.size if req.image else (1000, 1000)
    name = req.model.lower()
    grounder = grounder_answer(req.model, x, y, sent)
    if grounder is not None:
        return grounder
    if "ui-tars" in name:  # pixels of the image sent (smart-resized), UI-TARS action syntax
        px, py = round(x * sent[0]), round(y * sent[1])
        return f"Thought: the target is there.\nAction: click(start_box='({px},{py})')"
    if "qwen2.5-vl" in name:  # a bbox in pixels of the image sent, as JSON
        w, h = (0.02, 0.02)
        if screen:
            x1, y1, x2, y2 = screen.box
            w = (x2 - x1) / screen.size[0] / 2
            h = (y2 - y1) / screen.size[1] / 2
        box = [round((x - w) * sent[0]), round((y - h) * sent[1]),
               round((x + w) * sent[0]), round((y + h) * sent[1])]  # fmt: skip
        return json.dumps([{"bbox_2d": box, "label": "target"}])
    return f"({x * 1000:.0f}, {y * 1000:.0f})"  # rel1000, e.g. gpt-4o-mini's native form
