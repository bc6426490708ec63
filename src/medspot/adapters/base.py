"""The adapter contract: a step request in, raw text and a point in normalised coordinates of the
original screenshot out.

An adapter never sees the annotation's target. It raises `TransientModelError` for failures
worth retrying (the runner retries with backoff) and `ModelCallError` for other failures of the
call; both are recorded as errors, never as misses. A model that answered with text holding no
point returns a `Prediction` with `point=None` (a `no_prediction` miss).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from medspot.adapters.options import AdapterOptions
from medspot.geometry import Point

if TYPE_CHECKING:
    from medspot.dataset.images import ImageStore
    from medspot.dataset.records import Dataset

__all__ = [
    "NON_FINITE_POINT",
    "Adapter",
    "AdapterContext",
    "Convention",
    "Prediction",
    "StepRequest",
    "Usage",
    "note_request",
    "requests_counted",
]


# the flag of an answer whose point is no finite number (its numbers overflowed): no point
NON_FINITE_POINT = "non_finite_point"


class Convention(StrEnum):
    """How a model's numbers map to the screenshot (models.md 1.1)."""

    REL1000 = "rel1000"  # integers 0..1000 over the image the model saw
    REL999 = "rel999"  # 0..999 grid
    REL1 = "rel1"  # fractions 0..1
    ABS_RESIZED = "abs_resized"  # pixels after the model's own resize (harness pre-resizes)
    ABS_ORIGINAL = "abs_original"  # pixels of the original screenshot
    ABS_SENT = "abs_sent"  # pixels of the image exactly as sent
    POINTER = "pointer"  # no text coordinates; a head returns rel1 points
    NORMALISED = "normalised"  # baselines: already normalised coordinates of the original


@dataclass(frozen=True, slots=True)
class StepRequest:
    """What a model is asked for one step. Never carries the target."""

    step_uid: str
    task_uid: str
    image_rel: str  # path relative to the dataset root, as annotated
    image_path: Path  # resolved absolute path
    image_size: tuple[int, int]  # (width, height) of the original screenshot
    instruction: str
    task_overview: str | None = None  # only in history modes
    history: tuple[str, ...] = ()  # earlier steps' context lines, in history modes
    seed: int = 0


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Prediction:
    """A model's answer to one step.

    `point` is normalised to the original screenshot (it may lie outside 0..1), or None when
    no point could be read. `extra_points` keeps other candidates for audit; `flags` notes
    things like a convention drift. `sent_size` is the size of the image sent when the adapter
    resized it. `prompt` is the text the model was given (its hash is journaled)."""

    raw_text: str | None
    point: Point | None
    extra_points: tuple[Point, ...] = ()
    flags: tuple[str, ...] = ()
    sent_size: tuple[int, int] | None = None
    usage: Usage | None = None
    cost_usd: float | None = None
    prompt: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AdapterContext:
    """What a registry factory may use to build an adapter.

    `dataset` is given for baselines that need it (`oracle`); model adapters must not read
    targets from it. `options` carries the adapter options (backend, base URLs, prompt style,
    ...); a plain mapping is validated into `AdapterOptions` here."""

    dataset: Dataset | None = None
    images: ImageStore | None = None
    seed: int = 0
    options: AdapterOptions = field(default_factory=AdapterOptions)

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", AdapterOptions.from_mapping(self.options))

    @classmethod
    def with_options(
        cls,
        options: Mapping[str, Any] | AdapterOptions | None = None,
        *,
        dataset: Dataset | None = None,
        images: ImageStore | None = None,
        seed: int = 0,
    ) -> AdapterContext:
        """A context whose options are given as a plain mapping (validated here; an unknown
        key is a `ConfigError` naming it)."""
        return cls(dataset, images, seed, AdapterOptions.from_mapping(options))


@runtime_checkable
class Adapter(Protocol):
    """What the runner needs from a model."""

    name: str
    convention: Convention
    max_concurrency: int  # how many calls it can take at once (1 for in-process models)

    async def predict(self, request: StepRequest) -> Prediction: ...

    def describe(self) -> dict[str, Any]:
        """The card and settings recorded in run.json (never secrets)."""
        ...

    async def aclose(self) -> None: ...


# The model requests of the step being asked (the runner's `requests_counted()` block, one per
# step and its retries): a backend notes each request it sends to its model, re-asks and zoom
# passes included, so that run.json's `calls` is what the server received. A list, so that
# tasks a backend starts (which copy the context) add to the same count.
_REQUESTS: ContextVar[list[int] | None] = ContextVar("medspot_model_requests", default=None)


def note_request() -> None:
    """A backend is sending one request to its model (counted by the enclosing
    `requests_counted()`, if any)."""
    box = _REQUESTS.get()
    if box is not None:
        box[0] += 1


@contextmanager
def requests_counted() -> Iterator[Callable[[], int]]:
    """Count the requests noted inside the block: yields a function giving the count so far."""
    box = [0]
    token = _REQUESTS.set(box)
    try:
        yield lambda: box[0]
    finally:
        _REQUESTS.reset(token)
