"""The Gymnasium spaces of a live environment.

Observation: `Dict(screen=Box(0, 255, (height, width, 3), uint8), goal=Text, instruction=Text)`
- the screenshot as RGB pixels, the task's goal, and (guided mode) the current step's
instruction ("" in agent mode). The text spaces' character set is printable ASCII plus every
character of the tasks' texts, so that every goal and instruction is inside the space.

Action: `ActionSpace`, any action text (the documented text form, `click(412, 233)`, read in
screenshot pixels by `answer_reader.parse_action`) or an action object of
`medspot.live.core.actions`. `sample()` is a text-form click at a uniformly random pixel.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any, TypeGuard, get_args

import numpy as np
from gymnasium import spaces

from medspot.errors import ConfigError
from medspot.live.core.actions import LiveAction
from medspot.live.core.tasks import LiveTask

__all__ = [
    "ACTION_TYPES",
    "ActionSpace",
    "is_action",
    "observation_space",
    "screen_size",
    "text_space",
]

ACTION_TYPES: tuple[type, ...] = get_args(LiveAction)


def is_action(x: object) -> TypeGuard[LiveAction]:
    """Whether `x` is an action object of `medspot.live.core.actions`."""
    return isinstance(x, ACTION_TYPES)


class ActionSpace(spaces.Space[Any]):
    """Action texts (str) and action objects; `sample()` clicks a random pixel (text form)."""

    def __init__(self, screen: tuple[int, int], seed: int | np.random.Generator | None = None):
        self.screen = (int(screen[0]), int(screen[1]))
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any | None = None, probability: Any | None = None) -> str:
        if mask is not None or probability is not None:
            raise ValueError("ActionSpace.sample takes no mask or probability")
        x = int(self.np_random.integers(self.screen[0]))
        y = int(self.np_random.integers(self.screen[1]))
        return f"click({x}, {y})"

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) or is_action(x)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ActionSpace) and other.screen == self.screen

    def __hash__(self) -> int:
        return hash(("medspot.ActionSpace", self.screen))

    def __repr__(self) -> str:
        return f"ActionSpace(text form or action objects, screen {self.screen[0]}x{self.screen[1]})"


def screen_size(tasks: Sequence[LiveTask], env: str) -> tuple[int, int]:
    """The one screenshot size (width, height) of `tasks` (their `start.viewport`)."""
    sizes = {(int(t.start.viewport[0]), int(t.start.viewport[1])) for t in tasks}
    if len(sizes) != 1:
        shown = ", ".join(f"{w}x{h}" for w, h in sorted(sizes)) or "none"
        raise ConfigError(
            f"{env}: a Gymnasium environment has one screen size, these tasks have {shown}; "
            "choose tasks of one viewport (tasks=[...])"
        )
    return sizes.pop()


def text_space(texts: Sequence[str]) -> spaces.Text:
    chars = set(string.printable)
    for t in texts:
        chars.update(t)
    return spaces.Text(
        max_length=max([1, *(len(t) for t in texts)]), min_length=0, charset=frozenset(chars)
    )


def observation_space(tasks: Sequence[LiveTask], screen: tuple[int, int]) -> spaces.Dict:
    width, height = screen
    texts = [t.instruction for t in tasks] + [s.instruction for t in tasks for s in t.steps]
    return spaces.Dict(
        {
            "screen": spaces.Box(0, 255, shape=(height, width, 3), dtype=np.uint8),
            "goal": text_space(texts),
            "instruction": text_space(texts),
        }
    )
