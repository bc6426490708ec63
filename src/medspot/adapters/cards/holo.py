"""Holo2 (H Company; 4B, 8B, 30B-A3B on Qwen3-VL): one card, the sizes are its checkpoints (the
same localization prompt and 0..1000 answer at every size).

From H Company's own code, hcompai/hai-cookbook `holo2/holo_2_localization_huggingface.ipynb`
(and `holo2/holo_2_localization_hosted_api.ipynb`, the same prompt over an OpenAI client):
`get_chat_messages` asks, image first, a JSON click on a 0..1000 grid of the image seen
(`ClickCoordinates`) with the prompt text exactly as its f-string writes it (continuation lines
indented by five spaces, the function's own indentation), then a newline and the target. The
model answers `{"x": 352, "y": 348}`; the notebook draws it at x / 1000 of the image it sent.

Holo2 thinks by default and its chat template's switch is `thinking`, not Qwen3's
`enable_thinking`: the notebook renders `apply_chat_template(..., thinking=False)` ("For
localization we set thinking to False"), `holo2/deploy_with_vllm.md` sends
`{"chat_template_kwargs": {"thinking": false}}`, and vLLM's Holo2 reasoning parser
(vllm-project/vllm `vllm/reasoning/holo2_reasoning_parser.py`) reads `thinking` (default True).
A `<think>` block that appears anyway is stripped by the parser. No pre-resize: the answer is
relative to the image the model saw; the notebook resizes with its processor's own bounds,
which the processor applies anyway.
"""

from __future__ import annotations

from medspot.adapters.base import Convention, StepRequest
from medspot.adapters.card import ModelCard, PromptSpec
from medspot.adapters.cards.common import native_only_card, simple_parser, style, with_history

__all__ = ["CHAT_TEMPLATE_KWARGS", "CHECKPOINTS", "CLICK_SCHEMA", "LOCALIZATION_PROMPT", "holo2"]

# The Holo2 checkpoints H Company lists (the cookbook's notebooks and vLLM guide, the Holo2
# collection): the first is the card's default.
CHECKPOINTS = ("Hcompany/Holo2-8B", "Hcompany/Holo2-4B", "Hcompany/Holo2-30B-A3B")

# `str(ClickCoordinates.model_json_schema())` of the notebook's pydantic model (x, y: int,
# ge=0, le=1000, "The x coordinate, normalized between 0 and 1000."), as its f-string puts it
# into the prompt (a Python dict's repr); the tests rebuild it with pydantic.
CLICK_SCHEMA = (
    "{'properties': {'x': {'description': 'The x coordinate, normalized between 0 and 1000.', "
    "'maximum': 1000, 'minimum': 0, 'title': 'X', 'type': 'integer'}, 'y': {'description': "
    "'The y coordinate, normalized between 0 and 1000.', 'maximum': 1000, 'minimum': 0, "
    "'title': 'Y', 'type': 'integer'}}, 'required': ['x', 'y'], 'title': 'ClickCoordinates', "
    "'type': 'object'}"
)
# `get_chat_messages`' triple-quoted f-string: its continuation lines keep the five spaces of
# the function body's indentation plus one.
LOCALIZATION_PROMPT = (
    "Localize an element on the GUI image according to the provided target and output a click "
    "position.\n     * You must output a valid JSON following the format: {schema}\n"
    "     Your target is:"
)
# Holo2's chat-template switch (thinking on by default).
CHAT_TEMPLATE_KWARGS: tuple[tuple[str, bool], ...] = (("thinking", False),)

_STATUS = (
    "Prompt text and parser tested offline; a tiny random Qwen3-VL runs the hf path on CPU and "
    "the test server the served path. Real weights need a GPU (not run here)."
)


def holo2() -> ModelCard:
    prompt = LOCALIZATION_PROMPT.replace("{schema}", CLICK_SCHEMA)

    def native_text(req: StepRequest) -> str:
        return f"{prompt}\n{with_history(req.instruction, req)}"

    base = PromptSpec(
        user_text="",
        max_new_tokens=256,
        chat_template_kwargs=CHAT_TEMPLATE_KWARGS,
    )
    native = style(native_text, base, simple_parser(Convention.REL1000), Convention.REL1000)
    default, *others = CHECKPOINTS
    return native_only_card(
        native,
        name="holo2",
        title="Holo2 (4B / 8B / 30B-A3B)",
        family="holo2",
        checkpoint=default,
        status=_STATUS,
        packages=("transformers",),
        hf_loader="qwen_vl_auto",
        aliases=tuple(others),
        notes='JSON {"x": .., "y": ..} on 0..1000 of the image seen; thinking off '
        "(chat template `thinking=False`).",
    )
