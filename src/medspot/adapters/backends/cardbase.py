"""What every card adapter does whatever its backend: one owner for the card, its prompt style
and convention, the re-ask when an answer holds no point, the `Prediction` built from the last
answer, and `describe()`.

A backend subclasses `CardAdapter` and implements only generation: `_prepare` (the image as the
backend sends it) and `_generate` (one call to the model), plus what it adds to `describe()`
(`_describe_backend`) and, where it has prices, `_cost`.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from medspot.adapters.backends.imageprep import ImagePrep
from medspot.adapters.base import Convention, Prediction, StepRequest, Usage, note_request
from medspot.adapters.card import (
    ModelCard,
    PromptSpec,
    PromptStyle,
    StyleSpec,
    prompt_record,
    with_sent_size,
)

__all__ = ["CardAdapter", "Generation", "SentImage", "data_url_image"]


@dataclass(frozen=True)
class SentImage:
    """The screenshot as a backend sends it: `payload` is the backend's own form of it."""

    payload: Any
    sent_size: tuple[int, int]
    resized: bool
    meta: Mapping[str, Any] = field(default_factory=dict)


async def data_url_image(images: ImagePrep, request: StepRequest, spec: PromptSpec) -> SentImage:
    """The screenshot as a chat API takes it: a data URL of the bytes `images` prepares for
    `spec` (read, resized and encoded off the event loop)."""
    image = await asyncio.to_thread(
        images.prepare, request.image_path, request.image_size, spec.resize, spec.image_format
    )
    return SentImage(
        image.data_url(), image.sent_size, image.resized, {"image_reencoded": image.reencoded}
    )


@dataclass(frozen=True)
class Generation:
    """One answer of the model: its text, tokens (None: not reported), flags and call facts."""

    text: str
    usage: Usage | None = None
    flags: tuple[str, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)


class CardAdapter(ABC):
    """A model card asked through one backend (the `Adapter` protocol)."""

    backend: ClassVar[str]
    max_concurrency: int
    counts_requests: ClassVar[bool] = True  # notes each request it sends (`note_request`)

    def __init__(self, card: ModelCard, style: PromptStyle, checkpoint: str) -> None:
        self.card = card
        self.style_name = style
        self.spec: StyleSpec = card.style(style)
        self.name = card.name
        self.convention: Convention = self.spec.convention
        self.checkpoint = checkpoint

    # -- what a backend implements -----------------------------------------------------------
    @abstractmethod
    async def _prepare(self, request: StepRequest, spec: PromptSpec) -> SentImage:
        """The screenshot of `request`, prepared for sending."""

    @abstractmethod
    async def _generate(
        self, spec: PromptSpec, image: SentImage, temperature: float | None, seed: int
    ) -> Generation:
        """One call to the model; a failed call raises `ModelCallError`."""

    @abstractmethod
    def _describe_backend(self) -> dict[str, Any]:
        """What this backend adds to `describe()`."""

    def _cost(self, usage: Usage | None) -> float | None:
        """The price of a prediction's tokens (None: unpriced)."""
        return None

    # -- the Adapter protocol ----------------------------------------------------------------
    async def predict(self, request: StepRequest) -> Prediction:
        spec = self.spec.build(request)
        image = await self._prepare(request, spec)
        spec = with_sent_size(spec, image.sent_size)
        tries = 1 + max(0, spec.retries_on_no_point)
        usage_in = usage_out = 0
        have_usage = False
        latency = 0.0
        for attempt in range(tries):
            temperature = spec.temperature if attempt == 0 else spec.retry_temperature
            t0 = time.perf_counter()
            note_request()  # each try and re-ask is a request the model's server receives
            answer = await self._generate(spec, image, temperature, request.seed)
            latency += time.perf_counter() - t0
            if answer.usage is not None:
                have_usage = True
                usage_in += answer.usage.input_tokens
                usage_out += answer.usage.output_tokens
            parsed = self.spec.parse(answer.text, image.sent_size, request.image_size)
            if parsed.point is not None:
                break
        usage = Usage(usage_in, usage_out) if have_usage else None
        cost = self._cost(usage)
        meta = {**answer.meta, "latency_s": round(latency, 4), "attempts": attempt + 1}
        meta.update(image.meta)
        return Prediction(
            raw_text=answer.text,
            point=parsed.point,
            extra_points=parsed.extra_points,
            flags=(*parsed.flags, *answer.flags),
            sent_size=image.sent_size if image.resized else None,
            usage=usage,
            cost_usd=cost,
            prompt=prompt_record(spec),
            meta=meta,
        )

    def describe(self) -> dict[str, Any]:
        head: dict[str, Any] = {
            "name": self.card.name,
            "kind": "model",
            "backend": self.backend,
            "title": self.card.title,
            "family": self.card.family,
            "checkpoint": self.checkpoint,
            "convention": str(self.convention),
            "prompt_style": str(self.style_name),
        }
        return {**head, **self._describe_backend(), "card_status": self.card.status}
