"""What an agent-mode answer reader gives back (`AgentReading`), the description of one agent
format (`AgentFormat`), and the rules every format shares (pure).

Several actions in one answer (UI-TARS's actions separated by blank lines, several
`<tool_call>` blocks of Qwen, a pyautogui snippet, CogAgent's TYPE that clicks its box first):
they are all read, in order, and executed one per turn by `ModelAgent` (the later ones without
asking the model again, as the models' own harnesses run them). Reading stops at the first
ending (`Done` / `Infeasible`; what follows is dropped and flagged) and at the first call that
cannot be executed (unreadable arguments, an action the environments do not offer, a wait):
the actions before it are kept, the rest dropped, so nothing is ever run out of the order the
model wrote. An answer with no executable action is a no-action with a flag, never a guessed
click.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from medspot.live.agents.answer_reader import Frame, ParsedAction
from medspot.live.core.actions import ENDINGS, LiveAction

__all__ = [
    "AFTER_ENDING",
    "MALFORMED",
    "NO_ACTION",
    "SEVERAL",
    "STOPPED",
    "WAIT",
    "AgentFormat",
    "AgentReading",
    "collect",
]

# Flags an AgentReading may carry (besides answer_reader's unsupported_action, bad_action_args).
NO_ACTION = "no_action"  # the answer holds no action at all
MALFORMED = "malformed_answer"  # the answer is not in the format (no Action:, bad tool JSON)
SEVERAL = "several_actions"  # more than one action: executed in order, one per turn
AFTER_ENDING = "actions_after_ending_dropped"
STOPPED = "actions_after_unreadable_dropped"
WAIT = "wait"  # the model asked to wait: nothing is executed, the next screen is shown


@dataclass(frozen=True)
class AgentReading:
    """The actions of one answer in screenshot pixels, in order (an ending, if any, last), the
    model's own thought where its format has one, and flags."""

    actions: tuple[LiveAction, ...]
    thought: str | None = None
    flags: tuple[str, ...] = ()

    @property
    def first(self) -> LiveAction | None:
        return self.actions[0] if self.actions else None


Reader = Callable[[str, Frame], AgentReading]
Memory = Callable[[str], str]


@dataclass(frozen=True)
class AgentFormat:
    """One agent action format: `read` turns an answer into actions; `memory` gives what the
    model's own harness keeps of an earlier answer in the prompt's history (its raw answer,
    its action line, its grounded operation...)."""

    name: str
    read: Reader
    memory: Memory
    summary: str


def collect(parsed: Iterable[ParsedAction], thought: str | None = None) -> AgentReading:
    """The shared rules: stop after an ending or at an unexecutable call; flag the rest."""
    actions: list[LiveAction] = []
    flags: list[str] = []
    items = list(parsed)
    for i, p in enumerate(items):
        flags.extend(f for f in p.flags if f not in flags)
        rest = items[i + 1 :]
        if p.action is None:
            if rest:
                flags.append(STOPPED)
            break
        actions.append(p.action)
        if isinstance(p.action, ENDINGS):
            if rest:
                flags.append(AFTER_ENDING)
            break
    if not items:
        flags.append(NO_ACTION)
    if len(actions) > 1:
        flags.append(SEVERAL)
    return AgentReading(tuple(actions), thought, tuple(dict.fromkeys(flags)))
