"""Holo2 (H Company; 4B, 8B, 30B-A3B, 235B-A22B on Qwen3-VL): one card, the sizes are its
checkpoints (the same localization prompt and 0..1000 answer at every size).

The localization prompt is H Company's (the Holo1.5 model card's `get_chat_messages` and
H Company's "Element localization" guide, hub.hcompany.ai/element-localization): a JSON schema
of a click on a 0..1000 grid of the image seen, then the target. The model answers
`{"x": 352, "y": 348}`. Thinking is switched off for localization (the guide's
`chat_template_kwargs: {"enable_thinking": false}`); a `<think>` block that appears anyway is
stripped by the parser. No pre-resize: the answer is relative to the image the model saw, and
the model card resizes with its own processor's bounds, which the processor applies anyway.
"""

from __future__ import annotations

from medspot.adapters.base import Convention, StepRequest
from medspot.adapters.card import ModelCard, PromptSpec
from medspot.adapters.cards.common import simple_parser, style, with_history

__all__ = ["CLICK_SCHEMA", "LOCALIZATION_PROMPT", "holo2"]

# `str(ClickCoordinates.model_json_schema())` of the Holo1.5 card's pydantic model
# (x, y: int, ge=0, le=1000, "The x coordinate, normalized between 0 and 1000."), as its
# f-string puts it into the prompt (a Python dict's repr); the tests rebuild it with pydantic.
CLICK_SCHEMA = (
    "{'properties': {'x': {'description': 'The x coordinate, normalized between 0 and 1000.', "
    "'maximum': 1000, 'minimum': 0, 'title': 'X', 'type': 'integer'}, 'y': {'description': "
    "'The y coordinate, normalized between 0 and 1000.', 'maximum': 1000, 'minimum': 0, "
    "'title': 'Y', 'type': 'integer'}}, 'required': ['x', 'y'], 'title': 'ClickCoordinates', "
    "'type': 'object'}"
)
LOCALIZATION_PROMPT = (
    "Localize an element on the GUI image according to the provided target and output a click "
    "position.\n * You must output a valid JSON following the format: {schema}\n Your target is:"
)

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
        chat_template_kwargs=(("enable_thinking", False),),
    )
    native = style(native_text, base, simple_parser(Convention.REL1000), Convention.REL1000)
    return ModelCard(
        name="holo2",
        title="Holo2 (4B / 8B / 30B-A3B / 235B-A22B)",
        family="holo2",
        checkpoint="Hcompany/Holo2-8B",
        backends=("openai", "hf"),
        native=native,
        upstream=native,  # no MedSPOT authors' script: upstream is the native prompt
        upstream_preset="upstream-c",
        status=_STATUS,
        packages=("transformers",),
        hf_loader="qwen_vl_auto",
        aliases=("Hcompany/Holo2-4B", "Hcompany/Holo2-30B-A3B", "Hcompany/Holo2-235B-A22B"),
        notes='JSON {"x": .., "y": ..} on 0..1000 of the image seen; thinking off.',
    )
