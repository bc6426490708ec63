"""Text as the report shows it: long texts shortened at a word boundary, with an ellipsis."""

from __future__ import annotations

__all__ = ["ELLIPSIS", "shorten"]

ELLIPSIS = "…"


def shorten(text: str, limit: int) -> str:
    """`text` with its whitespace collapsed, at most `limit` characters: cut at the last word
    boundary that fits, with an ellipsis (a single word longer than `limit` is cut inside)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    room = max(1, limit - len(ELLIPSIS))
    head = flat[: room + 1]
    cut = head.rfind(" ")
    head = head[:cut] if cut > 0 else flat[:room]
    return head.rstrip(" ,;:.-–—") + ELLIPSIS
