"""Helpers for tests and demonstrations: placeholder screenshots for the real annotations."""

from medspot.testing.placeholders import (
    DEFAULT_SIZES,
    make_placeholder_root,
    paint_placeholders,
    size_for_app,
    write_dataset,
)

__all__ = [
    "DEFAULT_SIZES",
    "make_placeholder_root",
    "paint_placeholders",
    "size_for_app",
    "write_dataset",
]
