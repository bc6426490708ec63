"""GUI-Owl-1.5's desktop `computer_use` function calls (X-PLUG/MobileAgent
`Mobile-Agent-v3.5/computer_use/utils.py` SYSTEM_PROMPT's "Response format": `Action: <short
imperative>` then one `<tool_call>\\n{"name": "computer_use", "arguments": {...}}\\n</tool_call>`,
as `extract_tool_calls` and `run_gui_owl_1_5_for_pc.py` read and execute them). Pure.

The tool is Qwen's `computer_use` (`key`, `type`, `mouse_move`, `left_click`,
`left_click_drag`, `right_click`, `middle_click`, `double_click`, `triple_click`, `scroll`,
`hscroll`, `wait`, `terminate`, `answer`, `interact`), so the answer is read by the Qwen
computer-use reader (`medspot.live.agents.formats.qwen.read_computer_use`, every rule there);
the coordinates are the card's 0..1000 grid (the harness scales them by / 1000). `interact`
(a blocking window for the user) executes nothing, flagged unsupported.

The memory of an earlier answer is its `Action:` text: the harness summarises earlier steps as
`Step k: <Action text>` in "Previous actions" (`build_messages`).
"""

from __future__ import annotations

from medspot.live.agents.formats.qwen import qwen3_memory, read_computer_use
from medspot.live.agents.formats.reading import AgentFormat

__all__ = ["GUI_OWL_COMPUTER_USE"]

GUI_OWL_COMPUTER_USE = AgentFormat(
    name="gui-owl-computer-use",
    read=read_computer_use,
    memory=qwen3_memory,
    summary="Action: then <tool_call> computer_use JSON on a 0..1000 grid; terminate(status)",
)
