"""The harness's agent format for the general models (GPT-4o-mini, GPT-5, Gemma 3, Llama 3.2
Vision, Mistral, DeepSeek-VL2, any `openai:NAME`): `Thought: ...` then `Action: ...` with calls
of the documented text form (docs/live/agents.md "Action format": click, double_click, right_click,
drag, scroll, type, key, done, infeasible; `tool(name, {...})` when tools are offered),
coordinates in the card's declared convention
(0..1000 for the named cards). The harness's choice: these models have no GUI action format of
their own. Pure.

The thought is the `Thought:` text; the calls are read from the last `Action:` part (from the
whole answer when it has none, flagged `malformed_answer` if nothing is found there either).
The memory of an earlier answer is its thought and its action part, on one line each.
"""

from __future__ import annotations

import re

from medspot.adapters.parsing import clean_text
from medspot.live.agents.answer_reader import UNSUPPORTED, Frame, ParsedAction, named_action
from medspot.live.agents.calls import find_calls
from medspot.live.agents.formats.reading import MALFORMED, AgentFormat, AgentReading, collect

__all__ = ["TEXT_FORM", "TEXT_FORM_CALLS", "read_text_form", "text_form_memory"]

SOURCE = "text"
TEXT_FORM_CALLS = frozenset(
    {"click", "double_click", "right_click", "drag", "scroll", "type", "key", "done", "infeasible",
     "tool"}
)  # fmt: skip
_ACTION = re.compile(r"Action\s*:", re.IGNORECASE)
_THOUGHT = re.compile(r"Thought\s*:\s*(.+?)(?=\n\s*Action\s*:|$)", re.IGNORECASE | re.DOTALL)


def _parts(text: str) -> tuple[str | None, str | None]:
    m = _THOUGHT.search(text)
    thought = m.group(1).strip() if m else None
    found = list(_ACTION.finditer(text))
    action = text[found[-1].end() :].strip() if found else None
    return thought or None, action


def read_text_form(text: str, frame: Frame) -> AgentReading:
    cleaned, _ = clean_text(text)
    thought, action = _parts(cleaned)
    calls = find_calls(action if action is not None else cleaned, set(TEXT_FORM_CALLS))
    if not calls:
        if action and re.search(r"[A-Za-z_]\w*\s*\(", action):
            return collect([ParsedAction(None, SOURCE, (UNSUPPORTED,))], thought)
        return AgentReading((), thought, (MALFORMED,))
    return collect([named_action(c, frame, SOURCE) for c in calls], thought)


def text_form_memory(text: str) -> str:
    cleaned, _ = clean_text(text)
    thought, action = _parts(cleaned)
    lines = []
    if thought:
        lines.append(f"Thought: {' '.join(thought.split())}")
    lines.append(f"Action: {' '.join((action or cleaned).split())}")
    return "\n".join(lines)


TEXT_FORM = AgentFormat(
    name="text",
    read=read_text_form,
    memory=text_form_memory,
    summary="the harness's choice: Thought:/Action: with the documented text form",
)
