"""DeepSeek-VL2 (tiny / small / full): `<|det|>[[x1,y1,x2,y2]]<|/det|>` on a 0..999 grid."""

from __future__ import annotations

from medspot.adapters.base import Convention, StepRequest
from medspot.adapters.card import ModelCard, PromptSpec
from medspot.adapters.cards import upstream_parsers, upstream_prompts
from medspot.adapters.cards.common import instruction_text, simple_parser, style, with_history
from medspot.adapters.cards.harness_agent import harness_agent_style

__all__ = ["INSTALL_HINT", "deepseek_vl2"]

INSTALL_HINT = (
    "DeepSeek-VL2 needs the deepseek_vl2 package from the deepseek-ai/DeepSeek-VL2 repository "
    "(clone it and pip install -e .); it is not on PyPI and pins torch 2.2.1 and "
    "transformers 4.38.2, so use a separate environment."
)

_VARIANTS = {
    "deepseek-vl2": ("deepseek-ai/deepseek-vl2", "DeepSeek-VL2"),
    "deepseek-vl2-small": ("deepseek-ai/deepseek-vl2-small", "DeepSeek-VL2-Small"),
    "deepseek-vl2-tiny": ("deepseek-ai/deepseek-vl2-tiny", "DeepSeek-VL2-Tiny"),
}


def deepseek_vl2(name: str = "deepseek-vl2") -> ModelCard:
    checkpoint, title = _VARIANTS[name]

    def native_text(req: StepRequest) -> str:
        # The hf backend puts `<image>\n` in front (the deepseek_vl2 conversation format).
        return f"<|ref|>{with_history(req.instruction, req)}<|/ref|>."

    upstream_text = instruction_text(upstream_prompts.deepseek)
    native = PromptSpec(user_text="", max_new_tokens=64, keep_special_tokens=True)
    upstream = PromptSpec(user_text="", max_new_tokens=20)
    return ModelCard(
        name=name,
        title=title,
        family="deepseek_vl2",
        checkpoint=checkpoint,
        backends=("openai", "hf"),
        native=style(native_text, native, simple_parser(Convention.REL999), Convention.REL999),
        upstream=style(upstream_text, upstream, upstream_parsers.deepseek, Convention.REL1),
        upstream_preset="upstream-a",
        status="Prompt texts and parsers tested offline; the deepseek_vl2 package and a GPU "
        "are needed to run it.",
        packages=("deepseek_vl2",),
        hf_loader="deepseek_vl2",
        trust_remote_code=True,
        install_hint=INSTALL_HINT,
        notes="Box on 0..999 (the authors' parse_ref_bbox divides by 999); centre scored.",
        agent=harness_agent_style(PromptSpec(user_text="")),
    )
