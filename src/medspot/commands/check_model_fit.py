"""`medspot check-model`: is a model (card + backend + server) pointing in the frame we think?

A handful of synthetic screens (several sizes, one obvious labelled button each, at known
places) are asked through the same card and backend path as `eval`. Each answer is checked
against its button, and a least-squares line per axis, answer = scale * target + offset (in
normalised coordinates of the screen), shows a systematic error: a convention mistake such as
pixels read as 0..1000 gives a scale far from 1, a frame shift gives an offset.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medspot.adapters.base import Adapter, AdapterContext, StepRequest
from medspot.adapters.card import ResizeSpec
from medspot.adapters.options import AdapterOptions
from medspot.adapters.retry import CallFailed, RetryPolicy, call_with_retries
from medspot.commands.check_model_diagnose import Diagnosis, Observation, diagnose
from medspot.dataset.images import ImageStore
from medspot.geometry import Point

__all__ = [
    "SCREENS",
    "AxisFit",
    "CheckReport",
    "CheckScreen",
    "ScreenResult",
    "check_model",
    "fit_axis",
    "format_report",
    "render_screens",
    "run_check",
]

log = logging.getLogger(__name__)

SCALE_TOL = 0.15  # |scale - 1| allowed
OFFSET_TOL = 0.05  # |offset| allowed, as a fraction of the screen


@dataclass(frozen=True, slots=True)
class CheckScreen:
    """A synthetic screen: its size and its button's box in pixels (x1, y1, x2, y2)."""

    name: str
    size: tuple[int, int]
    box: tuple[int, int, int, int]
    label: str

    @property
    def target(self) -> Point:
        """The button's centre, normalised."""
        x1, y1, x2, y2 = self.box
        return Point((x1 + x2) / 2 / self.size[0], (y1 + y2) / 2 / self.size[1])

    @property
    def instruction(self) -> str:
        return f'Click the "{self.label}" button.'

    def contains(self, p: Point) -> bool:
        x1, y1, x2, y2 = self.box
        w, h = self.size
        return x1 / w <= p.x <= x2 / w and y1 / h <= p.y <= y2 / h


# Distinct sizes, buttons spread over both axes.
SCREENS: tuple[CheckScreen, ...] = (
    CheckScreen("check_1920x1080.png", (1920, 1080), (160, 90, 320, 150), "Save"),
    CheckScreen("check_1280x800.png", (1280, 800), (900, 600, 1100, 660), "Open"),
    CheckScreen("check_1366x768.png", (1366, 768), (560, 360, 800, 420), "Export"),
    CheckScreen("check_2560x1440.png", (2560, 1440), (2200, 120, 2440, 200), "Print"),
    CheckScreen("check_1024x768.png", (1024, 768), (60, 650, 240, 720), "Cancel"),
    CheckScreen("check_1600x900.png", (1600, 900), (1300, 780, 1500, 840), "Apply"),
)


def render_screens(folder: Path, screens: Sequence[CheckScreen] = SCREENS) -> list[Path]:
    """Paint each screen as a PNG into `folder`: a title bar, a panel and one blue button."""
    from PIL import Image, ImageDraw, ImageFont

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for s in screens:
        w, h = s.size
        im = Image.new("RGB", s.size, (236, 238, 241))
        d = ImageDraw.Draw(im)
        d.rectangle((0, 0, w, max(24, h // 30)), fill=(52, 58, 64))
        d.text((10, 4), "Viewer - check screen", fill=(255, 255, 255))
        d.rectangle((w // 20, h // 8, w // 4, h - h // 8), outline=(180, 184, 190), width=2)
        x1, y1, x2, y2 = s.box
        d.rounded_rectangle(s.box, radius=8, fill=(25, 110, 230), outline=(10, 60, 140), width=2)
        font = ImageFont.load_default(size=max(12, (y2 - y1) // 2))
        tw = d.textlength(s.label, font=font)
        d.text(
            ((x1 + x2 - tw) / 2, (y1 + y2) / 2),
            s.label,
            fill=(255, 255, 255),
            font=font,
            anchor="lm",
        )
        path = folder / s.name
        im.save(path)
        paths.append(path)
    return paths


@dataclass(frozen=True, slots=True)
class ScreenResult:
    screen: CheckScreen
    raw_text: str | None
    point: Point | None
    error: str | None = None
    sent_size: tuple[int, int] | None = None  # the image as sent, when the adapter resized it
    input_tokens: int | None = None  # as the server counted them

    @property
    def hit(self) -> bool:
        return self.point is not None and self.screen.contains(self.point)


@dataclass(frozen=True, slots=True)
class AxisFit:
    """answer = scale * target + offset, least squares; rmse of the residuals."""

    scale: float
    offset: float
    rmse: float
    n: int

    @property
    def ok(self) -> bool:
        return abs(self.scale - 1) <= SCALE_TOL and abs(self.offset) <= OFFSET_TOL


def fit_axis(targets: Sequence[float], answers: Sequence[float]) -> AxisFit | None:
    """Least-squares line through (target, answer); None with fewer than 2 distinct targets."""
    n = len(targets)
    if n != len(answers) or n < 2:
        return None
    mt, ma = sum(targets) / n, sum(answers) / n
    stt = sum((t - mt) ** 2 for t in targets)
    if stt <= 1e-12:
        return None
    sta = sum((t - mt) * (a - ma) for t, a in zip(targets, answers, strict=True))
    scale = sta / stt
    offset = ma - scale * mt
    sse = sum((a - (scale * t + offset)) ** 2 for t, a in zip(targets, answers, strict=True))
    return AxisFit(scale, offset, math.sqrt(sse / n), n)


@dataclass(frozen=True)
class CheckReport:
    model: str
    convention: str
    results: tuple[ScreenResult, ...]
    fit_x: AxisFit | None
    fit_y: AxisFit | None
    # answer.x against target.y and answer.y against target.x (a y-first model fits these)
    swapped_x: AxisFit | None = None
    swapped_y: AxisFit | None = None
    diagnosis: Diagnosis | None = None

    @property
    def hits(self) -> int:
        return sum(r.hit for r in self.results)

    @property
    def errors(self) -> int:
        return sum(r.error is not None for r in self.results)

    @property
    def consistent(self) -> bool:
        """Both axes fit with scale near 1 and offset near 0, and at least half the buttons
        were hit."""
        fits_ok = all(f is not None and f.ok for f in (self.fit_x, self.fit_y))
        return fits_ok and 2 * self.hits >= len(self.results)

    def to_dict(self) -> dict[str, Any]:
        def fit(f: AxisFit | None) -> dict[str, float] | None:
            return None if f is None else {"scale": f.scale, "offset": f.offset, "rmse": f.rmse}

        return {
            "model": self.model,
            "convention": self.convention,
            "consistent": self.consistent,
            "hits": self.hits,
            "screens": [
                {
                    "screen": r.screen.name,
                    "size": list(r.screen.size),
                    "target": r.screen.target.as_list(),
                    "answer": r.raw_text,
                    "point": r.point.as_list() if r.point else None,
                    "hit": r.hit,
                    "error": r.error,
                    "sent_size": list(r.sent_size) if r.sent_size else None,
                    "input_tokens": r.input_tokens,
                }
                for r in self.results
            ],
            "fit_x": fit(self.fit_x),
            "fit_y": fit(self.fit_y),
            "fit_swapped_x": fit(self.swapped_x),
            "fit_swapped_y": fit(self.swapped_y),
            "diagnosis": None if self.diagnosis is None else self.diagnosis.to_dict(),
        }


def _retry_policy(tries: int) -> RetryPolicy:
    """`tries` calls in all, a failed one retried after its server's Retry-After or about a
    second, never more than 5 s: a check is quick."""
    return RetryPolicy(
        max_retries=tries - 1, backoff_base=1.0, backoff_max=5.0, retry_after_max=5.0
    )


async def _ask(adapter: Adapter, req: StepRequest, screen: CheckScreen, tries: int) -> ScreenResult:
    try:
        # the one retry loop of the runners; an unexpected exception is check-model's bug
        pred, _, _ = await call_with_retries(
            functools.partial(adapter.predict, req), _retry_policy(tries),
            label=req.step_uid, passthrough=(Exception,),
        )  # fmt: skip
    except CallFailed as e:
        return ScreenResult(screen, None, None, str(e))
    tokens = pred.usage.input_tokens if pred.usage is not None else None
    return ScreenResult(screen, pred.raw_text, pred.point, None, pred.sent_size, tokens)


async def run_check(
    adapter: Adapter,
    folder: Path,
    screens: Sequence[CheckScreen] = SCREENS,
    *,
    tries: int = 3,
    close: bool = True,
) -> CheckReport:
    """Ask `adapter` about every screen in `folder` (painted by `render_screens`)."""
    sem = asyncio.Semaphore(max(1, adapter.max_concurrency))

    async def one(i: int, s: CheckScreen) -> ScreenResult:
        req = StepRequest(
            step_uid=f"check/{i}/1",
            task_uid=f"check/{i}",
            image_rel=s.name,
            image_path=folder / s.name,
            image_size=s.size,
            instruction=s.instruction,
        )
        async with sem:
            return await _ask(adapter, req, s, tries)

    try:
        results = tuple(await asyncio.gather(*(one(i, s) for i, s in enumerate(screens))))
    finally:
        if close:
            await adapter.aclose()
    answered = [r for r in results if r.point is not None]
    fx = fit_axis([r.screen.target.x for r in answered], [r.point.x for r in answered if r.point])
    fy = fit_axis([r.screen.target.y for r in answered], [r.point.y for r in answered if r.point])
    sx = fit_axis([r.screen.target.y for r in answered], [r.point.x for r in answered if r.point])
    sy = fit_axis([r.screen.target.x for r in answered], [r.point.y for r in answered if r.point])
    convention = str(adapter.convention)
    diag = diagnose(observations(results), convention, _card_resize(adapter, screens))
    return CheckReport(adapter.name, convention, results, fx, fy, sx, sy, diag)


def observations(results: Sequence[ScreenResult]) -> list[Observation]:
    """The answered screens as the diagnosis reads them."""
    return [
        Observation(r.screen.target, r.point, r.sent_size or r.screen.size, r.input_tokens)
        for r in results
        if r.point is not None
    ]


def _card_resize(adapter: Adapter, screens: Sequence[CheckScreen]) -> ResizeSpec | None:
    """The pre-resize the adapter's card asks for (abs_resized cards), if it tells."""
    spec = getattr(adapter, "spec", None)
    build = getattr(spec, "build", None)
    if build is None or not screens:
        return None
    s = screens[0]
    req = StepRequest("check/0/1", "check/0", s.name, Path(s.name), s.size, s.instruction)
    resize = getattr(build(req), "resize", None)
    return resize if isinstance(resize, ResizeSpec) else None


def check_model(
    model: str,
    options: AdapterOptions | Mapping[str, Any],
    folder: Path,
    screens: Sequence[CheckScreen] = SCREENS,
) -> CheckReport:
    """Paint the screens into `folder`, build `model`'s adapter as `eval` would, ask it."""
    from medspot.adapters import registry

    render_screens(folder, screens)
    opts = AdapterOptions.from_mapping(options).with_defaults(model=model, prompt_style="native")
    ctx = AdapterContext(images=ImageStore(folder), options=opts)
    adapter = registry.create(model, ctx)
    return asyncio.run(run_check(adapter, folder, screens))


def format_report(report: CheckReport) -> str:
    """A plain-text table and verdict."""
    lines = [f"check-model: {report.model} (convention {report.convention})", ""]
    head = f"{'screen':<12} {'target (x, y)':<16} {'answer':<28} {'point (x, y)':<16} hit"
    lines.append(head)
    for r in report.results:
        size = f"{r.screen.size[0]}x{r.screen.size[1]}"
        t = r.screen.target
        answer = (r.error or (r.raw_text or "")).replace("\n", " ")
        if len(answer) > 27:
            answer = answer[:24] + "..."
        pt = f"({r.point.x:.3f}, {r.point.y:.3f})" if r.point else "-"
        mark = "error" if r.error else ("yes" if r.hit else "no")
        lines.append(f"{size:<12} ({t.x:.3f}, {t.y:.3f})   {answer:<28} {pt:<16} {mark}")
    lines.append("")
    for axis, f in (("x", report.fit_x), ("y", report.fit_y)):
        if f is None:
            lines.append(f"fit {axis}: not enough answers")
        else:
            lines.append(
                f"fit {axis}: answer = {f.scale:.3f} * target {f.offset:+.3f}  (rmse {f.rmse:.3f})"
            )
    for axis, f in (("x", report.swapped_x), ("y", report.swapped_y)):
        if f is not None:
            other = "y" if axis == "x" else "x"
            lines.append(
                f"fit {axis} against target {other} (swapped axes): answer = {f.scale:.3f} * "
                f"target {f.offset:+.3f}  (rmse {f.rmse:.3f})"
            )
    lines.append(f"hits: {report.hits}/{len(report.results)}, errors: {report.errors}")
    if report.diagnosis is not None:
        d = report.diagnosis
        lines.append(f"cause: {d.cause or '-'}: {d.detail}")
    if report.consistent:
        lines.append("verdict: consistent (scale near 1, offset near 0)")
    else:
        lines.append("verdict: NOT consistent. " + _hint(report))
    return "\n".join(lines)


def _hint(report: CheckReport) -> str:
    if report.errors == len(report.results):
        return "Every call failed: check the server, the model name and the key."
    if report.diagnosis is not None and report.diagnosis.cause:
        return f"Likely cause: {report.diagnosis.cause} (see above)."
    fits = [f for f in (report.fit_x, report.fit_y) if f is not None]
    if not fits:
        return "Too few answers held a point: look at the answers and the card's prompt."
    if any(abs(f.scale - 1) > SCALE_TOL for f in fits):
        return (
            "A scale far from 1 means the numbers are in another frame than the card's "
            f"convention ({report.convention}): e.g. pixels read as 0..1000, or 0..1000 read "
            "as pixels. Check the card, --convention and the server's image preprocessing."
        )
    if any(abs(f.offset) > OFFSET_TOL for f in fits):
        return "A constant offset: check padding or cropping of the image on the way."
    return "The frame fits but too few buttons were hit: the model may just be weak here."
