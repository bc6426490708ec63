"""The failure types of a missed step (protocol.md 2.5), in the order histograms list them."""

from __future__ import annotations

__all__ = ["FAILURE_TYPES", "HISTOGRAM_ORDER", "UNTYPED"]

FAILURE_TYPES = (
    "no_prediction",
    "small_target",
    "small_target_near",
    "small_target_far",
    "near_miss",
    "edge_bias",
    "toolbar_confusion",
    "far_miss",
)
UNTYPED = "untyped"  # a failed task whose ending carries no failure type (histogram key)
HISTOGRAM_ORDER = (*FAILURE_TYPES, UNTYPED)
