"""API models: GPT-4o-mini, GPT-5, and generic cards for any OpenAI-compatible model."""

from __future__ import annotations

from medspot.adapters.base import Convention, StepRequest
from medspot.adapters.card import ModelCard, ParsedAnswer, PromptSpec, StyleSpec
from medspot.adapters.cards import upstream_parsers, upstream_prompts
from medspot.adapters.cards.common import (
    harness_parser,
    harness_style,
    simple_parser,
    sized_text,
    style,
)
from medspot.adapters.cards.harness_agent import harness_agent_style
from medspot.errors import ConfigError

__all__ = [
    "DEFAULT_TEMPLATES",
    "GENERIC_CONVENTIONS",
    "gpt4o_mini",
    "gpt5",
    "make_generic_card",
]

_GPT_STATUS = (
    "Prompt texts and parsers tested offline (models.md Tests lines, the authors' reader). "
    "Not called against the API here (no network)."
)


def _upstream_gpt(base: PromptSpec) -> StyleSpec:
    """evaluate_gpt*.py: text before image, original size PNG, their six-pattern reader."""

    text = sized_text(upstream_prompts.gpt)
    return style(text, base, upstream_parsers.gpt, Convention.ABS_ORIGINAL)


def gpt4o_mini() -> ModelCard:
    native = PromptSpec(
        user_text="",
        image_first=True,
        image_format="png",
        detail="high",
        temperature=0.0,
        max_new_tokens=64,
    )
    upstream = PromptSpec(
        user_text="",
        image_first=False,
        image_format="png",
        detail="high",
        temperature=0.0,
        max_new_tokens=1024,
    )
    return ModelCard(
        name="gpt-4o-mini",
        title="GPT-4o-mini",
        family="openai",
        checkpoint="gpt-4o-mini",
        backends=("openai",),
        native=harness_style(native),
        upstream=_upstream_gpt(upstream),
        upstream_preset="upstream-b",
        status=_GPT_STATUS,
        packages=("openai",),
        notes="Pin a dated snapshot (--model-id) and record it; Chat Completions.",
        agent=harness_agent_style(native),
    )


def gpt5() -> ModelCard:
    native = PromptSpec(
        user_text="",
        image_first=True,
        image_format="png",
        detail="high",
        temperature=None,
        max_new_tokens=4096,
        api="responses",
        reasoning_effort="low",
    )
    # The authors' script: Responses API defaults (no reasoning control, no output cap).
    upstream = PromptSpec(
        user_text="",
        image_first=False,
        image_format="png",
        detail=None,
        temperature=None,
        max_new_tokens=32768,
        api="responses",
    )
    return ModelCard(
        name="gpt-5",
        title="GPT-5",
        family="openai",
        checkpoint="gpt-5",
        backends=("openai",),
        native=harness_style(native),
        upstream=_upstream_gpt(upstream),
        upstream_preset="upstream-b",
        status=_GPT_STATUS + " GPT-5 accepts only the default temperature; an answer cut off by "
        "the token limit arrives empty and is no prediction.",
        packages=("openai",),
        notes="Pin a dated snapshot, e.g. gpt-5-2025-08-07; reasoning effort is recorded.",
        aliases=("gpt-5-2025-08-07",),
        agent=harness_agent_style(native),
    )


GENERIC_CONVENTIONS = (Convention.REL1000, Convention.REL1, Convention.ABS_SENT)

DEFAULT_TEMPLATES: dict[Convention, str] = {
    Convention.REL1000: "{instruction}\nGive the single point to click for this instruction as "
    "(x, y), with x and y integers from 0 (left/top edge) to 1000 (right/bottom edge) of the "
    "image. Reply with (x, y) only.",
    Convention.REL1: "{instruction}\nGive the single point to click for this instruction as "
    "(x, y), with x and y decimals from 0 (left/top edge) to 1 (right/bottom edge) of the "
    "image. Reply with (x, y) only.",
    Convention.ABS_SENT: "{instruction}\nThe image is {width}x{height} pixels. Give the single "
    "point to click for this instruction as (x, y), with x and y integer pixel coordinates of "
    "this image, (0, 0) being its top-left corner. Reply with (x, y) only.",
}


def _fill(template: str, req: StepRequest) -> str:
    w, h = req.image_size
    return (
        template.replace("{width}", str(w))
        .replace("{height}", str(h))
        .replace("{instruction}", req.instruction)
    )


def make_generic_card(
    model: str, convention: Convention = Convention.REL1000, prompt_template: str | None = None
) -> ModelCard:
    """A card for any OpenAI-compatible model name (`openai:NAME`).

    The template holds `{instruction}` and optionally `{width}` `{height}` (the image as sent,
    which for generic cards is the original screenshot). Conventions: rel1000 (default, the
    models.md 1.4 prompt), rel1, abs_sent."""
    convention = Convention(convention)
    if convention not in GENERIC_CONVENTIONS:
        allowed = ", ".join(c.value for c in GENERIC_CONVENTIONS)
        raise ConfigError(f"generic models support the conventions {allowed}, not {convention}")
    if not model.strip():
        raise ConfigError("a generic model needs a model name after 'openai:'")
    template = prompt_template if prompt_template is not None else DEFAULT_TEMPLATES[convention]
    if "{instruction}" not in template:
        raise ConfigError("a prompt template must contain {instruction}")
    base = PromptSpec(user_text="", image_first=True, image_format="png", max_new_tokens=64)

    def text(req: StepRequest) -> str:
        return _fill(template, req)

    def parse(text_: str, sent: tuple[int, int], original: tuple[int, int]) -> ParsedAnswer:
        if convention is Convention.REL1000:
            if prompt_template is None:
                return harness_parser(text_, sent, original)
            return simple_parser(Convention.REL1000)(text_, sent, original)
        if convention is Convention.REL1:
            return simple_parser(Convention.REL1, rel1_drift=True)(text_, sent, original)
        return simple_parser(Convention.ABS_SENT)(text_, sent, original)

    spec = style(text, base, parse, convention)
    return ModelCard(
        name=f"openai:{model}",
        title=model,
        family="generic",
        checkpoint=model,
        backends=("openai",),
        native=spec,
        upstream=spec,
        upstream_preset="upstream-b",
        status="Generic card: no model-specific prompt or authors' script; upstream = native.",
        packages=("openai",),
        extra={"template": template},
        agent=harness_agent_style(base, convention),
    )
