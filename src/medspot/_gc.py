"""Pausing Python's cyclic garbage collector while large acyclic structures are built.

Loading 100,000 steps, scoring them and writing their results allocates millions of small
objects and no reference cycles; with the collector on, its repeated full passes over that
growing heap take a third of the time (benchmarks/README.md, scale)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic collector inside the block (reference counting still frees memory);
    restore its previous state afterwards."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
