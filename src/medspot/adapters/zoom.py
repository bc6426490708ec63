"""The zoom-in track (`medspot eval --zoom K`): after the model's answer, ask it again on a crop
of the screenshot around that point, K passes in all, and map the last answer back to the full
screen. Any adapter that reads the screenshot can be zoomed (every model card, `ocr`).

Pass 1 is the full screenshot. Pass k (k >= 2) is a window of `crop^(k-1)` of the screenshot's
width and height (never under `MIN_SIDE` pixels), centred on the previous pass's point and
shifted to lie inside the image; it is cut from the original pixels, saved as a PNG of its own
and asked as an ordinary step whose screenshot is that PNG (the card prepares it as it prepares
any screenshot: its own resize, its own prompt, its own convention). Its answer, normalised to
the crop, is mapped back: x = (x0 + px * w) / W. A pass with no readable point keeps the point
of the pass before it (flagged `zoom_fallback`); a first pass with no point is the step's
answer (no prediction).

Every pass is a model call of its own, given as data (`ZoomPass`: its crop, answer, tokens and
cost) to the store of passes the runner keeps for the steps it asks (`passes_kept`, a
`PassStore`): the runner journals each as it is answered in the run folder's
`zoom_passes.jsonl` and hands back the passes a resumed run answered before. A step's record in
`predictions.jsonl` carries the answer of its last pass with the tokens and cost of all its
passes. A retried or resumed step reuses the passes already answered (the same step, pass and
crop) instead of paying for them again. This module writes and reads no run folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from medspot.adapters.base import Adapter, Convention, Prediction, StepRequest, Usage
from medspot.adapters.parsing import OUT_OF_IMAGE
from medspot.errors import ConfigError, DataError
from medspot.geometry import Point
from medspot.limits import MAX_ZOOM_PASSES

__all__ = [
    "DEFAULT_CROP",
    "MIN_SIDE",
    "ZOOM_FALLBACK",
    "PassStore",
    "PixelBox",
    "ZoomAdapter",
    "ZoomPass",
    "ZoomSpec",
    "crop_window",
    "map_back",
    "passes_kept",
    "zoomable",
]

DEFAULT_CROP = 0.5  # each pass looks at half the width and height of the pass before
MIN_SIDE = 32  # pixels: no crop is narrower or lower than this
ZOOM_FALLBACK = "zoom_fallback"  # a later pass read no point: the earlier pass's point is kept

PixelBox = tuple[int, int, int, int]  # x0, y0, x1, y1 in pixels of the original


@dataclass(frozen=True)
class ZoomSpec:
    """`passes` model calls per step (1: no zoom), each later one on a window `crop` times the
    width and height of the one before."""

    passes: int
    crop: float = DEFAULT_CROP

    def __post_init__(self) -> None:
        if not 1 <= self.passes <= MAX_ZOOM_PASSES:
            raise ConfigError(f"--zoom {self.passes}: must be from 1 to {MAX_ZOOM_PASSES} passes")
        if not 0.0 < self.crop < 1.0:
            raise ConfigError(f"--zoom-crop must be between 0 and 1 (exclusive), not {self.crop}")

    @classmethod
    def of(cls, passes: int, crop: float | None = None) -> ZoomSpec:
        """`passes` passes with `crop` (None: `DEFAULT_CROP`)."""
        return cls(passes, DEFAULT_CROP if crop is None else crop)

    @property
    def multi_pass(self) -> bool:
        return self.passes > 1

    def as_dict(self) -> dict[str, Any]:
        """What run.json records (`RunInfo.zoom`)."""
        return {"passes": self.passes, "crop": self.crop}


@dataclass(frozen=True)
class ZoomPass:
    """One pass of a step, as data: which pass (1: the full screenshot), on which window of the
    original, the image asked and what the model answered. Journaled by the runner
    (`runfolder.journal.ZoomPassRecord.of_pass`; read back by `.as_pass`)."""

    step_uid: str
    task_uid: str
    number: int
    crop: PixelBox
    image_rel: str  # the image asked: the step's, "#crop=x0,y0,x1,y1" added on later passes
    image_size: tuple[int, int] | None  # the size of the image asked (the window's)
    # the model's answer, its point mapped back (normalised to the full screenshot); `prompt`
    # the text asked (the step's instruction where the adapter kept none)
    answer: Prediction
    latency_s: float | None = None

    @property
    def point(self) -> Point | None:
        return self.answer.point


class PassStore(Protocol):
    """Where the passes of the steps being asked are kept: those answered before (a resumed
    run's, an earlier try's of a retried step) and each new one as it is answered."""

    def answered(self, step_uid: str, number: int) -> ZoomPass | None:
        """Pass `number` of the step, answered already (None: not yet)."""
        ...

    def add(self, one: ZoomPass) -> ZoomPass:
        """Keep a pass just answered; returns it as kept (as a journal reads it back)."""
        ...


class _Kept:
    """The passes of one adapter's steps in memory: the store of a `ZoomAdapter` asked where
    no runner keeps them (`passes_kept`)."""

    def __init__(self) -> None:
        self._passes: dict[tuple[str, int], ZoomPass] = {}

    def answered(self, step_uid: str, number: int) -> ZoomPass | None:
        return self._passes.get((step_uid, number))

    def add(self, one: ZoomPass) -> ZoomPass:
        self._passes[(one.step_uid, one.number)] = one
        return one


# The store of the steps being asked (the runner's `passes_kept()` block around each step and
# its retries); tasks started inside copy the context, and so use the same store.
_STORE: ContextVar[PassStore | None] = ContextVar("medspot_zoom_passes", default=None)


@contextmanager
def passes_kept(store: PassStore) -> Iterator[None]:
    """Inside the block, a `ZoomAdapter` takes the passes answered before from `store` and
    gives it each new one."""
    token = _STORE.set(store)
    try:
        yield
    finally:
        _STORE.reset(token)


def crop_window(point: Point, size: tuple[int, int], fraction: float) -> PixelBox:
    """The window of `fraction` of the screenshot's width and height (at least `MIN_SIDE`
    pixels, at most the screenshot) centred on `point` and shifted inside the image."""
    w, h = size
    cw = min(w, max(MIN_SIDE, round(w * fraction)))
    ch = min(h, max(MIN_SIDE, round(h * fraction)))
    cx = min(max(point.x, 0.0), 1.0) * w
    cy = min(max(point.y, 0.0), 1.0) * h
    x0 = min(max(round(cx - cw / 2), 0), w - cw)
    y0 = min(max(round(cy - ch / 2), 0), h - ch)
    return x0, y0, x0 + cw, y0 + ch


def map_back(point: Point, box: PixelBox, size: tuple[int, int]) -> Point:
    """A point normalised to the window `box` as a point normalised to the full screenshot."""
    x0, y0, x1, y1 = box
    w, h = size
    return Point((x0 + point.x * (x1 - x0)) / w, (y0 + point.y * (y1 - y0)) / h)


def zoomable(adapter: Adapter) -> bool:
    """Whether an adapter reads the screenshot (a model card, `ocr`): the baselines that answer
    without looking (random, center, oracle, replay) cannot be asked about a crop."""
    reads = getattr(adapter, "reads_screen", None)
    if isinstance(reads, bool):
        return reads
    return bool(adapter.describe().get("kind") == "model")


def _crop_file(req: StepRequest, box: PixelBox, folder: Path) -> Path:
    """The window `box` of the request's screenshot as a PNG in `folder` (written once)."""
    from PIL import Image, UnidentifiedImageError

    key = hashlib.sha256(f"{req.image_path}|{box}".encode()).hexdigest()[:20]
    out = folder / f"{key}.png"
    if out.exists():
        return out
    try:
        with Image.open(req.image_path) as im:
            part = im.convert("RGB").crop(box)
    except (UnidentifiedImageError, OSError, ValueError) as e:
        raise DataError(f"cannot crop image {req.image_path}: {e}") from None
    # steps sharing a screenshot and a first answer ask the same window at once: each writes
    # a file of its own and renames it over the same name (the same bytes either way)
    fd, name = tempfile.mkstemp(dir=folder, suffix=".part")
    with os.fdopen(fd, "wb") as f:
        part.save(f, format="PNG")
    os.replace(name, out)
    return out


class ZoomAdapter:
    """An adapter asked `spec.passes` times per step, each later time on a crop."""

    def __init__(self, inner: Adapter, spec: ZoomSpec) -> None:
        if not zoomable(inner):
            raise ConfigError(
                f"--zoom asks the model again on a crop of the screenshot; {inner.name!r} does "
                "not read the screenshot (use a model card or ocr)"
            )
        self.inner = inner
        self.spec = spec
        self.name = inner.name
        self.convention: Convention = inner.convention
        self.max_concurrency = inner.max_concurrency
        # each pass is the inner adapter's request, noted by its backend
        self.counts_requests: bool = getattr(inner, "counts_requests", False)
        self._own = _Kept()  # where no runner keeps the passes (`passes_kept`)
        self._crops: Path | None = None  # made at the first crop: building touches no disk

    def _store(self) -> PassStore:
        store = _STORE.get()
        return store if store is not None else self._own

    def _crop_folder(self) -> Path:
        if self._crops is None:
            self._crops = Path(tempfile.mkdtemp(prefix="medspot-zoom-"))
        return self._crops

    # -- one pass ----------------------------------------------------------------------------
    async def _pass(self, req: StepRequest, k: int, box: PixelBox) -> ZoomPass:
        """Pass `k` of `req` on window `box`, its point normalised to the full screenshot
        (reused when this step's pass `k` on `box` was answered already)."""
        store = self._store()
        done = store.answered(req.step_uid, k)
        if done is not None and done.crop == box:
            return done
        full = box == (0, 0, *req.image_size)
        asked = req if full else await self._crop_request(req, box)
        t0 = time.perf_counter()
        pred = await self.inner.predict(asked)
        latency = time.perf_counter() - t0
        point = None
        if pred.point is not None:
            point = pred.point if full else map_back(pred.point, box, req.image_size)
        answer = replace(pred, point=point, extra_points=(), prompt=pred.prompt or req.instruction)
        one = ZoomPass(
            req.step_uid, req.task_uid, k, box, asked.image_rel, asked.image_size, answer, latency
        )
        return store.add(one)

    async def _crop_request(self, req: StepRequest, box: PixelBox) -> StepRequest:
        path = await asyncio.to_thread(_crop_file, req, box, self._crop_folder())
        x0, y0, x1, y1 = box
        return replace(
            req,
            image_rel=f"{req.image_rel}#crop={x0},{y0},{x1},{y1}",
            image_path=path,
            image_size=(x1 - x0, y1 - y0),
        )

    # -- the Adapter protocol ----------------------------------------------------------------
    async def predict(self, request: StepRequest) -> Prediction:
        w, h = request.image_size
        box: PixelBox = (0, 0, w, h)
        one = await self._pass(request, 1, box)
        passes = [one]
        last = one
        flags: list[str] = []
        for k in range(2, self.spec.passes + 1):
            if last.point is None:
                break
            box = crop_window(last.point, request.image_size, self.spec.crop ** (k - 1))
            one = await self._pass(request, k, box)
            passes.append(one)
            if one.point is None:
                flags.append(ZOOM_FALLBACK)
                break
            last = one
        final = last.point
        flags = [f for f in last.answer.flags if f != OUT_OF_IMAGE] + flags
        if final is not None and not (0.0 <= final.x <= 1.0 and 0.0 <= final.y <= 1.0):
            flags.append(OUT_OF_IMAGE)
        return Prediction(
            raw_text=last.answer.raw_text,
            point=final,
            flags=tuple(dict.fromkeys(flags)),
            usage=_usage(passes),
            cost_usd=_cost(passes),
            prompt=_first_prompt(passes, request),
            meta={"zoom_passes": len(passes), "zoom_crops": [list(p.crop) for p in passes]},
        )

    def describe(self) -> dict[str, Any]:
        return {**self.inner.describe(), "zoom": self.spec.as_dict()}

    async def aclose(self) -> None:
        try:
            await self.inner.aclose()
        finally:
            if self._crops is not None:
                with contextlib.suppress(OSError):
                    shutil.rmtree(self._crops)
                self._crops = None


def _usage(passes: Iterable[ZoomPass]) -> Usage | None:
    used = [p.answer.usage for p in passes if p.answer.usage is not None]
    if not used:
        return None
    return Usage(sum(u.input_tokens for u in used), sum(u.output_tokens for u in used))


def _cost(passes: Iterable[ZoomPass]) -> float | None:
    costs = [p.answer.cost_usd for p in passes if p.answer.cost_usd is not None]
    return sum(costs) if costs else None


def _first_prompt(passes: list[ZoomPass], req: StepRequest) -> str:
    """The prompt recorded for the step: its instruction and the passes made (the journal
    keeps the hash of the prompt text; every pass asks the same instruction)."""
    crops = "; ".join(",".join(str(v) for v in p.crop) for p in passes)
    return f"{req.instruction}\n\n[zoom passes on windows] {crops}"
