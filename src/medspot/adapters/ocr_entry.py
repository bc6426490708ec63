"""Registers the `ocr` baseline without importing its OCR packages (see `medspot.adapters.ocr`)."""

from __future__ import annotations

from medspot.adapters.registry import AdapterEntry, register

__all__: list[str] = []

register(
    AdapterEntry(
        "ocr",
        "medspot.adapters.ocr:create",
        "normalised",
        "OCR (rapidocr) + fuzzy match of what the instruction names; offline, CPU",
        kind="baseline",
        extra="ocr",
    )
)
