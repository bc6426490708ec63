"""The contract between the hf adapter and a loaded model: `GenItem` in, `GenOut` out, through a
`Runner` that the adapter's single worker thread calls with batches."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medspot.adapters.card import PromptSpec

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

__all__ = ["GenItem", "GenOut", "Runner"]


@dataclass(frozen=True)
class GenItem:
    """One request for the model: the card's prompt, the image as sent, the temperature."""

    spec: PromptSpec
    image: PILImage
    image_path: Path
    temperature: float | None
    # abs_resized: the size the answer is divided by; the processor must keep it (imagecheck)
    expect_size: tuple[int, int] | None = None


@dataclass(frozen=True)
class GenOut:
    text: str
    input_tokens: int
    output_tokens: int


class Runner:
    """A loaded model. `generate` runs on one worker thread, never concurrently."""

    batchable = False
    info: dict[str, Any]
    pixel_bounds: tuple[int, int] | None = None  # the checkpoint's (min, max) pixels, if known

    def generate(self, items: Sequence[GenItem]) -> list[GenOut]:
        raise NotImplementedError
