"""The `ocr` baseline: read the screen's words, click the best match of what the instruction names.

It looks at the pixels only: `rapidocr` (its default models ship in the wheel and run offline)
reads the words of the screenshot, once per image; the instruction gives the query (quoted
strings first, then the words before "menu", "button", "tab", "icon", ...); `rapidfuzz` scores
every word n-gram of every line against it; spatial words of the instruction ("top toolbar",
"left panel", "dialog", "dropdown", ...) and the layout of the words break ties; the point is
the centre of the best match. No match good enough gives no prediction. It never reads the
annotation's target. Expect it to hit text-labelled targets and miss icon-only ones. What the
engine read is kept on disk by image content (`medspot.adapters.ocr_cache`): the same screen
is never read twice, in a run or across runs.

The pure parts (`extract_queries`, `spatial_hints`, `match`) take plain data and are tested
without OCR.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rapidfuzz import fuzz

from medspot.adapters.base import AdapterContext, Convention, Prediction, StepRequest
from medspot.adapters.ocr_cache import Word, cached_reader, engine_key, words_cache_dir
from medspot.errors import ConfigError, ModelCallError
from medspot.geometry import Point

__all__ = [
    "Match",
    "OcrAdapter",
    "OcrWord",
    "create",
    "default_words_cache",
    "extract_queries",
    "match",
    "rapidocr_reader",
    "spatial_hints",
]

PixelBox = tuple[float, float, float, float]  # x1, y1, x2, y2 in pixels of the original

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class OcrWord:
    """One line (or word) the OCR read: its text, box in pixels, and confidence."""

    text: str
    box: PixelBox
    score: float = 1.0


@dataclass(frozen=True, slots=True)
class Match:
    query: str
    text: str
    box: PixelBox
    score: float  # fuzzy similarity 0..100
    total: float  # with the spatial and layout bonuses

    @property
    def center(self) -> tuple[float, float]:
        return (self.box[0] + self.box[2]) / 2, (self.box[1] + self.box[3]) / 2


_QUOTED = re.compile(r"(?<![A-Za-z0-9])['\"‘“]([^'\"‘’“”]+?)['\"’”](?![A-Za-z0-9])")
_KEYWORDS = ("menu", "button", "tab", "option", "icon", "tool", "field", "checkbox", "item",
             "widget", "thumbnail", "preset", "slider", "entry", "link", "box", "list",
             "dropdown", "submenu")  # fmt: skip
_STOP = {"click", "on", "the", "a", "an", "select", "choose", "open", "press", "tick", "check",
         "enable", "from", "in", "to", "of", "and", "then", "drag", "hover", "over", "double",
         "double-click", "type", "enter", "into", "with", "its", "this", "that", "your",
         "right", "left", "top", "bottom", "small", "next", "down", "up"}  # fmt: skip
_WORD = re.compile(r"[\w/()+.-]+")


def _norm(s: str) -> str:
    return " ".join(re.sub(r"[^0-9a-z]+", " ", s.lower()).split())


def extract_queries(instruction: str) -> list[str]:
    """What the instruction names, best first: quoted strings, then the words before a UI
    keyword ("the Zoom icon" -> "Zoom"; "the window width slider" -> "window width",
    "width"). Duplicates removed."""
    out: list[str] = [m.group(1).strip() for m in _QUOTED.finditer(instruction)]
    words = _WORD.findall(instruction)
    for i, w in enumerate(words):
        if w.lower().rstrip(".") not in _KEYWORDS or i == 0:
            continue
        j = i
        while j > 0 and words[j - 1].lower() not in _STOP and i - j < 3:
            j -= 1
        phrase = words[j:i]
        out.extend(" ".join(phrase[k:]) for k in range(len(phrase)))
    seen: set[str] = set()
    result = []
    for q in out:
        n = _norm(q)
        if n and n not in seen:
            seen.add(n)
            result.append(q)
    return result


def spatial_hints(instruction: str) -> frozenset[str]:
    """Where the instruction says the target is: top, left, right, bottom, dialog, list."""
    s = instruction.lower()
    hints = set()
    if re.search(r"\btop\b|toolbar|menu bar|title bar", s):
        hints.add("top")
    if re.search(r"\bleft\b", s):
        hints.add("left")
    if re.search(r"\bright\b(?! to| of)", s) and "to the right" not in s:
        hints.add("right")
    if re.search(r"\bbottom\b|status bar", s):
        hints.add("bottom")
    if re.search(r"dialog|window\b|popup|pop-up", s):
        hints.add("dialog")
    if re.search(r"dropdown|drop-down|submenu|\blist\b|from the .*menu", s):
        hints.add("list")
    return frozenset(hints)


def _ngrams(word: OcrWord, max_n: int) -> list[tuple[str, PixelBox, bool]]:
    """Contiguous token spans of a line with boxes split in proportion to character offsets;
    the flag says the span is the whole line."""
    text = word.text
    spans = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
    x1, y1, x2, y2 = word.box
    per_char = (x2 - x1) / max(len(text), 1)
    out = []
    for i in range(len(spans)):
        for j in range(i, min(len(spans), i + max_n)):
            a, b = spans[i][0], spans[j][1]
            box = (x1 + a * per_char, y1, x1 + b * per_char, y2)
            out.append((text[a:b], box, i == 0 and j == len(spans) - 1))
    return out


def _aligned(words: Sequence[OcrWord], w: OcrWord) -> tuple[int, int]:
    """How many other lines share w's left edge just above or below (a vertical list), and how
    many share its vertical centre (a horizontal row)."""
    h = w.box[3] - w.box[1]
    cy = (w.box[1] + w.box[3]) / 2
    col = row = 0
    for o in words:
        if o is w:
            continue
        ocy = (o.box[1] + o.box[3]) / 2
        if abs(o.box[0] - w.box[0]) <= max(4.0, h * 0.4) and abs(ocy - cy) <= 4 * h:
            col += 1
        if abs(ocy - cy) <= h * 0.4 and abs(o.box[0] - w.box[0]) <= 30 * h:
            row += 1
    return col, row


def _bonus(hints: frozenset[str], box: PixelBox, size: tuple[int, int], col: int,
           row: int) -> float:  # fmt: skip
    w, h = size
    cx, cy = (box[0] + box[2]) / 2 / w, (box[1] + box[3]) / 2 / h
    b = 0.0
    if "top" in hints:
        b += 6.0 if cy < 0.15 else 0.0
    if "left" in hints:
        b += 6.0 if cx < 0.35 else 0.0
    if "right" in hints:
        b += 6.0 if cx > 0.65 else 0.0
    if "bottom" in hints:
        b += 6.0 if cy > 0.85 else 0.0
    if "dialog" in hints:
        b += 6.0 if 0.2 < cx < 0.8 and 0.15 < cy < 0.85 else 0.0
    if "list" in hints:
        b += 4.0 if col >= 1 else 0.0
    # last resort: nearer the centre (where dialogs and menus open) wins a tie
    b += 1.0 - min(1.0, abs(cx - 0.5) + abs(cy - 0.5))
    return b


def match(
    instruction: str,
    words: Sequence[OcrWord],
    size: tuple[int, int],
    min_score: float = 80.0,
) -> Match | None:
    """The OCR span that best matches what `instruction` names, or None when no span scores
    at least `min_score` (0..100) against any query."""
    queries = extract_queries(instruction)
    if not queries or not words:
        return None
    hints = spatial_hints(instruction)
    layout = {id(w): _aligned(words, w) for w in words}
    best: Match | None = None
    for rank, q in enumerate(queries):
        nq = _norm(q)
        n_tokens = len(q.split())
        for w in words:
            col, row = layout[id(w)]
            for text, box, whole in _ngrams(w, n_tokens + 1):
                score = fuzz.ratio(nq, _norm(text))
                if score < min_score:
                    continue
                total = score - 2.0 * rank + (2.0 if whole else 0.0)
                total += _bonus(hints, box, size, col, row)
                if best is None or total > best.total:
                    best = Match(q, text, box, score, total)
    return best


Reader = Callable[[Path], list[OcrWord]]


# the engine's parameters (part of the words cache's key): screenshots hold no rotated text, so
# the angle classifier is skipped
# one onnxruntime thread per engine and one engine per calling thread (`rapidocr_reader`): the
# adapter reads `max_concurrency` images side by side instead of one image on every core; the
# words are the same (benchmarks/README.md section 11), and a busy CPU (its threads spinning
# while they wait for each other) no longer slows the engine down by half
RAPIDOCR_PARAMS: dict[str, Any] = {
    "Global.log_level": "error",
    "Global.use_cls": False,
    "EngineConfig.onnxruntime.intra_op_num_threads": 1,
}
# images read side by side: one per core, up to 8 (each engine holds its own models)
OCR_THREADS = max(1, min(8, os.cpu_count() or 1))


def default_words_cache() -> Path:
    """Where `create` keeps the words read (`medspot.adapters.ocr_cache`): under the cache
    folder, keyed by rapidocr's and onnxruntime's versions and `RAPIDOCR_PARAMS`."""
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for package in ("rapidocr", "onnxruntime"):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:  # pragma: no cover - the extra is missing
            versions[package] = "unknown"
    return words_cache_dir(engine_key(versions, RAPIDOCR_PARAMS))


def rapidocr_reader(cache: Path | None = None) -> Reader:
    """A reader built on rapidocr's default engine (bundled models, offline); with `cache`, what
    it reads is kept there by image content (`medspot.adapters.ocr_cache`)."""
    try:
        from rapidocr import RapidOCR
    except ImportError as e:  # pragma: no cover - the extra is missing
        from medspot.errors import AdapterUnavailable

        raise AdapterUnavailable(
            f"the ocr baseline needs rapidocr ({e}); pip install 'medspot[ocr]'"
        ) from None
    # an engine per calling thread, built on its first image the cache does not hold (~1 s)
    local = threading.local()

    def read_engine(path: Path) -> list[Word]:
        engine = getattr(local, "engine", None)
        if engine is None:
            engine = local.engine = RapidOCR(params=dict(RAPIDOCR_PARAMS))
        result: Any = engine(str(path))
        if result.boxes is None or result.txts is None:
            return []
        out: list[Word] = []
        for quad, text, score in zip(result.boxes, result.txts, result.scores or (), strict=False):
            xs = [float(p[0]) for p in quad]
            ys = [float(p[1]) for p in quad]
            out.append((str(text), (min(xs), min(ys), max(xs), max(ys)), float(score)))
        return out

    words = read_engine if cache is None else cached_reader(read_engine, cache)

    def read(path: Path) -> list[OcrWord]:
        return [OcrWord(text, box, score) for text, box, score in words(path)]

    return read


class OcrAdapter:
    """The `ocr` baseline. OCR runs in worker threads, up to `max_concurrency` images side by
    side, each image path once (steps on the same screen wait for its one reading; a failed
    reading is tried again by the next step that needs it)."""

    name = "ocr"
    reads_screen = True  # it can be zoomed (`medspot.adapters.zoom`)
    convention = Convention.NORMALISED
    max_concurrency = OCR_THREADS

    def __init__(self, reader: Reader | None = None, min_score: float = 80.0) -> None:
        self._reader = reader
        self.min_score = min_score
        self._cache: dict[Path, Future[list[OcrWord]]] = {}
        self._lock = threading.Lock()

    def words(self, path: Path) -> list[OcrWord]:
        """The OCR lines of the image at `path` (cached)."""
        with self._lock:
            if self._reader is None:
                self._reader = rapidocr_reader()
            reader, pending = self._reader, self._cache.get(path)
            if pending is None:
                pending = self._cache[path] = Future()
                mine = True
            else:
                mine = False
        if mine:
            try:
                pending.set_result(reader(path))
            except Exception as e:  # an unreadable image, an engine failure
                with self._lock:
                    del self._cache[path]
                error = ModelCallError(f"OCR failed on {path.name}: {e}")
                error.__cause__ = e
                pending.set_exception(error)
        return pending.result()

    async def predict(self, request: StepRequest) -> Prediction:
        words = await asyncio.to_thread(self.words, request.image_path)
        m = match(request.instruction, words, request.image_size, self.min_score)
        queries = extract_queries(request.instruction)
        if m is None:
            return Prediction(raw_text=f"no match for {queries}", point=None,
                              prompt=request.instruction, meta={"queries": queries})  # fmt: skip
        w, h = request.image_size
        cx, cy = m.center
        p = Point(cx / w, cy / h)
        raw = f"{m.text!r} matches {m.query!r} ({m.score:.0f}) at ({p.x:.6f}, {p.y:.6f})"
        meta: dict[str, Any] = {"queries": queries, "query": m.query, "text": m.text,
                                "score": round(m.score, 2)}  # fmt: skip
        return Prediction(raw_text=raw, point=p, prompt=request.instruction, meta=meta)

    def describe(self) -> dict[str, Any]:
        try:
            from importlib.metadata import version

            ocr_version = version("rapidocr")
        except Exception:  # pragma: no cover - metadata missing
            ocr_version = "unknown"
        return {"name": self.name, "kind": "baseline", "convention": str(self.convention),
                "engine": f"rapidocr {ocr_version} (default bundled models)",
                "min_score": self.min_score}  # fmt: skip

    async def aclose(self) -> None:
        self._cache.clear()


def create(ctx: AdapterContext) -> OcrAdapter:
    raw = ctx.options.ocr_min_score if ctx.options.ocr_min_score is not None else 80.0
    try:
        min_score = float(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"ocr_min_score must be a number, got {raw!r}") from None
    if not 0 <= min_score <= 100:
        raise ConfigError(f"ocr_min_score must be between 0 and 100, got {min_score}")
    cache = default_words_cache()
    log.info("ocr: the words read are kept in %s (by image content; safe to delete)", cache)
    return OcrAdapter(rapidocr_reader(cache), min_score=min_score)
