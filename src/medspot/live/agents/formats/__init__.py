"""The agent-mode action formats, one module per format (pure readers: answer text -> actions,
thought, ending; and what the model's own history keeps of an answer). A card's agent prompt
style names its format (`StyleSpec.action_format`); `get_format` finds it here.

Every format is read into the one action type of `medspot.live.core.actions`; the shared rules
(several actions, endings, malformed answers) are in `.reading`.
"""

from __future__ import annotations

from medspot.errors import ConfigError
from medspot.live.agents.formats.aguvis import AGUVIS
from medspot.live.agents.formats.cogagent import COGAGENT
from medspot.live.agents.formats.gui_owl import GUI_OWL_COMPUTER_USE
from medspot.live.agents.formats.mai_ui import MAI_UI
from medspot.live.agents.formats.qwen import QWEN3_COMPUTER_USE, QWEN25_COMPUTER_USE
from medspot.live.agents.formats.reading import AgentFormat, AgentReading
from medspot.live.agents.formats.textform import TEXT_FORM
from medspot.live.agents.formats.uitars import UI_TARS

__all__ = ["FORMATS", "AgentFormat", "AgentReading", "get_format"]

FORMATS: dict[str, AgentFormat] = {
    f.name: f
    for f in (
        UI_TARS,
        AGUVIS,
        QWEN25_COMPUTER_USE,
        QWEN3_COMPUTER_USE,
        COGAGENT,
        TEXT_FORM,
        MAI_UI,
        GUI_OWL_COMPUTER_USE,
    )
}


def get_format(name: str) -> AgentFormat:
    try:
        return FORMATS[name]
    except KeyError:
        known = ", ".join(sorted(FORMATS))
        raise ConfigError(f"no agent action format named {name!r} (known: {known})") from None
