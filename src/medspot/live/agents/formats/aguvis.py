"""Aguvis-7B's planning answers (xlang-ai/aguvis, src/aguvis/serve/cli.py self-plan mode): an
inner monologue (`Thought: ...`, `Action: <low-level instruction>`) to the `all` recipient, then
pyautogui code to the `os` recipient, coordinates as fractions of the screen. Decoded without
special tokens the turn marker between them reads `assistantos` (xlang-ai's own
computer-agent-arena-hub Aguvis agent, utils.py `parse_aguvis_response`). Pure.

- Every pyautogui call is read in order (`answer_reader.pyautogui_actions`): moveTo + dragTo is
  one drag, click / doubleClick / rightClick, write, press / hotkey, scroll.
- Endings: `terminate(status='success')` (bare or as `computer.` / `mobile.terminate`) is
  `Done`, `status='failure'` is `Infeasible`; the arena agent's special codes DONE / FAIL too.
  Aguvis's released system prompts list no terminate for desktops (constants.py lists the
  mobile plugins only), so which ending the model writes on a desktop is unverified here.
- The memory of an earlier answer is its low-level instruction (the `Action:` line), as the
  arena agent keeps `Step i: <instruction>` for the prompt's "Previous actions".
"""

from __future__ import annotations

import re

from medspot.adapters.parsing import clean_text
from medspot.live.agents.answer_reader import UNSUPPORTED, Frame, ParsedAction, pyautogui_actions
from medspot.live.agents.formats.reading import MALFORMED, AgentFormat, AgentReading, collect

__all__ = ["AGUVIS", "aguvis_memory", "read_aguvis"]

_THOUGHT = re.compile(
    r"(?:Observation|Thought)\s*:\s*(.+?)(?=\n\s*(?:Thought|Action)\s*:|\n\s*assistant|"
    r"\n\s*pyautogui\.|$)",
    re.IGNORECASE | re.DOTALL,
)
_ACTION = re.compile(r"^\s*Action\s*:\s*(.+)$", re.IGNORECASE | re.MULTILINE)
_PLUGIN = re.compile(r"(?<![\w.])(?:mobile|browser|computer)\.\w+\s*\(")


def _thought(text: str) -> str | None:
    parts = [m.group(1).strip() for m in _THOUGHT.finditer(text)]
    joined = " ".join(p for p in parts if p)
    return joined or None


def read_aguvis(text: str, frame: Frame) -> AgentReading:
    cleaned, _ = clean_text(text)
    thought = _thought(cleaned)
    found = pyautogui_actions(cleaned, frame)
    if found is None:
        if _PLUGIN.search(cleaned):
            return collect([ParsedAction(None, "aguvis", (UNSUPPORTED,))], thought)
        return AgentReading((), thought, (MALFORMED,))
    if not found:  # pointer moves only
        return collect([ParsedAction(None, "aguvis", (UNSUPPORTED,))], thought)
    return collect(found, thought)


def aguvis_memory(text: str) -> str:
    cleaned, _ = clean_text(text)
    m = _ACTION.search(cleaned)
    if m:
        return m.group(1).strip()
    code = [ln.strip() for ln in cleaned.splitlines() if ln.strip().startswith("pyautogui.")]
    return "; ".join(code) if code else cleaned.strip()


AGUVIS = AgentFormat(
    name="aguvis",
    read=read_aguvis,
    memory=aguvis_memory,
    summary="inner monologue then pyautogui code (fractions); terminate(status=...)",
)
