"""A synthetic suite of clinical-GUI grounding tasks in MedSPOT's exact format: screens of
fictional DICOM viewers drawn with Pillow, multi-step clinical workflows, exact target boxes."""

from __future__ import annotations

from medspot.synth.generate import META_FILE, SynthSummary, generate

__all__ = ["META_FILE", "SynthSummary", "generate"]
