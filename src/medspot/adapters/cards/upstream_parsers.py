"""Ports of the MedSPOT authors' answer readers (`Evaluation_scripts/evaluate_<model>.py`,
commit ad61552), mistakes included: a box read by its first pair, pixels read in the wrong
frame, values guessed from their size, clamping. Each takes (text, sent_size, original_size)
like every card parser and returns normalised coordinates of the original screenshot.

Where a script would have crashed (`float("1.2.3")`), the port returns no prediction and flags
`upstream_parse_error`. The scripts decoded local models with `skip_special_tokens=True`, so
the ports for local models first drop `<|...|>` tokens (a no-op on text decoded that way).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from medspot.adapters.card import ParsedAnswer, ResizeSpec
from medspot.adapters.conventions import smart_resize_pure
from medspot.adapters.parsing import strip_special_tokens
from medspot.geometry import Point

__all__ = [
    "PARSE_ERROR",
    "aguvis",
    "cogagent",
    "deepseek",
    "gemma3",
    "gpt",
    "gpt_extract_pixel_point",
    "gui_actor",
    "llama",
    "mistral",
    "osatlas",
    "qwen2_5vl",
    "qwen2vl",
    "qwen3vl",
    "seeclick",
    "tars",
    "uground",
]

PARSE_ERROR = "upstream_parse_error"
Size = tuple[int, int]

_PAIR = r"\(\s*([\d.]+)\s*,\s*([\d.]+)\s*\)"
_XY = r"x\s*=\s*([\d.]+)\s*,\s*y\s*=\s*([\d.]+)"
_PAIR_OR_XY = (_PAIR, _XY)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_TAGS = re.compile(r"<.*?>", re.DOTALL)

_GPT_PATTERNS = (
    r"\(\s*([\d.]+)\s*,\s*([\d.]+)\s*\)",
    r"\[\s*([\d.]+)\s*,\s*([\d.]+)\s*\]",
    r"x\s*=\s*([\d.]+)\s*[,;]?\s*y\s*=\s*([\d.]+)",
    r"x\s*:\s*([\d.]+)\s*[,;]?\s*y\s*:\s*([\d.]+)",
    r"(?:at|click|point|coord(?:inate)?s?)\s*[:\-]?\s*([\d.]+)\s*[,\s]\s*([\d.]+)",
    r"(?<!\d)([\d]{1,5})\s*[,\s]\s*([\d]{1,5})(?!\d)",
)

_NONE = ParsedAnswer(point=None)
_ERROR = ParsedAnswer(point=None, flags=(PARSE_ERROR,))


def _search(patterns: tuple[str, ...], text: str, flags: int = 0) -> tuple[float, float] | None:
    """First pattern that matches, as the scripts loop; ValueError propagates like theirs."""
    for p in patterns:
        m = re.search(p, text, flags)
        if m:
            return float(m.group(1)), float(m.group(2))
    return None


def _read(
    patterns: tuple[str, ...],
    text: str,
    answer: Callable[[float, float], ParsedAnswer],
    flags: int = 0,
) -> ParsedAnswer:
    """The first pair `patterns` find in `text` (`_search`) as `answer` reads it; none found: no
    prediction; a pair that is no number (where the script crashed): `_ERROR`."""
    try:
        pred = _search(patterns, text, flags)
    except ValueError:
        return _ERROR
    return _NONE if pred is None else answer(*pred)


def _clamp(v: float) -> float:
    return min(max(v, 0.0), 1.0)


def _point(x: float, y: float) -> ParsedAnswer:
    return ParsedAnswer(point=Point(x, y))


def _over_original_if_pixels(original: Size) -> Callable[[float, float], ParsedAnswer]:
    """A pair with a value over 1 read as pixels of the original, else as fractions; clamped."""
    w, h = original

    def answer(x: float, y: float) -> ParsedAnswer:
        if x > 1.0 or y > 1.0:
            x, y = x / w, y / h
        return _point(_clamp(x), _clamp(y))

    return answer


def _over_original(
    original: Size, *, clamp: bool = False
) -> Callable[[float, float], ParsedAnswer]:
    """A pair read as pixels of the original (clamped where the script clamped)."""
    w, h = original
    if clamp:
        return lambda x, y: _point(_clamp(x / w), _clamp(y / h))
    return lambda x, y: _point(x / w, y / h)


def gpt_extract_pixel_point(text: str) -> tuple[float, float] | None:
    """`extract_pixel_point` of evaluate_gpt4omini.py / evaluate_gpt5.py, verbatim."""
    return _search(_GPT_PATTERNS, text, re.IGNORECASE)


def gpt(text: str | None, sent: Size, original: Size) -> ParsedAnswer:
    """GPT-4o-mini / GPT-5: six patterns, original pixels, outside 0..W x 0..H is no point."""
    w, h = original

    def answer(x: float, y: float) -> ParsedAnswer:
        if not (0 <= x <= w and 0 <= y <= h):  # normalize_prediction
            return _NONE
        return _point(x / w, y / h)

    return _read(_GPT_PATTERNS, text or "", answer, re.IGNORECASE)


def tars(text: str | None, sent: Size, original: Size) -> ParsedAnswer:
    """UI-TARS: CLICK(x,y), then a list's first two numbers (a box's top-left), then (x,y),
    then x=,y=; both in [0,1] read as fractions, anything else as original pixels."""
    w, h = original
    patterns = (
        r"CLICK\s*\(\s*([\d.]+)\s*,\s*([\d.]+)\s*\)",
        r"\[\s*([\d.]+)\s*,\s*([\d.]+)\s*(?:,[\d.\s,]+)?\]",
        *_PAIR_OR_XY,
    )

    def answer(x: float, y: float) -> ParsedAnswer:
        if 0.0 <= x <= 1.0 and 0.0 <= y <= 1.0:  # maybe_denormalize
            return _point(x, y)
        return _point(x / w, y / h)

    return _read(patterns, strip_special_tokens(text or ""), answer)


def uground(text: str | None, sent: Size, original: Size) -> ParsedAnswer:
    """UGround: values > 1 divided by the ORIGINAL W, H (the big deflation), clamped."""
    t = _THINK.sub("", strip_special_tokens(text or ""))
    return _read(_PAIR_OR_XY, t, _over_original_if_pixels(original), re.IGNORECASE)


def qwen2_5vl(text: str | None, sent: Size, original: Size) -> ParsedAnswer:
    """Qwen2.5-VL: (x,y) read as original pixels (the model's frame is the resized one)."""
    t = _THINK.sub("", strip_special_tokens(text or ""))
    return _read(_PAIR_OR_XY, t, _over_original(original), re.IGNORECASE)


def qwen2vl(text: str | None, sent: Size, original: Size) -> ParsedAnswer:
    """Qwen2-VL: tags removed, first (x,y) (a box's top-left) over original W, H, clamped."""
    t = _TAGS.sub("", _THINK.sub("", text or ""))
    return _read(_PAIR_OR_XY, t, _over_original(original, clamp=True), re.IGNORECASE)


def qwen3vl(text: str | None, sent: Size, original: Size) -> ParsedAnswer:
    """Qwen3-VL: (x,y) / 1000 (the right frame), not clamped."""
    t = _THINK.sub("", strip_special_tokens(text or ""))
    return _read(_PAIR_OR_XY, t, lambda x, y: _point(x / 1000.0, y / 1000.0))


def osatlas(text: str | None, sent: Size, original: Size) -> ParsedAnswer:
    """OS-Atlas: [[x,y]], then [[x1,y1,x2,y2]] centre, then the first (x,y) (a box's
    top-left when the box arrives as `(x1,y1),(x2,y2)`); / 1000, clamped."""
    t = _THINK.sub("", strip_special_tokens(text or ""))
    try:
        m = re.search(r"\[\[\s*([\d.]+)\s*,\s*([\d.]+)\s*\]\]", t)
        if m:
            x, y = float(m.group(1)) / 1000.0, float(m.group(2)) / 1000.0
            return _point(_clamp(x), _clamp(y))
        m = re.search(r"\[\[\s*([\d.]+)\s*,\s*([\d.]+)\s*,\s*([\d.]+)\s*,\s*([\d.]+)\s*\]\]", t)
        if m:
            x1, y1, x2, y2 = (float(m.group(i)) / 1000.0 for i in range(1, 5))
            return _point(_clamp((x1 + x2) / 2.0), _clamp((y1 + y2) / 2.0))
        m = re.search(_PAIR, t)
        if m:
            x, y = float(m.group(1)) / 1000.0, float(m.group(2)) / 1000.0
            return _point(_clamp(x), _clamp(y))
    except ValueError:
        return _ERROR
    return _NONE


def seeclick(text: str | None, sent: Size, original: Size) -> ParsedAnswer:
    """SeeClick: `"box" in response` -> Qwen-VL `<box>` centre / 1000, else SeeClick's
    pred_2_point (exactly 2 numbers, or 4 -> centre); every exception is no prediction."""
    response = strip_special_tokens(text or "")
    try:
        if "box" in response:
            matches = re.findall(r"<box>\((\d+,\d+)\),\((\d+,\d+)\)</box>", response)
            pts = [(int(s.split(",")[0]), int(s.split(",")[1])) for s in sum(matches, ())]
            cx = (pts[0][0] + pts[1][0]) / 2
            cy = (pts[0][1] + pts[1][1]) / 2
            x, y = cx / 1000, cy / 1000
        else:
            floats = [float(n) for n in re.findall(r"-?\d+\.?\d*", response)]
            if len(floats) == 2:
                x, y = floats
            elif len(floats) == 4:
                x, y = (floats[0] + floats[2]) / 2, (floats[1] + floats[3]) / 2
            else:
                return _NONE  # UnboundLocalError in pred_2_point, caught by the script
    except (IndexError, ValueError, OverflowError):  # OverflowError: a box of 400 digits
        return _NONE
    return _point(_clamp(x), _clamp(y))


def cogagent(text: str | None, sent: Size, original: Size) -> ParsedAnswer:
    """CogAgent: CLICK(...box=[[...]]) centre (also matches DOUBLE_CLICK / RIGHT_CLICK), then
    CLICK(...point=[[x,y]]), then the first [[x1,y1,x2,y2]] anywhere; / 1000, clamped."""
    t = strip_special_tokens(text or "")
    box4 = r"\[\[\s*([\d.]+)\s*,\s*([\d.]+)\s*,\s*([\d.]+)\s*,\s*([\d.]+)\s*\]\]"
    try:
        m = re.search(r"CLICK\s*\(.*?box\s*=\s*" + box4, t, re.IGNORECASE | re.DOTALL)
        if m is None:
            mp = re.search(
                r"CLICK\s*\(.*?point\s*=\s*\[\[\s*([\d.]+)\s*,\s*([\d.]+)\s*\]\]",
                t,
                re.IGNORECASE | re.DOTALL,
            )
            if mp:
                x, y = float(mp.group(1)) / 1000.0, float(mp.group(2)) / 1000.0
                return _point(_clamp(x), _clamp(y))
            m = re.search(box4, t)
        if m is None:
            return _NONE
        x1, y1, x2, y2 = (float(m.group(i)) / 1000.0 for i in range(1, 5))
    except ValueError:
        return _ERROR
    return _point(_clamp((x1 + x2) / 2.0), _clamp((y1 + y2) / 2.0))


def deepseek(text: str | None, sent: Size, original: Size) -> ParsedAnswer:
    """DeepSeek-VL2: tags removed, (x,y); values > 1 over original W, H; clamped. A native
    `[[x1,y1,x2,y2]]` box is not read."""
    return _read(_PAIR_OR_XY, _TAGS.sub("", text or ""), _over_original_if_pixels(original))


_AGUVIS_RESIZE = ResizeSpec(factor=28, min_pixels=256 * 28 * 28, max_pixels=1280 * 28 * 28)


def aguvis(text: str | None, sent: Size, original: Size) -> ParsedAnswer:
    """Aguvis: pyautogui.click(x=,y=) / pyautogui.click(a,b) / (x,y) / x=,y=; values > 1 read
    as pixels of smart_resize(W, H, 28, 256*28*28, 1280*28*28); clamped."""
    w, h = original
    t = _THINK.sub("", strip_special_tokens(text or ""))
    patterns = (
        r"pyautogui\.click\s*\(\s*x\s*=\s*([\d.]+)\s*,\s*y\s*=\s*([\d.]+)\s*\)",
        r"pyautogui\.click\s*\(\s*([\d.]+)\s*,\s*([\d.]+)\s*\)",
        *_PAIR_OR_XY,
    )

    def answer(x: float, y: float) -> ParsedAnswer:
        if x > 1.0 or y > 1.0:
            rw, rh = smart_resize_pure(w, h, _AGUVIS_RESIZE)
            x, y = x / rw, y / rh
        return _point(_clamp(x), _clamp(y))

    return _read(patterns, t, answer, re.IGNORECASE)


def gemma3(text: str | None, sent: Size, original: Size) -> ParsedAnswer:
    """Gemma 3: tags removed, (x,y) compared as original pixels (no size was stated)."""
    return _read(_PAIR_OR_XY, _TAGS.sub("", text or ""), _over_original(original))


def llama(text: str | None, sent: Size, original: Size) -> ParsedAnswer:
    """Llama 3.2: (x,y); both in [0,1] -> fractions, both in [0,100] -> percent, else pixels."""
    w, h = original

    def answer(x: float, y: float) -> ParsedAnswer:
        if 0 <= x <= 1 and 0 <= y <= 1:
            return _point(x, y)
        if 0 <= x <= 100 and 0 <= y <= 100:
            return _point(x / 100.0, y / 100.0)
        return _point(x / w, y / h)

    return _read(_PAIR_OR_XY, _TAGS.sub("", text or "").strip(), answer)


def mistral(text: str | None, sent: Size, original: Size) -> ParsedAnswer:
    """Mistral: (x,y) over the stated original W, H; clamped."""
    return _read(_PAIR_OR_XY, _TAGS.sub("", text or ""), _over_original(original, clamp=True))


def gui_actor(text: str | None, sent: Size, original: Size) -> ParsedAnswer:
    """GUI-Actor: the top-k points (rendered by the backend as `[(x, y), ...]`), each clamped;
    the script counted a hit on any of them, so all are kept (first as the point)."""
    pairs = re.findall(r"\(\s*([-\d.eE+]+)\s*,\s*([-\d.eE+]+)\s*\)", text or "")
    try:
        pts = [Point(_clamp(float(a)), _clamp(float(b))) for a, b in pairs]
    except ValueError:
        return _ERROR
    if not pts:
        return _NONE
    return ParsedAnswer(point=pts[0], extra_points=tuple(pts[1:]))
