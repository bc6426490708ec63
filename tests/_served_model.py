"""What the test server answers when the docs' commands ask a served model: a stand-in for
the model the request names (`SeenRequest.model`, the card's checkpoint), in that model's own
answer syntax and coordinate convention.

A request about one of `medspot check-model`'s screens (its instruction names the button) is
answered with the button's centre, as a model that reads its screen right would; any other
request with a fixed point, so that runs are complete and scored (as misses, mostly). Models
not listed answer in the text form `(x, y)` on 0..1000.
"""

from __future__ import annotations

import json

from medspot.commands.check_model_fit import SCREENS, CheckScreen
from medspot.testing.openai_server import SeenRequest

__all__ = ["answer"]

_DEFAULT_POINT = (0.5, 0.5)  # normalised, for requests that are not check-model's


def _screen(req: SeenRequest) -> CheckScreen | None:
    return next((s for s in SCREENS if s.instruction in req.text), None)


def answer(req: SeenRequest) -> str:
    """The answer of the model `req.model` to `req`."""
    screen = _screen(req)
    x, y = (screen.target.x, screen.target.y) if screen else _DEFAULT_POINT
    sent = req.image.size if req.image else (1000, 1000)
    name = req.model.lower()
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
