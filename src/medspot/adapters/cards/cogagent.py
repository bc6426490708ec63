"""CogAgent-9B-20241220: Action-Operation answers with a 0..1000 box."""

from __future__ import annotations

import re
from dataclasses import replace

from medspot.adapters.base import Convention, StepRequest
from medspot.adapters.card import ModelCard, ParsedAnswer, PromptSpec, StyleSpec
from medspot.adapters.cards import upstream_parsers, upstream_prompts
from medspot.adapters.cards.common import instruction_text, style
from medspot.adapters.cards.harness_agent import agent_style
from medspot.adapters.parsing import anchored_answer

__all__ = ["agent_prompt", "cogagent_9b", "native_prompt", "parse_native"]

PLATFORM = "WIN"  # CogAgent knows WIN, Mac and Mobile; the browser apps run like desktop apps
FORMAT = "(Answer in Action-Operation-Sensitive format.)"  # cli_demo.py's default format

_ANCHOR = re.compile(r"Grounded\s+Operation\s*:", re.IGNORECASE)


def native_prompt(req: StepRequest, platform: str = PLATFORM) -> str:
    """THUDM/CogAgent inference/cli_demo.py's query, exactly: `Task: {task}` + `\nHistory
    steps: ` + one `\n{index}. {step}\t{action}` per earlier step + `\n(Platform: WIN)\n` +
    the format string (no newline after it). A harness history line `Step k: ... -> clicked
    at (x, y)` gives the step before ` -> ` and the action after it (empty without one)."""
    task = req.instruction
    if req.task_overview:
        task = f"{req.task_overview} Current step: {req.instruction}"
    items = []
    for i, h in enumerate(req.history):
        step, _, action = h.partition(" -> ")
        items.append(f"\n{i}. {step}\t{action}")
    history = "".join(items)
    return f"Task: {task}\nHistory steps: {history}\n(Platform: {platform})\n{FORMAT}"


def agent_prompt(req: StepRequest, platform: str = PLATFORM) -> str:
    """cli_demo.py's query in agent mode: the goal as the task, and one `\n{index}. {grounded
    operation}\t{action}` per earlier answer (the live agent's memories of them, from 0)."""
    history = "".join(f"\n{i}. {h}" for i, h in enumerate(req.history))
    return f"Task: {req.instruction}\nHistory steps: {history}\n(Platform: {platform})\n{FORMAT}"


def _agent() -> StyleSpec:
    base = PromptSpec(user_text="", max_new_tokens=512)

    def build(req: StepRequest) -> PromptSpec:
        return replace(base, user_text=agent_prompt(req))

    return agent_style(build, Convention.REL1000, "cogagent")


def _anchor(text: str) -> tuple[int, int] | None:
    found = list(_ANCHOR.finditer(text))
    if not found:
        return None
    start = found[-1].end()
    end = text.find("\n", start)
    return (start, len(text) if end < 0 else end)


def parse_native(text: str, sent: tuple[int, int], original: tuple[int, int]) -> ParsedAnswer:
    """The box inside `Grounded Operation:` (not a Status box before it), centre / 1000."""
    return anchored_answer(text, Convention.REL1000, sent, original, anchor=_anchor)


def cogagent_9b() -> ModelCard:
    upstream_text = instruction_text(upstream_prompts.cogagent)
    native = PromptSpec(user_text="", max_new_tokens=256)
    upstream = PromptSpec(user_text="", max_new_tokens=256)
    return ModelCard(
        name="cogagent-9b",
        title="CogAgent-9B-20241220",
        family="cogagent",
        checkpoint="THUDM/cogagent-9b-20241220",
        backends=("openai", "hf"),
        native=style(native_prompt, native, parse_native, Convention.REL1000),
        upstream=style(upstream_text, upstream, upstream_parsers.cogagent, Convention.REL1000),
        upstream_preset="upstream-a",
        status="Prompt texts and parsers tested offline; remote code and generation need a GPU.",
        packages=("transformers",),
        hf_loader="cogagent",
        trust_remote_code=True,
        aliases=("zai-org/cogagent-9b-20241220",),
        notes="One user message with the image, no system prompt; bf16 needs about 29 GB.",
        agent=_agent(),
    )
