"""Values a model wrote, made writable: what any JSON file of a run folder can hold.

A model's answer reaches the journals and the results files (its raw text, the action read
from it, a tool call's arguments, the API's own items). JSON as the APIs send it can hold what
no writer of ours writes back: a lone surrogate (`"\\ud800"`: pydantic and orjson refuse the
string), an integer beyond 64 bits (`1e400` written as digits: orjson refuses it), NaN or
infinity (`json.dumps(allow_nan=False)` refuses it, orjson writes null), keys that are not
strings, nesting deeper than a serializer recurses. `json_safe` gives the same value with each
of those replaced, so that every writer (pydantic, orjson, json) writes it and reads it back
as the same types:

- a lone surrogate becomes U+FFFD (`REPLACEMENT`: a character that stands for "this was no
  text"; `medspot.live.core.executable` refuses to type it, so an action read back from a
  journal is refused as the original was);
- an integer beyond 64 bits is clamped to the nearest 64-bit one (`MAX_INT`);
- a non-finite float is None;
- a key that is not a string is its string; a tuple stays a tuple, a list a list;
- nesting deeper than `MAX_DEPTH` levels is cut: the deeper value becomes `CUT`.

Anything else (numbers in range, booleans, None, objects that are not JSON containers) is
returned as it is. `finite_float` reads a number without the errors of `float()` on huge
integers. Pure, no medspot imports.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["CUT", "MAX_DEPTH", "MAX_INT", "REPLACEMENT", "finite_float", "json_safe", "mend_text"]

REPLACEMENT = "\ufffd"  # what a lone surrogate becomes
MAX_INT = 2**63 - 1  # integers are clamped to [-MAX_INT - 1, MAX_INT]
MAX_DEPTH = 64  # containers nested deeper are cut (orjson stops at 254, pydantic at ~255)
CUT = f"(cut: nested deeper than {MAX_DEPTH} levels)"


def mend_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (the same string when it has none)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join(REPLACEMENT if 0xD800 <= ord(ch) < 0xE000 else ch for ch in text)
    return text


def finite_float(value: object) -> float | None:
    """`value` as a finite float, or None: not a number (a bool, a string, None), NaN or
    infinite, or an integer too large for a float (`float(10**400)` raises; this does not)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        f = float(value)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def _int(v: int) -> int:
    return min(max(v, -MAX_INT - 1), MAX_INT)


def json_safe(value: Any, depth: int = 0) -> Any:
    """`value` with everything no JSON writer of ours writes made writable (module doc)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return mend_text(value)
    if isinstance(value, int):
        return _int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict | list | tuple):
        if depth >= MAX_DEPTH:
            return CUT
        if isinstance(value, dict):
            return {_key(k): json_safe(v, depth + 1) for k, v in value.items()}
        items = [json_safe(v, depth + 1) for v in value]
        return tuple(items) if isinstance(value, tuple) else items
    return value


def _key(k: object) -> str:
    if isinstance(k, str):
        return mend_text(k)
    if k is None or isinstance(k, bool):
        return {None: "null", True: "true", False: "false"}[k]
    return mend_text(str(k))
