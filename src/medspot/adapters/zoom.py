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

Every pass is a model call of its own: each is journaled as it completes in the run folder's
`zoom_passes.jsonl` (its crop, answer, tokens and cost), and a step's record in
`predictions.jsonl` carries the answer of its last pass with the tokens and cost of all its
passes. A retried or resumed step reuses the passes already answered (the same step, pass and
crop) instead of paying for them again.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from medspot.adapters.base import Adapter, Convention, Prediction, StepRequest, Usage
from medspot.adapters.parsing import OUT_OF_IMAGE
from medspot.errors import ConfigError, DataError
from medspot.geometry import Point
from medspot.limits import MAX_ZOOM_PASSES
from medspot.runfolder.journal import Journal, JournalRecord, prompt_hash, read_journal

__all__ = [
    "DEFAULT_CROP",
    "MIN_SIDE",
    "ZOOM_FALLBACK",
    "ZoomAdapter",
    "ZoomPassRecord",
    "ZoomSpec",
    "crop_window",
    "map_back",
    "read_passes",
    "zoomable",
]

log = logging.getLogger(__name__)

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


class ZoomPassRecord(JournalRecord):
    """One pass of a step in `zoom_passes.jsonl`: the call's fields (`point` mapped back to the
    full screenshot, normalised) and which pass, on which window of the original."""

    zoom_pass: int
    crop: tuple[int, int, int, int]  # x0, y0, x1, y1 in pixels of the original


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


def read_passes(path: Path) -> dict[tuple[str, int], ZoomPassRecord]:
    """The passes journaled in `path`, the latest per (step, pass)."""
    out: dict[tuple[str, int], ZoomPassRecord] = {}
    for rec in read_journal(path):
        data = rec.model_dump()
        if "zoom_pass" not in data or "crop" not in data:
            continue
        try:
            one = ZoomPassRecord.model_validate(data)
        except ValueError:
            log.warning("%s: ignoring a pass record without a readable crop", path)
            continue
        out[(one.step, one.zoom_pass)] = one
    return out


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

    def __init__(self, inner: Adapter, spec: ZoomSpec, passes_journal: Path | None = None) -> None:
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
        self.calls = 0  # model calls made by this process (passes reused from the journal: 0)
        # opened at the first pass: building the adapter touches nothing on disk
        self._journal_path = passes_journal
        self._journal: Journal | None = None
        self._done: dict[tuple[str, int], ZoomPassRecord] | None = None
        self._crops: Path | None = None

    def _passes_done(self) -> dict[tuple[str, int], ZoomPassRecord]:
        if self._done is None:
            path = self._journal_path
            self._done = read_passes(path) if path is not None else {}
        return self._done

    def _crop_folder(self) -> Path:
        if self._crops is None:
            self._crops = Path(tempfile.mkdtemp(prefix="medspot-zoom-"))
        return self._crops

    def _record(self, rec: ZoomPassRecord) -> None:
        self._passes_done()[(rec.step, rec.zoom_pass)] = rec
        if self._journal_path is None:
            return
        if self._journal is None:
            self._journal = Journal(self._journal_path)
        self._journal.append(rec)

    # -- one pass ----------------------------------------------------------------------------
    async def _pass(
        self, req: StepRequest, k: int, box: PixelBox
    ) -> tuple[ZoomPassRecord, Point | None]:
        """Pass `k` of `req` on window `box`: its record and its point normalised to the full
        screenshot (reused when this step's pass `k` on `box` is already journaled)."""
        done = self._passes_done().get((req.step_uid, k))
        if done is not None and tuple(done.crop) == box and done.error is None:
            point = Point(*done.point) if done.point is not None else None
            return done, point
        full = box == (0, 0, *req.image_size)
        asked = req if full else await self._crop_request(req, box)
        t0 = time.perf_counter()
        pred = await self.inner.predict(asked)
        latency = time.perf_counter() - t0
        self.calls += int(pred.meta.get("attempts", 1)) if pred.meta else 1
        point = None
        if pred.point is not None:
            point = pred.point if full else map_back(pred.point, box, req.image_size)
        usage = pred.usage
        rec = ZoomPassRecord(
            step=req.step_uid,
            task=req.task_uid,
            image_path=asked.image_rel,
            image_size=asked.image_size,
            prompt_hash=prompt_hash(pred.prompt or req.instruction),
            raw_text=pred.raw_text,
            point=(point.x, point.y) if point is not None else None,
            flags=list(pred.flags),
            sent_size=pred.sent_size,
            latency_s=round(latency, 6),
            input_tokens=usage.input_tokens if usage else None,
            output_tokens=usage.output_tokens if usage else None,
            cost_usd=pred.cost_usd,
            time=datetime.now(UTC).isoformat(timespec="milliseconds"),
            zoom_pass=k,
            crop=box,
        )
        self._record(rec)
        return rec, point

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
        rec, point = await self._pass(request, 1, box)
        records = [rec]
        last, final = rec, point
        flags: list[str] = []
        for k in range(2, self.spec.passes + 1):
            if final is None:
                break
            box = crop_window(final, request.image_size, self.spec.crop ** (k - 1))
            rec, point = await self._pass(request, k, box)
            records.append(rec)
            if point is None:
                flags.append(ZOOM_FALLBACK)
                break
            last, final = rec, point
        flags = [f for f in last.flags if f != OUT_OF_IMAGE] + flags
        if final is not None and not (0.0 <= final.x <= 1.0 and 0.0 <= final.y <= 1.0):
            flags.append(OUT_OF_IMAGE)
        return Prediction(
            raw_text=last.raw_text,
            point=final,
            flags=tuple(dict.fromkeys(flags)),
            usage=_usage(records),
            cost_usd=_cost(records),
            prompt=_first_prompt(records, request),
            meta={"zoom_passes": len(records), "zoom_crops": [list(r.crop) for r in records]},
        )

    def describe(self) -> dict[str, Any]:
        return {**self.inner.describe(), "zoom": self.spec.as_dict()}

    async def aclose(self) -> None:
        try:
            await self.inner.aclose()
        finally:
            if self._journal is not None:
                self._journal.close()
                self._journal = None
            if self._crops is not None:
                with contextlib.suppress(OSError):
                    shutil.rmtree(self._crops)
                self._crops = None


def _usage(records: Iterable[ZoomPassRecord]) -> Usage | None:
    rs = [r for r in records if r.input_tokens is not None or r.output_tokens is not None]
    if not rs:
        return None
    return Usage(sum(r.input_tokens or 0 for r in rs), sum(r.output_tokens or 0 for r in rs))


def _cost(records: Iterable[ZoomPassRecord]) -> float | None:
    costs = [r.cost_usd for r in records if r.cost_usd is not None]
    return sum(costs) if costs else None


def _first_prompt(records: list[ZoomPassRecord], req: StepRequest) -> str:
    """The prompt recorded for the step: its instruction and the passes made (the journal
    keeps the hash of the prompt text; every pass asks the same instruction)."""
    crops = "; ".join(",".join(str(v) for v in r.crop) for r in records)
    return f"{req.instruction}\n\n[zoom passes on windows] {crops}"
