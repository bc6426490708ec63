"""The hint an error gives for a misspelt name: the known names spelled like it, in one
phrase ("did you mean 'x'?"). Every "unknown ..." message that can guess uses it."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["did_you_mean", "suggestion"]


def did_you_mean(name: str, known: Iterable[str], *, n: int = 1, first: Iterable[str] = ()) -> str:
    """ "did you mean 'a'?" (or "'a' or 'b'?" for `n` = 2) naming the known names closest to
    `name` in spelling, after those of `first` (names the caller found nearer by its own
    rule); "" when none is close."""
    near = list(dict.fromkeys(first))
    near += [c for c in difflib.get_close_matches(name, list(known), n=n) if c not in near]
    if not near:
        return ""
    return f"did you mean {' or '.join(repr(c) for c in near[:n])}?"


def suggestion(name: str, known: Iterable[str], *, n: int = 1, first: Iterable[str] = ()) -> str:
    """`did_you_mean` as an error message adds it after the unknown name: " (did you mean
    'a'?)", or "" when none is close."""
    near = did_you_mean(name, known, n=n, first=first)
    return f" ({near})" if near else ""
