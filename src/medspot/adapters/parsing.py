"""Shared, pure helpers for reading a point out of a model's text (models.md 1.2-1.3).

The rules: strip `<think>` blocks, code fences, Markdown bold and special tokens; accept pairs
written `(x, y)`, `[x, y]`, `x=.., y=..` or `x: .., y: ..`, boxes of four numbers (read as their
centre), Qwen-style box pairs `(x1,y1),(x2,y2)` where a card asks for them, and a bare `x,y` only
when it is the whole answer. A malformed number (`1.2.3`) makes its group unreadable, never a
click. Out-of-range values are kept. Nothing here guesses a convention from the numbers, except
`harness_rel1000`'s one rule of models.md 1.3.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from medspot.adapters.base import Convention
from medspot.adapters.card import ParsedAnswer
from medspot.adapters.conventions import to_normalised
from medspot.geometry import Point

__all__ = [
    "DRIFT",
    "MALFORMED",
    "NO_ANSWER",
    "OUT_OF_IMAGE",
    "UNCLOSED_THINK",
    "Candidate",
    "anchored_answer",
    "clean_text",
    "convention_mapper",
    "find_candidates",
    "parse_number",
    "strip_special_tokens",
    "strip_think",
    "to_answer",
]

NO_ANSWER = ParsedAnswer(point=None)

# Flags a ParsedAnswer may carry.
DRIFT = "convention_drift"
MALFORMED = "malformed_number"
UNCLOSED_THINK = "unclosed_think"
OUT_OF_IMAGE = "out_of_image"

_STRICT_NUM = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)")
_NUMLIKE = re.compile(r"[-+]?[\d.]+")
# a number-like token (validated afterwards): a whole run of digits and dots holding a digit,
# taken possessively: `[\d.]*\d[\d.]*` backtracked over every split of a long run (a
# 400-digit coordinate took 0.7 s a parse; what follows a token is never a digit or a dot, so
# the whole run is the only match either way)
_N = r"[-+]?(?=[\d.]*\d)[\d.]++"
_SPECIAL = re.compile(r"<\|/?[A-Za-z0-9_]+\|>")
_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[A-Za-z0-9_-]*")
_TUPLE = re.compile(r"[(\[]([^()\[\]]*)[)\]]")
_BOX_PAIR = re.compile(
    rf"\(\s*({_N})\s*,\s*({_N})\s*\)\s*,?\s*\(\s*({_N})\s*,\s*({_N})\s*\)",
)
_NAMED = re.compile(
    rf"(?<![A-Za-z0-9_])[\"']?x[\"']?\s*[=:]\s*({_N})\s*[,;]?\s*"
    rf"[\"']?y[\"']?\s*[=:]\s*({_N})",
    re.IGNORECASE,
)
_BARE = re.compile(rf"\s*({_N})\s*,\s*({_N})\s*")


def parse_number(token: str) -> float | None:
    """A float for a well-formed number (`086`, `12.`, `-3.5`), None for `1.2.3` or junk."""
    t = token.strip()
    if not _STRICT_NUM.fullmatch(t):
        return None
    return float(t)


def strip_think(text: str) -> tuple[str, bool]:
    """Remove `<think>...</think>` blocks and anything before a lone `</think>`.

    An unclosed `<think>` (the reasoning was cut off or never closed) keeps only the last
    non-empty line after it, where a final answer would be; the second value says so."""
    out = _THINK_BLOCK.sub("", text)
    low = out.lower()
    if "</think>" in low:
        out = out[low.rindex("</think>") + len("</think>") :]
        low = out.lower()
    if "<think>" in low:
        rest = out[low.index("<think>") + len("<think>") :]
        lines = [ln for ln in rest.splitlines() if ln.strip()]
        return (lines[-1] if len(lines) > 1 else ""), True
    return out, False


def strip_special_tokens(text: str) -> str:
    """Drop `<|...|>` tokens (`<|box_start|>`, `<|/ref|>`, `<|im_end|>`, ...)."""
    return _SPECIAL.sub("", text)


def clean_text(text: str | None) -> tuple[str, tuple[str, ...]]:
    """Think blocks, special tokens, code fences, bold and backticks removed; flags noted."""
    if not text:
        return "", ()
    out, unclosed = strip_think(text)
    out = strip_special_tokens(out)
    out = _FENCE.sub("", out).replace("**", "").replace("`", "")
    return out.strip(), ((UNCLOSED_THINK,) if unclosed else ())


@dataclass(frozen=True, slots=True)
class Candidate:
    """A point in the model's own units; a box is kept with its centre as the point."""

    x: float
    y: float
    start: int
    box: tuple[float, float, float, float] | None = None
    decimal: bool = False  # every number was written with a decimal point


def _numbers(tokens: list[str]) -> tuple[list[float] | None, bool]:
    """(values, malformed): values None when a token is not a well-formed number."""
    vals: list[float] = []
    for t in tokens:
        v = parse_number(t)
        if v is None:
            return None, bool(_NUMLIKE.fullmatch(t.strip()))
        vals.append(v)
    return vals, False


def _make(vals: list[float], tokens: list[str], start: int) -> Candidate | None:
    dec = all("." in t for t in tokens)
    if len(vals) == 2:
        return Candidate(vals[0], vals[1], start, None, dec)
    if len(vals) == 4:
        x1, y1, x2, y2 = vals
        return Candidate((x1 + x2) / 2, (y1 + y2) / 2, start, (x1, y1, x2, y2), dec)
    return None


def find_candidates(text: str, *, box_pairs: bool = False) -> tuple[list[Candidate], bool]:
    """Every readable pair or box in `text`, in reading order, and whether a malformed one
    was skipped. `box_pairs` reads `(x1,y1),(x2,y2)` as one box (Qwen-style grounding)."""
    found: list[Candidate] = []
    taken: list[tuple[int, int]] = []
    malformed = False

    def take(m: re.Match[str], toks: list[str]) -> None:
        """Keep the pair or box `m` matched (its numbers `toks`), noting a malformed number."""
        nonlocal malformed
        vals, bad = _numbers(toks)
        malformed |= bad
        if vals is not None and (c := _make(vals, toks, m.start())) is not None:
            found.append(c)
            taken.append(m.span())

    if box_pairs:
        for m in _BOX_PAIR.finditer(text):
            take(m, list(m.groups()))
    for m in _NAMED.finditer(text):
        if not any(a <= m.start() < b for a, b in taken):
            take(m, [m.group(1), m.group(2)])
    for m in _TUPLE.finditer(text):
        if any(a <= m.start() < b for a, b in taken):
            continue
        toks = [t for t in m.group(1).split(",")]
        if not all(_NUMLIKE.fullmatch(t.strip()) for t in toks):
            continue  # words inside brackets: not a coordinate group
        vals, bad = _numbers(toks)
        malformed |= bad
        if vals is None:
            continue
        c = _make(vals, toks, m.start())
        if c is None:
            malformed = True  # three numbers, or five: not a point and not a box
            continue
        found.append(c)
    if not found:
        whole = text.strip().rstrip(".;").strip()
        bm = _BARE.fullmatch(whole)
        if bm:
            take(bm, [bm.group(1), bm.group(2)])
    found.sort(key=lambda c: c.start)
    return found, malformed


Mapper = Callable[[float, float], Point]


def to_answer(
    first: Candidate | None,
    others: list[Candidate],
    mapper: Mapper,
    flags: tuple[str, ...] = (),
) -> ParsedAnswer:
    """The chosen candidate as the point, the others as extra points, `out_of_image` noted."""
    if first is None:
        return ParsedAnswer(point=None, flags=flags)
    point = mapper(first.x, first.y)
    extra = tuple(mapper(c.x, c.y) for c in others if c is not first)
    if not (0.0 <= point.x <= 1.0 and 0.0 <= point.y <= 1.0):
        flags = (*flags, OUT_OF_IMAGE)
    return ParsedAnswer(point=point, extra_points=extra, flags=flags)


def convention_mapper(
    convention: Convention, sent_size: tuple[int, int], original_size: tuple[int, int]
) -> Mapper:
    def mapper(x: float, y: float) -> Point:
        return to_normalised(x, y, convention, sent_size, original_size)

    return mapper


def anchored_answer(
    text: str | None,
    convention: Convention,
    sent_size: tuple[int, int],
    original_size: tuple[int, int],
    *,
    anchor: Callable[[str], tuple[int, int] | None] | None = None,
    box_pairs: bool = False,
    harness_rel1000: bool = False,
    rel1_drift: bool = False,
    rewrite: Callable[[str], str] | None = None,
) -> ParsedAnswer:
    """The common parser: clean, find candidates, take the first inside the anchor's span (or
    the first anywhere when the anchor is absent), keep the rest as extras.

    `anchor(text)` returns the (start, end) span of the answer part, or None when the text has
    no anchor. An anchor with no readable candidate inside is no prediction.
    `harness_rel1000`: models.md 1.3's exception (two decimals both <= 1 read as rel1, flagged).
    `rel1_drift`: flag values above 1 under a rel1 convention (kept as they are)."""
    cleaned, flags = clean_text(text)
    if rewrite is not None:
        cleaned = rewrite(cleaned)
    if not cleaned:
        return ParsedAnswer(point=None, flags=flags)
    cands, malformed = find_candidates(cleaned, box_pairs=box_pairs)
    if malformed:
        flags = (*flags, MALFORMED)
    span = anchor(cleaned) if anchor is not None else None
    if span is not None:
        inside = [c for c in cands if span[0] <= c.start < span[1]]
        first = inside[0] if inside else None
    else:
        first = cands[0] if cands else None
    if first is None:
        return ParsedAnswer(point=None, flags=flags)
    conv = convention
    nums = first.box if first.box is not None else (first.x, first.y)
    if harness_rel1000 and conv is Convention.REL1000 and first.decimal:
        if all(0.0 <= v <= 1.0 for v in nums):
            conv = Convention.REL1
            flags = (*flags, DRIFT)
    elif (
        conv in (Convention.REL1000, Convention.REL999)
        and first.decimal
        and all(0.0 <= v <= 1.0 for v in nums)
    ):
        flags = (*flags, DRIFT)
    if rel1_drift and conv is Convention.REL1 and any(abs(v) > 1.0 for v in nums):
        flags = (*flags, DRIFT)
    main = convention_mapper(conv, sent_size, original_size)
    others = [c for c in cands if c is not first]
    rest_map = convention_mapper(convention, sent_size, original_size)
    answer = to_answer(first, [], main, flags)
    extras = tuple(rest_map(c.x, c.y) for c in others)
    return ParsedAnswer(point=answer.point, extra_points=extras, flags=answer.flags)
